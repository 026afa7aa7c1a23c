"""Decompositions of the composite ops of ops.yaml into other ops.

The dispatcher calls `fn(*inputs, **attrs)` when the device has no kernel for a composite:
inputs are Tensors in ops.yaml order (an absent optional input is None, a variadic input a
list), attrs are keyword arguments with every attr of the op present and normalized by infer-meta
(axes non-negative, reduction axes sorted, unique and never empty unless x is 0-d, dtype attrs
DType objects, shapes with -1 resolved, split sections as part sizes, slice bounds as
`slice(start, end, step).indices(dim)` gives them). Creation ops also get `place=`.

Each function only uses the public op API (`hwport.ops`, imported lazily: the dispatcher imports
this module) and Tensor views (`_view`), and never calls its own op. The result has exactly the
shape and dtype infer-meta gives. Shape ops return views where the layout allows, as the
dispatcher promises; everything else writes fresh tensors. Float16/bfloat16 inputs of compound
float math (reductions, normalizations, attention) are computed in float32 and rounded once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

    from hwport import DType, Place, Tensor

_LN2 = math.log(2.0)
_SQRT1_2 = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_PI = 2.0 * math.pi  # philox.TWO_PI
_INT_RANGE = {"int8": (-(2**7), 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-(2**15), 2**15 - 1),
              "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


# ---- helpers ------------------------------------------------------------------------------

def _F() -> ModuleType:
    from hwport import ops

    return ops


def _dt(name: str) -> DType:
    import hwport

    return hwport.DType.__members__[name]


def _as_dtype(dtype: Any) -> DType:
    """A DType from a DType or its name (the dispatcher passes DTypes; be lenient)."""
    import hwport

    if isinstance(dtype, hwport.DType):
        return dtype
    return hwport.DType.__members__[str(dtype)]


def _is_half(dtype: DType) -> bool:
    return str(dtype) in ("float16", "bfloat16")


def _up(x: Tensor) -> Tensor:
    """float16/bfloat16 -> float32 (the compute dtype of compound float math); else x."""
    return _F().cast(x, dtype=_dt("float32")) if _is_half(x.dtype) else x


def _to(x: Tensor, dtype: DType) -> Tensor:
    """x in `dtype` (no-op when it already is)."""
    return x if x.dtype == dtype else _F().cast(x, dtype=dtype)


def _const(value: float | bool, dtype: DType, place: Place) -> Tensor:
    """A 0-d tensor holding value (broadcasts against anything)."""
    return _F().fill(shape=[], value=value, dtype=dtype, place=place)


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _contiguous_strides(shape: Sequence[int]) -> list[int]:
    strides, s = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = s
        s *= max(shape[i], 1)
    return strides


def _norm_axis(axis: int, ndim: int) -> int:
    return axis % ndim if ndim else 0


def _view_strides(old_shape: Sequence[int], old_strides: Sequence[int],
                  new_shape: Sequence[int]) -> list[int] | None:
    """Strides that show a tensor of (old_shape, old_strides) as new_shape without copying,
    or None when the layout does not allow it (PyTorch's computeStride)."""
    if _numel(old_shape) == 0 or not old_shape:
        return _contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1
                             and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return new_strides


def _reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """x as `shape` (-1 already resolved): a view when the layout allows, else a copy."""
    shape = [int(d) for d in shape]
    strides = _view_strides(list(x.shape), list(x.strides), shape)
    if strides is not None:
        return x._view(shape, strides, x._offset)
    c = _F().copy(x)  # the op, not Tensor.contiguous: a trace (kernel lowering) sees it
    return c._view(shape, _contiguous_strides(shape), c._offset)


def _slice_view(x: Tensor, axis: int, start: int, stop: int, step: int = 1) -> Tensor:
    """x[..., start:stop:step, ...] along axis with range() semantics (start/stop as
    slice.indices gives them: for a negative step stop may be -1); a view."""
    dim = x.shape[axis]
    n = len(range(start, stop, step))
    shape, strides = list(x.shape), list(x.strides)
    offset = x._offset
    if n > 0:
        if not (0 <= start < dim and 0 <= start + (n - 1) * step < dim):
            raise IndexError(f"slice: range({start}, {stop}, {step}) is outside a dimension of "
                             f"size {dim}")
        offset += start * strides[axis]
    shape[axis] = n
    strides[axis] = strides[axis] * step
    return x._view(shape, strides, offset)


def _arange(n: int, place: Place, dtype: str = "int64") -> Tensor:
    return _F().arange(start=0, end=n, step=1, dtype=_dt(dtype), place=place)


# ---- unary --------------------------------------------------------------------------------

def log2(x: Tensor) -> Tensor:
    """log(x) / ln 2."""
    return _F().log(x) * (1.0 / _LN2)


def rsqrt(x: Tensor) -> Tensor:
    """1 / sqrt(x)."""
    F = _F()
    return F.divide(_const(1.0, x.dtype, x.place), F.sqrt(x))


def tan(x: Tensor) -> Tensor:
    """sin(x) / cos(x)."""
    F = _F()
    return F.divide(F.sin(x), F.cos(x))


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) without overflow: with e = exp(-|x|), 1/(1+e) for x >= 0 and
    e/(1+e) below."""
    F = _F()
    xc = _up(x)
    e = F.exp(F.neg(F.abs(xc)))
    denom = e + 1.0
    pos = F.divide(_const(1.0, xc.dtype, x.place), denom)
    neg = F.divide(e, denom)
    return _to(F.where(F.less_equal(_const(0, xc.dtype, x.place), xc), pos, neg), x.dtype)


def relu(x: Tensor) -> Tensor:
    """max(x, 0) in x's dtype (NaN propagates)."""
    return _F().maximum(x, _const(0, x.dtype, x.place))


