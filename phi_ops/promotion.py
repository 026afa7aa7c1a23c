"""Dtype rules of the op library, in pure Python + numpy (+ ml_dtypes for bfloat16).

- `promote_types` / `result_type`: binary promotion, the same table as the C++ core
  (runtime/src/dtype.cpp) — bool < integers < floats; int8 with uint8 -> int16; a signed
  integer with uint8 -> the signed one when wider than 8 bits, else int16; integers of the same
  signedness -> the wider; any integer or bool with a float -> that float (numpy would widen,
  e.g. int32 + float16 -> float64; we do not); float16 with bfloat16 -> float32; floats -> the
  wider.
- `scalar_dtype`: the dtype a weak Python scalar takes next to a tensor.
- `out_dtype`: the output dtype(s) of an op, from ops.yaml's `out_dtype` rule.
- `cast_array` / `round_float64`: value conversions with the exact semantics of the `cast` op
  (which the reference CPU plugin implements in device_plugins/cpu/kernels_cast.c).

Independent of the runtime: the conformance oracle is built on this module.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from .schema import OpDef, load_ops

DTYPES: tuple[str, ...] = ("bool", "int8", "uint8", "int16", "int32", "int64",
                           "float16", "bfloat16", "float32", "float64")
FLOATING: frozenset[str] = frozenset({"float16", "bfloat16", "float32", "float64"})
INTEGER: frozenset[str] = frozenset({"int8", "uint8", "int16", "int32", "int64"})
SIGNED_INTEGER: frozenset[str] = frozenset({"int8", "int16", "int32", "int64"})

_ITEMSIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8,
             "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}

_NP_DTYPES: dict[str, np.dtype] = {
    "bool": np.dtype(np.bool_), "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
    "int16": np.dtype(np.int16), "int32": np.dtype(np.int32), "int64": np.dtype(np.int64),
    "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
}
_NAMES_BY_NP = {v: k for k, v in _NP_DTYPES.items()}


# ---- names ----------------------------------------------------------------------------------

def _check(name: str) -> str:
    if name not in _ITEMSIZE:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(DTYPES)}")
    return name


def np_dtype(name: str) -> np.dtype:
    """The numpy dtype of a dtype name (bfloat16 is ml_dtypes.bfloat16)."""
    return _NP_DTYPES[_check(name)]


def dtype_name(dtype: Any) -> str:
    """The dtype name of a numpy dtype, an array or a name; ValueError for other dtypes."""
    if isinstance(dtype, str) and dtype in _ITEMSIZE:
        return dtype
    if isinstance(dtype, np.ndarray | np.generic):
        dtype = dtype.dtype
    try:
        return _NAMES_BY_NP[np.dtype(dtype)]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}") from exc


def is_floating(name: str) -> bool:
    return _check(name) in FLOATING


def is_integer(name: str) -> bool:
    """True for the integer dtypes (not bool)."""
    return _check(name) in INTEGER


def itemsize(name: str) -> int:
    return _ITEMSIZE[_check(name)]


# ---- promotion ------------------------------------------------------------------------------

def promote_types(a: str, b: str) -> str:
    """The dtype of a binary op on tensors of dtypes a and b (symmetric)."""
    _check(a)
    _check(b)
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    if a in FLOATING or b in FLOATING:
        if a not in FLOATING:
            return b
        if b not in FLOATING:
            return a
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return a if _ITEMSIZE[a] >= _ITEMSIZE[b] else b
    # Both integers.
    if (a in SIGNED_INTEGER) == (b in SIGNED_INTEGER):
        return a if _ITEMSIZE[a] >= _ITEMSIZE[b] else b
    signed = a if a in SIGNED_INTEGER else b  # the only unsigned dtype is uint8
    return signed if _ITEMSIZE[signed] > 1 else "int16"


def result_type(*dtypes: str) -> str:
    """promote_types folded over one or more dtypes (the rule is associative for these
    10 dtypes, so the order does not matter)."""
    if not dtypes:
        raise ValueError("result_type needs at least one dtype")
    out = _check(dtypes[0])
    for d in dtypes[1:]:
        out = promote_types(out, d)
    return out


def scalar_dtype(value: Any, tensor_dtype: str | None) -> str:
    """The dtype a weak Python scalar takes in a binary op with a tensor of `tensor_dtype`
    (the op then runs in promote_types(tensor_dtype, scalar_dtype(...))):
    a bool keeps the tensor's dtype; an int keeps it, except next to a bool tensor (int64);
    a float keeps a float tensor's dtype, else float32.
    Without a tensor (tensor_dtype None): bool -> bool, int -> int64, float -> float32."""
    if tensor_dtype is None:
        if isinstance(value, bool | np.bool_):
            return "bool"
        tensor_dtype = "bool"  # then int -> int64, float -> float32
        if not isinstance(value, numbers.Real):
            raise TypeError(f"unsupported scalar {value!r} of type {type(value).__name__}")
    _check(tensor_dtype)
    if isinstance(value, bool | np.bool_):
        return tensor_dtype
    if isinstance(value, numbers.Integral):
        return "int64" if tensor_dtype == "bool" else tensor_dtype
    if isinstance(value, numbers.Real):
        return tensor_dtype if tensor_dtype in FLOATING else "float32"
    raise TypeError(f"unsupported scalar {value!r} of type {type(value).__name__}")


_INT_RANGES = {d: (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in INTEGER}


def check_scalar_fits(op: str, arg: str, value: Any, dtype: str) -> None:
    """The one rule for a Python scalar that becomes a value of `dtype` (a scalar operand, a
    fill/pad value), as numpy 2 (NEP 50) has it: an int outside an integer dtype's range is an
    error (numpy raises OverflowError; this raises ValueError naming op, argument, value and
    range), never a wrap. A float converts as the `cast` op does (into an integer dtype:
    truncated toward zero, saturated, NaN -> 0; numpy casts it unsafely too), and a float too
    large for a float dtype becomes inf (as in numpy); every number fits bool. The C++ side
    applies the same rule (runtime/src/py_convert.cpp scalar_from_py)."""
    if dtype not in _INT_RANGES or not isinstance(value, numbers.Integral) or isinstance(
            value, bool | np.bool_):
        return
    lo, hi = _INT_RANGES[dtype]
    if not lo <= int(value) <= hi:
        raise ValueError(f"{op}: {arg}={value!r} does not fit in {dtype} (range [{lo}, {hi}])")


def scalar_for_dtype(op: str, arg: str, value: Any, dtype: str) -> Any:
    """check_scalar_fits, then the value as it crosses the kernel ABI: a float for an integer
    dtype converted as `cast` does (every kernel then sees the same in-range int), an int
    beyond int64 for a float dtype as the nearest float."""
    check_scalar_fits(op, arg, value, dtype)
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if dtype in _INT_RANGES and not isinstance(value, numbers.Integral):
        return int(scalar_to_dtype(value, dtype).item())
    if isinstance(value, numbers.Integral) and not -(2**63) <= int(value) < 2**63:
        try:
            return float(value)
        except OverflowError:
            raise ValueError(f"{op}: {arg}={value} is too large for any float dtype (at most "
                             "about 1.8e308)") from None
    return value


# ---- output dtypes from ops.yaml ----------------------------------------------------------

# Inputs that decide the dtype of an op whose rule is `same` / `float` / `sum` (promoted
# together, and cast to that dtype before the op runs); ops not listed use every tensor
# input. Index/label/condition inputs never do.
_DTYPE_INPUTS: dict[str, tuple[str, ...]] = {
    "where": ("x", "y"),
    "gather": ("x",),
    "index_select": ("x",),
    "take_along_axis": ("x",),
    "scatter": ("x",),  # updates are cast to x's dtype (the kernel contract)
    "embedding": ("weight",),
    "cross_entropy": ("logits",),
    "cross_entropy_grad": ("logits", "grad"),
    # nn ops whose extra operands are used at their own precision; the output follows x
    "layer_norm": ("x",),
    "rms_norm": ("x",),
    "layer_norm_grad": ("x", "grad"),
    "rms_norm_grad": ("x", "grad"),
    "rotary_embedding": ("x",),
    "linear": ("x", "weight"),  # bias is added at its own precision
    "scaled_dot_product_attention": ("query", "key", "value"),  # the mask takes no part
}


def _op(op: OpDef | str) -> OpDef:
    return op if isinstance(op, OpDef) else load_ops()[op]


def _named_input_dtypes(op: OpDef, input_dtypes: Sequence[Any]) -> dict[str, list[str]]:
    """input name -> the dtypes it carries ([] when absent, several when variadic)."""
    seq = list(input_dtypes)
    if (len(op.inputs) == 1 and op.inputs[0].variadic
            and not (len(seq) == 1 and isinstance(seq[0], list | tuple))):
        seq = [seq]  # a flat list of dtypes for the one variadic input
    if len(seq) > len(op.inputs):
        raise ValueError(f"{op.name}: expected at most {len(op.inputs)} input dtypes "
                         f"({', '.join(i.name for i in op.inputs)}), got {len(seq)}")
    seq += [None] * (len(op.inputs) - len(seq))  # left-out trailing inputs take no part
    out: dict[str, list[str]] = {}
    for idef, d in zip(op.inputs, seq, strict=True):
        if d is None:
            out[idef.name] = []
        elif idef.variadic:
            if isinstance(d, str) or not d:
                raise ValueError(f"{op.name}: input {idef.name!r} takes a non-empty list")
            out[idef.name] = [dtype_name(x) for x in d]
        else:
            out[idef.name] = [dtype_name(d)]
    return out


def promotion_inputs(op: OpDef | str) -> tuple[str, ...]:
    """The names of the inputs that are promoted together and decide the op's dtype (the
    others — index, label, condition — keep theirs)."""
    op = _op(op)
    return _DTYPE_INPUTS.get(op.name, tuple(i.name for i in op.inputs))


def common_dtype(op: OpDef | str, input_dtypes: Sequence[Any]) -> str | None:
    """The promoted dtype of the inputs that decide the op's dtype (None: none given)."""
    op = _op(op)
    named = _named_input_dtypes(op, input_dtypes)
    dts = [d for n in promotion_inputs(op) for d in named.get(n, [])]
    return result_type(*dts) if dts else None


