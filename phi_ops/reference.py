"""The numpy reference semantics of every op in ops.yaml: the oracle that the conformance
checker (`hwcheck`) and the test suite compare every plugin against.

    reference(op_name, inputs, attrs) -> np.ndarray | tuple[np.ndarray, ...]

Pure numpy + ml_dtypes; never imports the runtime.

How a call is evaluated
-----------------------
1. Attributes: missing optional ones take their ops.yaml default (required ones must be
   given; unknown names are an error); `ints` attributes may be one int or a sequence (split's
   `sections` keeps the distinction: an int N means N equal parts, a sequence means sizes);
   negative axes are normalized here.
2. Output dtypes: `promotion.out_dtype`. The op must be defined for its key dtype (ops.yaml
   `dtypes`, checked on the promoted dtype for ops that promote), else ValueError.
3. The inputs that take part in promotion (`promotion.promotion_inputs`: every tensor input,
   except `where`'s condition, the index of gather/index_select/take_along_axis/scatter/
   embedding, cross_entropy's label, and the extra operands of layer_norm/rms_norm (weight,
   bias), rotary_embedding (cos, sin), linear (bias) and sdpa (attn_mask), which are used at
   their own precision) are cast to the promoted dtype with `cast` semantics — for the `float`
   rule (divide) to the output dtype, i.e. integers become float32 first; scatter's updates
   to x's dtype — then every floating input is upcast (exactly) to float64. Integer and bool
   inputs keep their dtype, so integer arithmetic wraps around as it does in the kernels.
4. The ops.yaml `reference` expression is evaluated (names: np, the inputs, the attributes),
   or the `ref:<name>` function of this module is called. A few expression ops need help for
   some dtypes (`_OVERRIDES`: integer pow / floor / ceil / round, expand with -1,
   take_along_axis range checks, tril/triu rank checks, full_like's dtype).
5. Each result is converted once to its output dtype with `cast` semantics
   (`promotion.cast_array`): float64 -> float dtype rounds once to nearest even, so e.g. `add`
   of two float16 arrays is the exact sum rounded once.

Semantics decided here (the kernels and decompositions follow them)
-------------------------------------------------------------------
- bool: add = or, multiply = and. Integer +, -, *, abs, neg, square, matmul, sum, prod,
  cumsum, cumprod wrap around (two's complement) in their dtype (sum/prod/cum* in int64).
- Integer floor_divide / remainder by zero give 0; INT_MIN // -1 wraps to INT_MIN (and
  INT_MIN % -1 == 0). Float floor_divide / remainder are numpy's (Python's // and %: floor of
  the exact quotient, remainder with the divisor's sign).
- Integer pow with a negative exponent: 1 for base 1, +-1 for base -1 (by the exponent's
  parity), 0 otherwise (0 ** negative included). Non-negative exponents wrap (x**y mod 2**n).
- maximum / minimum / max / min propagate NaN. round is half to even. floor / ceil / round
  are the identity on integers.
- clip: each bound (None = unbounded) is first converted to x's dtype — integer dtypes
  truncate a float bound toward zero and saturate any bound to the dtype's range; float dtypes
  round it to nearest — then out = minimum(maximum(x, min), max) (so min > max gives max; NaN
  stays NaN).
- Reductions: an empty axis list reduces every dim; argmax/argmin with axis None use the
  flattened tensor (keepdim then gives all-ones dims); first occurrence wins and NaN counts as
  the maximum (argmax) / minimum (argmin). max/min/argmax/argmin over zero elements are
  errors; sum of nothing is 0, prod 1, mean NaN, logsumexp -inf. sum's `dtype` casts the input
  (cast semantics) before summing. var/std: unbiased divides by N - 1 (N = 1 gives NaN).
  logsumexp: m + log(sum(exp(x - m))) with m the max, m replaced by 0 where it is not finite
  (so all -inf gives -inf, +inf gives inf, NaN gives NaN).
- sort / argsort / topk: stable; ascending puts NaN last, descending puts NaN first and keeps
  ties in index order (lower index first); topk(largest) = the first k of the descending
  argsort, topk(smallest) the first k of the ascending one.
- gather / index_select / embedding / take_along_axis / scatter: indices must be integer and
  in [0, dim) (negative indices are errors, not Python-style). scatter's updates are cast to
  x's dtype; assign: the last occurrence of a duplicated index wins; add: bool ors, integers
  wrap, floats accumulate in float64 (x then updates in index order) and round once.
- reshape: one -1; transpose: perm None reverses; flatten of a 0-d tensor gives [1];
  squeeze: empty axis drops every size-1 dim, a listed dim whose size is not 1 is kept
  (PyTorch); unsqueeze: axes are positions in the output (numpy expand_dims); expand: -1 keeps
  the dim (not allowed in new leading dims); split: an int N = N equal parts (error if not
  divisible), a sequence = sizes (one -1 is inferred); slice: Python slice semantics per axis
  (negative indices, clamping, negative strides; stride 0 is an error); roll: flattened when
  axis is empty (then exactly one shift), else shifts and axis have equal lengths; pad: pairs
  (before, after) from the first dim, a shorter list leaves the last dims unpadded, negative
  values are errors, the value is converted like `fill`'s; tril/triu need rank >= 2.
- Creation: `fill` converts its value like the CPU kernel: a Python int (or bool) exactly via
  int64 (wrapping into narrower integers), a float rounded (float dtypes) or truncated toward
  zero with saturation (integer dtypes). arange: end None means arange(0, start); the length
  is ceil((end - start) / step) (exact for ints, float64 otherwise; never negative); values
  start + i * step in float64 rounded once (float dtypes) or in wrapping int64 from start and
  step truncated toward zero (integer dtypes). eye: m None = n.
- cast: `promotion.cast_array` (float -> integer truncates toward zero, NaN -> 0, saturates).
- uniform / normal / dropout: `philox` (see its docstrings for the exact streams).
  dropout(training) keeps element i where U[offset + i] >= p (U the float32-path uniform, the
  comparison exact in float64): kept elements are x * (1 / (1 - p)) in float64, dropped ones
  are 0 (even where x is inf or NaN); p == 1 gives zeros; p outside [0, 1] is an error;
  training False is the identity.
- softmax / log_softmax: exp(x - max) / sum, (x - max) - log(sum(exp(x - max))) along axis
  (a slice of all -inf gives NaN). layer_norm: biased variance over the last normalized_ndim
  dims, (x - mean) / sqrt(var + eps) * weight + bias; weight/bias (optional) have exactly the
  normalized shape. rms_norm: x / sqrt(mean(x^2) + eps) * weight. gelu: PyTorch's exact
  0.5 x (1 + erf(x / sqrt 2)) or tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
  evaluated without the cancellation at negative x (erfc; x / (1 + exp(-2u))).
  softplus: x where beta x > threshold, else log1p(exp(beta x)) / beta (PyTorch).
- matmul: numpy matmul semantics (1-D operands, broadcast batch dims); transpose_x/_y swap
  the last two dims of an operand of rank >= 2 first (ignored for 1-D). linear: x @ weight
  (+ bias), weight [in, out].
- scaled_dot_product_attention: softmax(q k^T * scale + mask) v, scale None = 1/sqrt(E), a
  scale taken at the compute precision (float64 for float64, else float32: 1e300 is inf);
  a bool mask keeps True (others -inf), a float mask is added at its own precision (it takes
  no part in promotion: the output dtype is result_type(q, k, v));
  is_causal keeps the lower triangle tril(ones(L, S)) (top-left aligned), combined with a given
  mask; a fully masked row gives NaN (plain softmax).
- rotary_embedding: x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1) of the
  two halves of the last dim (which must be even); cos/sin broadcast to x's shape.
- cross_entropy: logits [N, C], integer labels [N]; loss_n = logsumexp(logits_n) -
  logits_n[label_n]; labels equal to ignore_index give loss 0 and leave the mean's
  denominator (all ignored: mean is NaN); other labels must be in [0, C).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from . import philox
from .promotion import (
    FLOATING,
    INTEGER,
    cast_array,
    common_dtype,
    dtype_name,
    np_dtype,
    out_dtype,
    promotion_inputs,
    scalar_to_dtype,
)
from .schema import OpDef, load_ops

Result = np.ndarray | tuple[np.ndarray, ...]

# op name -> function(a: _Call) -> array or tuple of arrays (before the output dtype cast)
_REFS: dict[str, Callable[[_Call], Any]] = {}
# ops whose yaml expression needs help for some dtypes or checks
_OVERRIDES: dict[str, Callable[[_Call], Any]] = {}

_SAFE_BUILTINS = {"tuple": tuple, "list": list, "len": len, "int": int, "float": float,
                  "abs": abs, "range": range}


class _Call:
    """One evaluation: the op, its prepared inputs (by name), attributes and output dtypes."""

    def __init__(self, op: OpDef, ins: dict[str, Any], dtypes: dict[str, Any],
                 attrs: dict[str, Any], outs: list[str]):
        self.op = op
        self.ins = ins  # prepared: promoted, floats upcast to float64
        self.dtypes = dtypes  # the dtype name of each prepared input before the upcast
        self.attrs = attrs
        self.outs = outs

    def __getitem__(self, name: str) -> Any:
        return self.ins[name]

    def err(self, what: str) -> ValueError:
        return ValueError(f"{self.op.name}: {what}")


def _register(table: dict[str, Callable[[_Call], Any]], *names: str):
    def deco(fn: Callable[[_Call], Any]) -> Callable[[_Call], Any]:
        for n in names:
            table[n] = fn
        return fn
    return deco


def _ref(*names: str):
    return _register(_REFS, *names)


def _override(*names: str):
    return _register(_OVERRIDES, *names)


# ---- helpers ---------------------------------------------------------------------------------

def _up(x: np.ndarray) -> np.ndarray:
    """Floating arrays upcast to float64 (exact); integer/bool arrays unchanged."""
    return x.astype(np.float64) if dtype_name(x.dtype) in FLOATING else x


def _axis(a: _Call, axis: int, ndim: int, name: str = "axis") -> int:
    n = max(ndim, 1)
    if not -n <= axis < n:
        raise a.err(f"{name} {axis} is out of range for a tensor of rank {ndim}")
    return axis % n


def _axes(a: _Call, axes: Sequence[int], ndim: int, name: str = "axis") -> tuple[int, ...]:
    out = [_axis(a, ax, ndim, name) for ax in axes]
    if len(set(out)) != len(out):
        raise a.err(f"{name} {list(axes)} repeats a dim")
    return tuple(out)


def _red_axes(a: _Call, x: np.ndarray) -> tuple[int, ...]:
    """The reduced dims: an empty list means all (a 0-d tensor reduces nothing)."""
    axis = a.attrs["axis"]
    if x.ndim == 0:
        _axes(a, axis, 0)
        return ()
    return tuple(range(x.ndim)) if not axis else tuple(sorted(_axes(a, axis, x.ndim)))


def _check_index(a: _Call, index: np.ndarray, dim: int, name: str = "index") -> np.ndarray:
    if index.dtype.kind not in "iu":
        raise a.err(f"{name} must have an integer dtype, got {dtype_name(index.dtype)}")
    if index.size and (index.min() < 0 or index.max() >= dim):
        bad = index[(index < 0) | (index >= dim)].flat[0]
        raise IndexError(f"{a.op.name}: {name} value {bad} is out of range [0, {dim})")
    return index.astype(np.int64)


def _nonempty_reduction(a: _Call, x: np.ndarray, axes: Sequence[int]) -> None:
    if any(x.shape[i] == 0 for i in axes):
        raise a.err(f"reduction over zero elements (x has shape {list(x.shape)}, "
                    f"axis {list(axes)})")


def _pyfunc(fn: Callable[[float], float], x: np.ndarray) -> np.ndarray:
    """A math-module function applied to every element of a float64 array (any rank)."""
    return np.array([fn(v) for v in x.reshape(-1).tolist()], dtype=np.float64).reshape(x.shape)


def _lse(x: np.ndarray, axes: tuple[int, ...] | int, keepdims: bool) -> np.ndarray:
    m = np.max(x, axis=axes, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    r = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axes)


def _argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort; ascending: NaN last; descending: NaN first, ties by lower index."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    i = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(i, axis)


def _int_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x ** y for one integer dtype: modulo 2**n for y >= 0 (square-and-multiply in uint64,
    well defined), 1 / +-1 / 0 for y < 0 (base 1 / -1 / other)."""
    x, y = np.broadcast_arrays(x, y)
    dt = x.dtype
    base = x.astype(np.int64).astype(np.uint64)
    e = np.where(y < 0, 0, y).astype(np.int64)
    result = np.ones(x.shape, np.uint64)
    while np.any(e):
        odd = (e & 1).astype(bool)
        result = np.where(odd, result * base, result)
        base = base * base
        e = e >> 1
    pos = result.astype(np.int64).astype(dt)
    neg_val = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0))
    return np.where(y < 0, neg_val.astype(dt), pos)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if x.size == 0:
        return x.copy()
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _attr_bound(value: Any, dtype: str) -> Any:
    """clip's bound converted to x's dtype (see the module docstring), as a numpy scalar of the
    prepared representation (float64 for float dtypes)."""
    if dtype in INTEGER:
        info = np.iinfo(np_dtype(dtype))
        v = value
        if not isinstance(v, numbers.Integral):
            v = float(v)
            if math.isnan(v):
                v = 0
            elif math.isinf(v):
                v = info.max if v > 0 else info.min
            else:
                v = int(v)  # truncation toward zero
        return np.array(min(max(int(v), int(info.min)), int(info.max)), dtype=np_dtype(dtype))
    return _up(np.asarray(scalar_to_dtype(value, dtype)))


