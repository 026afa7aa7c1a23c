"""Shape cases and input generators for the op library: the op-library test suite
(tests/phi_ops) and hwcheck's kernels suite (hwport.conformance.suites.kernels) both draw from
here.

`all_cases()` returns, for every op of phi_ops/ops.yaml and every dtype the op lists, a list of
`Case`s: numpy inputs (one entry per ops.yaml input, a list for a variadic input, None for an
absent optional one), attributes, and the layout each input is given to the op in (contiguous,
or a non-contiguous hwport view of a larger tensor). The oracle suite runs each case through
`hwport.<op>` on a place and compares with `phi_ops.reference.reference(op, inputs, attrs)`.

Inputs are drawn per op from a sensible domain (positive for log/sqrt, small for exp/pow, valid
indices for the index ops, labels in range for cross_entropy, ...), with NaN/Inf injected in
"special" cases for the ops whose numpy semantics define how they propagate.

Importing this module never touches the runtime; the device helpers at the end (`to_device`,
`run_op`, `to_numpy`) import hwport when called.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from .promotion import (
    FLOATING,
    INTEGER,
    cast_array,
    common_dtype,
    np_dtype,
    out_dtype,
    promote_types,
)
from .schema import OpDef, dtype_groups, load_ops

OPS: dict[str, OpDef] = load_ops()
GROUPS = dtype_groups()
ALL_DTYPES: tuple[str, ...] = GROUPS["all"]
FLOATS: tuple[str, ...] = GROUPS["float"]
BF16 = np.dtype(ml_dtypes.bfloat16)

NAN, INF = math.nan, math.inf
# Values whose propagation numpy defines for every float ufunc.
FLOAT_SPECIALS = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0]
LARGE = (1024, 1024)  # >= 1M elements

LAYOUTS = ("c", "T", "step", "flip")


# ---- the case record ---------------------------------------------------------------------

@dataclass
class Case:
    """One call of an op. `layouts` has one entry per ops.yaml input: "c" (contiguous), "T"
    (hwport `.T` view of the reversed-dims copy), "step" (every 2nd element of a larger
    tensor along every dim), "flip" (negative strides along every dim)."""

    op: str
    dtype: str  # the ops.yaml dtype this case covers
    name: str
    inputs: list[Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    layouts: tuple[str, ...] = ()
    tolerance: dict[str, float] | None = None  # None: the op's ops.yaml profile
    check: str | None = None  # an extra check the oracle test runs (e.g. "dropout_mask")
    large: bool = False

    @property
    def id(self) -> str:
        return f"{self.op}-{self.dtype}-{self.name}"

    def layout(self, i: int) -> str:
        return self.layouts[i] if i < len(self.layouts) else "c"

    def input_dtypes(self) -> list[Any]:
        out: list[Any] = []
        for v in self.inputs:
            if v is None:
                out.append(None)
            elif isinstance(v, list):
                out.append([dname(a) for a in v])
            else:
                out.append(dname(v))
        return out

    def key_dtype(self) -> str:
        """The dtype the case runs in (what keys the kernel and picks the tolerance): the
        promoted dtype of the inputs that decide it (float32 for integer inputs of an op whose
        rule is `float`), the dtype attribute of a `sum` that has one, or the output dtype of
        ops without inputs."""
        op = OPS[self.op]
        if not op.inputs or op.out_dtype.startswith("attr:"):
            return out_dtype(op, self.input_dtypes(), self.attrs)[0]
        if self.op in ("sum", "prod") and self.attrs.get("dtype") is not None:
            return str(self.attrs["dtype"])
        common = common_dtype(op, self.input_dtypes())
        assert common is not None
        if op.out_dtype == "float" and common not in FLOATING:
            return "float32"
        return common


def dname(a: Any) -> str:
    a = np.asarray(a)
    return "bfloat16" if a.dtype == BF16 else a.dtype.name


# ---- input generators -------------------------------------------------------------------

def rng_for(*key: Any) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("/".join(map(str, key)).encode()))


def as_dtype(values: Any, dtype: str) -> np.ndarray:
    """float64 (or int) values converted with the `cast` op's semantics (floats round once)."""
    arr = np.asarray(values)
    if dtype in FLOATING:
        return cast_array(arr.astype(np.float64), dtype)
    if dtype == "bool":
        return arr.astype(bool)
    return cast_array(arr.astype(np.int64), dtype) if arr.dtype.kind in "iub" else \
        cast_array(arr.astype(np.float64), dtype)


_INT_DOMAIN = {
    "any": (-20, 21), "positive": (1, 21), "small": (-3, 4), "ties": (-3, 4),
    "nonzero": (1, 9), "near1": (-2, 3), "exponent": (0, 6), "wide": (-100, 101),
    "unit": (-1, 2), "log1p": (0, 5), "tan": (-1, 2), "halves": (-20, 21),
}


def sample(dtype: str, shape: Sequence[int], rng: np.random.Generator,
           domain: str = "any") -> np.ndarray:
    """Random values of `dtype` and `shape` from a named domain:
    any (normal * 2), positive (0.1 .. 4), small (-2 .. 2), ties (multiples of 0.5 in
    [-1.5, 1.5]: equal elements occur), nonzero (|x| in 0.5 .. 3, random sign), near1
    (0.5 .. 1.5, keeps products finite), exponent (-2 .. 2), wide (normal * 10), unit
    (-0.9 .. 0.9), log1p (-0.9 .. 4), tan (-1.4 .. 1.4), halves (k / 2: half-way cases)."""
    shape = tuple(int(d) for d in shape)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype in INTEGER:
        lo, hi = _INT_DOMAIN[domain]
        if dtype == "uint8":
            lo, hi = max(lo, 0), max(hi, 2)
        v = rng.integers(lo, hi, size=shape)
        if domain == "nonzero" and dtype != "uint8":
            v = v * rng.choice([-1, 1], size=shape)
        return v.astype(np_dtype(dtype))
    if domain == "any":
        v = rng.standard_normal(shape) * 2.0
    elif domain == "positive":
        v = rng.uniform(0.1, 4.0, shape)
    elif domain == "small":
        v = rng.uniform(-2.0, 2.0, shape)
    elif domain == "ties":
        v = rng.integers(-3, 4, size=shape) / 2.0
    elif domain == "nonzero":
        v = rng.uniform(0.5, 3.0, shape) * rng.choice([-1.0, 1.0], size=shape)
    elif domain == "near1":
        v = rng.uniform(0.5, 1.5, shape)
    elif domain == "exponent":
        v = rng.uniform(-2.0, 2.0, shape)
    elif domain == "wide":
        v = rng.standard_normal(shape) * 10.0
    elif domain == "unit":
        v = rng.uniform(-0.9, 0.9, shape)
    elif domain == "log1p":
        v = rng.uniform(-0.9, 4.0, shape)
    elif domain == "tan":
        v = rng.uniform(-1.4, 1.4, shape)
    elif domain == "halves":
        v = rng.integers(-12, 13, size=shape) / 2.0 + rng.choice([0.0, 0.25], size=shape)
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return as_dtype(v, dtype)


def int_edges(dtype: str) -> np.ndarray:
    """Extreme values of an integer dtype (wrap-around cases)."""
    info = np.iinfo(np_dtype(dtype))
    vals = [info.min, info.max, 0, 1, info.max - 1]
    if info.min < 0:
        vals += [-1, info.min + 1]
    return np.array(vals, dtype=np_dtype(dtype))


def specials(dtype: str, values: Sequence[float] = FLOAT_SPECIALS) -> np.ndarray:
    return as_dtype(np.array(values, np.float64), dtype)


def partner(dtype: str, allowed: Sequence[str]) -> str | None:
    """A second dtype for a mixed-dtype case whose promoted dtype the op supports."""
    for other in ("int32", "int8", "float32", "bool", "float16"):
        if other != dtype and promote_types(dtype, other) in allowed:
            return other
    return None


# ---- case construction helpers -----------------------------------------------------------

_Builder = Callable[[str, str, np.random.Generator], list[Case]]
BUILDERS: dict[str, _Builder] = {}


def builder(*names: str) -> Callable[[_Builder], _Builder]:
    def deco(fn: _Builder) -> _Builder:
        for n in names:
            assert n in OPS, f"cases.py: {n!r} is not an op of ops.yaml"
            BUILDERS[n] = fn
        return fn
    return deco


def C(op: str, dtype: str, name: str, inputs: list[Any], attrs: dict[str, Any] | None = None,
      layouts: Sequence[str] = (), **kw: Any) -> Case:
    return Case(op, dtype, name, list(inputs), dict(attrs or {}), tuple(layouts), **kw)


# ---- unary elementwise --------------------------------------------------------------------