def gelu(x: Tensor, *, approximate: bool = False) -> Tensor:
    """Exact: 0.5 x (1 + erf(x / sqrt 2)); approximate: PyTorch's tanh form
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    F = _F()
    xc = _up(x)
    if approximate:
        inner = (xc + xc * xc * xc * 0.044715) * _SQRT_2_OVER_PI
        y = xc * (F.tanh(inner) + 1.0) * 0.5
    else:
        y = xc * (F.erf(xc * _SQRT1_2) + 1.0) * 0.5
    return _to(y, x.dtype)


def _promoted(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """x and y cast to the dtype a binary op gives them (promotion)."""
    from .promotion import result_type

    dt = _as_dtype(result_type(str(x.dtype), str(y.dtype)))
    return _to(x, dt), _to(y, dt)


def gelu_grad(x: Tensor, grad: Tensor) -> Tensor:
    """gelu's VJP (erf form): grad * (Phi(x) + x phi(x)) (float32 for float16/bfloat16)."""
    F = _F()
    x, grad = _promoted(x, grad)
    xc, g = _up(x), _up(grad)
    cdf = (F.erf(xc * _SQRT1_2) + 1.0) * 0.5
    # x phi(x) as ((x e) c), the order of the C++ formula (the two agree bit for bit)
    return _to(F.multiply(g, cdf + xc * F.exp(xc * xc * -0.5) * _INV_SQRT_2PI), x.dtype)