# ---- unary / binary overrides of the yaml expressions ----------------------------------------

@_override("floor", "ceil", "round")
def _o_rounding(a: _Call) -> np.ndarray:
    x = a["x"]
    if a.dtypes["x"] in INTEGER:
        return x.copy()
    return {"floor": np.floor, "ceil": np.ceil, "round": np.round}[a.op.name](x)


@_override("pow")
def _o_pow(a: _Call) -> np.ndarray:
    x, y = a["x"], a["y"]
    if a.dtypes["x"] in INTEGER:
        return _int_pow(x, y)
    return np.power(x, y)


@_override("expand")
def _o_expand(a: _Call) -> np.ndarray:
    x = a["x"]
    shape = list(a.attrs["shape"])
    if len(shape) < x.ndim:
        raise a.err(f"shape {shape} has fewer dims than the input {list(x.shape)}")
    lead = len(shape) - x.ndim
    for i, s in enumerate(shape):
        if s == -1:
            if i < lead:
                raise a.err(f"-1 in a new leading dim of shape {shape}")
            shape[i] = x.shape[i - lead]
        elif s < 0:
            raise a.err(f"negative dim in shape {shape}")
    try:
        return np.array(np.broadcast_to(x, shape))
    except ValueError as exc:
        raise a.err(f"cannot expand {list(x.shape)} to {shape}") from exc


