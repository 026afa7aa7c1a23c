"""The decompositions of the composite ops (phi_ops/decompositions.py): every composite of
ops.yaml has one whose signature takes the op's inputs and attributes, and each one, run
directly on custom:cpu tensors with the attributes normalized as the dispatcher passes them,
matches numpy within the op's tolerance, returns views where the op promises them, and never
calls its own op."""

from __future__ import annotations

import ast
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from hwport.phi_ops import decompositions
from hwport.phi_ops.schema import load_ops

OPS = load_ops()
COMPOSITES = sorted(name for name, op in OPS.items() if op.kind == "composite")
BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = ("float16", "bfloat16", "float32", "float64")


def _gets_place(name: str) -> bool:
    """The dispatcher adds place= for creation/random ops without inputs and the like-ops."""
    op = OPS[name]
    return (op.category in ("creation", "random") and not op.inputs) or name.endswith("_like")


# ---- (a) every composite has its function, with the op's signature ------------------------

@pytest.mark.parametrize("name", COMPOSITES)
def test_decomposition_exists_with_the_ops_signature(name):
    op = OPS[name]
    fn = getattr(decompositions, op.decompose, None)
    assert callable(fn), f"phi_ops/decompositions.py has no function {op.decompose!r}"
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    positional = [p for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert [p.name for p in positional] == [i.name for i in op.inputs], (
        f"{name}: the positional parameters must be the inputs in ops.yaml order")
    expected = {a.name for a in op.attrs} | ({"place"} if _gets_place(name) else set())
    keywords = {p.name for p in params if p.kind == p.KEYWORD_ONLY}
    assert keywords == expected, f"{name}: keyword parameters {keywords} != {expected}"
    # The dispatcher's call: inputs positionally (a list for a variadic input, None for an
    # absent optional one), then every attr (and place) by keyword.
    args = [[object()] if i.variadic else (None if i.optional else object())
            for i in op.inputs]
    sig.bind(*args, **dict.fromkeys(expected, object()))
    assert fn.__doc__, f"{name}: the decomposition needs a docstring saying what it computes"


def test_decompositions_use_only_the_public_api():
    """Only the op API (hwport, hwport.ops) and pure helpers: never the runtime core or the
    dispatcher (a lower layer, and a path around the kernel lookup)."""
    allowed = {"__future__", "math", "collections.abc", "typing", "types", "hwport",
               "hwport.ops", ".promotion"}
    tree = ast.parse(inspect.getsource(decompositions))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {"." * node.level + (node.module or "")}
        else:
            continue
        assert names <= allowed, f"line {node.lineno}: imports {names - allowed}"


# ---- backend: the real API (this module's functions are the only place that touches it) ----

def _api() -> Any:
    """The generated op API (hwport.ops), or skip while it is not importable."""
    return pytest.importorskip(
        "hwport.ops", reason="hwport.ops (the op API generated from ops.yaml) is not importable")


def _tensor(arr: Any) -> Any:
    import hwport

    return hwport.to_tensor(np.asarray(arr), place="custom:cpu")


def _numpy(t: Any) -> np.ndarray:
    return t.numpy()


def _place() -> Any:
    import hwport

    return hwport.CustomPlace("cpu", 0)


def _dtype(name: str) -> Any:
    import hwport

    return hwport.DType.__members__[name]


# ---- numpy side ---------------------------------------------------------------------------

def npdt(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def f64(a: np.ndarray) -> np.ndarray:
    """The oracle computes over float64 upcasts of floating inputs."""
    return a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == BF16 else a


def like(want: Any, a: np.ndarray) -> np.ndarray:
    """want cast to a's dtype (the output dtype of same-dtype ops)."""
    with np.errstate(all="ignore"):
        return np.asarray(want).astype(a.dtype)


def sample(name: str, shape: tuple[int, ...], seed: int = 0, scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if name in ("int8", "uint8", "int16", "int32", "int64"):
        lo = 0 if name == "uint8" else -20
        return rng.integers(lo, 20, size=shape).astype(name)
    return (rng.standard_normal(shape) * scale).astype(npdt(name))


def _close(got: np.ndarray, want: np.ndarray, op: str, what: str) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    name = "bfloat16" if got.dtype == BF16 else got.dtype.name
    tol = OPS[op].tolerance.get(name, {}) if name in FLOATS else {}
    if not tol or name not in FLOATS:
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    np.testing.assert_array_equal(nan_g, nan_w, err_msg=f"{what}: NaN positions")
    g, w = g[~nan_g], w[~nan_w]
    inf = np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{what}: infinities")
    g, w = g[~inf], w[~inf]
    if "ulp" in tol:
        spacing = np.spacing(np.abs(w).astype(npdt(name)).astype(np.float64 if name == "float64"
                                                                  else np.float32))
        bad = np.abs(g - w) > tol["ulp"] * spacing.astype(np.float64)
        assert not bad.any(), f"{what}: more than {tol['ulp']} ulp: {g[bad]} vs {w[bad]}"
    else:
        np.testing.assert_allclose(g, w, rtol=tol["rtol"], atol=tol["atol"], err_msg=what)


# ---- the cases ----------------------------------------------------------------------------

@dataclass
class Case:
    """One direct call of a decomposition: numpy inputs (a list for a variadic input, None for
    an absent optional one), attrs as the dispatcher passes them (normalized; dtype attrs by
    name), the numpy result, and an optional check of the result tensors against the inputs
    (views)."""
    op: str
    inputs: list[Any]
    attrs: dict[str, Any]
    expect: Callable[..., Any]
    id: str = ""
    check: Callable[..., None] | None = None
    ref_attrs: dict[str, Any] | None = None  # the user's form, for phi_ops.reference


CASES: list[Case] = []


def case(op: str, inputs: list[Any], attrs: dict[str, Any] | None = None,
         expect: Callable[..., Any] | None = None, id: str = "",
         check: Callable[..., None] | None = None,
         ref_attrs: dict[str, Any] | None = None) -> None:
    assert expect is not None
    CASES.append(Case(op, inputs, attrs or {}, expect, id, check, ref_attrs))


def _unary_float_cases() -> None:
    ref = {
        "log2": lambda x: np.log2(f64(x)),
        "rsqrt": lambda x: 1.0 / np.sqrt(f64(x)),
        "tan": lambda x: np.tan(f64(x)),
        "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-f64(x))),
        "silu": lambda x: f64(x) / (1.0 + np.exp(-f64(x))),
        "reciprocal": lambda x: 1.0 / f64(x),
    }
    pos = lambda d: np.abs(sample(d, (4, 5), 1, 3.0)) + np.asarray(0.1, npdt(d))  # noqa: E731
    inputs = {
        "log2": lambda d: np.concatenate([pos(d).reshape(-1), np.array(
            [1, 2, 8, 0.5, 0, -1, np.inf], npdt(d))]),
        "rsqrt": lambda d: np.concatenate([pos(d).reshape(-1), np.array([0, 4, np.inf],
                                                                       npdt(d))]),
        "tan": lambda d: np.clip(sample(d, (4, 5), 2), -1.4, 1.4).astype(npdt(d)),
        "sigmoid": lambda d: np.concatenate([sample(d, (20,), 3, 5.0), np.array(
            [-1000, -60, -1, 0, 1, 60, 1000, np.nan, -np.inf, np.inf], np.float64).astype(
            npdt(d))]),
        "silu": lambda d: np.concatenate([sample(d, (20,), 4, 5.0), np.array(
            [-1000, -60, 0, 60, 1000, np.nan], np.float64).astype(npdt(d))]),
        "reciprocal": lambda d: np.concatenate([sample(d, (12,), 5), np.array(
            [0, -0.0, np.inf, 3], npdt(d))]),
    }
    for op, fn in ref.items():
        for d in FLOATS:
            x = inputs[op](d)
            case(op, [x], {}, (lambda x, fn=fn: like(fn(x), x)), id=d)
    for d in FLOATS:
        x = sample(d, (3, 7), 6, 3.0)
        exact = lambda x: like(  # noqa: E731
            0.5 * f64(x) * (1 + np.vectorize(math.erf)(f64(x) / math.sqrt(2))), x)
        tanh = lambda x: like(0.5 * f64(x) * (1 + np.tanh(  # noqa: E731
            math.sqrt(2 / math.pi) * (f64(x) + 0.044715 * f64(x) ** 3))), x)
        case("gelu", [x], {"approximate": False}, exact, id=f"{d}-exact")
        case("gelu", [x], {"approximate": True}, tanh, id=f"{d}-tanh")
        # the VJPs against central differences of the forms above, in float64
        g = sample(d, (3, 7), 61)
        for vjp, form in (("gelu_grad", exact), ("gelu_tanh_grad", tanh)):
            def by_differences(x, g, form=form, h=1e-3):
                # the five-point stencil: error O(h^4), below float64's tolerance
                f = lambda t: form(f64(x) + t * h).astype(np.float64)  # noqa: E731
                slope = (8 * (f(1) - f(-1)) - (f(2) - f(-2))) / (12 * h)
                return like(f64(g) * slope, x)
            case(vjp, [x, g], {}, by_differences, id=d)

    def softplus_ref(x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
        z = f64(x) * beta
        with np.errstate(over="ignore"):
            soft = np.log1p(np.exp(z)) / beta
        return like(np.where(z > threshold, f64(x), soft), x)

    for d in FLOATS:
        x = np.concatenate([sample(d, (16,), 7, 4.0),
                            np.array([-100, -30, 0, 9.9, 10, 10.1, 30, 100], npdt(d))])
        for beta, thr in ((1.0, 20.0), (2.0, 10.0), (0.5, 1000.0)):
            case("softplus", [x], {"beta": beta, "threshold": thr},
                 (lambda x, b=beta, t=thr: softplus_ref(x, b, t)), id=f"{d}-{beta}-{thr}")


def _elementwise_cases() -> None:
    for d in ("int8", "int32", "int64", "float32", "float16", "float64"):
        x = sample(d, (3, 4), 8, 5.0)
        if d.startswith("float"):
            x = np.concatenate([x.reshape(-1), np.array([np.nan, -np.inf, -0.0], npdt(d))])
        case("relu", [x], {}, lambda x: like(np.maximum(f64(x), 0), x), id=d)
    for d in ("int16", "uint8", "float32", "bfloat16"):
        x = sample(d, (3, 4), 9, 5.0)
        case("square", [x], {}, lambda x: like(f64(x) * f64(x), x), id=d)
    for d in ("float32", "float16", "int32", "bool"):
        x = sample(d, (10,), 10)
        if d.startswith("float"):
            x = np.concatenate([x, np.array([np.nan, np.inf, -np.inf], npdt(d))])
        case("isfinite", [x], {}, lambda x: np.isfinite(f64(x)), id=d)
    pairs = [
        (sample("int32", (3, 4), 11), sample("int32", (4,), 12), "int32-broadcast"),
        (np.array([1.0, np.nan, 2.0, 3.0], np.float32), np.array([1.0, 1.0, np.nan, 4.0],
                                                                 np.float32), "float32-nan"),
        (sample("int64", (2, 1), 13), sample("float32", (3,), 14), "int64-float32"),
        (sample("bool", (5,), 15), sample("bool", (5,), 16), "bool"),
    ]
    for x, y, name in pairs:
        case("greater_than", [x, y], {}, lambda x, y: np.greater(f64(x), f64(y)), id=name)
        case("greater_equal", [x, y], {}, lambda x, y: np.greater_equal(f64(x), f64(y)),
             id=name)
    xf = np.concatenate([sample("float32", (12,), 17, 3.0), np.array([np.nan, np.inf],
                                                                    np.float32)])
    for lo, hi in ((-1.0, 1.0), (None, 0.5), (-0.5, None), (None, None), (1.0, -1.0)):
        case("clip", [xf], {"min": lo, "max": hi},
             (lambda x, lo=lo, hi=hi: like(np.clip(f64(x), lo, hi), x)
              if (lo, hi) != (None, None) else x.copy()), id=f"float32-{lo}-{hi}")
    xh = sample("float16", (12,), 18, 3.0)
    case("clip", [xh], {"min": -1.5, "max": 2.0},
         lambda x: like(np.clip(f64(x), -1.5, 2.0), x), id="float16")
    xi = np.arange(-6, 7, dtype=np.int32)
    for lo, hi in ((-2.5, 3.5), (1.5, None), (None, -1.5), (-2.0, 2.0), (-math.inf, 4.0),
                   (None, math.inf)):
        case("clip", [xi], {"min": lo, "max": hi},
             (lambda x, lo=lo, hi=hi: np.clip(x.astype(np.float64), lo, hi).astype(x.dtype)),
             id=f"int32-{lo}-{hi}")
    case("clip", [xi], {"min": math.inf, "max": None},
         lambda x: np.full_like(x, np.iinfo(np.int32).max), id="int32-min-inf")
    case("clip", [xi], {"min": math.nan, "max": 3}, lambda x: np.clip(x, 0, 3),
         id="int32-nan-is-0")
    xu = np.array([0, 3, 100, 255], np.uint8)
    case("clip", [xu], {"min": -5.0, "max": 300.0}, lambda x: x.copy(), id="uint8-beyond")
    case("clip", [xu], {"min": 4.0, "max": 99.0},
         lambda x: np.clip(x, 4, 99).astype(np.uint8), id="uint8")
    big = np.array([2**62 + 1, -(2**62) - 1, 5], np.int64)
    case("clip", [big], {"min": -(2.0**61), "max": 2.0**61},
         lambda x: np.clip(x, -(2**61), 2**61), id="int64-exact")


def _reduction_cases() -> None:
    x = sample("float32", (3, 4, 5), 20, 2.0)
    for axis, keep in (([1], False), ([0, 2], True), ([0, 1, 2], False), ([2], True)):
        sid = f"{axis}-{keep}"
        ax = tuple(axis)
        case("mean", [x], {"axis": axis, "keepdim": keep},
             lambda x, ax=ax, k=keep: like(np.mean(f64(x), axis=ax, keepdims=k), x), id=sid)
        for unbiased in (True, False):
            dd = int(unbiased)
            case("var", [x], {"axis": axis, "keepdim": keep, "unbiased": unbiased},
                 lambda x, ax=ax, k=keep, dd=dd: like(np.var(f64(x), axis=ax, keepdims=k,
                                                             ddof=dd), x),
                 id=f"{sid}-{unbiased}")
            case("std", [x], {"axis": axis, "keepdim": keep, "unbiased": unbiased},
                 lambda x, ax=ax, k=keep, dd=dd: like(np.std(f64(x), axis=ax, keepdims=k,
                                                             ddof=dd), x),
                 id=f"{sid}-{unbiased}")
    for d in ("float16", "bfloat16", "float64"):
        xd = sample(d, (4, 6), 21, 3.0)
        case("mean", [xd], {"axis": [1], "keepdim": False},
             lambda x: like(np.mean(f64(x), axis=1), x), id=d)
        case("var", [xd], {"axis": [0, 1], "keepdim": False, "unbiased": True},
             lambda x: like(np.var(f64(x), ddof=1), x), id=d)
        case("std", [xd], {"axis": [0], "keepdim": True, "unbiased": False},
             lambda x: like(np.std(f64(x), axis=0, keepdims=True), x), id=d)
    big = np.full((2, 3000), 60.0, np.float16)  # the sum overflows float16; the mean does not
    case("mean", [big], {"axis": [1], "keepdim": False},
         lambda x: like(np.mean(f64(x), axis=1), x), id="float16-no-overflow")
    one = sample("float32", (3, 1), 22)
    case("var", [one], {"axis": [1], "keepdim": False, "unbiased": True},
         lambda x: np.full((3,), np.nan, np.float32), id="single-unbiased-nan")
    case("std", [one], {"axis": [1], "keepdim": False, "unbiased": False},
         lambda x: np.zeros((3,), np.float32), id="single-biased")
    empty = np.zeros((0, 3), np.float32)
    case("mean", [empty], {"axis": [0], "keepdim": False},
         lambda x: np.full((3,), np.nan, np.float32), id="empty")
    case("mean", [np.float32(2.5)], {"axis": [], "keepdim": False},
         lambda x: np.asarray(x).copy(), id="0-d")

    for d, x in (("bool", sample("bool", (3, 4), 23)), ("int32", sample("int32", (3, 4), 24)),
                 ("float32", np.array([[0, np.nan, 0], [0, 0, 0], [1, 2, -3]], np.float32))):
        for axis, keep in (([1], False), ([0], True), ([0, 1], False)):
            ax = tuple(axis)
            case("any", [x], {"axis": axis, "keepdim": keep},
                 lambda x, ax=ax, k=keep: np.any(x, axis=ax, keepdims=k),
                 id=f"{d}-{axis}-{keep}")
            case("all", [x], {"axis": axis, "keepdim": keep},
                 lambda x, ax=ax, k=keep: np.all(x, axis=ax, keepdims=k),
                 id=f"{d}-{axis}-{keep}")
    for op, fn in (("any", np.any), ("all", np.all)):
        case(op, [np.zeros((0, 4), np.int32)], {"axis": [0], "keepdim": False},
             lambda x, fn=fn: fn(x, axis=0), id="empty")

    def lse(x: np.ndarray, ax: tuple[int, ...], keep: bool) -> np.ndarray:
        a = f64(x)
        with np.errstate(all="ignore"):
            m = np.max(a, axis=ax, keepdims=True) if a.size else np.zeros([1] * a.ndim)
            m = np.where(np.isfinite(m), m, 0)
            out = np.log(np.sum(np.exp(a - m), axis=ax, keepdims=True)) + m
        return like(out if keep else np.squeeze(out, axis=ax), x)

    xl = sample("float32", (3, 6), 25, 5.0) + np.float32(1000)
    xl[1] = -np.inf
    xl[2, 3] = np.inf
    for axis, keep in (([1], False), ([0, 1], True), ([0], False)):
        case("logsumexp", [xl], {"axis": axis, "keepdim": keep},
             lambda x, ax=tuple(axis), k=keep: lse(x, ax, k), id=f"{axis}-{keep}")
    for d in ("float16", "bfloat16", "float64"):
        xd = sample(d, (4, 5), 26, 4.0)
        case("logsumexp", [xd], {"axis": [1], "keepdim": True},
             lambda x: lse(x, (1,), True), id=d)
    case("logsumexp", [np.zeros((2, 0), np.float32)], {"axis": [1], "keepdim": False},
         lambda x: np.full((2,), -np.inf, np.float32), id="empty")


def _strides_of(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, s = [], 1
    for d in reversed(shape):
        out.insert(0, s)
        s *= max(d, 1)
    return tuple(out)


def _shape_cases() -> None:
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)

    def is_view(expect_strides: Callable[[Any], tuple[int, ...]],
                offset: Callable[[Any], int] = lambda t: t._offset) -> Callable[..., None]:
        def check(out: Any, t: Any) -> None:
            assert tuple(out.strides) == tuple(expect_strides(t)), "not the expected view"
            assert out._offset == offset(t)
        return check

    case("reshape", [x], {"shape": [4, 6]}, lambda x: x.reshape(4, 6), id="contiguous",
         check=is_view(lambda t: (6, 1)))
    case("reshape", [x], {"shape": [24]}, lambda x: x.reshape(24), id="flat")
    case("reshape", [np.float32(3)], {"shape": [1, 1]}, lambda x: np.reshape(x, (1, 1)),
         id="0-d")
    case("reshape", [np.zeros((0, 4), np.float32)], {"shape": [2, 0, 3]},
         lambda x: x.reshape(2, 0, 3), id="empty")
    case("transpose", [x], {"perm": [2, 0, 1]}, lambda x: np.transpose(x, (2, 0, 1)),
         check=is_view(lambda t: (1, 12, 4)), id="perm")
    case("transpose", [x], {"perm": None}, lambda x: x.T, check=is_view(lambda t: (1, 4, 12)),
         id="none")
    case("flatten", [x], {"start_axis": 1, "stop_axis": 2}, lambda x: x.reshape(2, 12),
         check=is_view(lambda t: (12, 1)), id="1-2")
    case("flatten", [x], {"start_axis": 0, "stop_axis": 2}, lambda x: x.reshape(24), id="all")
    case("flatten", [np.float64(7)], {"start_axis": 0, "stop_axis": 0},
         lambda x: np.reshape(x, (1,)), id="0-d")
    y = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
    case("squeeze", [y], {"axis": []}, lambda y: y.reshape(3, 2), id="all",
         check=is_view(lambda t: (2, 1)))
    case("squeeze", [y], {"axis": [2]}, lambda y: y.reshape(1, 3, 2), id="one")
    case("squeeze", [y], {"axis": [0, 1]}, lambda y: y.reshape(3, 1, 2), id="keeps-non-1")
    case("unsqueeze", [x], {"axis": [0, 4]}, lambda x: x[None, ..., None], id="0-4")
    case("unsqueeze", [x], {"axis": [2]}, lambda x: x[:, :, None], id="middle")
    case("unsqueeze", [np.float32(1)], {"axis": [0]}, lambda x: np.reshape(x, (1,)), id="0-d")
    col = np.arange(3, dtype=np.float16).reshape(3, 1)
    case("expand", [col], {"shape": [2, 3, 4]}, lambda c: np.broadcast_to(c, (2, 3, 4)),
         check=is_view(lambda t: (0, 1, 0)), id="broadcast")
    case("expand", [col], {"shape": [3, 0]}, lambda c: np.broadcast_to(c, (3, 0)), id="to-0")
    parts = [sample("int32", (2, 3), i) for i in range(3)]
    case("stack", [parts], {"axis": 1}, lambda xs: np.stack(xs, axis=1), id="axis1")
    case("stack", [parts], {"axis": 2}, lambda xs: np.stack(xs, axis=2), id="last")
    mixed = [sample("int32", (4,), 1), sample("float32", (4,), 2)]
    case("stack", [mixed], {"axis": 0}, lambda xs: np.stack(
        [xs[0].astype(np.float32), xs[1]]), id="promotes")
    z = np.arange(12, dtype=np.float32).reshape(2, 6)
    case("split", [z], {"sections": [2, 1, 3], "axis": 1},
         lambda z: np.split(z, [2, 3], axis=1), id="sizes",
         check=lambda outs, t: [o._offset for o in outs] == [t._offset + s for s in (0, 2, 3)])
    case("split", [z], {"sections": [1, 1], "axis": 0}, lambda z: np.split(z, 2, axis=0),
         id="rows")
    case("split", [z], {"sections": [3], "axis": 1}, lambda z: np.split(z, 3, axis=1),
         id="count", ref_attrs={"sections": 3, "axis": 1})
    case("split", [z], {"sections": [6], "axis": 1}, lambda z: [z.copy()], id="one-part")
    case("split", [z], {"sections": [0, 6], "axis": 1}, lambda z: [z[:, :0], z], id="empty")
    w = np.arange(30, dtype=np.int64).reshape(5, 6)
    sl = [slice(1, 4), slice(None, None, -2)]
    norm = [s.indices(d) for s, d in zip(sl, w.shape, strict=True)]
    case("slice", [w], {"axes": [0, 1], "starts": [n[0] for n in norm],
                        "ends": [n[1] for n in norm], "strides": [n[2] for n in norm]},
         lambda w: w[1:4, ::-2], check=is_view(lambda t: (6, -2), lambda t: t._offset + 6 + 5),
         id="neg-step", ref_attrs={"axes": [0, 1], "starts": [1, 5], "ends": [4, -7],
                                   "strides": [1, -2]})
    case("slice", [w], {"axes": [1], "starts": [1], "ends": [6], "strides": []},
         lambda w: w[:, 1:], id="default-strides")
    case("slice", [w], {"axes": [0], "starts": [4], "ends": [2], "strides": [1]},
         lambda w: w[4:2], id="empty")
    case("slice", [w], {"axes": [1], "starts": [4], "ends": [0], "strides": [-3]},
         lambda w: w[:, 4:0:-3], id="neg-step-stop")
    case("flip", [x], {"axis": [0, 2]}, lambda x: np.flip(x, (0, 2)),
         check=is_view(lambda t: (-12, 4, -1), lambda t: t._offset + 12 + 3), id="0-2")
    case("flip", [np.zeros((0, 3), np.float32)], {"axis": [0]}, lambda x: x.copy(),
         id="empty")
    case("tile", [parts[0]], {"repeats": [2, 1, 3]}, lambda a: np.tile(a, (2, 1, 3)),
         id="more-dims")
    case("tile", [parts[0]], {"repeats": [1, 2]}, lambda a: np.tile(a, 2), id="padded")
    case("tile", [parts[0]], {"repeats": [0, 1]}, lambda a: np.tile(a, (0, 1)), id="zero")
    case("roll", [x], {"shifts": [5], "axis": []}, lambda x: np.roll(x, 5), id="flat")
    case("roll", [x], {"shifts": [1, -2], "axis": [0, 2]},
         lambda x: np.roll(x, (1, -2), axis=(0, 2)), id="axes")
    case("roll", [x], {"shifts": [3], "axis": [1]}, lambda x: x.copy(), id="full-turn")
    case("roll", [x], {"shifts": [7, -1], "axis": [2, 2]},
         lambda x: np.roll(x, (7, -1), axis=(2, 2)), id="same-axis-twice")
    for d in ("float32", "bool", "int8"):
        m = sample(d, (2, 3, 4), 30, 3.0)
        for diag in (0, 1, -1, 5, -5):
            case("tril", [m], {"diagonal": diag}, lambda m, k=diag: np.tril(m, k),
                 id=f"{d}-{diag}")
            case("triu", [m], {"diagonal": diag}, lambda m, k=diag: np.triu(m, k),
                 id=f"{d}-{diag}")
    nan_m = np.full((3, 3), np.nan, np.float32)
    case("tril", [nan_m], {"diagonal": 0}, np.tril, id="nan-above-is-zero")


def _index_cases() -> None:
    x = sample("float32", (4, 3), 40)
    case("index_select", [x, np.array([3, 0, 3], np.int64)], {"axis": 0},
         lambda x, i: np.take(x, i, axis=0), id="rows")
    case("index_select", [x, np.array([2, 1], np.int32)], {"axis": 1},
         lambda x, i: np.take(x, i, axis=1), id="cols-int32")
    t = np.array([[3, 1, 3, 2, 1, 5], [0, 0, -1, 4, 4, 4]], np.float32)
    for largest in (True, False):
        for axis, k in ((1, 3), (0, 1), (1, 0), (1, 6)):
            def want(t: np.ndarray, axis: int = axis, k: int = k,
                     largest: bool = largest) -> tuple[np.ndarray, np.ndarray]:
                order = np.argsort(-t if largest else t, axis=axis, kind="stable")
                idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
                return np.take_along_axis(t, idx, axis=axis), idx
            case("topk", [t], {"k": k, "axis": axis, "largest": largest}, want,
                 id=f"{largest}-{axis}-{k}")
    ti = np.array([5, -3, 7, 7, 0], np.int16)
    case("topk", [ti], {"k": 2, "axis": 0, "largest": True},
         lambda t: (np.array([7, 7], np.int16), np.array([2, 3], np.int64)), id="int16")
    for d in ("float32", "int64", "float16"):
        s = sample(d, (3, 5), 41, 4.0)
        for axis in (0, 1):
            for desc in (False, True):
                case("sort", [s], {"axis": axis, "descending": desc},
                     lambda s, a=axis, dd=desc: np.take_along_axis(
                         s, np.argsort(-f64(s) if dd else s, axis=a, kind="stable"), axis=a),
                     id=f"{d}-{axis}-{desc}")


def _creation_cases() -> None:
    for shape, value, d in (([2, 3], 1.5, "float32"), ([4], 7, "int32"), ([2, 2], True, "bool"),
                            ([], -2.25, "float64"), ([0, 3], 1.0, "float16")):
        case("full", [], {"shape": shape, "fill_value": value, "dtype": d},
             lambda v=value, s=shape, d=d: np.full(s, v, npdt(d)), id=f"{d}")
    for op, fn in (("zeros", np.zeros), ("ones", np.ones)):
        for d in ("float64", "int8", "bool", "bfloat16"):
            case(op, [], {"shape": [3, 2], "dtype": d},
                 lambda fn=fn, d=d: fn((3, 2), npdt(d)), id=d)
    x = sample("float32", (2, 3), 50)
    case("full_like", [x], {"fill_value": 2.5, "dtype": "float32"},
         lambda x: np.full_like(x, 2.5), id="same")
    case("full_like", [x], {"fill_value": 3, "dtype": "int32"},
         lambda x: np.full(x.shape, 3, np.int32), id="int32")
    case("zeros_like", [x], {"dtype": "float32"}, np.zeros_like, id="same")
    case("ones_like", [x], {"dtype": "int64"}, lambda x: np.ones(x.shape, np.int64), id="int64")
    for start, stop, num, d in ((0.0, 1.0, 5, "float32"), (-3.0, 7.0, 11, "float64"),
                                (2.0, 2.0, 3, "float32"), (1.0, 5.0, 1, "float64"),
                                (1.0, 5.0, 0, "float32"), (0.1, 0.7, 7, "float64"),
                                (10.0, -10.0, 6, "float16")):
        case("linspace", [], {"start": start, "stop": stop, "num": num, "dtype": d},
             lambda a=start, b=stop, n=num, d=d: np.linspace(a, b, n).astype(npdt(d)),
             id=f"{start}-{stop}-{num}-{d}")
    for n, m, d in ((3, 4, "int32"), (2, 2, "float32"), (4, 1, "bool"), (0, 3, "float64")):
        case("eye", [], {"n": n, "m": m, "dtype": d},
             lambda n=n, m=m, d=d: np.eye(n, m, dtype=npdt(d)), id=f"{n}-{m}-{d}")


def _softmax_ref(x: np.ndarray, axis: int) -> np.ndarray:
    a = f64(x)
    e = np.exp(a - np.max(a, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _optimizer_cases() -> None:
    def adam(p, g, m, v, b1, b2, eps, lr, decay):
        a, gg, mm, vv = (f64(t) for t in (p, g, m, v))
        mm = mm * b1 + gg * (1 - b1)
        vv = vv * b2 + gg * gg * (1 - b2)
        return (like(a * decay - mm / (np.sqrt(vv) + eps) * lr, p), like(mm, p), like(vv, p))

    for d in ("float32", "float64", "float16", "bfloat16"):
        p, g, m = (sample(d, (4, 5), seed) for seed in (70, 71, 72))
        v = np.abs(sample(d, (4, 5), 73))
        for decay in (1.0, 0.98):
            attrs = {"beta1": 0.9, "beta2": 0.99, "epsilon": 1e-6, "lr": 0.05, "decay": decay}
            case("adam_update", [p, g, m, v], attrs,
                 lambda p, g, m, v, a=attrs: adam(p, g, m, v, a["beta1"], a["beta2"],
                                                  a["epsilon"], a["lr"], a["decay"]),
                 id=f"{d}-{decay}")


def _jacobian_vjp(jac: Callable[[np.ndarray], np.ndarray], x: np.ndarray, g: np.ndarray,
                  n: int) -> np.ndarray:
    """g times the per-row Jacobian jac(row of x) ([N, N]: d y_i / d x_j) over the last n
    dims: the VJP from the Jacobian itself, not from a rearranged formula."""
    a, gg = f64(x), f64(g)
    rows = a.reshape(-1, int(np.prod(a.shape[a.ndim - n:])))
    grows = gg.reshape(rows.shape)
    return np.stack([gr @ jac(r) for r, gr in zip(rows, grows, strict=True)]).reshape(a.shape)


def _norm_grad_cases() -> None:
    def ln_jac(w: np.ndarray | None, eps: float) -> Callable[[np.ndarray], np.ndarray]:
        def jac(r: np.ndarray) -> np.ndarray:
            n = r.size
            rstd = 1.0 / np.sqrt(r.var() + eps)
            xh = (r - r.mean()) * rstd
            j = rstd * (np.eye(n) - 1.0 / n - np.outer(xh, xh) / n)
            return j * (f64(w).reshape(-1)[:, None] if w is not None else 1.0)
        return jac

    def rms_jac(w: np.ndarray | None, eps: float) -> Callable[[np.ndarray], np.ndarray]:
        def jac(r: np.ndarray) -> np.ndarray:
            rstd = 1.0 / np.sqrt(np.mean(r * r) + eps)
            j = rstd * np.eye(r.size) - np.outer(r, r) * rstd ** 3 / r.size
            return j * (f64(w).reshape(-1)[:, None] if w is not None else 1.0)
        return jac

    for d in ("float32", "float16", "bfloat16", "float64"):
        x = sample(d, (2, 3, 4), 90, 2.0) + np.asarray(1, npdt(d))
        g = sample(d, (2, 3, 4), 91)
        w2, w1 = sample(d, (3, 4), 92), sample(d, (4,), 93)
        for op, jac in (("layer_norm_grad", ln_jac), ("rms_norm_grad", rms_jac)):
            case(op, [x, g, w2], {"normalized_ndim": 2, "epsilon": 1e-5},
                 lambda x, g, w, j=jac: like(_jacobian_vjp(j(w, 1e-5), x, g, 2), x),
                 id=f"{d}-w2")
            case(op, [x, g, None], {"normalized_ndim": 1, "epsilon": 1e-3},
                 lambda x, g, w, j=jac: like(_jacobian_vjp(j(None, 1e-3), x, g, 1), x),
                 id=f"{d}-plain")
            case(op, [x, g, w1], {"normalized_ndim": 1, "epsilon": 1e-5},
                 lambda x, g, w, j=jac: like(_jacobian_vjp(j(w, 1e-5), x, g, 1), x),
                 id=f"{d}-w1")
        z = sample(d, (3, 5), 94, 3.0)
        for axis in (0, 1):
            out = like(_softmax_ref(z, axis), z)

            def sm_vjp(o: np.ndarray, g: np.ndarray, a: int = axis) -> np.ndarray:
                oo = np.moveaxis(f64(o), a, -1)
                gg = np.moveaxis(f64(g), a, -1)
                # d y_i / d z_j = y_i (delta_ij - y_j), from the softmax output itself
                vjp = np.stack([gr @ (np.diag(r) - np.outer(r, r))
                                for r, gr in zip(oo.reshape(-1, oo.shape[-1]),
                                                 gg.reshape(-1, oo.shape[-1]), strict=True)])
                return like(np.moveaxis(vjp.reshape(oo.shape), -1, a), o)

            case("softmax_grad", [out, sample(d, (3, 5), 95)], {"axis": axis}, sm_vjp,
                 id=f"{d}-{axis}")


def _ce_grad_cases() -> None:
    def ce_vjp(z: np.ndarray, label: np.ndarray, g: np.ndarray, reduction: str) -> np.ndarray:
        # d loss_n / d z_nc = p_nc - [c == label_n]: the loss's Jacobian row by row
        a = f64(z)
        valid = label != -100
        w = np.broadcast_to(f64(g), valid.shape) * valid
        if reduction == "mean":
            w = w / valid.sum()
        p = np.exp(a - a.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(label)), np.where(valid, label, 0)] -= 1.0
        return like(p * w[:, None], z)

    label = np.array([0, 4, -100, 2], np.int64)
    for d in ("float32", "float16", "bfloat16", "float64"):
        z = sample(d, (4, 5), 96, 3.0)
        for reduction, gshape in (("mean", ()), ("sum", ()), ("none", (4,))):
            case("cross_entropy_grad", [z, label, sample(d, gshape, 97)],
                 {"reduction": reduction, "ignore_index": -100},
                 lambda z, lab, g, r=reduction: ce_vjp(z, lab, g, r), id=f"{d}-{reduction}")


def _nn_cases() -> None:
    for d in ("float32", "float16", "bfloat16", "float64"):
        x = sample(d, (3, 5), 60, 10.0)
        x[0, 1] = -np.inf
        for axis in (0, 1):
            case("softmax", [x], {"axis": axis},
                 lambda x, a=axis: like(_softmax_ref(x, a), x), id=f"{d}-{axis}")
            case("log_softmax", [x], {"axis": axis},
                 lambda x, a=axis: like(np.log(_softmax_ref(x, a)), x), id=f"{d}-{axis}")
    big = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -1002.0]], np.float32)
    case("softmax", [big], {"axis": 1}, lambda x: like(_softmax_ref(x, 1), x), id="large")
    case("log_softmax", [big], {"axis": 1},
         lambda x: like(f64(x) - np.max(f64(x), 1, keepdims=True) - np.log(np.sum(
             np.exp(f64(x) - np.max(f64(x), 1, keepdims=True)), 1, keepdims=True)), x),
         id="large")
    case("softmax", [np.zeros((0, 4), np.float32)], {"axis": 1}, lambda x: x.copy(), id="empty")

    def ln(x: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, n: int,
           eps: float) -> np.ndarray:
        ax = tuple(range(x.ndim - n, x.ndim))
        a = f64(x)
        mu = a.mean(axis=ax, keepdims=True)
        y = (a - mu) / np.sqrt(((a - mu) ** 2).mean(axis=ax, keepdims=True) + eps)
        y = y * f64(w) if w is not None else y
        y = y + f64(b) if b is not None else y
        return like(y, x)

    for d in ("float32", "float16", "bfloat16", "float64"):
        x = sample(d, (2, 3, 4), 61, 3.0) + np.asarray(5, npdt(d))
        w, b = sample(d, (3, 4), 62), sample(d, (3, 4), 63)
        case("layer_norm", [x, w, b], {"normalized_ndim": 2, "epsilon": 1e-5},
             lambda x, w, b: ln(x, w, b, 2, 1e-5), id=f"{d}-wb")
        case("layer_norm", [x, None, None], {"normalized_ndim": 1, "epsilon": 1e-3},
             lambda x, w, b: ln(x, None, None, 1, 1e-3), id=f"{d}-plain")
        w1 = sample(d, (4,), 64)
        case("layer_norm", [x, w1, None], {"normalized_ndim": 1, "epsilon": 1e-5},
             lambda x, w, b: ln(x, w, None, 1, 1e-5), id=f"{d}-w")

        def rms(x: np.ndarray, w: np.ndarray | None, n: int, eps: float) -> np.ndarray:
            ax = tuple(range(x.ndim - n, x.ndim))
            y = f64(x) / np.sqrt((f64(x) ** 2).mean(axis=ax, keepdims=True) + eps)
            return like(y * f64(w) if w is not None else y, x)

        case("rms_norm", [x, w1], {"normalized_ndim": 1, "epsilon": 1e-6},
             lambda x, w: rms(x, w, 1, 1e-6), id=f"{d}-w")
        case("rms_norm", [x, None], {"normalized_ndim": 3, "epsilon": 1e-2},
             lambda x, w: rms(x, None, 3, 1e-2), id=f"{d}-plain")

    _norm_grad_cases()
    _ce_grad_cases()

    wt = sample("float32", (5, 4), 65)
    for idx, name in ((np.array([[0, 4, 2], [1, 1, 3]], np.int64), "2-d"),
                      (np.array(3, np.int32), "0-d"), (np.zeros((0,), np.int64), "empty")):
        case("embedding", [idx, wt], {}, lambda i, w: w[i], id=name)
    wi = sample("int16", (4, 2), 66)
    case("embedding", [np.array([3, 0], np.int64), wi], {}, lambda i, w: w[i], id="int16")

    xd = sample("float32", (4, 8), 67)
    case("dropout", [xd], {"p": 0.5, "training": False, "seed": 1, "offset": 0},
         lambda x: x.copy(), id="eval")
    case("dropout", [xd], {"p": 1.0, "training": True, "seed": 1, "offset": 0},
         np.zeros_like, id="p1")
    case("dropout", [xd], {"p": 0.0, "training": True, "seed": 1, "offset": 0},
         lambda x: x.copy(), id="p0")

    for d in ("float32", "float64", "float16"):
        xl, wl, bl = sample(d, (2, 3, 4), 68), sample(d, (4, 5), 69), sample(d, (5,), 70)
        case("linear", [xl, wl, bl], {}, lambda x, w, b: like(f64(x) @ f64(w) + f64(b), x),
             id=f"{d}-bias")
        case("linear", [xl, wl, None], {}, lambda x, w, b: like(f64(x) @ f64(w), x),
             id=f"{d}-nobias")

    def sdpa(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None,
             causal: bool, scale: float | None) -> np.ndarray:
        s = (1 / math.sqrt(q.shape[-1])) if scale is None else scale
        scores = f64(q) @ np.swapaxes(f64(k), -1, -2) * s
        if causal:
            keep = np.tril(np.ones(scores.shape[-2:], bool))
            scores = np.where(keep, scores, -np.inf)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + f64(
                mask)
        return like(_softmax_ref(scores, -1) @ f64(v), q)

    for d in ("float32", "float16", "float64"):
        q, k, v = sample(d, (2, 3, 4), 71), sample(d, (2, 5, 4), 72), sample(d, (2, 5, 6), 73)
        bmask = sample("bool", (3, 5), 74)
        bmask[:, 0] = True
        fmask = sample(d, (2, 1, 5), 75)
        for mask, causal, scale, name in ((None, False, None, "plain"),
                                          (None, True, None, "causal"),
                                          (bmask, False, None, "bool-mask"),
                                          (fmask, False, 0.5, "float-mask-scale")):
            case("scaled_dot_product_attention", [q, k, v, mask],
                 {"is_causal": causal, "scale": scale},
                 lambda q, k, v, m, c=causal, s=scale: sdpa(q, k, v, m, c, s), id=f"{d}-{name}")

    def rope(x: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
        h = x.shape[-1] // 2
        a = f64(x)
        rot = np.concatenate([-a[..., h:], a[..., :h]], axis=-1)
        return like(a * f64(c) + rot * f64(s), x)

    for d in ("float32", "float16", "float64"):
        xr = sample(d, (2, 3, 8), 76)
        ang = np.arange(24).reshape(3, 8) * 0.1
        case("rotary_embedding", [xr, np.cos(ang).astype(npdt(d)), np.sin(ang).astype(npdt(d))],
             {}, rope, id=d)
    xr = sample("float16", (2, 3, 8), 77)
    ang = np.arange(24).reshape(3, 8) * 0.1
    case("rotary_embedding", [xr, np.cos(ang).astype(np.float32), np.sin(ang).astype(
        np.float32)], {}, rope, id="float16-x-float32-tables")

    def xent(lg: np.ndarray, lb: np.ndarray, red: str, ign: int) -> np.ndarray:
        a = f64(lg)
        m = a.max(axis=1, keepdims=True)
        lsm = a - m - np.log(np.exp(a - m).sum(axis=1, keepdims=True))
        valid = lb != ign
        picked = lsm[np.arange(len(lb)), np.where(valid, lb, 0)]
        loss = np.where(valid, -picked, 0.0)
        with np.errstate(invalid="ignore"):
            out = {"none": loss, "sum": loss.sum(), "mean": loss.sum() / valid.sum()}[red]
        return like(out, lg)

    for d in ("float32", "float16", "float64"):
        lg = sample(d, (5, 4), 78, 3.0)
        lb = np.array([0, 3, -100, 2, 1], np.int64)
        for red in ("mean", "sum", "none"):
            case("cross_entropy", [lg, lb], {"reduction": red, "ignore_index": -100},
                 lambda lg, lb, r=red: xent(lg, lb, r, -100), id=f"{d}-{red}")
        case("cross_entropy", [lg, np.array([1, 1, 1, 0, 2], np.int32)],
             {"reduction": "mean", "ignore_index": 1},
             lambda lg, lb: xent(lg, lb, "mean", 1), id=f"{d}-ignore-1-int32")
    lg = sample("float32", (2, 3), 79)
    case("cross_entropy", [lg, np.array([-100, -100], np.int64)],
         {"reduction": "mean", "ignore_index": -100},
         lambda lg, lb: np.float32(np.nan), id="all-ignored")


_unary_float_cases()
_elementwise_cases()
_reduction_cases()
_shape_cases()
_index_cases()
_creation_cases()
_nn_cases()
_optimizer_cases()


def test_every_composite_has_a_numeric_case():
    covered = {c.op for c in CASES} | {"normal"}  # normal: its own tests below
    assert sorted(set(COMPOSITES) - covered) == []


def _to_tensors(values: list[Any]) -> list[Any]:
    out = []
    for v in values:
        if v is None:
            out.append(None)
        elif isinstance(v, list):
            out.append([_tensor(a) for a in v])
        else:
            out.append(_tensor(v))
    return out


def _call(op: str, args: list[Any], attrs: dict[str, Any]) -> Any:
    """Calls the decomposition the way the dispatcher does, with the op itself disabled in the
    API so a decomposition that calls its own op fails instead of recursing."""
    api = _api()
    opdef = OPS[op]
    attrs = dict(attrs)
    for a in opdef.attrs:
        if a.type == "dtype" and isinstance(attrs.get(a.name), str):
            attrs[a.name] = _dtype(attrs[a.name])
    if _gets_place(op):
        attrs["place"] = args[0].place if args else _place()
    fn = getattr(decompositions, opdef.decompose)

    def recursion(*_a: Any, **_k: Any) -> Any:
        raise AssertionError(f"the decomposition of {op} called {op} itself")

    mp = pytest.MonkeyPatch()
    try:
        if hasattr(api, op):
            mp.setattr(api, op, recursion)
        return fn(*args, **attrs)
    finally:
        mp.undo()


def _oracle() -> Callable[..., Any] | None:
    """phi_ops.reference.reference(op, inputs, attrs), when that module is there."""
    try:
        from hwport.phi_ops.reference import reference
    except ImportError:
        return None
    return reference


def _case_id(c: Case) -> str:
    return f"{c.op}-{c.id}" if c.id else c.op


@pytest.mark.parametrize("c", CASES, ids=_case_id)
def test_decomposition_matches_numpy(c: Case):
    _api()
    args = _to_tensors(c.inputs)
    got = _call(c.op, args, c.attrs)
    np_inputs = [None if v is None else (list(v) if isinstance(v, list) else np.asarray(v))
                 for v in c.inputs]
    with np.errstate(all="ignore"):
        want = c.expect(*np_inputs)
    wants = [("numpy", want)]
    oracle = _oracle()
    if oracle is not None:
        wants.append(("phi_ops.reference", oracle(
            c.op, np_inputs, c.attrs if c.ref_attrs is None else c.ref_attrs)))
    for source, w in wants:
        what = f"{_case_id(c)} vs {source}"
        if isinstance(w, (list, tuple)):
            assert isinstance(got, (list, tuple)) and len(got) == len(w), what
            for i, (g, wi) in enumerate(zip(got, w, strict=True)):
                _close(_numpy(g), np.asarray(wi), c.op, f"{what}, output {i}")
        else:
            _close(_numpy(got), np.asarray(w), c.op, what)
    if c.check is not None:
        src = args[0][0] if isinstance(args[0], list) else args[0]
        result = c.check(got, src)
        assert result is None or result, f"{_case_id(c)}: view check failed"


def test_reshape_of_a_non_contiguous_tensor():
    _api()
    x = _tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    xt = decompositions.transpose(x, perm=[1, 0, 2])  # [3, 2, 4], strides (4, 12, 1)
    split_last = _call("reshape", [xt], {"shape": [3, 2, 2, 2]})
    assert tuple(split_last.strides) == (4, 12, 2, 1)  # still a view
    want = np.transpose(np.arange(24, dtype=np.float32).reshape(2, 3, 4), (1, 0, 2))
    np.testing.assert_array_equal(_numpy(split_last), want.reshape(3, 2, 2, 2))
    merged = _call("reshape", [xt], {"shape": [6, 4]})  # needs a copy
    np.testing.assert_array_equal(_numpy(merged), want.reshape(6, 4))
    flipped = _call("flip", [x], {"axis": [1]})
    np.testing.assert_array_equal(_numpy(_call("reshape", [flipped], {"shape": [24]})),
                                  np.flip(np.arange(24).reshape(2, 3, 4), 1).reshape(24))


def test_tile_and_roll_of_views():
    _api()
    base = np.arange(12, dtype=np.int64).reshape(3, 4)
    x = _tensor(base)
    xt = decompositions.transpose(x, perm=[1, 0])
    np.testing.assert_array_equal(_numpy(_call("tile", [xt], {"repeats": [2, 2]})),
                                  np.tile(base.T, (2, 2)))
    np.testing.assert_array_equal(_numpy(_call("roll", [xt], {"shifts": [3], "axis": []})),
                                  np.roll(base.T, 3))
    parts = _call("split", [xt], {"sections": [1, 3], "axis": 0})
    np.testing.assert_array_equal(_numpy(parts[1]), base.T[1:])


def _philox() -> Any:
    try:
        from hwport.phi_ops import philox
    except ImportError:
        pytest.skip("phi_ops/philox.py is not importable")
    return philox


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_normal_is_philox_box_muller(dtype):
    _api()
    shape, seed, offset = [64, 33], 1234, 5
    attrs = {"shape": shape, "mean": 1.5, "std": 2.0, "seed": seed, "offset": offset,
             "dtype": dtype}
    got = _numpy(_call("normal", [], attrs))
    assert got.shape == tuple(shape) and got.dtype == npdt(dtype)
    np.testing.assert_array_equal(got, _numpy(_call("normal", [], attrs)))  # reproducible
    assert not np.array_equal(got, _numpy(_call("normal", [], dict(attrs, offset=offset + 1))))
    g = got.astype(np.float64)
    assert abs(g.mean() - 1.5) < 0.2 and abs(g.std() - 2.0) < 0.2
    want = _philox().normal(shape, 1.5, 2.0, seed, offset, dtype)
    _close(got, want, "normal", f"normal-{dtype}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("p", [0.3, 0.5 + 0.4 * 2.0**-24, 0.9])
def test_dropout_is_philox_mask_and_scale(dtype, p):
    _api()
    x = (np.abs(sample("float32", (64, 64), 90)) + np.float32(0.5)).astype(npdt(dtype))
    attrs = {"p": p, "training": True, "seed": 7, "offset": 11}
    got = _numpy(_call("dropout", [_tensor(x)], attrs))
    np.testing.assert_array_equal(got, _numpy(_call("dropout", [_tensor(x)], attrs)))
    kept = got != 0
    assert abs((1 - kept.mean()) - p) < 0.05
    # The mask: the float32-path uniform of counters offset.., compared with p exactly.
    u = _philox().unit(x.size, 7, 11, "float32").reshape(x.shape)
    np.testing.assert_array_equal(kept, u >= p)
    want = np.where(u >= p, f64(x) / (1 - p), 0.0).astype(x.dtype)
    _close(got, want, "dropout", f"dropout-{dtype}")