def gelu_tanh_grad(x: Tensor, grad: Tensor) -> Tensor:
    """gelu's VJP (tanh form): with s = sigmoid(2u) = (1 + tanh(u)) / 2, u = sqrt(2/pi)
    (x + 0.044715 x^3): grad * (s + 2 x s (1 - s) du/dx), 1 - s = sigmoid(-2u) (no
    cancellation where tanh(u) is near -1; float32 for float16/bfloat16)."""
    F = _F()
    x, grad = _promoted(x, grad)
    xc, g = _up(x), _up(grad)
    u2 = (xc + xc * xc * xc * 0.044715) * (2.0 * _SQRT_2_OVER_PI)
    s = F.sigmoid(u2)
    d = s + xc * s * F.sigmoid(F.neg(u2)) * (xc * xc * 0.134145 + 1.0) * (2.0 * _SQRT_2_OVER_PI)
    return _to(F.multiply(g, d), x.dtype)


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x)."""
    F = _F()
    xc = _up(x)
    return _to(F.multiply(xc, F.sigmoid(xc)), x.dtype)


def softplus(x: Tensor, *, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """PyTorch's softplus: x where beta*x > threshold, else log(1 + exp(beta*x)) / beta,
    computed as (max(z, 0) + log1p(exp(-|z|))) / beta so no exp overflows."""
    F = _F()
    xc = _up(x)
    z = xc * beta
    zero = _const(0, xc.dtype, xc.place)
    soft = (F.maximum(z, zero) + F.log1p(F.exp(F.neg(F.abs(z))))) * (1.0 / beta)
    linear = F.less_than(_const(threshold, xc.dtype, xc.place), z)
    return _to(F.where(linear, xc, soft), x.dtype)


def reciprocal(x: Tensor) -> Tensor:
    """1 / x."""
    return _F().divide(_const(1.0, x.dtype, x.place), x)


def square(x: Tensor) -> Tensor:
    """x * x."""
    return _F().multiply(x, x)


def isfinite(x: Tensor) -> Tensor:
    """not (isnan(x) or isinf(x))."""
    F = _F()
    return F.logical_not(F.logical_or(F.isnan(x), F.isinf(x)))


# ---- binary / ternary ---------------------------------------------------------------------

def greater_than(x: Tensor, y: Tensor) -> Tensor:
    """y < x."""
    return _F().less_than(y, x)


def greater_equal(x: Tensor, y: Tensor) -> Tensor:
    """y <= x."""
    return _F().less_equal(y, x)


def _int_bound(value: float, dtype: DType) -> int:
    """clip's bound in an integer dtype, as phi_ops/reference.py converts it: a float bound
    truncates toward zero (NaN gives 0, +-inf the dtype's max/min), then saturates to the
    dtype's range."""
    lo, hi = _INT_RANGE[str(dtype)]
    if isinstance(value, float):
        if math.isnan(value):
            value = 0
        elif math.isinf(value):
            value = hi if value > 0 else lo
    return max(min(int(value), hi), lo)  # int(): truncation toward zero


def clip(x: Tensor, *, min: float | None = None, max: float | None = None) -> Tensor:
    """minimum(maximum(x, min), max) in x's dtype, each bound first converted to x's dtype
    (float dtypes round it; integer dtypes truncate it toward zero and saturate), as in
    phi_ops/reference.py: min > max gives max, NaN stays NaN, None is unbounded."""
    F = _F()
    integer = str(x.dtype) in _INT_RANGE
    out = x
    for bound, fn in ((min, F.maximum), (max, F.minimum)):
        if bound is not None:
            b = _int_bound(bound, x.dtype) if integer else bound
            out = fn(out, _const(b, x.dtype, x.place))
    if out is x:
        out = F.copy(x)
    return out


# ---- reductions ---------------------------------------------------------------------------

def _reduced_count(x: Tensor, axis: Sequence[int]) -> int:
    return _numel([x.shape[a] for a in axis])


def _mean(xc: Tensor, axis: list[int], keepdim: bool) -> Tensor:
    F = _F()
    s = F.sum(xc, axis=axis, keepdim=keepdim)
    n = _reduced_count(xc, axis)
    return s * math.nan if n == 0 else s / n


def mean(x: Tensor, *, axis: Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """sum / count (float32 accumulation for float16/bfloat16; NaN for an empty reduction)."""
    axis = list(axis) if axis else list(range(x.ndim))
    return _to(_mean(_up(x), axis, keepdim), x.dtype)


def any(x: Tensor, *, axis: Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """sum(x != 0) != 0 (False for an empty reduction; NaN counts as nonzero)."""
    F = _F()
    axis = list(axis) if axis else list(range(x.ndim))
    nonzero = F.not_equal(x, _const(0, x.dtype, x.place))
    count = F.sum(nonzero, axis=axis, keepdim=keepdim)
    return F.not_equal(count, _const(0, count.dtype, x.place))


def all(x: Tensor, *, axis: Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """sum(x == 0) == 0 (True for an empty reduction)."""
    F = _F()
    axis = list(axis) if axis else list(range(x.ndim))
    count = F.sum(F.equal(x, _const(0, x.dtype, x.place)), axis=axis, keepdim=keepdim)
    return F.equal(count, _const(0, count.dtype, x.place))


def _finite_or_zero(m: Tensor) -> Tensor:
    F = _F()
    return F.where(F.isfinite(m), m, _const(0, m.dtype, m.place))


def logsumexp(x: Tensor, *, axis: Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """m + log(sum(exp(x - m))) with m the max, replaced by 0 where it is not finite (so an
    all -inf slice gives -inf and +inf gives +inf, as PyTorch); -inf for an empty reduction."""
    F = _F()
    axis = list(axis) if axis else list(range(x.ndim))
    xc = _up(x)
    if xc.size == 0 or _reduced_count(xc, axis) == 0:
        return _to(F.log(F.sum(F.exp(xc), axis=axis, keepdim=keepdim)), x.dtype)
    m = _finite_or_zero(F.max(xc, axis=axis, keepdim=True))
    s = F.sum(F.exp(F.subtract(xc, m)), axis=axis, keepdim=keepdim)
    if not keepdim:
        m = _reshape(m, list(s.shape))
    return _to(F.add(F.log(s), m), x.dtype)


def var(x: Tensor, *, axis: Sequence[int] = (), keepdim: bool = False,
        unbiased: bool = True) -> Tensor:
    """sum((x - mean)^2) / (n - 1 if unbiased else n), two-pass; NaN when that divisor is
    <= 0 (numpy's var with ddof)."""
    F = _F()
    axis = list(axis) if axis else list(range(x.ndim))
    xc = _up(x)
    n = _reduced_count(xc, axis)
    d = F.subtract(xc, _mean(xc, axis, keepdim=True))
    s = F.sum(F.multiply(d, d), axis=axis, keepdim=keepdim)
    dof = n - 1 if unbiased else n
    out = s * math.nan if dof <= 0 else s / dof
    return _to(out, x.dtype)


def std(x: Tensor, *, axis: Sequence[int] = (), keepdim: bool = False,
        unbiased: bool = True) -> Tensor:
    """sqrt(var)."""
    F = _F()
    xc = _up(x)
    v = F.var(xc, axis=list(axis), keepdim=keepdim, unbiased=unbiased)
    return _to(F.sqrt(v), x.dtype)


# ---- shape --------------------------------------------------------------------------------

def reshape(x: Tensor, *, shape: Sequence[int]) -> Tensor:
    """A view when x's layout allows (contiguous, or compatible strides), else a copy."""
    shape = list(shape)
    if -1 in shape:
        known = _numel([d for d in shape if d != -1])
        shape[shape.index(-1)] = x.size // known if known else 0
    return _reshape(x, shape)


def transpose(x: Tensor, *, perm: Sequence[int] | None = None) -> Tensor:
    """Permuted shape and strides; a view."""
    nd = x.ndim
    p = list(range(nd))[::-1] if perm is None else [_norm_axis(a, nd) for a in perm]
    shape, strides = list(x.shape), list(x.strides)
    return x._view([shape[a] for a in p], [strides[a] for a in p], x._offset)


def flatten(x: Tensor, *, start_axis: int = 0, stop_axis: int = -1) -> Tensor:
    """Merge dims start_axis..stop_axis (a 0-d tensor becomes [1])."""
    if x.ndim == 0:
        return _reshape(x, [1])
    s, e = _norm_axis(start_axis, x.ndim), _norm_axis(stop_axis, x.ndim)
    shape = list(x.shape)
    return _reshape(x, [*shape[:s], _numel(shape[s:e + 1]), *shape[e + 1:]])


def squeeze(x: Tensor, *, axis: Sequence[int] = ()) -> Tensor:
    """Drop the size-1 dims in axis (all size-1 dims when empty; others are kept); a view."""
    nd = x.ndim
    axes = {_norm_axis(a, nd) for a in axis} if axis else set(range(nd))
    keep = [i for i in range(nd) if not (i in axes and x.shape[i] == 1)]
    return x._view([x.shape[i] for i in keep], [x.strides[i] for i in keep], x._offset)


def unsqueeze(x: Tensor, *, axis: Sequence[int]) -> Tensor:
    """Insert size-1 dims at the given output positions; a view."""
    out_nd = x.ndim + len(axis)
    axes = {_norm_axis(a, out_nd) for a in axis}
    shape, strides = [], []
    src = 0
    for i in range(out_nd):
        if i in axes:
            # Any stride works for a size-1 dim; keep the layout's contiguity visible.
            inner = x.strides[src] * x.shape[src] if src < x.ndim else 1
            shape.append(1)
            strides.append(inner)
        else:
            shape.append(x.shape[src])
            strides.append(x.strides[src])
            src += 1
    return x._view(shape, strides, x._offset)


def expand(x: Tensor, *, shape: Sequence[int]) -> Tensor:
    """Broadcast to shape with stride 0 on new and size-1 dims; a view."""
    target = list(shape)
    lead = len(target) - x.ndim
    strides = []
    for i, size in enumerate(shape):
        d = size
        if i < lead:
            if d == -1:
                raise ValueError(f"expand: -1 is not allowed for the new leading dim {i}")
            strides.append(0)
            continue
        src, st = x.shape[i - lead], x.strides[i - lead]
        if d == -1:
            target[i] = d = src
        if src == d:
            strides.append(st)
        elif src == 1:
            strides.append(0)
        else:
            raise ValueError(f"expand: cannot expand x of shape {list(x.shape)} to {list(shape)}")
    return x._view(target, strides, x._offset)


def stack(xs: Sequence[Tensor], *, axis: int = 0) -> Tensor:
    """concat of the inputs, each unsqueezed at axis."""
    nd = xs[0].ndim + 1
    a = _norm_axis(axis, nd)
    return _F().concat([unsqueeze(t, axis=[a]) for t in xs], axis=a)


def _split_sizes(sections: Sequence[int], dim: int) -> list[int]:
    sections = list(sections)
    if sum(sections) == dim and (len(sections) != 1 or sections[0] == dim):
        return sections  # part sizes (the dispatcher passes these)
    n = sections[0]  # one int: that many equal parts
    if len(sections) != 1 or n <= 0 or dim % n:
        raise ValueError(f"split: cannot split a dimension of size {dim} by {sections}")
    return [dim // n] * n


def split(x: Tensor, *, sections: Sequence[int], axis: int = 0) -> list[Tensor]:
    """Views of consecutive parts along axis; `sections` are part sizes (the normalized form),
    or a single count of equal parts."""
    a = _norm_axis(axis, x.ndim)
    out, start = [], 0
    for s in _split_sizes(sections, x.shape[a]):
        out.append(_slice_view(x, a, start, start + s))
        start += s
    return out


def slice(x: Tensor, *, axes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
          strides: Sequence[int] = ()) -> Tensor:
    """A strided view. Bounds are taken as slice(start, end, step).indices(dim) returns them
    (the dispatcher's normalization): range(start, end, step) over the dim."""
    steps = list(strides) if strides else [1] * len(axes)
    out = x
    for a, s, e, st in zip(axes, starts, ends, steps, strict=True):
        out = _slice_view(out, _norm_axis(a, x.ndim), s, e, st)
    return out


def flip(x: Tensor, *, axis: Sequence[int]) -> Tensor:
    """Negative strides, offset at the last element of each flipped dim; a view."""
    shape, strides = list(x.shape), list(x.strides)
    offset = x._offset
    for a in {_norm_axis(a, x.ndim) for a in axis}:
        if shape[a] > 0:
            offset += (shape[a] - 1) * strides[a]
        strides[a] = -strides[a]
    return x._view(shape, strides, offset)


def tile(x: Tensor, *, repeats: Sequence[int]) -> Tensor:
    """x viewed as [r0, d0, r1, d1, ...] with stride 0 on the repeats, copied, reshaped to
    [r0*d0, r1*d1, ...] (numpy's tile: repeats and dims padded with leading 1s)."""
    reps = list(repeats)
    n = max(len(reps), x.ndim)
    reps = [1] * (n - len(reps)) + reps
    lead = n - x.ndim
    shape = [1] * lead + list(x.shape)
    strides = [0] * lead + list(x.strides)
    vshape, vstrides = [], []
    for r, d, st in zip(reps, shape, strides, strict=True):
        vshape += [r, d]
        vstrides += [0, st]
    expanded = x._view(vshape, vstrides, x._offset)
    copied = _F().copy(expanded)
    out_shape = [r * d for r, d in zip(reps, shape, strict=True)]
    return copied._view(out_shape, _contiguous_strides(out_shape), copied._offset)


def roll(x: Tensor, *, shifts: Sequence[int], axis: Sequence[int] = ()) -> Tensor:
    """Per axis: concat(x[dim-s:], x[:dim-s]); with no axis, over the flattened tensor."""
    F = _F()
    if not axis:
        flat = _reshape(x, [x.size])
        rolled = roll(flat, shifts=[sum(shifts)], axis=[0])
        return _reshape(rolled, list(x.shape))
    shift_list = list(shifts)
    if len(shift_list) == 1 and len(axis) > 1:
        shift_list = shift_list * len(axis)
    out = x
    moved = False
    for s, ax in zip(shift_list, axis, strict=True):
        a = _norm_axis(ax, x.ndim)
        dim = x.shape[a]
        if dim == 0 or s % dim == 0:
            continue
        k = dim - s % dim
        out = F.concat([_slice_view(out, a, k, dim), _slice_view(out, a, 0, k)], axis=a)
        moved = True
    return out if moved else F.copy(x)


def _tri_mask(rows: int, cols: int, diagonal: int, lower: bool, place: Place) -> Tensor:
    """[rows, cols] bool: j - i <= diagonal (lower) or j - i >= diagonal (upper)."""
    F = _F()
    i = _reshape(F.arange(start=diagonal, end=diagonal + rows, step=1, dtype=_dt("int64"),
                          place=place), [rows, 1])
    j = _reshape(_arange(cols, place), [1, cols])
    return F.less_equal(j, i) if lower else F.less_equal(i, j)


def tril(x: Tensor, *, diagonal: int = 0) -> Tensor:
    """where(j - i <= diagonal, x, 0) over the last two dims."""
    mask = _tri_mask(x.shape[-2], x.shape[-1], diagonal, True, x.place)
    return _F().where(mask, x, _const(0, x.dtype, x.place))


def triu(x: Tensor, *, diagonal: int = 0) -> Tensor:
    """where(j - i >= diagonal, x, 0) over the last two dims."""
    mask = _tri_mask(x.shape[-2], x.shape[-1], diagonal, False, x.place)
    return _F().where(mask, x, _const(0, x.dtype, x.place))


# ---- index --------------------------------------------------------------------------------

def index_select(x: Tensor, index: Tensor, *, axis: int = 0) -> Tensor:
    """gather."""
    return _F().gather(x, index, axis=axis)


def topk(x: Tensor, *, k: int, axis: int = -1, largest: bool = True) -> tuple[Tensor, Tensor]:
    """The first k of a stable argsort (descending when largest), then take_along_axis."""
    F = _F()
    if x.ndim == 0:  # infer-meta keeps the 0-d shape
        return F.copy(x), F.fill(shape=[], value=0, dtype=_dt("int64"), place=x.place)
    a = _norm_axis(axis, x.ndim)
    order = F.argsort(x, axis=a, descending=largest)
    idx = F.copy(_slice_view(order, a, 0, k))
    return F.take_along_axis(x, idx, axis=a), idx


def sort(x: Tensor, *, axis: int = -1, descending: bool = False) -> Tensor:
    """take_along_axis(x, argsort(x))."""
    F = _F()
    if x.ndim == 0:
        return F.copy(x)
    a = _norm_axis(axis, x.ndim)
    return F.take_along_axis(x, F.argsort(x, axis=a, descending=descending), axis=a)


# ---- creation -----------------------------------------------------------------------------

def _place(place: Place | None, x: Tensor | None = None) -> Any:
    if place is not None:
        return place
    if x is not None:
        return x.place
    import hwport

    return hwport.get_device()


def _fill_dtype(dtype: DType | str | None, value: float | bool) -> DType:
    if dtype is not None:
        return _as_dtype(dtype)
    if isinstance(value, bool):
        return _dt("bool")
    if isinstance(value, int):
        return _dt("int64")
    return _dt("float32")


def full(*, shape: Sequence[int], fill_value: float, dtype: DType | None = None,
         place: Place | None = None) -> Tensor:
    """fill."""
    return _F().fill(shape=list(shape), value=fill_value, dtype=_fill_dtype(dtype, fill_value),
                     place=_place(place))


def zeros(*, shape: Sequence[int], dtype: DType | None = None,
          place: Place | None = None) -> Tensor:
    """fill with 0."""
    return _F().fill(shape=list(shape), value=0, dtype=_fill_dtype(dtype, 0.0),
                     place=_place(place))


def ones(*, shape: Sequence[int], dtype: DType | None = None,
         place: Place | None = None) -> Tensor:
    """fill with 1."""
    return _F().fill(shape=list(shape), value=1, dtype=_fill_dtype(dtype, 1.0),
                     place=_place(place))


def full_like(x: Tensor, *, fill_value: float, dtype: DType | None = None,
              place: Place | None = None) -> Tensor:
    """fill with x's shape, dtype (unless given) and place."""
    return _F().fill(shape=list(x.shape), value=fill_value,
                     dtype=x.dtype if dtype is None else _as_dtype(dtype),
                     place=_place(place, x))


def zeros_like(x: Tensor, *, dtype: DType | None = None,
               place: Place | None = None) -> Tensor:
    """fill with 0, like x."""
    return full_like(x, fill_value=0, dtype=dtype, place=place)


def ones_like(x: Tensor, *, dtype: DType | None = None,
              place: Place | None = None) -> Tensor:
    """fill with 1, like x."""
    return full_like(x, fill_value=1, dtype=dtype, place=place)


def linspace(*, start: float, stop: float, num: int, dtype: DType | None = None,
             place: Place | None = None) -> Tensor:
    """numpy's linspace: start + i * ((stop - start) / (num - 1)) in float64, the last value
    exactly stop, then cast to dtype."""
    F = _F()
    p = _place(place)
    out_dtype = _dt("float32") if dtype is None else _as_dtype(dtype)
    f64 = _dt("float64")
    i = _arange(num, p, "float64")
    if num <= 1:
        y = i + float(start)
    else:
        step = (float(stop) - float(start)) / (num - 1)
        y = i * step + float(start)
        last = F.equal(i, _const(float(num - 1), f64, p))
        y = F.where(last, _const(float(stop), f64, p), y)
    return F.cast(y, dtype=out_dtype)


def eye(*, n: int, m: int | None = None, dtype: DType | None = None,
        place: Place | None = None) -> Tensor:
    """cast(arange(n)[:, None] == arange(m)[None, :], dtype)."""
    F = _F()
    p = _place(place)
    m = n if m is None else m
    rows = _reshape(_arange(n, p), [n, 1])
    cols = _reshape(_arange(m, p), [1, m])
    return F.cast(F.equal(rows, cols), dtype=_dt("float32") if dtype is None else _as_dtype(dtype))


# ---- random -------------------------------------------------------------------------------

def normal(*, shape: Sequence[int], mean: float = 0.0, std: float = 1.0, seed: int,
           offset: int = 0, dtype: DType | None = None, place: Place | None = None) -> Tensor:
    """Box-Muller (cosine branch) over two float32-path Philox uniform streams, exactly as
    phi_ops/philox.py's `normal` defines it: with n = numel(shape), in float64,
    a = uniform(offset..), b = uniform(offset + n..), u1 = 1 - a,
    z = sqrt(-2 log u1) cos(2 pi b), mean + std * z rounded once to dtype."""
    F = _F()
    p = _place(place)
    shape = list(shape)
    n = _numel(shape)
    out_dtype = _dt("float32") if dtype is None else _as_dtype(dtype)
    f32, f64 = _dt("float32"), _dt("float64")
    a = F.cast(F.uniform(shape=shape, min=0.0, max=1.0, seed=seed, offset=offset, dtype=f32,
                         place=p), dtype=f64)
    b = F.cast(F.uniform(shape=shape, min=0.0, max=1.0, seed=seed, offset=offset + n,
                         dtype=f32, place=p), dtype=f64)
    u1 = F.subtract(_const(1.0, f64, p), a)
    r = F.sqrt(F.multiply(_const(-2.0, f64, p), F.log(u1)))
    z = F.multiply(r, F.cos(F.multiply(_const(_TWO_PI, f64, p), b)))
    v = F.add(_const(float(mean), f64, p), F.multiply(_const(float(std), f64, p), z))
    return F.cast(v, dtype=out_dtype)


# ---- nn -----------------------------------------------------------------------------------

def softmax(x: Tensor, *, axis: int = -1) -> Tensor:
    """exp(x - max) / sum, along axis."""
    F = _F()
    xc = _up(x)
    if xc.size == 0:
        return _to(F.exp(xc), x.dtype)
    a = [_norm_axis(axis, x.ndim)] if x.ndim else []  # 0-d: reduce over nothing
    e = F.exp(F.subtract(xc, F.max(xc, axis=a, keepdim=True)))
    return _to(F.divide(e, F.sum(e, axis=a, keepdim=True)), x.dtype)


def log_softmax(x: Tensor, *, axis: int = -1) -> Tensor:
    """(x - max) - log(sum(exp(x - max))), along axis."""
    F = _F()
    xc = _up(x)
    if xc.size == 0:
        return _to(F.copy(xc), x.dtype)
    a = [_norm_axis(axis, x.ndim)] if x.ndim else []
    shifted = F.subtract(xc, F.max(xc, axis=a, keepdim=True))
    lse = F.log(F.sum(F.exp(shifted), axis=a, keepdim=True))
    return _to(F.subtract(shifted, lse), x.dtype)


def _normalized_axes(x: Tensor, normalized_ndim: int) -> list[int]:
    return list(range(x.ndim - normalized_ndim, x.ndim))


def layer_norm(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None, *,
               normalized_ndim: int = 1, epsilon: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(biased var + eps) * weight + bias over the last normalized_ndim dims
    (float32 for float16/bfloat16)."""
    F = _F()
    xc = _up(x)
    axes = _normalized_axes(x, normalized_ndim)
    d = F.subtract(xc, _mean(xc, axes, keepdim=True))
    v = _mean(F.multiply(d, d), axes, keepdim=True)
    y = F.divide(d, F.sqrt(v + float(epsilon)))
    if weight is not None:
        y = F.multiply(y, _to(weight, xc.dtype) if _is_half(weight.dtype) else weight)
    if bias is not None:
        y = F.add(y, _to(bias, xc.dtype) if _is_half(bias.dtype) else bias)
    return _to(y, x.dtype)


def rms_norm(x: Tensor, weight: Tensor | None = None, *, normalized_ndim: int = 1,
             epsilon: float = 1e-6) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last normalized_ndim dims."""
    F = _F()
    xc = _up(x)
    axes = _normalized_axes(x, normalized_ndim)
    ms = _mean(F.multiply(xc, xc), axes, keepdim=True)
    y = F.divide(xc, F.sqrt(ms + float(epsilon)))
    if weight is not None:
        y = F.multiply(y, _to(weight, xc.dtype) if _is_half(weight.dtype) else weight)
    return _to(y, x.dtype)


def softmax_grad(out: Tensor, grad: Tensor, *, axis: int = -1) -> Tensor:
    """softmax's VJP from its output: (grad - sum(grad * out, axis)) * out (float32 for
    float16/bfloat16)."""
    F = _F()
    a = [_norm_axis(axis, out.ndim)] if out.ndim else []
    g, o = _up(grad), _up(out)
    return _to(F.multiply(F.subtract(g, F.sum(F.multiply(g, o), axis=a, keepdim=True)), o),
               out.dtype)


def _scaled_grad(grad: Tensor, weight: Tensor | None) -> Tensor:
    """A normalization's output gradient through its weight (float32 for half types)."""
    return _up(grad) if weight is None else _F().multiply(_up(grad), _up(weight))


def layer_norm_grad(x: Tensor, grad: Tensor, weight: Tensor | None = None, *,
                    normalized_ndim: int = 1, epsilon: float = 1e-5) -> Tensor:
    """layer_norm's VJP for x: (gh - mean(gh) - xh * mean(gh * xh)) * rstd over the normalized
    dims, xh = (x - mean) * rstd, gh = grad * weight."""
    F = _F()
    xc = _up(x)
    a = _normalized_axes(x, normalized_ndim)
    d = F.subtract(xc, F.mean(xc, axis=a, keepdim=True))
    rstd = F.rsqrt(F.add(F.mean(F.multiply(d, d), axis=a, keepdim=True), float(epsilon)))
    xh = F.multiply(d, rstd)
    gh = _scaled_grad(grad, weight)
    centered = F.subtract(F.subtract(gh, F.mean(gh, axis=a, keepdim=True)),
                          F.multiply(xh, F.mean(F.multiply(gh, xh), axis=a, keepdim=True)))
    return _to(F.multiply(centered, rstd), x.dtype)


def rms_norm_grad(x: Tensor, grad: Tensor, weight: Tensor | None = None, *,
                  normalized_ndim: int = 1, epsilon: float = 1e-5) -> Tensor:
    """rms_norm's VJP for x: (gh - x * rstd^2 * mean(gh * x)) * rstd over the normalized dims,
    rstd = 1 / sqrt(mean(x^2) + eps), gh = grad * weight."""
    F = _F()
    xc = _up(x)
    a = _normalized_axes(x, normalized_ndim)
    rstd = F.rsqrt(F.add(F.mean(F.multiply(xc, xc), axis=a, keepdim=True), float(epsilon)))
    gh = _scaled_grad(grad, weight)
    proj = F.multiply(F.multiply(F.multiply(xc, rstd), rstd),
                      F.mean(F.multiply(gh, xc), axis=a, keepdim=True))
    return _to(F.multiply(F.subtract(gh, proj), rstd), x.dtype)


def embedding(index: Tensor, weight: Tensor) -> Tensor:
    """gather(weight, flattened index, axis=0), reshaped to index.shape + [D]."""
    F = _F()
    flat = _reshape(index, [index.size])
    rows = F.gather(weight, flat, axis=0)
    return _reshape(rows, list(index.shape) + list(weight.shape[1:]))


def dropout(x: Tensor, *, p: float = 0.5, training: bool = True, seed: int = 0,
            offset: int = 0) -> Tensor:
    """Not training: a copy of x. Else keep where u >= p, u the float32-path Philox uniform
    of counters offset.. (compared exactly, in float64), scaled by 1 / (1 - p); p == 1 gives
    zeros (phi_ops/reference.py's dropout)."""
    F = _F()
    if not training:
        return F.copy(x)
    if p >= 1.0:
        return F.fill(shape=list(x.shape), value=0, dtype=x.dtype, place=x.place)
    f64 = _dt("float64")
    u = F.uniform(shape=list(x.shape), min=0.0, max=1.0, seed=seed, offset=offset,
                  dtype=_dt("float32"), place=x.place)
    keep = F.less_equal(_const(float(p), f64, x.place), F.cast(u, dtype=f64))
    xc = _up(x)
    scaled = xc * (1.0 / (1.0 - float(p)))
    return _to(F.where(keep, scaled, _const(0, xc.dtype, x.place)), x.dtype)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight + bias."""
    F = _F()
    y = F.matmul(x, weight)
    if bias is not None:
        y = F.add(y, _to(bias, y.dtype))
    return y


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, *, is_causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """softmax(q k^T * scale + mask) v (float32 for float16/bfloat16). scale None: 1/sqrt(E).
    A bool mask keeps where true (else -inf); a float mask is added; is_causal keeps the lower
    triangle of [L, S]. A fully masked row gives NaN, as PyTorch's math path does."""
    from .promotion import result_type

    F = _F()
    out_dtype = _as_dtype(result_type(str(query.dtype), str(key.dtype), str(value.dtype)))
    q, k, v = _up(query), _up(key), _up(value)
    e = query.shape[-1]
    s = 1.0 / math.sqrt(e) if scale is None else float(scale)
    scores = F.matmul(q, k, transpose_y=True) * s
    neg_inf = _const(-math.inf, scores.dtype, scores.place)
    if is_causal:
        L, S = query.shape[-2], key.shape[-2]
        scores = F.where(_tri_mask(L, S, 0, True, scores.place), scores, neg_inf)
    if attn_mask is not None:
        if str(attn_mask.dtype) == "bool":
            scores = F.where(attn_mask, scores, neg_inf)
        else:
            scores = F.add(scores, _to(attn_mask, scores.dtype))
    probs = F.softmax(scores, axis=-1)
    return _to(F.matmul(probs, _to(v, probs.dtype)), out_dtype)


def rotary_embedding(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1) of the last dim's
    halves."""
    F = _F()
    xc = _up(x)
    d = x.shape[-1]
    a = x.ndim - 1
    x1 = _slice_view(xc, a, 0, d // 2)
    x2 = _slice_view(xc, a, d // 2, d)
    rotated = F.concat([F.neg(x2), x1], axis=a)
    c = _to(cos, xc.dtype) if _is_half(cos.dtype) else cos
    s = _to(sin, xc.dtype) if _is_half(sin.dtype) else sin
    return _to(F.add(F.multiply(xc, c), F.multiply(rotated, s)), x.dtype)


def cross_entropy(logits: Tensor, label: Tensor, *, reduction: str = "mean",
                  ignore_index: int = -100) -> Tensor:
    """-log_softmax(logits)[i, label[i]] per row, 0 where label == ignore_index; mean over the
    rows not ignored (NaN when none), sum, or none."""
    F = _F()
    lc = _up(logits)
    axis = 1 if logits.ndim >= 2 else 0
    lsm = F.log_softmax(lc, axis=axis)
    valid = F.not_equal(label, _const(ignore_index, label.dtype, label.place))
    safe = F.where(valid, label, _const(0, label.dtype, label.place))
    picked = F.take_along_axis(lsm, unsqueeze(safe, axis=[axis]), axis=axis)
    picked = squeeze(picked, axis=[axis])
    zero = _const(0, lc.dtype, lc.place)
    loss = F.where(valid, F.neg(picked), zero)
    if reduction == "none":
        return _to(loss, logits.dtype)
    total = F.sum(loss, axis=list(range(loss.ndim)))
    if reduction == "sum":
        return _to(total, logits.dtype)
    if reduction != "mean":
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    count = F.sum(F.cast(valid, dtype=lc.dtype), axis=list(range(valid.ndim)))
    return _to(F.divide(total, count), logits.dtype)


def cross_entropy_grad(logits: Tensor, label: Tensor, grad: Tensor, *, reduction: str = "mean",
                       ignore_index: int = -100) -> Tensor:
    """cross_entropy's VJP: (softmax(logits) - onehot(label)) * the row's weight (grad, over the
    rows not ignored for mean; 0 for an ignored row)."""
    F = _F()
    lc = _up(logits)
    valid = F.not_equal(label, ignore_index)
    g = _up(grad)
    gl = g if reduction != "mean" else F.divide(g, F.sum(F.cast(valid, dtype=lc.dtype)))
    w = F.where(valid, gl, 0.0)
    safe = F.where(valid, label, 0)
    i = F.subtract(F.cumsum(F.ones_like(lc, dtype=label.dtype), axis=1), 1)
    hot = F.cast(F.equal(i, F.unsqueeze(safe, axis=[1])), dtype=lc.dtype)
    return _to(F.multiply(F.subtract(F.softmax(lc, axis=1), hot), F.unsqueeze(w, axis=[1])),
               logits.dtype)


# ---- optimizer updates ----------------------------------------------------------------------

def adam_update(param: Tensor, grad: Tensor, moment1: Tensor, moment2: Tensor, *,
                beta1: float, beta2: float, epsilon: float, lr: float,
                decay: float = 1.0) -> tuple[Tensor, Tensor, Tensor]:
    """One Adam(W) step in the inputs' dtype: decoupled decay, the moments, the update (the
    fused kernels compute these operations in this order)."""
    F = _F()
    p = param if float(decay) == 1.0 else F.multiply(param, float(decay))
    m = F.add(F.multiply(moment1, float(beta1)), F.multiply(grad, 1.0 - float(beta1)))
    v = F.add(F.multiply(moment2, float(beta2)),
              F.multiply(F.multiply(grad, grad), 1.0 - float(beta2)))
    step = F.multiply(F.divide(m, F.add(F.sqrt(v), float(epsilon))), float(lr))
    return F.subtract(p, step), m, v