@_override("take_along_axis")
def _o_take_along_axis(a: _Call) -> np.ndarray:
    x, index = a["x"], a["index"]
    if index.ndim != x.ndim:
        raise a.err(f"index has rank {index.ndim}, x has rank {x.ndim}")
    axis = _axis(a, a.attrs["axis"], x.ndim)
    index = _check_index(a, index, x.shape[axis] if x.ndim else 1)
    return np.take_along_axis(x, index, axis)


@_override("tril", "triu")
def _o_tri(a: _Call) -> np.ndarray:
    x = a["x"]
    if x.ndim < 2:
        raise a.err(f"needs a tensor of rank >= 2, got rank {x.ndim}")
    fn = np.tril if a.op.name == "tril" else np.triu
    return fn(x, a.attrs["diagonal"])


@_override("copy")
def _o_copy(a: _Call) -> np.ndarray:
    return a["x"].copy()  # (np.ascontiguousarray would make a 0-d tensor 1-d)


@_override("full_like")
def _o_full_like(a: _Call) -> np.ndarray:
    return np.full(a["x"].shape, a.attrs["fill_value"])


# ---- ref: functions --------------------------------------------------------------------------

@_ref("erf")
def _r_erf(a: _Call) -> np.ndarray:
    return _pyfunc(math.erf, a["x"])


@_ref("gelu")
def _r_gelu(a: _Call) -> np.ndarray:
    """PyTorch's formulas, evaluated without cancellation for negative x:
    exact: 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2);
    tanh:  0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = k (x + 0.044715 x^3),
           k = sqrt(2) * (2 / sqrt(pi)) * 0.5 (= sqrt(2 / pi), PyTorch's kBeta)."""
    x = a["x"]
    if a.attrs["approximate"]:
        k = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5
        u = k * (x + 0.044715 * (x * x * x))
        return x / (1.0 + np.exp(-2.0 * u))
    return 0.5 * x * _pyfunc(math.erfc, -x * math.sqrt(0.5))


@_ref("gelu_grad")
def _r_gelu_grad(a: _Call) -> np.ndarray:
    """grad * (Phi(x) + x phi(x)), Phi(x) = 0.5 erfc(-x / sqrt 2) (no cancellation for x < 0)."""
    x = a["x"]
    cdf = 0.5 * _pyfunc(math.erfc, -x * math.sqrt(0.5))
    return a["grad"] * (cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi))


@_ref("gelu_tanh_grad")
def _r_gelu_tanh_grad(a: _Call) -> np.ndarray:
    """d/dx of x / (1 + exp(-2u)), u = k (x + 0.044715 x^3): s + 2 x s (1 - s) u', s the
    logistic of 2u (the tanh form's derivative without tanh's cancellation)."""
    x = a["x"]
    k = math.sqrt(2.0 / math.pi)
    u = k * (x + 0.044715 * (x * x * x))
    s = 1.0 / (1.0 + np.exp(-2.0 * u))
    du = k * (1.0 + 3.0 * 0.044715 * (x * x))
    return a["grad"] * (s + 2.0 * x * s * (1.0 - s) * du)


@_ref("softplus")
def _r_softplus(a: _Call) -> np.ndarray:
    x = a["x"]
    beta, threshold = float(a.attrs["beta"]), float(a.attrs["threshold"])
    bx = beta * x
    return np.where(bx > threshold, x, np.log1p(np.exp(bx)) / beta)