def _infer_attr_dtype(op: OpDef, attr: str, attrs: Mapping[str, Any],
                      named: dict[str, list[str]]) -> str:
    """The dtype an `attr:<name>` rule gives when the attribute is None."""
    if op.name == "full":
        v = attrs.get("fill_value")
        if isinstance(v, bool | np.bool_):
            return "bool"
        if isinstance(v, numbers.Integral):
            return "int64"
        return "float32"
    if op.name == "arange":
        vals = [attrs.get(k) for k in ("start", "end", "step")]
        ints = all(v is None or isinstance(v, numbers.Integral) for v in vals)
        return "int64" if ints else "float32"
    adef = op.attr_map.get(attr)
    if adef is None or adef.required:
        raise ValueError(f"{op.name}: attribute {attr!r} is required")
    if named.get("x"):
        return named["x"][0]  # *_like
    return adef.default if isinstance(adef.default, str) else "float32"


def out_dtype(op: OpDef | str, input_dtypes: Sequence[Any],
              attrs: Mapping[str, Any] | None = None) -> list[str]:
    """Output dtype(s) of `op` (one per ops.yaml output; a variadic output's entry is the
    dtype of each of its tensors) by the op's `out_dtype` rule:

    same   -- the promoted dtype of the inputs (`common_dtype`)
    bool / int64 -- that dtype
    float  -- float inputs keep their (promoted) dtype, bool/integer ones give float32
    sum    -- the `dtype` attribute when set, else int64 for bool/integers, else the same
    attr:<name> -- the attribute; None means the op's documented default: full infers from
              fill_value (bool -> bool, int -> int64, float -> float32), arange gives int64
              when start/end/step are all ints else float32, *_like take x's dtype, others
              the attribute's yaml default.
    topk's second output (indices) is int64.

    input_dtypes: one entry per ops.yaml input (dtype names or numpy dtypes; None for an
    absent optional input; a list for a variadic input); trailing entries may be left out
    (e.g. [x_dtype] for layer_norm), they then take no part."""
    op = _op(op)
    attrs = attrs or {}
    named = _named_input_dtypes(op, input_dtypes)
    common = common_dtype(op, input_dtypes)
    rule = op.out_dtype
    if rule == "same":
        if common is None:
            raise ValueError(f"{op.name}: rule 'same' needs an input")
        first = common
    elif rule in ("bool", "int64"):
        first = rule
    elif rule == "float":
        if common is None:
            raise ValueError(f"{op.name}: rule 'float' needs an input")
        first = common if common in FLOATING else "float32"
    elif rule == "sum":
        if attrs.get("dtype") is not None:
            first = dtype_name(attrs["dtype"])
        elif common is None:
            raise ValueError(f"{op.name}: rule 'sum' needs an input")
        else:
            first = common if common in FLOATING else "int64"
    elif rule.startswith("attr:"):
        name = rule[5:]
        value = attrs.get(name)
        first = (dtype_name(value) if value is not None
                 else _infer_attr_dtype(op, name, attrs, named))
    else:
        raise ValueError(f"{op.name}: unknown out_dtype rule {rule!r}")
    outs = [first]
    for o in op.outputs[1:]:
        outs.append("int64" if o.name == "indices" else first)
    return outs