UNARY_DOMAIN = {
    "exp": "small", "expm1": "small", "log": "positive", "log1p": "log1p",
    "log2": "positive", "sqrt": "positive", "rsqrt": "positive", "tan": "tan",
    "reciprocal": "nonzero", "floor": "halves", "ceil": "halves", "round": "halves",
    "sign": "ties", "logical_not": "ties", "softplus": "wide", "isnan": "any",
}
# Float specials per op (default FLOAT_SPECIALS). gelu/silu: +-inf give 0 * inf in the
# textbook formula; that corner is left to the torch cross-check, NaN still propagates.
UNARY_SPECIALS = {
    "gelu": [NAN, 0.0, -0.0, 1.0, -1.0, 0.5, 30.0, -30.0],
    "silu": [NAN, 0.0, -0.0, 1.0, -1.0, 0.5, 30.0, -30.0, -100.0],
    "round": [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4.5, NAN, INF, -INF, -0.0, 1e30],
    "floor": [0.5, -0.5, 1.0, -1.0, 2.7, -2.7, NAN, INF, -INF, -0.0, 1e30],
    "ceil": [0.5, -0.5, 1.0, -1.0, 2.7, -2.7, NAN, INF, -INF, -0.0, 1e30],
    "softplus": [NAN, INF, -INF, 0.0, 19.9, 20.0, 20.1, -30.0, 100.0],
    "exp": [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 10.0, -100.0, 1000.0],
    "expm1": [NAN, INF, -INF, 0.0, -0.0, 1e-10, -1e-10, 1.0, 1000.0],
    "log1p": [NAN, INF, -INF, 0.0, -0.0, 1e-10, -1.0, -2.0, 1.0],
}
LARGE_UNARY = {"exp": "float32", "sqrt": "float64"}


def _unary_cases(op: str, d: str, rng: np.random.Generator,
                 attrs: dict[str, Any] | None = None, tag: str = "") -> list[Case]:
    dom = UNARY_DOMAIN.get(op, "any")
    a = dict(attrs or {})
    t = f"-{tag}" if tag else ""
    cs = [
        C(op, d, f"0d{t}", [sample(d, (), rng, dom)], a),
        C(op, d, f"empty{t}", [sample(d, (0, 3), rng, dom)], a),
        C(op, d, f"odd7{t}", [sample(d, (7,), rng, dom)], a),
        C(op, d, f"odd13x17{t}", [sample(d, (13, 17), rng, dom)], a),
        C(op, d, f"T{t}", [sample(d, (5, 6), rng, dom)], a, ["T"]),
        C(op, d, f"step{t}", [sample(d, (4, 5), rng, dom)], a, ["step"]),
        C(op, d, f"flip{t}", [sample(d, (3, 7), rng, dom)], a, ["flip"]),
    ]
    if d in FLOATING:
        cs.append(C(op, d, f"special{t}", [specials(d, UNARY_SPECIALS.get(op, FLOAT_SPECIALS))],
                    a))
    elif d in INTEGER:
        cs.append(C(op, d, f"edges{t}", [int_edges(d)], a))
    if LARGE_UNARY.get(op) == d and not tag:
        cs.append(C(op, d, "large", [sample(d, LARGE, rng, dom)], a, large=True))
    return cs


@builder("abs", "neg", "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "sin", "cos",
         "tan", "tanh", "erf", "sigmoid", "relu", "silu", "floor", "ceil", "round", "sign",
         "reciprocal", "square", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite",
         "copy")