@_ref("clip")
def _r_clip(a: _Call) -> np.ndarray:
    x = a["x"]
    dt = a.dtypes["x"]
    lo, hi = a.attrs["min"], a.attrs["max"]
    out = x
    if lo is not None:
        out = np.maximum(out, _attr_bound(lo, dt))
    if hi is not None:
        out = np.minimum(out, _attr_bound(hi, dt))
    return np.array(out, dtype=x.dtype)


@_ref("sum", "prod")
def _r_sum(a: _Call) -> np.ndarray:
    x = a["x"]
    dt = a.attrs.get("dtype")
    if dt is not None:
        x = _up(cast_array(x, dt))
    axes = _red_axes(a, x)
    if x.dtype.kind != "f":
        x = x.astype(np.int64)
    fn = np.sum if a.op.name == "sum" else np.prod
    return fn(x, axis=axes, keepdims=a.attrs["keepdim"])


@_ref("mean")
def _r_mean(a: _Call) -> np.ndarray:
    x = a["x"]
    axes = _red_axes(a, x)
    n = math.prod(x.shape[i] for i in axes)
    s = np.sum(x, axis=axes, keepdims=a.attrs["keepdim"])
    return s / n if n else s * np.nan


@_ref("max", "min")
def _r_max(a: _Call) -> np.ndarray:
    x = a["x"]
    axes = _red_axes(a, x)
    _nonempty_reduction(a, x, axes)
    fn = np.max if a.op.name == "max" else np.min
    return fn(x, axis=axes, keepdims=a.attrs["keepdim"])


@_ref("any", "all")
def _r_any(a: _Call) -> np.ndarray:
    x = a["x"]
    fn = np.any if a.op.name == "any" else np.all
    return fn(x != 0, axis=_red_axes(a, x), keepdims=a.attrs["keepdim"])


@_ref("argmax", "argmin")
def _r_argmax(a: _Call) -> np.ndarray:
    x = a["x"]
    axis = a.attrs["axis"]
    keep = a.attrs["keepdim"]
    fn = np.argmax if a.op.name == "argmax" else np.argmin
    if axis is None or x.ndim == 0:
        if axis is not None:
            _axis(a, axis, 0)
        if x.size == 0:
            raise a.err("reduction over zero elements")
        return np.asarray(fn(x, axis=None, keepdims=keep))
    axis = _axis(a, axis, x.ndim)
    if x.shape[axis] == 0:
        raise a.err("reduction over zero elements")
    return fn(x, axis=axis, keepdims=keep)


@_ref("logsumexp")
def _r_logsumexp(a: _Call) -> np.ndarray:
    x = a["x"]
    return _lse(x, _red_axes(a, x), a.attrs["keepdim"])


@_ref("var", "std")
def _r_var(a: _Call) -> np.ndarray:
    x = a["x"]
    axes = _red_axes(a, x)
    n = math.prod(x.shape[i] for i in axes)
    keep = a.attrs["keepdim"]
    mean = np.sum(x, axis=axes, keepdims=True) / n if n else np.full_like(x, np.nan)
    ss = np.sum((x - mean) ** 2, axis=axes, keepdims=keep)
    denom = n - 1 if a.attrs["unbiased"] else n
    v = ss / denom if denom > 0 else ss * np.nan
    return v if a.op.name == "var" else np.sqrt(v)


@_ref("cumsum", "cumprod")
def _r_cumsum(a: _Call) -> np.ndarray:
    x = a["x"]
    if x.dtype.kind != "f":
        x = x.astype(np.int64)
    fn = np.cumsum if a.op.name == "cumsum" else np.cumprod
    axis = a.attrs["axis"]
    if axis is None:
        return fn(x.reshape(-1))
    axis = _axis(a, axis, x.ndim)
    if x.ndim == 0:
        return fn(x.reshape(1)).reshape(())
    return fn(x, axis=axis)


@_ref("matmul")
def _r_matmul(a: _Call) -> np.ndarray:
    x, y = a["x"], a["y"]
    if x.ndim == 0 or y.ndim == 0:
        raise a.err("operands must have rank >= 1")
    if a.attrs["transpose_x"] and x.ndim >= 2:
        x = np.swapaxes(x, -1, -2)
    if a.attrs["transpose_y"] and y.ndim >= 2:
        y = np.swapaxes(y, -1, -2)
    if x.dtype.kind != "f":  # integers wrap: computed modulo 2**64, cast back wraps again
        x, y = x.astype(np.int64), y.astype(np.int64)
    try:
        return np.matmul(x, y)
    except ValueError as exc:
        raise a.err(f"shapes {list(x.shape)} and {list(y.shape)} do not match") from exc


@_ref("transpose")
def _r_transpose(a: _Call) -> np.ndarray:
    x = a["x"]
    perm = a.attrs["perm"]
    if perm is None:
        return np.transpose(x).copy()
    if len(perm) != x.ndim:
        raise a.err(f"perm {perm} does not match rank {x.ndim}")
    return np.transpose(x, _axes(a, perm, x.ndim, "perm")).copy()


@_ref("flatten")
def _r_flatten(a: _Call) -> np.ndarray:
    x = a["x"]
    if x.ndim == 0:
        _axis(a, a.attrs["start_axis"], 0, "start_axis")
        _axis(a, a.attrs["stop_axis"], 0, "stop_axis")
        return x.reshape(1)
    s = _axis(a, a.attrs["start_axis"], x.ndim, "start_axis")
    e = _axis(a, a.attrs["stop_axis"], x.ndim, "stop_axis")
    if s > e:
        raise a.err(f"start_axis {s} is after stop_axis {e}")
    return x.reshape((*x.shape[:s], math.prod(x.shape[s:e + 1]), *x.shape[e + 1:]))


@_ref("squeeze")
def _r_squeeze(a: _Call) -> np.ndarray:
    x = a["x"]
    axes = set(_axes(a, a.attrs["axis"], x.ndim)) if a.attrs["axis"] else None
    shape = [d for i, d in enumerate(x.shape) if not (d == 1 and (axes is None or i in axes))]
    return x.reshape(shape)