# ---- value conversions (the `cast` op) ------------------------------------------------------

_U64 = np.uint64


def _round_f64_to_half_bits(x: np.ndarray) -> np.ndarray:
    """float64 -> float16 bit patterns, round to nearest even directly from float64
    (a port of cpu_f64_to_f16)."""
    bits = x.view(np.uint64)
    sign = ((bits >> _U64(48)) & _U64(0x8000)).astype(np.uint16)
    ax = bits & _U64(0x7FFFFFFFFFFFFFFF)
    out = np.zeros(x.shape, np.uint16)
    nan = ax > _U64(0x7FF0000000000000)
    inf = (ax == _U64(0x7FF0000000000000)) | (~nan & (ax >= _U64(0x40EFFE0000000000)))
    sub = ax < _U64(0x3F10000000000000)
    norm = ~(nan | inf | sub)
    out[nan] = 0x7E00 | ((ax[nan] >> _U64(42)) & _U64(0x3FF)).astype(np.uint16)
    out[inf] = 0x7C00
    t = ax[sub].view(np.float64) + 268435456.0  # ulp 2^-24 at 2^28
    out[sub] = (t.view(np.uint64) - _U64(0x41B0000000000000)).astype(np.uint16)
    r = ax[norm] - _U64(1008 << 52)
    r = r + _U64((1 << 41) - 1) + ((r >> _U64(42)) & _U64(1))
    out[norm] = (r >> _U64(42)).astype(np.uint16)
    return out | sign