def _b_unary(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    return _unary_cases(op, d, rng)


@builder("gelu")
def _b_gelu(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    return (_unary_cases(op, d, rng, {"approximate": False}, "erf")
            + _unary_cases(op, d, rng, {"approximate": True}, "tanh"))


@builder("softplus")
def _b_softplus(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    cs = _unary_cases(op, d, rng)
    x = sample(d, (5, 8), rng, "wide")
    cs.append(C(op, d, "beta2-thr10", [x], {"beta": 2.0, "threshold": 10.0}))
    cs.append(C(op, d, "beta0.5-thr5", [x], {"beta": 0.5, "threshold": 5.0}, ["T"]))
    return cs


@builder("cast")
def _b_cast(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    cs = []
    if d in FLOATING:
        # NaN -> 0, beyond the range saturates, negatives into uint8 saturate, -2.7 truncates
        base = np.concatenate([sample(d, (12,), rng, "wide"),
                               specials(d, [NAN, INF, -INF, -0.0, 2.7, -2.7, 300.0, -300.0,
                                            70000.0, -1e10, 0.5])])
    elif d == "bool":
        base = np.array([True, False, True, True, False])
    else:
        base = np.concatenate([sample(d, (12,), rng, "wide"), int_edges(d)])
    for target in ALL_DTYPES:
        cs.append(C(op, d, f"to-{target}", [base], {"dtype": target}))
    cs.append(C(op, d, "0d", [sample(d, (), rng)], {"dtype": "float64"}))
    cs.append(C(op, d, "empty", [sample(d, (0, 2), rng)], {"dtype": "int32"}))
    cs.append(C(op, d, "T", [sample(d, (5, 6), rng, "wide")], {"dtype": "float32"}, ["T"]))
    cs.append(C(op, d, "flip", [sample(d, (3, 7), rng, "wide")], {"dtype": "int64"}, ["flip"]))
    cs.append(C(op, d, "step", [sample(d, (4, 5), rng, "wide")], {"dtype": "bfloat16"},
                ["step"]))
    if d == "float32":
        cs.append(C(op, d, "large", [sample(d, LARGE, rng)], {"dtype": "float16"},
                    large=True))
    return cs


# ---- binary elementwise -------------------------------------------------------------------

BINARY_DOMAIN = {
    "divide": ("any", "nonzero"), "floor_divide": ("wide", "nonzero"),
    "remainder": ("wide", "nonzero"), "pow": ("positive", "exponent"),
    "maximum": ("ties", "ties"), "minimum": ("ties", "ties"),
    "equal": ("ties", "ties"), "not_equal": ("ties", "ties"), "less_than": ("ties", "ties"),
    "less_equal": ("ties", "ties"), "greater_than": ("ties", "ties"),
    "greater_equal": ("ties", "ties"), "logical_and": ("ties", "ties"),
    "logical_or": ("ties", "ties"), "logical_xor": ("ties", "ties"),
}
LARGE_BINARY = {"add": "float32", "maximum": "float32"}


def _int_binary_edges(op: str, d: str) -> tuple[np.ndarray, np.ndarray] | None:
    info = np.iinfo(np_dtype(d))
    lo, hi = int(info.min), int(info.max)
    signed = lo < 0
    if op in ("floor_divide", "remainder"):
        if signed:  # zero divisors give 0; INT_MIN // -1 wraps to INT_MIN
            x = [lo, lo, 7, -7, 7, -7, 0, 5, hi, lo]
            y = [-1, 0, 2, 2, -2, -2, 3, 0, -1, 1]
        else:
            x = [hi, 7, 0, 5, hi, 1]
            y = [1, 2, 3, 0, hi, 0]
    elif op == "pow":  # negative exponents: 1 / +-1 / 0; large ones wrap
        if signed:
            x = [2, -2, 1, -1, -1, 0, 3, 0, 5, 2]
            y = [10, 3, -5, -3, -4, -1, -2, 0, 40, 70]
        else:
            x = [2, 3, 1, 0, 5, 255]
            y = [7, 5, 9, 0, 40, 2]
    elif op in ("add", "subtract", "multiply"):
        x = [hi, lo, hi, lo, hi]
        y = [1, -1 if signed else hi, hi, lo, 2]
    elif op in ("maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"):
        x = [hi, lo, -1 if signed else 0, 0]
        y = [lo, hi, hi, lo]
    else:
        return None
    dt = np_dtype(d)
    return (np.array(x, np.int64).astype(dt), np.array(y, np.int64).astype(dt))


@builder("add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow",
         "maximum", "minimum", "equal", "not_equal", "less_than", "less_equal",
         "greater_than", "greater_equal", "logical_and", "logical_or", "logical_xor",
         "bitwise_and", "bitwise_or", "bitwise_xor", "gelu_grad", "gelu_tanh_grad")
def _b_binary(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    dx, dy = BINARY_DOMAIN.get(op, ("any", "any"))
    if op == "pow" and d in INTEGER:
        dx, dy = "small", "exponent"

    def s(shape: Sequence[int], dom: str, dtype: str = d) -> np.ndarray:
        return sample(dtype, shape, rng, dom)

    cs = [
        C(op, d, "same13x17", [s((13, 17), dx), s((13, 17), dy)]),
        C(op, d, "bcast", [s((3, 1, 5), dx), s((4, 5), dy)]),
        C(op, d, "0d-x", [s((), dx), s((4, 3), dy)]),
        C(op, d, "0d-both", [s((), dx), s((), dy)]),
        C(op, d, "empty", [s((0, 3), dx), s((1, 3), dy)]),
        C(op, d, "T-step", [s((5, 6), dx), s((5, 6), dy)], {}, ["T", "step"]),
        C(op, d, "flip-bcast", [s((4, 7), dx), s((7,), dy)], {}, ["flip", "flip"]),
        C(op, d, "odd7-bcast-T", [s((7, 1), dx), s((2, 7, 5), dy)], {}, ["c", "T"]),
    ]
    other = partner(d, OPS[op].dtypes)
    if other is not None:
        cs.append(C(op, d, f"mixed-{other}", [s((3, 4), dx), s((4,), dy, other)]))
        cs.append(C(op, d, f"mixed-{other}-rev", [s((3, 1), dx, other), s((3, 4), dy)]))
    if d in FLOATING:
        sp = specials(d)
        cs.append(C(op, d, "special", [sp.reshape(-1, 1), sp.reshape(1, -1)]))
    elif d in INTEGER:
        edges = _int_binary_edges(op, d)
        if edges is not None:
            cs.append(C(op, d, "edges", list(edges)))
    if LARGE_BINARY.get(op) == d:
        cs.append(C(op, d, "large-bcast", [s(LARGE, dx), s((LARGE[1],), dy)], large=True))
    return cs


# ---- ternary ------------------------------------------------------------------------------

@builder("where")
def _b_where(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def cond(shape: Sequence[int]) -> np.ndarray:
        return sample("bool", shape, rng)

    def s(shape: Sequence[int], dtype: str = d) -> np.ndarray:
        return sample(dtype, shape, rng)

    cs = [
        C(op, d, "bcast3", [cond((4, 1)), s((1, 5)), s((4, 5))]),
        C(op, d, "same13x17", [cond((13, 17)), s((13, 17)), s((13, 17))]),
        C(op, d, "0d", [cond(()), s(()), s(())]),
        C(op, d, "0d-xy", [cond((3, 4)), s(()), s(())]),
        C(op, d, "empty", [cond((0, 3)), s((1, 3)), s((0, 3))]),
        C(op, d, "views", [cond((5, 6)), s((5, 6)), s((5, 6))], {}, ["flip", "T", "step"]),
        C(op, d, "int-condition", [sample("int32", (3, 4), rng, "small"), s((3, 4)),
                                   s((3, 4))]),
    ]
    other = partner(d, OPS[op].dtypes)
    if other is not None:
        cs.append(C(op, d, f"mixed-{other}", [cond((3, 4)), s((3, 4)), s((4,), other)]))
    if d in FLOATING:
        sp = specials(d)
        cs.append(C(op, d, "special", [cond((sp.size,)), sp, sp[::-1].copy()]))
    if d == "float32":
        cs.append(C(op, d, "large", [cond(LARGE), s(LARGE), s((LARGE[1],))], large=True))
    return cs


@builder("clip")
def _b_clip(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = sample(d, (13, 17), rng, "wide")
    cs = [
        C(op, d, "both", [x], {"min": -1.0, "max": 1.0}),
        C(op, d, "max-only", [x], {"min": None, "max": 0.5}),
        C(op, d, "min-only", [x], {"min": -0.5}),
        C(op, d, "none", [x], {}),
        C(op, d, "min>max", [x], {"min": 1.0, "max": -1.0}),
        C(op, d, "int-bounds", [x], {"min": -3, "max": 4}),
        C(op, d, "0d", [sample(d, (), rng, "wide")], {"min": -1.0, "max": 1.0}),
        C(op, d, "empty", [sample(d, (0, 4), rng)], {"min": -1.0, "max": 1.0}),
        C(op, d, "T", [sample(d, (5, 6), rng, "wide")], {"min": -2.0, "max": 3.0}, ["T"]),
        C(op, d, "flip", [sample(d, (3, 7), rng, "wide")], {"min": -2.0, "max": 3.0},
          ["flip"]),
    ]
    if d in INTEGER:  # float bounds truncate toward zero; bounds beyond the range saturate
        cs.append(C(op, d, "float-bounds", [x], {"min": -2.5, "max": 3.5}))
        cs.append(C(op, d, "beyond-range", [int_edges(d)], {"min": -300.0, "max": 70000.0}))
    if d in FLOATING:
        cs.append(C(op, d, "special", [specials(d)], {"min": -1.0, "max": 2.0}))
    return cs


# ---- reductions ---------------------------------------------------------------------------

REDUCE_DOMAIN = {"prod": "near1", "logsumexp": "wide", "any": "ties", "all": "ties"}
NONEMPTY = {"max", "min", "argmax", "argmin"}  # a reduction over zero elements is an error


def _special_rows(d: str) -> np.ndarray:
    """4 x 5: a NaN row, an inf row, a row with both infinities, a finite row."""
    v = np.array([[1.0, NAN, 2.0, -1.0, 0.5],
                  [INF, 1.0, 2.0, 3.0, -4.0],
                  [-INF, INF, 0.0, 1.0, 2.0],
                  [-INF, -INF, -INF, -INF, -INF]], np.float64)
    return as_dtype(v, d)


@builder("sum", "mean", "prod", "max", "min", "any", "all", "logsumexp", "var", "std")
def _b_reduce(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    dom = REDUCE_DOMAIN.get(op, "any")

    def s(shape: Sequence[int]) -> np.ndarray:
        return sample(d, shape, rng, dom)

    x3 = s((3, 4, 5))
    cs = [
        C(op, d, "0d", [s(())], {}),
        C(op, d, "all-odd13x17", [s((13, 17))], {"axis": None}),
        C(op, d, "axis1", [x3], {"axis": 1}),
        C(op, d, "axis-1-keep", [x3], {"axis": [-1], "keepdim": True}),
        C(op, d, "axes02-keep", [x3], {"axis": [0, 2], "keepdim": True}),
        C(op, d, "axes-3,1", [x3], {"axis": [-3, 1], "keepdim": False}),
        C(op, d, "all-list-keep", [x3], {"axis": [0, 1, 2], "keepdim": True}),
        C(op, d, "empty-out", [s((0, 4))], {"axis": [1]}),
        C(op, d, "T", [s((5, 6))], {"axis": [0]}, ["T"]),
        C(op, d, "step", [s((4, 6))], {"axis": [1], "keepdim": True}, ["step"]),
        C(op, d, "flip", [s((3, 7))], {"axis": None}, ["flip"]),
        C(op, d, "odd7", [s((7,))], {"axis": 0}),
    ]
    if op not in NONEMPTY:  # sum of nothing is 0, prod 1, mean NaN, logsumexp -inf
        cs.append(C(op, d, "empty-in", [s((0, 4))], {"axis": [0]}))
        cs.append(C(op, d, "empty-all", [s((2, 0))], {}))
    if op in ("sum", "max"):
        cs.append(C(op, d, "0d-axis0", [s(())], {"axis": [0]}))
    if op in ("var", "std"):
        cs.append(C(op, d, "biased", [x3], {"axis": [1, 2], "unbiased": False}))
        cs.append(C(op, d, "single-unbiased", [s((3, 1))], {"axis": [1], "unbiased": True}))
    if op == "sum":
        target = {"int32": "float32", "float16": "float32", "float32": "float64",
                  "bool": "int32"}.get(d)
        if target is not None:
            cs.append(C(op, d, f"dtype-{target}", [x3], {"axis": [1], "dtype": target}))
    if d in FLOATING:
        sp = _special_rows(d)
        cs.append(C(op, d, "special", [sp], {"axis": [1]}))
        cs.append(C(op, d, "special-axis0", [sp], {"axis": [0], "keepdim": True}))
    if op in ("sum", "max", "mean") and d == "float32":
        big = sample(d, LARGE, rng, "positive")  # no cancellation: rtol means something
        cs.append(C(op, d, "large-all", [big], {}, large=True))
        cs.append(C(op, d, "large-axis0", [big], {"axis": [0]}, large=True))
    if op == "sum" and d == "float64":
        cs.append(C(op, d, "large-all", [sample(d, LARGE, rng, "positive")], {}, large=True))
    return cs


@builder("argmax", "argmin")
def _b_argreduce(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def s(shape: Sequence[int]) -> np.ndarray:
        return sample(d, shape, rng, "ties")  # ties: the first occurrence wins

    cs = [
        C(op, d, "0d", [s(())], {}),
        C(op, d, "flat13x17", [s((13, 17))], {}),
        C(op, d, "flat-keep", [s((3, 4))], {"keepdim": True}),
        C(op, d, "axis0", [s((4, 5))], {"axis": 0}),
        C(op, d, "axis-1-keep", [s((3, 4, 5))], {"axis": -1, "keepdim": True}),
        C(op, d, "axis1-3d", [s((3, 4, 5))], {"axis": 1}),
        C(op, d, "0d-axis0", [s(())], {"axis": 0}),
        C(op, d, "T", [s((5, 6))], {"axis": 1}, ["T"]),
        C(op, d, "flip", [s((3, 7))], {"axis": 1}, ["flip"]),
        C(op, d, "step", [s((4, 6))], {}, ["step"]),
        C(op, d, "empty-other", [s((0, 3))], {"axis": 1}),
    ]
    if d in FLOATING:  # NaN counts as the maximum (argmax) / minimum (argmin)
        sp = _special_rows(d)
        cs.append(C(op, d, "special", [sp], {"axis": 1}))
        cs.append(C(op, d, "special-flat", [sp], {}))
    if d == "float32" and op == "argmax":
        cs.append(C(op, d, "large", [sample(d, LARGE, rng)], {"axis": 1}, large=True))
    return cs


@builder("cumsum", "cumprod")
def _b_scan(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    dom = "near1" if op == "cumprod" else "any"

    def s(shape: Sequence[int]) -> np.ndarray:
        return sample(d, shape, rng, dom)

    cs = [
        C(op, d, "0d", [s(())], {}),
        C(op, d, "0d-axis0", [s(())], {"axis": 0}),
        C(op, d, "flat13x17", [s((13, 17))], {}),
        C(op, d, "axis0", [s((4, 5))], {"axis": 0}),
        C(op, d, "axis-1", [s((3, 4, 5))], {"axis": -1}),
        C(op, d, "axis1-3d", [s((3, 4, 5))], {"axis": 1}),
        C(op, d, "empty", [s((0, 3))], {"axis": 1}),
        C(op, d, "empty-flat", [s((2, 0))], {}),
        C(op, d, "T", [s((5, 6))], {"axis": 1}, ["T"]),
        C(op, d, "flip", [s((3, 7))], {"axis": 0}, ["flip"]),
        C(op, d, "step", [s((4, 6))], {"axis": -1}, ["step"]),
    ]
    if d in INTEGER:
        cs.append(C(op, d, "edges", [int_edges(d)], {"axis": 0}))
    if d in FLOATING:
        cs.append(C(op, d, "special", [_special_rows(d)], {"axis": 1}))
    return cs


# ---- linear algebra -----------------------------------------------------------------------

@builder("matmul")
def _b_matmul(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    dom = "small" if d in INTEGER else "any"

    def s(*shape: int) -> np.ndarray:
        return sample(d, shape, rng, dom)

    cs = [
        C(op, d, "2d", [s(3, 4), s(4, 5)]),
        C(op, d, "odd", [s(7, 13), s(13, 17)]),
        C(op, d, "1d-2d", [s(4), s(4, 5)]),
        C(op, d, "2d-1d", [s(3, 4), s(4)]),
        C(op, d, "1d-1d", [s(6), s(6)]),
        C(op, d, "batch-bcast", [s(2, 1, 3, 4), s(5, 4, 6)]),
        C(op, d, "batch-2d", [s(2, 3, 4), s(4, 2)]),
        C(op, d, "tx", [s(4, 3), s(4, 5)], {"transpose_x": True}),
        C(op, d, "ty", [s(3, 4), s(5, 4)], {"transpose_y": True}),
        C(op, d, "txy-batch", [s(2, 4, 3), s(1, 5, 4)],
          {"transpose_x": True, "transpose_y": True}),
        C(op, d, "ty-1d", [s(3, 4), s(4)], {"transpose_y": True}),
        C(op, d, "k0", [s(3, 0), s(0, 4)]),
        C(op, d, "m0", [s(0, 4), s(4, 5)]),
        C(op, d, "views", [s(3, 4), s(4, 5)], {}, ["T", "step"]),
        C(op, d, "flip-ty", [s(3, 4), s(5, 4)], {"transpose_y": True}, ["flip", "T"]),
    ]
    if d in INTEGER:
        cs.append(C(op, d, "wrap", [np.full((2, 3), np.iinfo(np_dtype(d)).max, np_dtype(d)),
                                    np.full((3, 2), 3, np_dtype(d))]))
    if d in FLOATING:
        sp = np.array([[1.0, NAN], [INF, 2.0]])
        cs.append(C(op, d, "special", [as_dtype(sp, d), as_dtype(np.eye(2), d)]))
    other = partner(d, OPS[op].dtypes)
    if other is not None:
        cs.append(C(op, d, f"mixed-{other}", [s(3, 4), sample(other, (4, 2), rng, "small")]))
    return cs


# ---- shape --------------------------------------------------------------------------------

def _s(d: str, rng: np.random.Generator, *shape: int) -> np.ndarray:
    return sample(d, shape, rng, "any")


@builder("reshape")
def _b_reshape(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    return [
        C(op, d, "flat", [_s(d, rng, 3, 4)], {"shape": [12]}),
        C(op, d, "infer", [_s(d, rng, 2, 3, 4)], {"shape": [4, -1]}),
        C(op, d, "0d", [_s(d, rng)], {"shape": [1, 1]}),
        C(op, d, "to-0d", [_s(d, rng, 1, 1)], {"shape": []}),
        C(op, d, "empty", [_s(d, rng, 0, 4)], {"shape": [2, 0, 3]}),
        C(op, d, "T", [_s(d, rng, 4, 6)], {"shape": [6, 4]}, ["T"]),
        C(op, d, "step", [_s(d, rng, 3, 4)], {"shape": [-1]}, ["step"]),
        C(op, d, "flip", [_s(d, rng, 2, 6)], {"shape": [3, 4]}, ["flip"]),
    ]


@builder("transpose")
def _b_transpose(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    return [
        C(op, d, "none", [_s(d, rng, 2, 3, 4)], {"perm": None}),
        C(op, d, "perm", [_s(d, rng, 2, 3, 4)], {"perm": [2, 0, 1]}),
        C(op, d, "neg-perm", [_s(d, rng, 2, 3, 4)], {"perm": [-1, 0, 1]}),
        C(op, d, "0d", [_s(d, rng)], {}),
        C(op, d, "T", [_s(d, rng, 5, 6)], {"perm": [1, 0]}, ["T"]),
        C(op, d, "flip", [_s(d, rng, 3, 7)], {}, ["flip"]),
        C(op, d, "empty", [_s(d, rng, 2, 0, 3)], {"perm": [1, 2, 0]}),
    ]


@builder("flatten")
def _b_flatten(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 2, 3, 4)
    return [
        C(op, d, "1-2", [x], {"start_axis": 1, "stop_axis": 2}),
        C(op, d, "all", [x], {}),
        C(op, d, "neg", [x], {"start_axis": -3, "stop_axis": -2}),
        C(op, d, "0d", [_s(d, rng)], {}),
        C(op, d, "T", [_s(d, rng, 3, 4, 2)], {"start_axis": 0, "stop_axis": 1}, ["T"]),
        C(op, d, "empty", [_s(d, rng, 2, 0, 3)], {"start_axis": 1}),
    ]


@builder("squeeze")
def _b_squeeze(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    y = _s(d, rng, 1, 3, 1, 2)
    return [
        C(op, d, "all", [y], {}),
        C(op, d, "one", [y], {"axis": [2]}),
        C(op, d, "neg", [y], {"axis": -4}),
        C(op, d, "keeps-non-1", [y], {"axis": [0, 1]}),
        C(op, d, "0d", [_s(d, rng)], {}),
        C(op, d, "T", [_s(d, rng, 2, 1, 3)], {"axis": [1]}, ["T"]),
        C(op, d, "empty", [_s(d, rng, 0, 1, 3)], {}),
    ]


@builder("unsqueeze")
def _b_unsqueeze(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 2, 3)
    return [
        C(op, d, "front", [x], {"axis": [0]}),
        C(op, d, "back-neg", [x], {"axis": -1}),
        C(op, d, "two", [x], {"axis": [0, 3]}),
        C(op, d, "0d", [_s(d, rng)], {"axis": [0]}),
        C(op, d, "flip", [x], {"axis": [1]}, ["flip"]),
        C(op, d, "empty", [_s(d, rng, 0, 3)], {"axis": [-1]}),
    ]


@builder("expand")
def _b_expand(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    return [
        C(op, d, "lead", [_s(d, rng, 3, 1)], {"shape": [2, 3, 4]}),
        C(op, d, "keep-1", [_s(d, rng, 3, 1)], {"shape": [-1, 5]}),
        C(op, d, "0d", [_s(d, rng)], {"shape": [2, 3]}),
        C(op, d, "same", [_s(d, rng, 2, 3)], {"shape": [2, 3]}),
        C(op, d, "empty", [_s(d, rng, 1, 3)], {"shape": [0, 3]}),
        C(op, d, "empty-in", [_s(d, rng, 0, 1)], {"shape": [2, 0, 4]}),
        C(op, d, "T", [_s(d, rng, 3, 1)], {"shape": [4, 3, 5]}, ["T"]),
    ]


@builder("concat")
def _b_concat(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    cs = [
        C(op, d, "axis0", [[_s(d, rng, 2, 3), _s(d, rng, 4, 3), _s(d, rng, 0, 3)]], {}),
        C(op, d, "axis-1", [[_s(d, rng, 3, 2), _s(d, rng, 3, 5)]], {"axis": -1}),
        C(op, d, "one", [[_s(d, rng, 3, 2)]], {"axis": 1}),
        C(op, d, "3d-axis1", [[_s(d, rng, 2, 1, 3), _s(d, rng, 2, 4, 3)]], {"axis": 1}),
        C(op, d, "views", [[_s(d, rng, 4, 3), _s(d, rng, 4, 5)]], {"axis": 1}, ["T"]),
    ]
    other = partner(d, OPS[op].dtypes)
    if other is not None:
        cs.append(C(op, d, f"mixed-{other}", [[_s(d, rng, 2, 3), _s(other, rng, 1, 3)]]))
    return cs


@builder("stack")
def _b_stack(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    xs = [_s(d, rng, 3, 4) for _ in range(3)]
    return [
        C(op, d, "axis0", [xs], {}),
        C(op, d, "axis-1", [xs], {"axis": -1}),
        C(op, d, "axis1", [xs[:2]], {"axis": 1}),
        C(op, d, "0d", [[_s(d, rng), _s(d, rng)]], {}),
        C(op, d, "empty", [[_s(d, rng, 0, 2)] * 2], {"axis": 1}),
        C(op, d, "views", [xs], {"axis": 2}, ["flip"]),
    ]


@builder("split")
def _b_split(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 6, 4)
    return [
        C(op, d, "equal", [x], {"sections": 3}),
        C(op, d, "sizes", [x], {"sections": [1, 2, 3]}),
        C(op, d, "sizes-infer", [x], {"sections": [2, -1]}),
        C(op, d, "axis-1", [x], {"sections": 2, "axis": -1}),
        C(op, d, "zero-part", [x], {"sections": [0, 4], "axis": 1}),
        C(op, d, "one", [x], {"sections": 1}),
        C(op, d, "T", [_s(d, rng, 4, 6)], {"sections": 2, "axis": 1}, ["T"]),
        C(op, d, "empty", [_s(d, rng, 0, 4)], {"sections": 2, "axis": 1}),
    ]


@builder("slice")
def _b_slice(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 5, 6)
    return [
        C(op, d, "basic", [x], {"axes": [0, 1], "starts": [1, -4], "ends": [4, 100]}),
        C(op, d, "strided", [x], {"axes": [0, 1], "starts": [0, -1], "ends": [5, -7],
                                  "strides": [2, -1]}),
        C(op, d, "neg-step", [x], {"axes": [-1], "starts": [10], "ends": [0],
                                   "strides": [-2]}),
        C(op, d, "empty", [x], {"axes": [0], "starts": [3], "ends": [1]}),
        # a negative step from below the dim selects nothing (Python: x[-10**6:-6:-1])
        C(op, d, "neg-step-below", [x], {"axes": [0], "starts": [-10**6], "ends": [-6],
                                         "strides": [-1]}),
        C(op, d, "empty-in", [_s(d, rng, 0, 4)], {"axes": [1], "starts": [1], "ends": [3]}),
        C(op, d, "T", [x], {"axes": [1], "starts": [1], "ends": [5], "strides": [3]}, ["T"]),
        C(op, d, "flip", [x], {"axes": [0], "starts": [-2], "ends": [-6], "strides": [-1]},
          ["flip"]),
    ]


@builder("flip")
def _b_flip(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 3, 4, 5)
    return [
        C(op, d, "axis0", [x], {"axis": [0]}),
        C(op, d, "two-neg", [x], {"axis": [-1, 1]}),
        C(op, d, "all", [x], {"axis": [0, 1, 2]}),
        C(op, d, "int", [x], {"axis": 2}),
        C(op, d, "0d", [_s(d, rng)], {"axis": []}),
        C(op, d, "T", [_s(d, rng, 5, 6)], {"axis": [0]}, ["T"]),
        C(op, d, "empty", [_s(d, rng, 3, 0)], {"axis": [0, 1]}),
    ]


@builder("tile")
def _b_tile(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 2, 3)
    return [
        C(op, d, "2d", [x], {"repeats": [2, 1]}),
        C(op, d, "short", [x], {"repeats": [2]}),
        C(op, d, "long", [x], {"repeats": [1, 2, 3]}),
        C(op, d, "zero", [x], {"repeats": [0, 2]}),
        C(op, d, "0d", [_s(d, rng)], {"repeats": [3]}),
        C(op, d, "flip", [x], {"repeats": [2, 2]}, ["flip"]),
        C(op, d, "empty", [_s(d, rng, 0, 2)], {"repeats": [2, 3]}),
    ]


@builder("roll")
def _b_roll(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 3, 4)
    return [
        C(op, d, "flat", [x], {"shifts": 1}),
        C(op, d, "flat-neg", [x], {"shifts": [-5]}),
        C(op, d, "two-axes", [x], {"shifts": [1, -2], "axis": [0, -1]}),
        C(op, d, "big-shift", [x], {"shifts": [5], "axis": [1]}),
        C(op, d, "0d", [_s(d, rng)], {"shifts": [1]}),
        C(op, d, "empty", [_s(d, rng, 0, 3)], {"shifts": [1], "axis": [1]}),
        C(op, d, "T", [x], {"shifts": [2], "axis": [0]}, ["T"]),
    ]


@builder("pad")
def _b_pad(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    value = 1.5 if d in FLOATING else (1 if d == "bool" else 7)
    x = _s(d, rng, 3, 4)
    cs = [
        C(op, d, "first-dim", [x], {"pad": [1, 2]}),
        C(op, d, "both-dims", [x], {"pad": [1, 0, 2, 3], "value": value}),
        C(op, d, "zero", [x], {"pad": [0, 0, 0, 0]}),
        C(op, d, "3d", [_s(d, rng, 2, 3, 4)], {"pad": [0, 1, 1, 0, 2, 2], "value": value}),
        C(op, d, "empty", [_s(d, rng, 0, 3)], {"pad": [1, 1], "value": value}),
        C(op, d, "T", [x], {"pad": [2, 1, 0, 1], "value": value}, ["T"]),
        C(op, d, "step", [x], {"pad": [1, 1, 1, 1]}, ["step"]),
    ]
    if d in INTEGER:  # a float value truncates toward zero
        cs.append(C(op, d, "float-value", [x], {"pad": [1, 1], "value": -2.7}))
    if d in FLOATING:
        cs.append(C(op, d, "nan-value", [x], {"pad": [1, 1], "value": NAN}))
    return cs


@builder("tril", "triu")
def _b_tri(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    return [
        C(op, d, "diag0", [_s(d, rng, 4, 5)], {}),
        C(op, d, "diag1", [_s(d, rng, 4, 5)], {"diagonal": 1}),
        C(op, d, "diag-2", [_s(d, rng, 5, 4)], {"diagonal": -2}),
        C(op, d, "batch", [_s(d, rng, 2, 3, 4)], {"diagonal": 0}),
        C(op, d, "empty", [_s(d, rng, 0, 3)], {}),
        C(op, d, "T", [_s(d, rng, 5, 6)], {"diagonal": 1}, ["T"]),
        C(op, d, "flip", [_s(d, rng, 3, 7)], {"diagonal": -1}, ["flip"]),
    ]


# ---- indexing -----------------------------------------------------------------------------

def idx(values: Sequence[int] | np.ndarray, dtype: str = "int64") -> np.ndarray:
    return np.asarray(values, dtype=np.int64).astype(dtype)


@builder("gather", "index_select")
def _b_gather(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 5, 6)
    return [
        C(op, d, "axis0-dups", [x, idx([4, 0, 2, 2, 1, 4, 3])], {}),
        C(op, d, "axis-1-int32", [x, idx([5, 0, 3], "int32")], {"axis": -1}),
        C(op, d, "axis1", [_s(d, rng, 2, 3, 4), idx([2, 0])], {"axis": 1}),
        C(op, d, "empty-index", [x, idx([])], {"axis": 0}),
        C(op, d, "1d", [_s(d, rng, 7), idx([6, 0, 3])], {}),
        C(op, d, "T", [x, idx([0, 5, 1])], {"axis": 1}, ["T"]),
        C(op, d, "flip-index", [x, idx([1, 2, 3, 0])], {"axis": 0}, ["step", "flip"]),
    ]


@builder("take_along_axis")
def _b_take(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 4, 5)
    return [
        C(op, d, "last", [x, idx(rng.integers(0, 5, (4, 3)))], {"axis": -1}),
        C(op, d, "first", [x, idx(rng.integers(0, 4, (6, 5)), "int32")], {"axis": 0}),
        C(op, d, "bcast-index", [x, idx(rng.integers(0, 5, (1, 3)))], {"axis": 1}),
        C(op, d, "bcast-x", [_s(d, rng, 1, 5), idx(rng.integers(0, 5, (3, 2)))], {"axis": 1}),
        C(op, d, "3d", [_s(d, rng, 2, 3, 4), idx(rng.integers(0, 3, (2, 2, 4)))],
          {"axis": 1}),
        C(op, d, "empty", [x, idx(np.zeros((4, 0)))], {"axis": 1}),
        C(op, d, "T", [x, idx(rng.integers(0, 5, (4, 2)))], {"axis": 1}, ["T", "flip"]),
    ]


@builder("scatter")
def _b_scatter(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = _s(d, rng, 6, 4)
    ix = idx([1, 3, 1, 0])  # duplicates: assign keeps the last, add accumulates
    u = _s(d, rng, 4, 4)
    x2 = _s(d, rng, 3, 5)
    cs = [
        C(op, d, "assign", [x, ix, u], {}),
        C(op, d, "add", [x, ix, u], {"reduce": "add"}),
        C(op, d, "axis-1", [x2, idx([4, 0, 4], "int32"), _s(d, rng, 3, 3)], {"axis": -1}),
        C(op, d, "axis-1-add", [x2, idx([4, 0, 4]), _s(d, rng, 3, 3)],
          {"axis": 1, "reduce": "add"}),
        C(op, d, "empty-index", [x, idx([]), _s(d, rng, 0, 4)], {}),
        C(op, d, "views", [x, ix, _s(d, rng, 4, 4)], {}, ["T", "c", "flip"]),
    ]
    other = "float64" if d != "float64" else "float32"
    cs.append(C(op, d, f"updates-{other}", [x, ix, sample(other, (4, 4), rng, "wide")], {}))
    return cs


@builder("topk")
def _b_topk(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def s(*shape: int) -> np.ndarray:
        return sample(d, shape, rng, "ties")

    cs = [
        C(op, d, "last", [s(4, 9)], {"k": 3}),
        C(op, d, "smallest", [s(4, 9)], {"k": 4, "largest": False}),
        C(op, d, "axis0", [s(6, 5)], {"k": 2, "axis": 0}),
        C(op, d, "axis-2", [s(5, 3, 2)], {"k": 5, "axis": -3}),
        C(op, d, "k0", [s(3, 4)], {"k": 0}),
        C(op, d, "all", [s(13)], {"k": 13}),
        C(op, d, "0d", [s()], {"k": 1}),
        C(op, d, "empty", [s(0, 4)], {"k": 2}),
        C(op, d, "T", [s(5, 6)], {"k": 2, "axis": 0}, ["T"]),
        C(op, d, "flip", [s(3, 7)], {"k": 3, "largest": False}, ["flip"]),
    ]
    if d in FLOATING:
        sp = specials(d, [1.0, NAN, 2.0, INF, -INF, 2.0, NAN, 0.0])
        cs.append(C(op, d, "special", [sp], {"k": 4}))
        cs.append(C(op, d, "special-smallest", [sp], {"k": 7, "largest": False}))
    return cs


@builder("sort", "argsort")
def _b_sort(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def s(*shape: int) -> np.ndarray:
        return sample(d, shape, rng, "ties")  # ties: stability is visible (argsort)

    cs = [
        C(op, d, "last", [s(5, 8)], {}),
        C(op, d, "desc", [s(5, 8)], {"descending": True}),
        C(op, d, "axis0", [s(6, 3)], {"axis": 0}),
        C(op, d, "axis-2-desc", [s(4, 3, 2)], {"axis": -2, "descending": True}),
        C(op, d, "odd17", [s(17)], {}),
        C(op, d, "0d", [s()], {}),
        C(op, d, "empty", [s(0, 4)], {"axis": 0}),
        C(op, d, "T", [s(5, 6)], {"axis": 1}, ["T"]),
        C(op, d, "flip", [s(3, 7)], {"descending": True}, ["flip"]),
    ]
    if d in FLOATING:  # NaN last ascending, first descending
        sp = specials(d, [1.0, NAN, 2.0, INF, -INF, 2.0, NAN, 0.0, -0.0, 1.0])
        cs.append(C(op, d, "special", [sp], {}))
        cs.append(C(op, d, "special-desc", [sp], {"descending": True}))
    if d in INTEGER:
        cs.append(C(op, d, "edges", [int_edges(d)], {}))
    return cs


# ---- creation -----------------------------------------------------------------------------

def _fill_values(d: str) -> list[tuple[str, Any]]:
    if d == "bool":
        return [("true", True), ("false", False), ("int", 3)]
    if d in INTEGER:
        # Ints must fit the dtype (numpy 2's rule: 300 for int8 is an error, see
        # tests/phi_ops/test_bad_input.py); floats convert as cast does.
        info = np.iinfo(d)
        signed = [("neg-int", -3)] if info.min < 0 else []
        return [("int", 7), *signed, ("float-trunc", 2.7), ("neg-float", -2.7),
                ("max", int(info.max)), ("min", int(info.min))]
    return [("float", 2.5), ("int", 3), ("nan", NAN), ("inf", -INF), ("third", 1.0 / 3.0)]


@builder("fill")
def _b_fill(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    cs = [C(op, d, f"{n}", [], {"shape": [3, 4], "value": v, "dtype": d})
          for n, v in _fill_values(d)]
    cs.append(C(op, d, "0d", [], {"shape": [], "value": 1, "dtype": d}))
    cs.append(C(op, d, "empty", [], {"shape": [0, 3], "value": 1, "dtype": d}))
    return cs


@builder("full")
def _b_full(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    cs = [C(op, d, f"{n}", [], {"shape": [2, 3], "fill_value": v, "dtype": d})
          for n, v in _fill_values(d)]
    cs.append(C(op, d, "0d", [], {"shape": [], "fill_value": 1, "dtype": d}))
    cs.append(C(op, d, "empty", [], {"shape": [3, 0], "fill_value": 1, "dtype": d}))
    inferred = {"bool": True, "int64": 5, "float32": 2.5}
    if d in inferred:  # dtype None: bool -> bool, int -> int64, float -> float32
        cs.append(C(op, d, "inferred", [], {"shape": [2, 2], "fill_value": inferred[d]}))
    return cs


@builder("zeros", "ones")
def _b_zeros(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    cs = [
        C(op, d, "2d", [], {"shape": [3, 4], "dtype": d}),
        C(op, d, "0d", [], {"shape": [], "dtype": d}),
        C(op, d, "empty", [], {"shape": [0, 3], "dtype": d}),
        C(op, d, "int-shape", [], {"shape": 5, "dtype": d}),
    ]
    if d == "float32":
        cs.append(C(op, d, "default-dtype", [], {"shape": [2, 3]}))
    return cs


@builder("full_like", "zeros_like", "ones_like")
def _b_like(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    fv: dict[str, Any] = {"fill_value": _fill_values(d)[0][1]} if op == "full_like" else {}
    other = "int32" if d != "int32" else "float32"
    other_fv: dict[str, Any] = {"fill_value": 3} if op == "full_like" else {}
    return [
        C(op, d, "same", [_s(d, rng, 3, 4)], fv),
        C(op, d, "0d", [_s(d, rng)], fv),
        C(op, d, "empty", [_s(d, rng, 0, 2)], fv),
        C(op, d, f"to-{other}", [_s(d, rng, 2, 3)], {**other_fv, "dtype": other}),
        C(op, d, "T", [_s(d, rng, 3, 4)], fv, ["T"]),
    ]


@builder("arange")
def _b_arange(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    cs = [
        C(op, d, "start-end-step", [], {"start": 0, "end": 10, "step": 3, "dtype": d}),
        C(op, d, "end-only", [], {"start": 5, "dtype": d}),
        C(op, d, "empty", [], {"start": 5, "end": 5, "dtype": d}),
        C(op, d, "backwards", [], {"start": 2, "end": 2, "step": -1, "dtype": d}),
        # one element: the step, however large, never enters a value
        C(op, d, "one-huge-step", [], {"start": 5, "step": 1e300, "dtype": d}),
    ]
    if d not in ("uint8",):
        cs.append(C(op, d, "negative-step", [], {"start": 10, "end": -3, "step": -2,
                                                  "dtype": d}))
    if d in FLOATING:
        cs.append(C(op, d, "float-step", [], {"start": 0.5, "end": 3.0, "step": 0.25,
                                              "dtype": d}))
        cs.append(C(op, d, "tenths", [], {"start": 0.0, "end": 1.0, "step": 0.1, "dtype": d}))
    if d == "int64":
        cs.append(C(op, d, "inferred-int", [], {"start": 1, "end": 11, "step": 2}))
    if d == "float32":
        cs.append(C(op, d, "inferred-float", [], {"start": 1, "end": 3.5, "step": 0.5}))
    return cs


@builder("linspace")
def _b_linspace(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    return [
        C(op, d, "7", [], {"start": 0.0, "stop": 1.0, "num": 7, "dtype": d}),
        C(op, d, "desc", [], {"start": 5.0, "stop": -3.0, "num": 17, "dtype": d}),
        C(op, d, "one", [], {"start": 2.0, "stop": 9.0, "num": 1, "dtype": d}),
        C(op, d, "one-nan-stop", [], {"start": 2.0, "stop": NAN, "num": 1, "dtype": d}),
        C(op, d, "zero", [], {"start": 2.0, "stop": 9.0, "num": 0, "dtype": d}),
        C(op, d, "int-bounds", [], {"start": -4, "stop": 4, "num": 9, "dtype": d}),
    ]


@builder("eye")
def _b_eye(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    return [
        C(op, d, "square", [], {"n": 3, "dtype": d}),
        C(op, d, "wide", [], {"n": 3, "m": 5, "dtype": d}),
        C(op, d, "tall", [], {"n": 4, "m": 2, "dtype": d}),
        C(op, d, "empty", [], {"n": 0, "dtype": d}),
    ]


# ---- random: bit-exact against phi_ops.philox ---------------------------------------------

@builder("uniform")
def _b_uniform(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    exact: dict[str, float] = {}
    return [
        C(op, d, "default", [], {"shape": [3, 5], "seed": 0, "dtype": d}, tolerance=exact),
        C(op, d, "range", [], {"shape": [4, 7], "low": -2.0, "high": 3.0, "seed": 123,
                               "offset": 7, "dtype": d}, tolerance=exact),
        C(op, d, "big-seed-offset", [], {"shape": [33], "seed": 2**40 + 5, "offset": 2**33,
                                         "dtype": d}, tolerance=exact),
        C(op, d, "0d", [], {"shape": [], "seed": 1, "dtype": d}, tolerance=exact),
        C(op, d, "empty", [], {"shape": [0, 2], "seed": 1, "dtype": d}, tolerance=exact),
    ]


@builder("normal")
def _b_normal(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    # the streams are bit-exact; the float64 Box-Muller math goes through libm log/cos, so a
    # float64 result may differ from numpy's in the last bits (float64: the op's tolerance)
    tol: dict[str, float] | None = {} if d != "float64" else None
    return [
        C(op, d, "default", [], {"shape": [4, 5], "seed": 0, "dtype": d}, tolerance=tol),
        C(op, d, "mean-std", [], {"shape": [3, 7], "mean": 1.5, "std": 0.5, "seed": 99,
                                  "offset": 12, "dtype": d}, tolerance=tol),
        C(op, d, "0d", [], {"shape": [], "seed": 3, "dtype": d}, tolerance=tol),
        C(op, d, "empty", [], {"shape": [0], "seed": 3, "dtype": d}, tolerance=tol),
    ]


@builder("dropout")
def _b_dropout(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    x = sample(d, (6, 7), rng, "nonzero")  # no zeros: the dropped positions are visible
    return [
        C(op, d, "p0.3", [x], {"p": 0.3, "seed": 5, "offset": 11}, check="dropout_mask"),
        C(op, d, "default", [x], {}, check="dropout_mask"),
        C(op, d, "p0", [x], {"p": 0.0, "seed": 5}, check="dropout_mask"),
        C(op, d, "p1", [x], {"p": 1.0, "seed": 5}, check="dropout_mask"),
        C(op, d, "eval", [x], {"p": 0.5, "training": False}),
        C(op, d, "T", [x], {"p": 0.5, "seed": 2, "offset": 100}, ["T"], check="dropout_mask"),
        C(op, d, "0d", [sample(d, (), rng, "nonzero")], {"p": 0.5, "seed": 9}),
        C(op, d, "empty", [sample(d, (0, 3), rng)], {"p": 0.5}),
    ]


# ---- nn -----------------------------------------------------------------------------------

def _softmax_special(d: str) -> np.ndarray:
    v = np.array([[-INF, 0.0, 1.0, -INF],
                  [-INF, -INF, -INF, -INF],  # all masked: NaN
                  [NAN, 1.0, 2.0, 3.0],
                  [1000.0, 0.0, -1000.0, 5.0],
                  [INF, 1.0, 2.0, 3.0]])
    return as_dtype(v, d)


@builder("softmax", "log_softmax")
def _b_softmax(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def s(*shape: int) -> np.ndarray:
        return sample(d, shape, rng, "wide")

    cs = [
        C(op, d, "odd13x17", [s(13, 17)], {}),
        C(op, d, "axis0", [s(4, 5)], {"axis": 0}),
        C(op, d, "3d-axis1", [s(2, 3, 4)], {"axis": 1}),
        C(op, d, "0d", [s()], {}),
        C(op, d, "empty", [s(0, 5)], {"axis": -1}),
        C(op, d, "T", [s(5, 6)], {"axis": 1}, ["T"]),
        C(op, d, "step", [s(4, 6)], {"axis": -1}, ["step"]),
        C(op, d, "flip", [s(3, 7)], {"axis": 0}, ["flip"]),
        C(op, d, "special", [_softmax_special(d)], {"axis": -1}),
    ]
    if d == "float32" and op == "softmax":
        cs.append(C(op, d, "large", [sample(d, LARGE, rng)], {"axis": -1}, large=True))
    return cs


@builder("layer_norm", "rms_norm")
def _b_norm(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    ln = op == "layer_norm"

    def s(*shape: int, dtype: str = d) -> np.ndarray:
        return sample(dtype, shape, rng, "any")

    def ins(x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None) -> list[Any]:
        return [x, w, b] if ln else [x, w]

    cs = [
        C(op, d, "affine", ins(s(4, 6), s(6), s(6)), {}),
        C(op, d, "plain", ins(s(3, 5), None, None), {}),
        C(op, d, "weight-only", ins(s(3, 5), s(5), None), {}),
        C(op, d, "ndim2", ins(s(2, 3, 4), s(3, 4), s(3, 4)), {"normalized_ndim": 2}),
        C(op, d, "eps", ins(s(3, 8), s(8), s(8)), {"epsilon": 1e-2}),
        C(op, d, "T", ins(s(6, 4), s(4), s(4)), {}, ["T", "flip"]),
        C(op, d, "odd", ins(s(7, 13), s(13), s(13)), {}),
        C(op, d, "constant-row", ins(np.ones((2, 5), np_dtype(d)), None, None), {}),
        C(op, d, "empty", ins(s(0, 5), s(5), s(5)), {}),
    ]
    if d in ("float16", "bfloat16"):  # weight/bias at their own precision
        cs.append(C(op, d, "f32-weight", ins(s(3, 6), s(6, dtype="float32"),
                                             s(6, dtype="float32")), {}))
    if d in FLOATING:
        x = s(3, 4)
        x[0, 1] = np.asarray(NAN).astype(x.dtype)
        cs.append(C(op, d, "nan-row", ins(x, None, None), {}))
    return cs


@builder("embedding")
def _b_embedding(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    w = _s(d, rng, 7, 4)
    return [
        C(op, d, "2d-index", [idx(rng.integers(0, 7, (2, 3))), w]),
        C(op, d, "int32-0d", [idx(3, "int32"), w]),
        C(op, d, "1d-dups", [idx([6, 0, 6, 1]), w]),
        C(op, d, "empty", [idx(np.zeros((0,))), w]),
        C(op, d, "T-weight", [idx([1, 2]), _s(d, rng, 4, 7)], {}, ["c", "T"]),
    ]


@builder("linear")
def _b_linear(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def s(*shape: int) -> np.ndarray:
        return sample(d, shape, rng, "any")

    return [
        C(op, d, "bias", [s(4, 5), s(5, 3), s(3)]),
        C(op, d, "no-bias", [s(4, 5), s(5, 3), None]),
        C(op, d, "1d", [s(5), s(5, 3), s(3)]),
        C(op, d, "3d", [s(2, 3, 5), s(5, 4), s(4)]),
        C(op, d, "views", [s(4, 5), s(5, 3), s(3)], {}, ["T", "step", "flip"]),
        C(op, d, "empty", [s(0, 5), s(5, 3), s(3)]),
    ]


@builder("scaled_dot_product_attention")
def _b_sdpa(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def s(*shape: int) -> np.ndarray:
        return sample(d, shape, rng, "any")

    full_row_masked = np.ones((4, 6), bool)
    full_row_masked[2] = False
    return [
        C(op, d, "basic", [s(2, 4, 8), s(2, 6, 8), s(2, 6, 5), None]),
        C(op, d, "causal", [s(2, 5, 4), s(2, 5, 4), s(2, 5, 4), None], {"is_causal": True}),
        C(op, d, "causal-L<S", [s(3, 4), s(5, 4), s(5, 4), None], {"is_causal": True}),
        C(op, d, "bool-mask", [s(2, 4, 8), s(2, 6, 8), s(2, 6, 8), sample("bool", (4, 6), rng)
                               | np.eye(4, 6, dtype=bool)]),
        C(op, d, "float-mask", [s(2, 4, 8), s(2, 6, 8), s(2, 6, 8),
                                sample(d, (1, 4, 6), rng, "any")]),
        C(op, d, "f32-mask", [s(4, 8), s(6, 8), s(6, 8), sample("float32", (4, 6), rng)]),
        C(op, d, "scale", [s(3, 4), s(3, 4), s(3, 2), None], {"scale": 0.3}),
        # beyond float32: inf below float64 (scores inf/NaN, as PyTorch), finite for float64
        C(op, d, "huge-scale", [s(3, 4), s(3, 4), s(3, 2), None], {"scale": 1e300}),
        C(op, d, "batch-bcast", [s(2, 1, 4, 8), s(3, 6, 8), s(3, 6, 8), None]),
        C(op, d, "masked-row-nan", [s(4, 8), s(6, 8), s(6, 8), full_row_masked]),
        C(op, d, "views", [s(4, 8), s(6, 8), s(6, 8), None], {}, ["T", "step", "flip"]),
        C(op, d, "empty-L", [s(2, 0, 4), s(2, 3, 4), s(2, 3, 5), None]),
    ]


@builder("rotary_embedding")
def _b_rotary(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def s(*shape: int) -> np.ndarray:
        return sample(d, shape, rng, "any")

    ang = rng.uniform(0, 6.0, (3, 8))
    cos, sin = as_dtype(np.cos(ang), d), as_dtype(np.sin(ang), d)
    return [
        C(op, d, "bcast", [s(2, 3, 8), cos, sin]),
        C(op, d, "same", [s(3, 8), cos, sin]),
        C(op, d, "row-bcast", [s(2, 3, 8), cos[:1].copy(), sin[:1].copy()]),
        C(op, d, "views", [s(3, 8), cos, sin], {}, ["flip", "step", "c"]),
        C(op, d, "f32-cos-sin", [s(3, 8), as_dtype(np.cos(ang), "float32"),
                                 as_dtype(np.sin(ang), "float32")]),
        C(op, d, "empty", [s(0, 3, 8), cos, sin]),
    ]


@builder("cross_entropy")
def _b_ce(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    logits = sample(d, (6, 5), rng, "wide")
    label = idx([0, 4, -100, 2, 2, 1])
    cs = [
        C(op, d, "mean", [logits, label], {}),
        C(op, d, "sum", [logits, label], {"reduction": "sum"}),
        C(op, d, "none", [logits, label], {"reduction": "none"}),
        C(op, d, "int32-ignore2", [logits, idx([2, 2, 0, 1, 3, 4], "int32")],
          {"ignore_index": 2}),
        C(op, d, "all-ignored", [logits, idx([-100] * 6)], {}),
        C(op, d, "empty", [sample(d, (0, 5), rng), idx([])], {"reduction": "mean"}),
        C(op, d, "empty-none", [sample(d, (0, 5), rng), idx([])], {"reduction": "none"}),
        C(op, d, "T", [sample(d, (6, 5), rng, "wide"), idx([4, 0, 1, 2, 3, 3])],
          {"reduction": "none"}, ["T", "flip"]),
    ]
    return cs



@builder("cross_entropy_grad")
def _b_ce_grad(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    logits = sample(d, (6, 5), rng, "wide")
    label = idx([0, 4, -100, 2, 2, 1])

    def g(*shape: int) -> np.ndarray:
        return sample(d, shape, rng, "small")

    cs = [
        C(op, d, "mean", [logits, label, g()], {}),
        C(op, d, "sum", [logits, label, g()], {"reduction": "sum"}),
        C(op, d, "none", [logits, label, g(6)], {"reduction": "none"}),
        C(op, d, "int32-ignore2", [logits, idx([2, 2, 0, 1, 3, 4], "int32"), g()],
          {"ignore_index": 2}),
        C(op, d, "all-ignored", [logits, idx([-100] * 6), g()], {"reduction": "sum"}),
        C(op, d, "empty-none", [sample(d, (0, 5), rng), idx([]), g(0)], {"reduction": "none"}),
        C(op, d, "T", [sample(d, (6, 5), rng, "wide"), idx([4, 0, 1, 2, 3, 3]), g(6)],
          {"reduction": "none"}, ["T", "flip"]),
        C(op, d, "wide-row", [sample(d, (3, 1000), rng), idx([999, 0, 500]), g()], {}),
    ]
    return cs

@builder("softmax_grad")
def _b_softmax_grad(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def pair(*shape: int, axis: int = -1) -> list[np.ndarray]:
        x = rng.standard_normal(shape) * 2.0
        if len(shape):
            e = np.exp(x - x.max(axis=axis, keepdims=True))
            out = e / e.sum(axis=axis, keepdims=True)
        else:
            out = np.ones(())
        return [out.astype(np_dtype(d)), sample(d, shape, rng, "small")]

    cs = [
        C(op, d, "odd13x17", pair(13, 17), {}),
        C(op, d, "axis0", pair(4, 5, axis=0), {"axis": 0}),
        C(op, d, "3d-axis1", pair(2, 3, 4, axis=1), {"axis": 1}),
        C(op, d, "0d", pair(), {}),
        C(op, d, "empty", pair(0, 5), {}),
        C(op, d, "T", pair(5, 6), {"axis": 1}, ["T"]),
        C(op, d, "step", pair(4, 6), {"axis": -1}, ["step"]),
        C(op, d, "long-row", pair(3, 1500), {}),
    ]
    if d == "float32":
        cs.append(C(op, d, "large", pair(*LARGE), {"axis": -1}, large=True))
    return cs


@builder("layer_norm_grad", "rms_norm_grad")
def _b_norm_grad(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def s(*shape: int, dtype: str = d) -> np.ndarray:
        return sample(dtype, shape, rng, "any")

    cs = [
        C(op, d, "weight", [s(4, 6), s(4, 6), s(6)], {}),
        C(op, d, "plain", [s(3, 5), s(3, 5), None], {}),
        C(op, d, "ndim2", [s(2, 3, 4), s(2, 3, 4), s(3, 4)], {"normalized_ndim": 2}),
        C(op, d, "eps", [s(3, 8), s(3, 8), s(8)], {"epsilon": 1e-2}),
        C(op, d, "T", [s(6, 4), s(6, 4), s(4)], {}, ["T", "flip"]),
        C(op, d, "odd", [s(7, 13), s(7, 13), s(13)], {}),
        C(op, d, "long-row", [s(2, 1500), s(2, 1500), s(1500)], {}),
        C(op, d, "constant-row", [np.ones((2, 5), np_dtype(d)), s(2, 5), None], {}),
        C(op, d, "empty", [s(0, 5), s(0, 5), s(5)], {}),
    ]
    if d in ("float16", "bfloat16"):  # the weight at its own precision
        cs.append(C(op, d, "f32-weight", [s(3, 6), s(3, 6), s(6, dtype="float32")], {}))
    if d == "float32":
        cs.append(C(op, d, "large", [s(*LARGE), s(*LARGE), s(LARGE[-1])], {}, large=True))
    return cs


@builder("adam_update")
def _b_adam_update(op: str, d: str, rng: np.random.Generator) -> list[Case]:
    def ins(*shape: int) -> list[np.ndarray]:
        return [sample(d, shape, rng), sample(d, shape, rng, "small"),
                sample(d, shape, rng, "small"), sample(d, shape, rng, "positive")]

    adam = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lr": 1e-3}
    cs = [
        C(op, d, "adam", ins(37), adam),
        C(op, d, "adamw", ins(4, 9), dict(adam, decay=0.99, lr=0.05)),
        C(op, d, "first-step", [sample(d, (5, 3), rng), sample(d, (5, 3), rng, "small"),
                                np.zeros((5, 3), np_dtype(d)), np.zeros((5, 3), np_dtype(d))],
          {"beta1": 0.9, "beta2": 0.99, "epsilon": 1e-6, "lr": 0.1}),
        C(op, d, "0d", ins(), adam),
        C(op, d, "empty", ins(0, 4), adam),
        C(op, d, "views", ins(6, 5), adam, ["T", "flip", "step"]),
    ]
    if d == "float32":
        cs.append(C(op, d, "large", ins(*LARGE), dict(adam, decay=0.999), large=True))
    return cs

# ---- the full list ------------------------------------------------------------------------

def cases_for(op: str, dtype: str, seed: int | None = None) -> list[Case]:
    """The cases of (op, dtype). Inputs are drawn from a generator keyed by (op, dtype), and by
    `seed` when one is given (hwcheck's --seed): the same arguments give the same inputs."""
    fn = BUILDERS.get(op)
    if fn is None:
        return []
    return fn(op, dtype, rng_for(op, dtype) if seed is None else rng_for(op, dtype, seed))


def all_cases() -> list[Case]:
    """Every case of every op of ops.yaml and every dtype it lists (in ops.yaml order)."""
    out: list[Case] = []
    for name, op in OPS.items():
        for d in op.dtypes:
            out.extend(cases_for(name, d))
    return out


# ---- device side: numpy <-> hwport, in a given layout ----------------------------------------

def to_device(arr: Any, place: Any, layout: str = "c") -> Any:
    """An hwport tensor on `place` holding `arr`'s values, given as `layout`:
    "c" contiguous; "T" the `.T` view of a contiguous copy with the dims reversed; "step" every
    2nd element along every dim of a twice-as-large tensor (`t[::2, ::2]`); "flip" negative
    strides along every dim (`t[::-1, ::-1]` of the flipped copy). 0-d arrays (and "T" of 1-D
    ones) are always contiguous."""
    import hwport

    arr = np.asarray(arr)
    if layout == "c" or arr.ndim == 0 or (layout == "T" and arr.ndim < 2):
        return hwport.to_tensor(arr, place=place)
    if layout == "T":
        return hwport.to_tensor(np.ascontiguousarray(arr.T), place=place).T
    if layout == "step":
        base = np.empty(tuple(2 * d for d in arr.shape), arr.dtype)
        base[...] = np.asarray(123).astype(arr.dtype)  # visible if a kernel ignores strides
        every2 = (slice(None, None, 2),) * arr.ndim
        base[every2] = arr
        return hwport.to_tensor(base, place=place)[every2]
    if layout == "flip":
        rev = (slice(None, None, -1),) * arr.ndim
        return hwport.to_tensor(np.ascontiguousarray(arr[rev]), place=place)[rev]
    raise ValueError(f"unknown layout {layout!r}")


def device_inputs(case: Case, place: Any) -> list[Any]:
    """The case's inputs as hwport tensors on `place`, in the case's layouts."""
    out: list[Any] = []
    for i, (spec, v) in enumerate(zip(OPS[case.op].inputs, case.inputs, strict=True)):
        if v is None:
            out.append(None)
        elif spec.variadic:
            out.append([to_device(a, place, case.layout(i)) for a in v])
        else:
            out.append(to_device(v, place, case.layout(i)))
    return out


def run_op(case: Case, place: Any) -> Any:
    """Calls `hwport.ops.<op>` (the op library's function) on the case's inputs on `place`
    (creation ops get place=), in the public function's form (Paddle's parameter names and
    order, ops.yaml `api`). Not `hwport.<op>`: hwport.uniform / normal take seed=0 from the
    global generator, where the op's seed 0 is Philox key 0, as its reference computes."""
    import hwport.ops

    from .api_args import public_call

    fn = getattr(hwport.ops, case.op)
    args, kwargs = public_call(OPS[case.op], device_inputs(case, place), dict(case.attrs))
    if not OPS[case.op].inputs:
        kwargs["place"] = place
    return fn(*args, **kwargs)


def to_numpy(result: Any) -> Any:
    """A tensor as a numpy array; a tuple/list of tensors as a tuple of arrays."""
    if isinstance(result, tuple | list):
        return tuple(r.numpy() for r in result)
    return result.numpy()


def describe(case: Case) -> str:
    """The inputs (dtype, shape, layout) and attributes of a case, for assertion messages."""
    parts = []
    for i, (spec, v) in enumerate(zip(OPS[case.op].inputs, case.inputs, strict=True)):
        if v is None:
            parts.append(f"{spec.name}=None")
        elif isinstance(v, list):
            parts.append(f"{spec.name}=[" + ", ".join(
                f"{dname(a)}{list(np.shape(a))}" for a in v) + f"] ({case.layout(i)})")
        else:
            parts.append(f"{spec.name}={dname(v)}{list(np.shape(v))} ({case.layout(i)})")
    return f"{case.id}: {', '.join(parts) or 'no inputs'}; attrs {case.attrs}"