@_ref("unsqueeze")
def _r_unsqueeze(a: _Call) -> np.ndarray:
    x = a["x"]
    axes = a.attrs["axis"]
    out_nd = x.ndim + len(axes)
    norm = []
    for ax in axes:
        if not -out_nd <= ax < out_nd:
            raise a.err(f"axis {ax} is out of range for an output of rank {out_nd}")
        norm.append(ax % out_nd)
    if len(set(norm)) != len(norm):
        raise a.err(f"axis {axes} repeats a position")
    return np.expand_dims(x, tuple(norm)).copy()


@_ref("split")
def _r_split(a: _Call) -> tuple[np.ndarray, ...]:
    x = a["x"]
    if x.ndim == 0:
        raise a.err("cannot split a 0-d tensor")
    axis = _axis(a, a.attrs["axis"], x.ndim)
    n = x.shape[axis]
    sections = a.attrs["sections"]
    if a.attrs.get("_sizes") is False and isinstance(sections, list) and len(sections) == 1:
        sections = sections[0]  # the dispatcher's normalized form of an int
    if isinstance(sections, int):
        if sections <= 0 or n % sections:
            raise a.err(f"dim {axis} of size {n} does not split into {sections} equal parts")
        sizes = [n // sections] * sections
    else:
        sizes = list(sections)
        if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
            raise a.err(f"bad sections {sizes}")
        if -1 in sizes:
            known = sum(s for s in sizes if s != -1)
            sizes[sizes.index(-1)] = n - known
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise a.err(f"sections {list(sections)} do not add up to dim {axis} of size {n}")
    bounds = np.cumsum(sizes)[:-1]
    return tuple(p.copy() for p in np.split(x, bounds, axis=axis))


@_ref("slice")
def _r_slice(a: _Call) -> np.ndarray:
    x = a["x"]
    axes, starts, ends = a.attrs["axes"], a.attrs["starts"], a.attrs["ends"]
    strides = a.attrs["strides"] or [1] * len(axes)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise a.err("axes, starts, ends and strides must have equal lengths")
    if x.ndim == 0 and axes:
        raise a.err("cannot slice a 0-d tensor")
    idx: list[slice] = [slice(None)] * x.ndim
    for ax, s, e, st in zip(_axes(a, axes, x.ndim), starts, ends, strides, strict=True):
        if st == 0:
            raise a.err("stride 0")
        picked = range(*slice(s, e, st).indices(x.shape[ax]))  # clamped, Python rules
        if not picked:  # indices() may give start -1 here, which numpy reads as the last element
            idx[ax] = slice(0, 0)
        else:
            idx[ax] = slice(picked.start, picked.stop if picked.stop >= 0 else None, picked.step)
    return x[tuple(idx)].copy()


@_ref("roll")
def _r_roll(a: _Call) -> np.ndarray:
    x = a["x"]
    shifts, axis = a.attrs["shifts"], a.attrs["axis"]
    if not axis:
        if len(shifts) != 1:
            raise a.err("with an empty axis list, shifts must hold one value")
        return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    if len(shifts) != len(axis):
        raise a.err("shifts and axis must have equal lengths")
    return np.roll(x, tuple(shifts), tuple(_axis(a, ax, x.ndim) for ax in axis))


@_ref("pad")
def _r_pad(a: _Call) -> np.ndarray:
    x = a["x"]
    pad = a.attrs["pad"]
    if len(pad) % 2 or len(pad) > 2 * x.ndim:
        raise a.err(f"pad needs (before, after) pairs for at most {x.ndim} dims, got {pad}")
    if any(p < 0 for p in pad):
        raise a.err(f"negative padding {pad}")
    widths = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
    widths += [(0, 0)] * (x.ndim - len(widths))
    value = _up(np.asarray(scalar_to_dtype(a.attrs["value"], a.dtypes["x"])))
    return np.pad(x, widths, mode="constant", constant_values=value)


@_ref("gather", "index_select")
def _r_gather(a: _Call) -> np.ndarray:
    x, index = a["x"], a["index"]
    if x.ndim == 0:
        raise a.err("x must have rank >= 1")
    if index.ndim != 1:
        raise a.err(f"index must be 1-D, got rank {index.ndim}")
    axis = _axis(a, a.attrs["axis"], x.ndim)
    return np.take(x, _check_index(a, index, x.shape[axis]), axis=axis)


@_ref("scatter")
def _r_scatter(a: _Call) -> np.ndarray:
    x, index, updates = a["x"], a["index"], a["updates"]
    if x.ndim == 0:
        raise a.err("x must have rank >= 1")
    if index.ndim != 1:
        raise a.err(f"index must be 1-D, got rank {index.ndim}")
    axis = _axis(a, a.attrs["axis"], x.ndim)
    index = _check_index(a, index, x.shape[axis])
    want = list(x.shape)
    want[axis] = index.shape[0]
    if list(updates.shape) != want:
        raise a.err(f"updates have shape {list(updates.shape)}, expected {want}")
    updates = _up(cast_array(updates, a.dtypes["x"]))  # x's dtype, as the kernel gets it
    out = x.copy()
    moved = np.moveaxis(out, axis, 0)  # a view into out
    upd = np.moveaxis(updates, axis, 0)
    reduce = a.attrs["reduce"]
    if reduce == "assign":
        rev = index[::-1]
        uniq, first = np.unique(rev, return_index=True)
        moved[uniq] = upd[len(index) - 1 - first]  # the last occurrence wins
    elif reduce == "add":
        if out.dtype == np.bool_:
            np.logical_or.at(moved, index, upd)
        else:
            np.add.at(moved, index, upd)
    else:
        raise a.err(f"reduce must be 'assign' or 'add', got {reduce!r}")
    return out


@_ref("topk")
def _r_topk(a: _Call) -> tuple[np.ndarray, np.ndarray]:
    x = a["x"]
    k = a.attrs["k"]
    if x.ndim == 0:
        _axis(a, a.attrs["axis"], 0)
        if k != 1:
            raise a.err(f"k={k} for a 0-d tensor")
        return x.copy(), np.zeros((), np.int64)
    axis = _axis(a, a.attrs["axis"], x.ndim)
    if not 0 <= k <= x.shape[axis]:
        raise a.err(f"k={k} is out of range for dim {axis} of size {x.shape[axis]}")
    order = _argsort(x, axis, descending=a.attrs["largest"])
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis), idx.astype(np.int64)