def _round_f64_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float64 -> bfloat16 bit patterns, round to nearest even directly from float64 (a port of
    cpu_f64_to_bf16; ml_dtypes rounds through float32, which double-rounds)."""
    bits = x.view(np.uint64)
    sign = ((bits >> _U64(48)) & _U64(0x8000)).astype(np.uint16)
    ax = bits & _U64(0x7FFFFFFFFFFFFFFF)
    out = np.zeros(x.shape, np.uint16)
    nan = ax > _U64(0x7FF0000000000000)
    inf = (ax == _U64(0x7FF0000000000000)) | (~nan & (ax >= _U64(0x47EFF00000000000)))
    sub = ax < _U64(0x3810000000000000)
    norm = ~(nan | inf | sub)
    out[nan] = 0x7FC0 | ((ax[nan] >> _U64(45)) & _U64(0x7F)).astype(np.uint16)
    out[inf] = 0x7F80
    t = ax[sub].view(np.float64) + 2.0 ** -81  # ulp 2^-133 at 2^-81
    out[sub] = (t.view(np.uint64) - _U64(0x3AE0000000000000)).astype(np.uint16)
    r = ax[norm] - _U64(896 << 52)
    r = r + _U64((1 << 44) - 1) + ((r >> _U64(45)) & _U64(1))
    out[norm] = (r >> _U64(45)).astype(np.uint16)
    return out | sign


def round_float64(x: Any, dtype: str) -> np.ndarray:
    """Round float64 values once, to nearest even, to a float dtype (overflow gives inf,
    NaN stays NaN)."""
    x = np.array(x, dtype=np.float64, order="C")  # a copy (0-d stays 0-d)
    if dtype == "float64":
        return x
    if dtype == "float32":
        with np.errstate(all="ignore"):
            return np.asarray(x.astype(np.float32))
    if dtype == "float16":
        return np.asarray(_round_f64_to_half_bits(x)).view(np.float16)
    if dtype == "bfloat16":
        return np.asarray(_round_f64_to_bf16_bits(x)).view(ml_dtypes.bfloat16)
    raise ValueError(f"round_float64: {dtype!r} is not a float dtype")


_INT_RANGE = {"int8": (-(2**7), 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-(2**15), 2**15 - 1),
              "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _float_to_int(x: np.ndarray, dtype: str) -> np.ndarray:
    """Truncation toward zero; NaN -> 0; beyond the range saturates (cpu_sat_*)."""
    lo, hi = _INT_RANGE[dtype]
    nan = np.isnan(x)
    over = x >= float(hi) + 1.0
    under = x <= float(lo) - 1.0
    safe = np.where(nan | over | under, 0.0, np.trunc(np.where(nan, 0.0, x)))
    out = safe.astype(np.int64).astype(np_dtype(dtype))
    out[over] = hi
    out[under] = lo
    return out


def cast_array(x: Any, dtype: str) -> np.ndarray:
    """Convert to `dtype` with the `cast` op's semantics (the CPU kernel's, see
    device_plugins/cpu/kernels_cast.c):

    - to bool: x != 0 (NaN is true);
    - integer/bool -> integer: two's complement wrap-around (numpy astype);
    - float -> integer: truncation toward zero, NaN -> 0, values beyond the range saturate to
      the dtype's min/max;
    - to float32/float64: round to nearest even (integers too, directly);
    - to float16/bfloat16: round to nearest even directly from the source precision (integers
      are converted to float64 first, as the CPU kernel does); NaN stays NaN, overflow -> inf.

    Always returns a new ndarray (0-d stays 0-d).
    """
    return np.asarray(_cast(np.asarray(x), dtype))


def _cast(x: np.ndarray, dtype: str) -> Any:
    src = dtype_name(x.dtype)
    _check(dtype)
    if src == dtype:
        return x.copy()
    if dtype == "bool":
        if src in FLOATING:
            return x.astype(np.float64) != 0
        return x != 0
    if dtype in INTEGER:
        if src in FLOATING:
            return _float_to_int(x.astype(np.float64), dtype)
        return x.astype(np_dtype(dtype))  # wraps
    # Float destinations.
    if dtype in ("float32", "float64") and src not in ("float16", "bfloat16"):
        with np.errstate(all="ignore"):
            return x.astype(np_dtype(dtype))
    return round_float64(x.astype(np.float64), dtype)


def scalar_to_dtype(value: Any, dtype: str) -> Any:
    """A Python scalar as a 0-d array of `dtype`, the way `fill` converts its value:
    ints (and bools) exactly through int64 (wrapping into narrower integers), floats rounded
    (float dtypes) or truncated toward zero with saturation (integer dtypes)."""
    if isinstance(value, bool | np.bool_ | numbers.Integral):
        arr = np.asarray(int(value), dtype=np.int64)
    else:
        arr = np.asarray(float(value), dtype=np.float64)
    return cast_array(arr, dtype)