@_ref("sort", "argsort")
def _r_sort(a: _Call) -> np.ndarray:
    x = a["x"]
    if x.ndim == 0:
        _axis(a, a.attrs["axis"], 0)
        return x.copy() if a.op.name == "sort" else np.zeros((), np.int64)
    axis = _axis(a, a.attrs["axis"], x.ndim)
    order = _argsort(x, axis, a.attrs["descending"])
    return np.take_along_axis(x, order, axis) if a.op.name == "sort" else order.astype(np.int64)


@_ref("arange")
def _r_arange(a: _Call) -> np.ndarray:
    start, end, step = a.attrs["start"], a.attrs["end"], a.attrs["step"]
    if end is None:
        start, end = 0, start
    vals = (start, end, step)
    if any(isinstance(v, float) and not math.isfinite(v) for v in vals):
        raise a.err(f"start, end and step must be finite, got {vals}")
    if step == 0:
        raise a.err("step must not be 0")
    if all(isinstance(v, numbers.Integral) for v in vals):
        n = max(0, -((int(start) - int(end)) // int(step)))
    else:
        n = max(0, math.ceil((float(end) - float(start)) / float(step)))
    dt = a.outs[0]
    if dt in FLOATING:
        return float(start) + np.arange(n, dtype=np.float64) * float(step)
    i = np.arange(n, dtype=np.int64)
    istep = int(step) if n > 1 else 0  # one element: any step (even 1e300) gives just start
    with np.errstate(over="ignore"):
        return np.int64(int(start)) + i * np.int64(istep)  # wraps like the int64 kernel


@_ref("linspace")
def _r_linspace(a: _Call) -> np.ndarray:
    start, stop, num = float(a.attrs["start"]), float(a.attrs["stop"]), a.attrs["num"]
    if num == 1:  # just start, as Paddle and PyTorch give (numpy's 0 * (stop - start) is NaN
        return np.array([start])  # for an infinite or NaN stop)
    return np.linspace(start, stop, num)


@_ref("cast")
def _r_cast(a: _Call) -> np.ndarray:
    return cast_array(a["x"], a.attrs["dtype"])


@_ref("uniform")
def _r_uniform(a: _Call) -> np.ndarray:
    t = a.attrs
    return philox.uniform(t["shape"], t["low"], t["high"], t["seed"], t["offset"], a.outs[0])


@_ref("normal")
def _r_normal(a: _Call) -> np.ndarray:
    t = a.attrs
    return philox.normal(t["shape"], t["mean"], t["std"], t["seed"], t["offset"], a.outs[0])


@_ref("softmax", "log_softmax")
def _r_softmax(a: _Call) -> np.ndarray:
    x = a["x"]
    shape = x.shape
    if x.ndim == 0:
        _axis(a, a.attrs["axis"], 0)
        x = x.reshape(1)
    axis = _axis(a, a.attrs["axis"], x.ndim)
    if a.op.name == "softmax":
        r = _softmax(x, axis)
    elif x.size == 0:
        r = x.copy()
    else:
        shifted = x - np.max(x, axis=axis, keepdims=True)
        r = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    return r.reshape(shape)


def _norm_axes(a: _Call, x: np.ndarray) -> tuple[int, ...]:
    k = a.attrs["normalized_ndim"]
    if not 1 <= k <= x.ndim:
        raise a.err(f"normalized_ndim {k} is out of range for a tensor of rank {x.ndim}")
    for name in ("weight", "bias"):
        w = a.ins.get(name)
        if w is not None and w.shape != x.shape[x.ndim - k:]:
            raise a.err(f"{name} has shape {list(w.shape)}, expected "
                        f"{list(x.shape[x.ndim - k:])}")
    return tuple(range(x.ndim - k, x.ndim))


@_ref("layer_norm")
def _r_layer_norm(a: _Call) -> np.ndarray:
    x = a["x"]
    axes = _norm_axes(a, x)
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + float(a.attrs["epsilon"]))
    if a["weight"] is not None:
        y = y * a["weight"]
    if a["bias"] is not None:
        y = y + a["bias"]
    return y


@_ref("rms_norm")
def _r_rms_norm(a: _Call) -> np.ndarray:
    x = a["x"]
    axes = _norm_axes(a, x)
    y = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + float(a.attrs["epsilon"]))
    if a["weight"] is not None:
        y = y * a["weight"]
    return y


@_ref("softmax_grad")
def _r_softmax_grad(a: _Call) -> np.ndarray:
    out, grad = a["out"], a["grad"]
    if out.shape != grad.shape:
        raise a.err(f"grad has shape {list(grad.shape)}, expected out's {list(out.shape)}")
    axis = _axis(a, a.attrs["axis"], out.ndim)
    if out.ndim == 0:
        return (grad - grad * out) * out
    return (grad - np.sum(grad * out, axis=axis, keepdims=True)) * out


def _norm_grad_inputs(a: _Call) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    x, grad = a["x"], a["grad"]
    if x.shape != grad.shape:
        raise a.err(f"grad has shape {list(grad.shape)}, expected x's {list(x.shape)}")
    axes = _norm_axes(a, x)
    gh = grad if a["weight"] is None else grad * a["weight"]
    return x, gh, axes


@_ref("layer_norm_grad")
def _r_layer_norm_grad(a: _Call) -> np.ndarray:
    x, gh, axes = _norm_grad_inputs(a)
    d = x - np.mean(x, axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(np.mean(d * d, axis=axes, keepdims=True) + float(a.attrs["epsilon"]))
    xh = d * rstd
    return (gh - np.mean(gh, axis=axes, keepdims=True)
            - xh * np.mean(gh * xh, axis=axes, keepdims=True)) * rstd


@_ref("rms_norm_grad")
def _r_rms_norm_grad(a: _Call) -> np.ndarray:
    x, gh, axes = _norm_grad_inputs(a)
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + float(a.attrs["epsilon"]))
    return (gh - x * rstd * rstd * np.mean(gh * x, axis=axes, keepdims=True)) * rstd


@_ref("embedding")
def _r_embedding(a: _Call) -> np.ndarray:
    index, weight = a["index"], a["weight"]
    if weight.ndim < 1:
        raise a.err("weight must have rank >= 1")
    return weight[_check_index(a, index, weight.shape[0])]


@_ref("dropout")
def _r_dropout(a: _Call) -> np.ndarray:
    x = a["x"]
    p = float(a.attrs["p"])
    if not 0.0 <= p <= 1.0:
        raise a.err(f"p must be in [0, 1], got {p}")
    if not a.attrs["training"]:
        return x.copy()
    if p == 1.0:
        return np.zeros_like(x)
    u = philox.unit(x.size, a.attrs["seed"], a.attrs["offset"], "float32").reshape(x.shape)
    return np.where(u >= p, x * (1.0 / (1.0 - p)), 0.0)


@_ref("linear")
def _r_linear(a: _Call) -> np.ndarray:
    x, w, b = a["x"], a["weight"], a["bias"]
    if w.ndim != 2:
        raise a.err(f"weight must be 2-D [in, out], got shape {list(w.shape)}")
    if x.ndim == 0 or x.shape[-1] != w.shape[0]:
        raise a.err(f"x {list(x.shape)} does not match weight {list(w.shape)}")
    y = np.matmul(x, w)
    return y + b if b is not None else y


@_ref("scaled_dot_product_attention")
def _r_sdpa(a: _Call) -> np.ndarray:
    q, k, v, mask = a["query"], a["key"], a["value"], a["attn_mask"]
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise a.err("query, key and value must have rank >= 2")
    scale = a.attrs["scale"]
    if scale is None:  # (E == 0: the scores are empty sums, 0 whatever the scale)
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    # Applied at the compute precision, as the kernels and PyTorch do: a scale beyond float32's
    # range is inf below float64 (scores become inf/NaN), not a finite float64 factor.
    with np.errstate(over="ignore"):
        scale = float(np.float64(scale) if a.outs[0] == "float64" else np.float32(scale))
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    L, S = s.shape[-2:]
    if a.attrs["is_causal"]:
        s = np.where(np.tril(np.ones((L, S), dtype=bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    return np.matmul(_softmax(s, -1), v)


@_ref("rotary_embedding")
def _r_rotary(a: _Call) -> np.ndarray:
    x, cos, sin = a["x"], a["cos"], a["sin"]
    if x.ndim == 0 or x.shape[-1] % 2:
        raise a.err(f"the last dim of x must be even, got shape {list(x.shape)}")
    h = x.shape[-1] // 2
    rot = np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
    out = x * cos + rot * sin
    if out.shape != x.shape:
        raise a.err(f"cos {list(cos.shape)} / sin {list(sin.shape)} do not broadcast to x "
                    f"{list(x.shape)}")
    return out


def _ce_labels(a: _Call) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """logits [N, C], the rows not ignored, and the labels (0 where ignored), checked."""
    logits, label = a["logits"], a["label"]
    if logits.ndim != 2 or label.ndim != 1 or label.shape[0] != logits.shape[0]:
        raise a.err(f"expected logits [N, C] and label [N], got {list(logits.shape)} and "
                    f"{list(label.shape)}")
    if label.dtype.kind not in "iu":
        raise a.err(f"label must have an integer dtype, got {dtype_name(label.dtype)}")
    valid = label != a.attrs["ignore_index"]
    lab = np.where(valid, label, 0).astype(np.int64)
    if lab.size and (lab.min() < 0 or lab.max() >= logits.shape[1]):
        raise IndexError(f"{a.op.name}: a label is out of range [0, {logits.shape[1]})")
    return logits, valid, lab


@_ref("cross_entropy")
def _r_cross_entropy(a: _Call) -> np.ndarray:
    logits, valid, lab = _ce_labels(a)
    n, c = logits.shape
    lse = _lse(logits, 1, False) if c else np.full(n, -np.inf)
    picked = logits[np.arange(n), lab] if c else np.zeros(n)
    loss = np.where(valid, lse - picked, 0.0)
    reduction = a.attrs["reduction"]
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.sum(loss)
    if reduction == "mean":
        count = int(np.count_nonzero(valid))
        return np.sum(loss) / count if count else np.float64(np.nan)
    raise a.err(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")



@_ref("adam_update")
def _r_adam_update(a: _Call) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    b1, b2 = float(a.attrs["beta1"]), float(a.attrs["beta2"])
    g = a["grad"]
    m = a["moment1"] * b1 + g * (1.0 - b1)
    v = a["moment2"] * b2 + g * g * (1.0 - b2)
    p = a["param"] * float(a.attrs["decay"])
    return p - m / (np.sqrt(v) + float(a.attrs["epsilon"])) * float(a.attrs["lr"]), m, v

@_ref("cross_entropy_grad")
def _r_cross_entropy_grad(a: _Call) -> np.ndarray:
    logits, valid, lab = _ce_labels(a)
    grad = a["grad"]
    n, c = logits.shape
    reduction = a.attrs["reduction"]
    g = np.broadcast_to(grad, (n,)).astype(np.float64)
    if reduction == "mean":
        g = g / np.count_nonzero(valid) if valid.any() else np.full(n, np.nan)
    e = np.exp(logits - logits.max(axis=1, keepdims=True)) if c else logits
    soft = e / e.sum(axis=1, keepdims=True) if c else logits
    hot = np.zeros_like(soft)
    hot[np.arange(n), lab] = 1.0
    return (soft - hot) * np.where(valid, g, 0.0)[:, None]


# ---- the entry point -------------------------------------------------------------------------

def _normalize_attrs(op: OpDef, attrs: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(attrs) - set(op.attr_map) - ({"_sizes"} if op.name == "split" else set())
    if unknown:
        raise ValueError(f"{op.name}: unknown attribute(s) {sorted(unknown)}")
    out: dict[str, Any] = {}
    for adef in op.attrs:
        if adef.name in attrs:
            v = attrs[adef.name]
        elif adef.required:
            raise ValueError(f"{op.name}: attribute {adef.name!r} is required")
        else:
            v = adef.default
        if v is not None:
            if adef.type == "ints":
                if op.name == "split" and adef.name == "sections" and np.ndim(v) == 0:
                    v = int(v)
                else:
                    v = [int(i) for i in np.ravel(v)] if np.ndim(v) else [int(v)]
            elif adef.type == "floats":
                v = [float(i) for i in np.ravel(v)]
            elif adef.type == "int":
                if isinstance(v, list | tuple | np.ndarray) and np.size(v) == 1:
                    v = np.ravel(v)[0].item()  # a one-element list for an int attribute
                if isinstance(v, float) and not v.is_integer():
                    raise ValueError(f"{op.name}: attribute {adef.name!r} must be an int, "
                                     f"got {v!r}")
                v = int(v)
            elif adef.type == "bool":
                v = bool(v)
            elif adef.type == "dtype":
                v = dtype_name(v)
            elif adef.type == "str":
                v = str(v)
        out[adef.name] = v
    if "_sizes" in attrs and op.name == "split":
        out["_sizes"] = bool(attrs["_sizes"])
    return out


def _as_array(v: Any) -> np.ndarray:
    arr = np.asarray(v)
    dtype_name(arr.dtype)  # one of the 10 dtypes
    return arr


def reference(op_name: str, inputs: Sequence[Any], attrs: Mapping[str, Any] | None = None
              ) -> Result:
    """The oracle's result of `op_name` (see the module docstring).

    inputs: one entry per ops.yaml input, in order: a numpy array (of one of the 10 dtypes;
    bfloat16 from ml_dtypes), a list of arrays for a variadic input, None for an absent
    optional one (trailing optional inputs may be left out). attrs: by name (missing optional
    attributes take their defaults).
    Returns one array, or a tuple for ops with several outputs (topk) or a variadic output
    (split); every array has exactly its output dtype."""
    ops = load_ops()
    if op_name not in ops:
        raise ValueError(f"unknown op {op_name!r}")
    op = ops[op_name]
    inputs = list(inputs)
    if len(inputs) < len(op.inputs) and all(i.optional for i in op.inputs[len(inputs):]):
        inputs += [None] * (len(op.inputs) - len(inputs))  # trailing optional inputs left out
    if len(inputs) != len(op.inputs):
        raise ValueError(f"{op.name}: expected {len(op.inputs)} inputs "
                         f"({', '.join(i.name for i in op.inputs) or 'none'}), "
                         f"got {len(inputs)}")
    raw: dict[str, Any] = {}
    in_dtypes: list[Any] = []
    for idef, v in zip(op.inputs, inputs, strict=True):
        if v is None:
            if not idef.optional:
                raise ValueError(f"{op.name}: input {idef.name!r} is required")
            raw[idef.name] = None
            in_dtypes.append(None)
        elif idef.variadic:
            if not isinstance(v, list | tuple) or not v:
                raise ValueError(f"{op.name}: input {idef.name!r} takes a non-empty list")
            raw[idef.name] = [_as_array(t) for t in v]
            in_dtypes.append([dtype_name(t.dtype) for t in raw[idef.name]])
        else:
            raw[idef.name] = _as_array(v)
            in_dtypes.append(dtype_name(raw[idef.name].dtype))
    attrs = _normalize_attrs(op, attrs or {})
    outs = out_dtype(op, in_dtypes, attrs)

    # The dtype the op is keyed by must be one it is defined for.
    common = common_dtype(op, in_dtypes) if op.inputs else None
    promoted = promotion_inputs(op)
    key_idx = op.key_input_index()
    if key_idx is None:
        key_dtype = outs[0]
    else:
        key_name = op.inputs[key_idx].name
        key_val = raw[key_name]
        if key_name in promoted and common is not None:
            key_dtype = common
        elif isinstance(key_val, list):
            key_dtype = dtype_name(key_val[0].dtype)
        else:
            key_dtype = dtype_name(key_val.dtype)
    if key_dtype not in op.dtypes:
        raise ValueError(f"{op.name}: not defined for dtype {key_dtype} "
                         f"(defined for {', '.join(op.dtypes)})")

    # Promote, then upcast floats to float64.
    compute = outs[0] if op.out_dtype == "float" else common
    ins: dict[str, Any] = {}
    dts: dict[str, Any] = {}
    for name, v in raw.items():
        if v is None:
            ins[name], dts[name] = None, None
            continue
        vals = v if isinstance(v, list) else [v]
        if name in promoted and compute is not None:
            vals = [cast_array(t, compute) for t in vals]
        names = [dtype_name(t.dtype) for t in vals]
        vals = [_up(t) for t in vals]
        ins[name] = vals if isinstance(v, list) else vals[0]
        dts[name] = names if isinstance(v, list) else names[0]

    call = _Call(op, ins, dts, attrs, outs)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = _evaluate(call)
        if isinstance(result, tuple):
            dtypes = (outs * len(result) if len(op.outputs) == 1 and op.outputs[0].variadic
                      else outs)
            return tuple(_contiguous(cast_array(np.asarray(r), d))
                         for r, d in zip(result, dtypes, strict=True))
        return _contiguous(cast_array(np.asarray(result), outs[0]))


def _contiguous(x: np.ndarray) -> np.ndarray:
    return x if x.flags.c_contiguous else np.array(x, order="C")


def _evaluate(call: _Call) -> Any:
    op = call.op
    if op.reference.startswith("ref:"):
        fn = _REFS.get(op.reference[4:])
        if fn is None:
            raise NotImplementedError(f"{op.name}: reference.py has no function "
                                      f"{op.reference!r}")
        return fn(call)
    if op.name in _OVERRIDES:
        return _OVERRIDES[op.name](call)
    env: dict[str, Any] = {"np": np, **call.attrs, **call.ins}
    try:
        return eval(op.reference, {"__builtins__": _SAFE_BUILTINS}, env)
    except (ValueError, TypeError, IndexError) as exc:
        raise ValueError(f"{op.name}: {exc}") from exc


def reference_function_names() -> list[str]:
    """The `ref:` functions this module implements (a test checks ops.yaml against it)."""
    return sorted(_REFS)
