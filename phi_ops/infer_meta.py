"""Infer-meta: from the inputs' shapes and dtypes and the attributes, the outputs' shapes and
dtypes, the normalized attributes kernels and decompositions receive, and the casts and
broadcast the inputs need. Every rule validates its op's input first: a bad input raises here,
before any kernel runs, naming the op, the argument and what was expected."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .promotion import check_scalar_fits, itemsize, out_dtype, result_type, scalar_for_dtype
from .schema import OpDef


@dataclass(frozen=True)
class Meta:
    shape: tuple[int, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


Inputs = list["Meta | list[Meta] | None"]


@dataclass
class Plan:
    outputs: list[Meta]
    attrs: dict[str, Any]
    casts: dict[int, str] = field(default_factory=dict)  # input position -> dtype to cast to
    broadcast: tuple[int, ...] | None = None  # elementwise: broadcast inputs to this shape


class AxisError(ValueError, IndexError):
    """An axis outside [-ndim, ndim) (like numpy's AxisError, both a ValueError and an
    IndexError)."""


INTEGER_DTYPES = ("int8", "uint8", "int16", "int32", "int64")
INDEX_DTYPES = ("int32", "int64")


def shape_str(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def normalize_axis(op: str, arg: str, axis: int, ndim: int) -> int:
    """axis in [-ndim, ndim) -> [0, ndim); a 0-d tensor accepts -1 and 0."""
    bound = max(ndim, 1)
    if not -bound <= axis < bound:
        raise AxisError(f"{op}: {arg}={axis} is out of range for a tensor of {ndim} dims "
                        f"(expected -{bound} <= {arg} < {bound})")
    return axis % bound


def normalize_axes(op: str, arg: str, axes: Sequence[int], ndim: int) -> list[int]:
    out = sorted({normalize_axis(op, arg, a, ndim) for a in axes})
    if len(out) != len(axes):
        raise ValueError(f"{op}: {arg}={list(axes)} names a dimension twice")
    return out


def broadcast_shapes(op: str, shapes: Sequence[Sequence[int]],
                     names: Sequence[str]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for k in range(ndim):
        for s in shapes:
            d = s[k - ndim + len(s)] if k >= ndim - len(s) else 1
            if d == 1:
                continue
            if out[k] not in (1, d):
                described = ", ".join(f"{n} of shape {shape_str(s)}"
                                      for s, n in zip(shapes, names, strict=True))
                raise ValueError(f"{op}: cannot broadcast {described} (dimension {k}: "
                                 f"{out[k]} vs {d})")
            out[k] = d
    return tuple(out)


def _require_int_index(op: str, arg: str, m: Meta) -> None:
    if m.dtype not in INDEX_DTYPES:
        raise TypeError(f"{op}: {arg} must be an int32 or int64 tensor, got {m.dtype}")


def _out(op: OpDef, dtypes: list[str], attrs: dict[str, Any]) -> str:
    return out_dtype(op, dtypes, attrs)[0]


# ---- elementwise ------------------------------------------------------------------------

def unary(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    attrs = dict(attrs)
    if "axis" in attrs and attrs["axis"] is not None:
        if isinstance(attrs["axis"], list) and op.name == "roll":  # numpy: repeats add up
            attrs["axis"] = [normalize_axis(op.name, "axis", a, x.ndim) for a in attrs["axis"]]
        elif isinstance(attrs["axis"], list):
            attrs["axis"] = normalize_axes(op.name, "axis", attrs["axis"], x.ndim)
        else:
            attrs["axis"] = normalize_axis(op.name, "axis", attrs["axis"], x.ndim)
    check = _UNARY_CHECKS.get(op.name)
    if check is not None:
        check(op, inputs, attrs)
    return Plan([Meta(x.shape, _out(op, [x.dtype], attrs))], attrs)


def _check_norm(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> None:
    _check_affine(op.name, inputs[0], [i.name for i in op.inputs[1:]], inputs[1:], attrs)


def _check_affine(op: str, x: Meta, names: list[str], affine: Sequence[Meta | None],
                  attrs: dict[str, Any]) -> None:
    """A normalization's normalized_ndim and epsilon, and its optional affine inputs (of the
    normalized shape, floating); sets has_<input> for the kernel."""
    n = attrs["normalized_ndim"]
    if not 1 <= n <= x.ndim:
        raise ValueError(f"{op}: normalized_ndim={n} must be in [1, {x.ndim}] for x of "
                         f"shape {shape_str(x.shape)}")
    trailing = x.shape[x.ndim - n:]
    for name, m in zip(names, affine, strict=False):
        if m is not None and m.shape != trailing:
            raise ValueError(f"{op}: {name} has shape {shape_str(m.shape)}, expected the "
                             f"normalized shape {shape_str(trailing)} of x")
    for name, m in zip(names, affine, strict=False):
        if m is not None and m.dtype not in ("float16", "bfloat16", "float32", "float64"):
            raise TypeError(f"{op}: {name} has dtype {m.dtype}; expected a floating "
                            "dtype (float16, bfloat16, float32 or float64)")
    if attrs["epsilon"] < 0:
        raise ValueError(f"{op}: epsilon must be >= 0, got {attrs['epsilon']}")
    for name, m in zip(names, affine, strict=False):
        attrs[f"has_{name}"] = m is not None


def _check_rotary(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> None:
    x, cos, sin = inputs
    if x.ndim == 0 or x.shape[-1] % 2:
        raise ValueError(f"rotary_embedding: the last dim of x must be even, got shape "
                         f"{shape_str(x.shape)}")
    for name, m in (("cos", cos), ("sin", sin)):
        if broadcast_shapes(op.name, [x.shape, m.shape], ["x", name]) != x.shape:
            raise ValueError(f"rotary_embedding: {name} of shape {shape_str(m.shape)} must "
                             f"broadcast to x of shape {shape_str(x.shape)}")


def _check_dropout(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> None:
    if not 0.0 <= attrs["p"] <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {attrs['p']}")


def _check_roll(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> None:
    shifts, axis = attrs["shifts"], attrs["axis"]
    if axis and len(shifts) != len(axis):
        raise ValueError(f"roll: shifts {shifts} and axis {axis} must have the same length")
    if not axis and len(shifts) != 1:
        raise ValueError(f"roll: without axis, shifts must be one value, got {shifts}")


def _check_softplus(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> None:
    beta = attrs["beta"]
    if beta == 0 or beta != beta:
        raise ValueError(f"softplus: beta must be a nonzero number (it divides), got {beta}")


def _check_flip(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> None:
    if inputs[0].ndim == 0 and attrs["axis"]:
        raise AxisError(f"flip: axis={attrs['axis']} is out of range for a 0-d x (it has no "
                        "axes to reverse)")


def _check_cast(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> None:
    if attrs.get("dtype") is None:
        raise TypeError("cast: dtype is required")


_UNARY_CHECKS: dict[str, Callable[[OpDef, Inputs, dict[str, Any]], None]] = {
    "layer_norm": _check_norm,
    "rms_norm": _check_norm,
    "rotary_embedding": _check_rotary,
    "dropout": _check_dropout,
    "roll": _check_roll,
    "cast": _check_cast,
    "softplus": _check_softplus,
    "flip": _check_flip,
}


def binary(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x, y = inputs
    shape = broadcast_shapes(op.name, [x.shape, y.shape], ["x", "y"])
    common = result_type(x.dtype, y.dtype)
    if common not in op.dtypes:
        raise TypeError(f"{op.name}: x and y promote to {common}, which {op.name} does not "
                        f"support; supported: {', '.join(op.dtypes)}")
    out = _out(op, [common, common], attrs)
    compute = out if op.out_dtype == "float" else common
    return Plan([Meta(shape, out)], dict(attrs), casts={0: compute, 1: compute},
                broadcast=shape)


def where(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    c, x, y = inputs
    shape = broadcast_shapes(op.name, [c.shape, x.shape, y.shape], ["condition", "x", "y"])
    common = result_type(x.dtype, y.dtype)
    return Plan([Meta(shape, common)], dict(attrs), casts={0: "bool", 1: common, 2: common},
                broadcast=shape)


# ---- reductions -------------------------------------------------------------------------

def reduce(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    attrs = dict(attrs)
    axes = attrs.get("axis") or []
    axes = normalize_axes(op.name, "axis", axes, x.ndim) if axes else list(range(x.ndim))
    if x.ndim == 0:
        axes = []  # a 0-d tensor: axis 0/-1 name the tensor itself; nothing to reduce
    attrs["axis"] = axes
    if op.name in ("max", "min") and any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op.name}: cannot reduce over a zero-size dimension (x has shape "
                         f"{shape_str(x.shape)}, axis {axes}); the result has no identity")
    casts: dict[int, str] = {}
    if attrs.get("dtype") is not None:
        casts[0] = str(attrs["dtype"])
        out = str(attrs["dtype"])
    else:
        out = _out(op, [x.dtype], attrs)
    keep = attrs.get("keepdim", False)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
    return Plan([Meta(shape, out)], attrs, casts=casts)


def arg_reduce(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    attrs = dict(attrs)
    keep = attrs.get("keepdim", False)
    if attrs.get("axis") is None and x.numel == 0:
        raise ValueError(f"{op.name}: x of shape {shape_str(x.shape)} has no elements")
    if attrs.get("axis") is not None and x.ndim and x.shape[
            normalize_axis(op.name, "axis", attrs["axis"], x.ndim)] == 0:
        raise ValueError(f"{op.name}: cannot reduce over the zero-size dimension "
                         f"axis={attrs['axis']} of x {shape_str(x.shape)}")
    if attrs.get("axis") is None:
        shape = (1,) * x.ndim if keep else ()
        attrs["flatten"] = True
        attrs["axis"] = 0
    else:
        axis = normalize_axis(op.name, "axis", attrs["axis"], x.ndim)
        attrs["axis"] = axis
        shape = tuple(1 if i == axis else d for i, d in enumerate(x.shape)
                      if keep or i != axis) if x.ndim else ()
    return Plan([Meta(shape, "int64")], attrs)


def scan(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    attrs = dict(attrs)
    if attrs.get("axis") is None:
        attrs["flatten"] = True
        attrs["axis"] = 0
        shape: tuple[int, ...] = (x.numel,)
    else:
        attrs["axis"] = normalize_axis(op.name, "axis", attrs["axis"], x.ndim)
        shape = x.shape
    return Plan([Meta(shape, _out(op, [x.dtype], attrs))], attrs)


# ---- linear algebra ---------------------------------------------------------------------

def matmul(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x, y = inputs
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError(f"matmul: operands must have at least 1 dim, got x "
                         f"{shape_str(x.shape)} and y {shape_str(y.shape)}")
    xs, ys = list(x.shape), list(y.shape)
    if attrs.get("transpose_x") and x.ndim >= 2:
        xs[-1], xs[-2] = xs[-2], xs[-1]
    if attrs.get("transpose_y") and y.ndim >= 2:
        ys[-1], ys[-2] = ys[-2], ys[-1]
    x2 = [1] + xs if x.ndim == 1 else xs
    y2 = ys + [1] if y.ndim == 1 else ys
    if x2[-1] != y2[-2]:
        raise ValueError(f"matmul: inner dimensions differ: x {shape_str(x.shape)} gives "
                         f"K={x2[-1]} but y {shape_str(y.shape)} gives K={y2[-2]}"
                         f" (transpose_x={bool(attrs.get('transpose_x'))}, "
                         f"transpose_y={bool(attrs.get('transpose_y'))})")
    batch = broadcast_shapes("matmul", [x2[:-2], y2[:-2]], ["x's batch dims", "y's batch dims"])
    shape = list(batch) + [x2[-2], y2[-1]]
    if x.ndim == 1:
        shape.pop(-2)
    if y.ndim == 1:
        shape.pop(-1)
    common = result_type(x.dtype, y.dtype)
    return Plan([Meta(tuple(shape), common)], dict(attrs), casts={0: common, 1: common})


def linear(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x, w, b = inputs
    if w.ndim != 2:
        raise ValueError(f"linear: weight must be 2-D [in, out], got {shape_str(w.shape)}")
    if x.ndim == 0 or x.shape[-1] != w.shape[0]:
        raise ValueError(f"linear: x {shape_str(x.shape)} has {x.shape[-1] if x.ndim else 0} "
                         f"input features but weight {shape_str(w.shape)} expects {w.shape[0]}")
    if b is not None and b.shape != (w.shape[1],):
        raise ValueError(f"linear: bias must have shape [{w.shape[1]}], got "
                         f"{shape_str(b.shape)}")
    attrs = dict(attrs, has_bias=b is not None)
    return Plan([Meta(x.shape[:-1] + (w.shape[1],), result_type(x.dtype, w.dtype))], attrs)


def attention(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    q, k, v, mask = inputs
    for name, m in (("query", q), ("key", k), ("value", v)):
        if m.ndim < 2:
            raise ValueError(f"{op.name}: {name} must be [..., L, E], got {shape_str(m.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{op.name}: query's E={q.shape[-1]} differs from key's "
                         f"E={k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{op.name}: key has S={k.shape[-2]} rows but value has "
                         f"{v.shape[-2]}")
    batch = broadcast_shapes(op.name, [q.shape[:-2], k.shape[:-2], v.shape[:-2]],
                             ["query", "key", "value"])
    scores = batch + (q.shape[-2], k.shape[-2])
    if mask is not None:
        if broadcast_shapes(op.name, [scores, mask.shape], ["scores", "attn_mask"]) != scores:
            raise ValueError(f"{op.name}: attn_mask {shape_str(mask.shape)} must broadcast to "
                             f"the scores' shape {shape_str(scores)}")
        if attrs.get("is_causal"):
            raise ValueError(f"{op.name}: give attn_mask or is_causal, not both")
    attrs = dict(attrs, has_attn_mask=mask is not None)
    out = batch + (q.shape[-2], v.shape[-1])
    return Plan([Meta(out, result_type(q.dtype, k.dtype, v.dtype))], attrs)


# ---- shapes -----------------------------------------------------------------------------

def reshape(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    shape = list(attrs["shape"])
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: at most one dimension may be -1, got {shape}")
    if any(d < -1 for d in shape):
        raise ValueError(f"reshape: shape {shape} has an invalid dimension (sizes must be >= 0, "
                         "or -1)")
    known = math.prod(d for d in shape if d != -1)
    if -1 in shape:
        if known == 0 or x.numel % known:
            raise ValueError(f"reshape: cannot reshape x of shape {shape_str(x.shape)} "
                             f"({x.numel} elements) into {shape}")
        shape[shape.index(-1)] = x.numel // known
    if math.prod(shape) != x.numel:
        raise ValueError(f"reshape: cannot reshape x of shape {shape_str(x.shape)} "
                         f"({x.numel} elements) into {shape_str(shape)} "
                         f"({math.prod(shape)} elements)")
    return Plan([Meta(tuple(shape), x.dtype)], dict(attrs, shape=shape))


def transpose(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    perm = attrs.get("perm")
    perm = list(range(x.ndim))[::-1] if perm is None else [
        normalize_axis("transpose", "perm", p, x.ndim) for p in perm]
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: perm={attrs.get('perm')} is not a permutation of the "
                         f"{x.ndim} dims of x")
    return Plan([Meta(tuple(x.shape[p] for p in perm), x.dtype)], dict(attrs, perm=perm))


def flatten(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    start = normalize_axis(op.name, "start_axis", attrs["start_axis"], x.ndim)
    normalize_axis(op.name, "stop_axis", attrs["stop_axis"], x.ndim)
    if x.ndim == 0:
        return Plan([Meta((1,), x.dtype)], dict(attrs, start_axis=0, stop_axis=0))
    start = normalize_axis(op.name, "start_axis", attrs["start_axis"], x.ndim)
    stop = normalize_axis(op.name, "stop_axis", attrs["stop_axis"], x.ndim)
    if start > stop:
        raise ValueError(f"flatten: start_axis ({start}) must not come after stop_axis ({stop})")
    shape = x.shape[:start] + (math.prod(x.shape[start:stop + 1]),) + x.shape[stop + 1:]
    return Plan([Meta(shape, x.dtype)], dict(attrs, start_axis=start, stop_axis=stop))


def squeeze(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    axes = attrs.get("axis") or []
    axes = normalize_axes(op.name, "axis", axes, x.ndim) if axes else [
        i for i, d in enumerate(x.shape) if d == 1]
    dropped = [a for a in axes if x.ndim and x.shape[a] == 1]
    shape = tuple(d for i, d in enumerate(x.shape) if i not in dropped)
    # The decomposition reads an empty axis as "every size-1 dim" and keeps the listed dims
    # that are not size 1: pass the named axes as given, not an emptied list.
    return Plan([Meta(shape, x.dtype)], dict(attrs, axis=axes))


def unsqueeze(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    out_ndim = x.ndim + len(attrs["axis"])
    axes = normalize_axes(op.name, "axis", attrs["axis"], out_ndim)
    shape, it = [], iter(x.shape)
    for i in range(out_ndim):
        shape.append(1 if i in axes else next(it))
    return Plan([Meta(tuple(shape), x.dtype)], dict(attrs, axis=axes))


def expand(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    target = list(attrs["shape"])
    if len(target) < x.ndim:
        raise ValueError(f"expand: shape {target} has fewer dims than x {shape_str(x.shape)}")
    lead = len(target) - x.ndim
    for i, d in enumerate(target):
        src = x.shape[i - lead] if i >= lead else None
        if d == -1:
            if src is None:
                raise ValueError(f"expand: shape {attrs['shape']}: -1 is not allowed for the new "
                                 f"leading dim {i} of x {shape_str(x.shape)}")
            target[i] = src
        elif d < 0 or (src is not None and src not in (1, d)):
            raise ValueError(f"expand: cannot expand x of shape {shape_str(x.shape)} to "
                             f"shape {attrs['shape']} (dimension {i})")
    return Plan([Meta(tuple(target), x.dtype)], dict(attrs, shape=target))


def concat(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    xs = inputs[0]
    if not xs:
        raise ValueError(f"{op.name}: xs must hold at least one tensor")
    first = xs[0]
    if first.ndim == 0:
        raise ValueError(f"{op.name}: zero-dimensional tensors cannot be concatenated")
    axis = normalize_axis(op.name, "axis", attrs["axis"], first.ndim)
    for i, m in enumerate(xs[1:], 1):
        if m.ndim != first.ndim or any(a != b for k, (a, b) in
                                       enumerate(zip(m.shape, first.shape, strict=True))
                                       if k != axis):
            raise ValueError(f"{op.name}: xs[{i}] has shape {shape_str(m.shape)} but xs[0] has "
                             f"{shape_str(first.shape)}: all dims but axis {axis} must match")
    shape = list(first.shape)
    shape[axis] = sum(m.shape[axis] for m in xs)
    common = result_type(*(m.dtype for m in xs))
    return Plan([Meta(tuple(shape), common)], dict(attrs, axis=axis), casts={0: common})


def stack(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    xs = inputs[0]
    if not xs:
        raise ValueError("stack: xs must hold at least one tensor")
    for i, m in enumerate(xs[1:], 1):
        if m.shape != xs[0].shape:
            raise ValueError(f"stack: xs[{i}] has shape {shape_str(m.shape)} but xs[0] has "
                             f"{shape_str(xs[0].shape)}: all must be equal")
    axis = normalize_axis(op.name, "axis", attrs["axis"], xs[0].ndim + 1)
    shape = list(xs[0].shape)
    shape.insert(axis, len(xs))
    common = result_type(*(m.dtype for m in xs))
    return Plan([Meta(tuple(shape), common)], dict(attrs, axis=axis), casts={0: common})


def split(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    axis = normalize_axis(op.name, "axis", attrs["axis"], x.ndim)
    dim = x.shape[axis] if x.ndim else 1
    sections = list(attrs["sections"])
    if sections.count(-1) == 1 and attrs.get("_sizes", True):  # one size inferred
        rest = sum(s for s in sections if s != -1)
        if rest > dim:
            raise ValueError(f"split: sections {sections} exceed dimension {axis} (axis="
                             f"{attrs['axis']}) of size {dim}")
        sections = [dim - rest if s == -1 else s for s in sections]
    if len(sections) == 1 and not attrs.get("_sizes"):
        n = sections[0]
        if n <= 0 or dim % n:
            raise ValueError(f"split: sections={n}: cannot split dimension {axis} (axis="
                             f"{attrs['axis']}) of size {dim} into {n} equal parts")
        sizes = [dim // n] * n
    else:
        sizes = sections
    if any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise ValueError(f"split: sections {sizes} must be >= 0 and add up to {dim} "
                         f"(the size of x {shape_str(x.shape)} along axis {axis})")
    if x.ndim == 0:  # every other section count is refused above; one part is too
        raise ValueError("split: x is 0-d (shape []); split needs at least one dimension")
    outs = []
    for s in sizes:
        shape = list(x.shape)
        shape[axis] = s
        outs.append(Meta(tuple(shape), x.dtype))
    return Plan(outs, dict(attrs, axis=axis, sections=sizes))


def slice_(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    axes, starts, ends = attrs["axes"], attrs["starts"], attrs["ends"]
    strides = attrs.get("strides") or [1] * len(axes)
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ValueError(f"slice: axes, starts, ends and strides must have equal lengths, got "
                         f"{len(axes)}, {len(starts)}, {len(ends)}, {len(strides)}")
    if x.ndim == 0 and axes:
        raise AxisError(f"slice: axes={axes} is out of range for a 0-d x (it has no axes)")
    shape = list(x.shape)
    norm_axes, norm_starts, norm_ends = [], [], []
    for given, s, e, st in zip(axes, starts, ends, strides, strict=True):
        if st == 0:
            raise ValueError("slice: strides must not be 0")
        a = normalize_axis(op.name, "axes", given, x.ndim)
        start, stop, step = slice(s, e, st).indices(x.shape[a])
        if abs(step) > max(x.shape[a], 1):  # selects one element: a stride that stays small
            step = max(x.shape[a], 1) * (1 if step > 0 else -1)
            strides = [step if k == len(norm_axes) else v for k, v in enumerate(strides)]
        norm_axes.append(a)
        norm_starts.append(start)
        norm_ends.append(stop)
        shape[a] = len(range(start, stop, step))
    if len(set(norm_axes)) != len(norm_axes):
        raise ValueError(f"slice: axes={axes} names a dimension twice")
    return Plan([Meta(tuple(shape), x.dtype)],
                dict(attrs, axes=norm_axes, starts=norm_starts, ends=norm_ends,
                     strides=list(strides)))


def tile(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    reps = list(attrs["repeats"])
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repeats must be >= 0, got {reps}")
    n = max(len(reps), x.ndim)
    reps = [1] * (n - len(reps)) + reps
    xs = [1] * (n - x.ndim) + list(x.shape)
    return Plan([Meta(tuple(a * b for a, b in zip(xs, reps, strict=True)), x.dtype)],
                dict(attrs, repeats=reps))


def pad(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    p = list(attrs["pad"])
    if len(p) % 2 or len(p) > 2 * x.ndim:
        raise ValueError(f"pad: pad must hold (before, after) pairs for at most {x.ndim} dims, "
                         f"got {len(p)} values")
    if any(v < 0 for v in p):
        raise ValueError(f"pad: pad values must be >= 0, got {p}")
    p = p + [0] * (2 * x.ndim - len(p))
    shape = tuple(d + p[2 * i] + p[2 * i + 1] for i, d in enumerate(x.shape))
    return Plan([Meta(shape, x.dtype)], dict(attrs, pad=p))


def matrix_unary(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    if x.ndim < 2:
        raise ValueError(f"{op.name}: x must have at least 2 dims, got {shape_str(x.shape)}")
    return Plan([Meta(x.shape, x.dtype)], dict(attrs))


# ---- indexing ---------------------------------------------------------------------------

def gather(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x, index = inputs
    _require_int_index(op.name, "index", index)
    if index.ndim != 1:
        raise ValueError(f"{op.name}: index must be 1-D, got shape {shape_str(index.shape)}")
    axis = normalize_axis(op.name, "axis", attrs["axis"], x.ndim)
    if x.ndim == 0:
        raise ValueError(f"{op.name}: x must have at least 1 dim")
    shape = list(x.shape)
    shape[axis] = index.shape[0]
    return Plan([Meta(tuple(shape), x.dtype)], dict(attrs, axis=axis, _bound=x.shape[axis]))


def take_along_axis(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x, index = inputs
    _require_int_index(op.name, "index", index)
    if index.ndim != x.ndim:
        raise ValueError(f"take_along_axis: index must have x's {x.ndim} dims, got "
                         f"{shape_str(index.shape)}")
    axis = normalize_axis(op.name, "axis", attrs["axis"], x.ndim)
    others_x = [d for i, d in enumerate(x.shape) if i != axis]
    others_i = [d for i, d in enumerate(index.shape) if i != axis]
    common = broadcast_shapes(op.name, [others_x, others_i],
                              ["x (without axis " + str(axis) + ")", "index"])
    out = list(common)
    out.insert(axis, index.shape[axis])
    return Plan([Meta(tuple(out), x.dtype)], dict(attrs, axis=axis, _bound=x.shape[axis]))


def scatter(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x, index, updates = inputs
    _require_int_index(op.name, "index", index)
    if x.ndim == 0:
        raise ValueError("scatter: x must have at least 1 dim, got a 0-d tensor")
    if index.ndim != 1:
        raise ValueError(f"scatter: index must be 1-D, got shape {shape_str(index.shape)}")
    axis = normalize_axis(op.name, "axis", attrs["axis"], x.ndim)
    expected = list(x.shape)
    expected[axis] = index.shape[0]
    if list(updates.shape) != expected:
        raise ValueError(f"scatter: updates must have shape {shape_str(expected)} (x's shape "
                         f"with index's length along axis {axis}), got "
                         f"{shape_str(updates.shape)}")
    if attrs["reduce"] not in ("assign", "add"):
        raise ValueError(f"scatter: reduce must be 'assign' or 'add', got {attrs['reduce']!r}")
    return Plan([Meta(x.shape, x.dtype)], dict(attrs, axis=axis, _bound=x.shape[axis]),
                casts={2: x.dtype})


def topk(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    axis = normalize_axis(op.name, "axis", attrs["axis"], x.ndim)
    dim = x.shape[axis] if x.ndim else 1
    if x.ndim == 0 and attrs["k"] != 1:  # the one element, or nothing of a 0-d shape
        raise ValueError(f"topk: k={attrs['k']} for a 0-d x, expected k=1")
    if not 0 <= attrs["k"] <= dim:
        raise ValueError(f"topk: k={attrs['k']} must be in [0, {dim}] (dimension {axis})")
    shape = list(x.shape)
    if x.ndim:
        shape[axis] = attrs["k"]
    return Plan([Meta(tuple(shape), x.dtype), Meta(tuple(shape), "int64")],
                dict(attrs, axis=axis))


def embedding(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    index, weight = inputs
    _require_int_index(op.name, "index", index)
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D [V, D], got {shape_str(weight.shape)}")
    return Plan([Meta(index.shape + (weight.shape[1],), weight.dtype)],
                dict(attrs, _bound=weight.shape[0]))


def cross_entropy(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    logits, label = inputs
    _require_int_index(op.name, "label", label)
    if logits.ndim != 2 or label.shape != logits.shape[:1]:
        raise ValueError(f"{op.name}: expected logits [N, C] and label [N], got "
                         f"{shape_str(logits.shape)} and {shape_str(label.shape)}")
    if attrs["reduction"] not in ("mean", "sum", "none"):
        raise ValueError(f"{op.name}: reduction must be 'mean', 'sum' or 'none', got "
                         f"{attrs['reduction']!r}")
    # ignore_index is compared with label values: it must be one of them (numpy 2's rule)
    check_scalar_fits(op.name, "ignore_index", attrs["ignore_index"], label.dtype)
    shape = logits.shape[:1] if attrs["reduction"] == "none" else ()
    return Plan([Meta(shape, logits.dtype)], dict(attrs))



def _require_like(op: OpDef, name: str, m: Meta, first_name: str, first: Meta) -> None:
    """Input `name` must have input `first_name`'s shape and dtype."""
    if m.shape != first.shape:
        raise ValueError(f"{op.name}: {name} has shape {shape_str(m.shape)}, expected "
                         f"{first_name}'s {shape_str(first.shape)}")
    if m.dtype != first.dtype:
        raise TypeError(f"{op.name}: {name} has dtype {m.dtype}, expected {first_name}'s "
                        f"{first.dtype}")


def cross_entropy_grad(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    """cross_entropy's VJP: logits and label as cross_entropy checks them, grad of its output's
    shape and logits' dtype; the result like logits."""
    logits, label, grad = inputs
    loss = cross_entropy(op, [logits, label], attrs).outputs[0]
    if grad.shape != loss.shape:
        raise ValueError(f"{op.name}: grad has shape {shape_str(grad.shape)}, expected "
                         f"{shape_str(loss.shape)} (cross_entropy's output for reduction="
                         f"{attrs['reduction']!r})")
    if grad.dtype != logits.dtype:
        raise TypeError(f"{op.name}: grad has dtype {grad.dtype}, expected logits' "
                        f"{logits.dtype}")
    return Plan([Meta(logits.shape, logits.dtype)], dict(attrs))


def grad_like(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    """A backward op (softmax_grad, layer_norm_grad, rms_norm_grad): the gradient has the first
    input's shape and dtype; a normalization's weight is checked as the forward op checks it."""
    first, grad = inputs[0], inputs[1]
    _require_like(op, op.inputs[1].name, grad, op.inputs[0].name, first)
    if "normalized_ndim" not in attrs:
        return unary(op, inputs, attrs)
    attrs = dict(attrs)
    _check_affine(op.name, first, [i.name for i in op.inputs[2:]], inputs[2:], attrs)
    return Plan([Meta(first.shape, first.dtype)], attrs)


def optimizer_update(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    """A fused optimizer step: every input has the first's (the parameter's) shape and dtype;
    one output per input but the gradient, each of that shape and dtype."""
    first = inputs[0]
    names = [i.name for i in op.inputs]
    for name, m in zip(names[1:], inputs[1:], strict=True):
        _require_like(op, name, m, names[0], first)
    return Plan([Meta(first.shape, first.dtype) for _ in op.outputs], dict(attrs))

# ---- creation ---------------------------------------------------------------------------

def _check_shape(op: str, shape: Sequence[int]) -> tuple[int, ...]:
    if any(d < 0 for d in shape):
        raise ValueError(f"{op}: shape {list(shape)} has a negative size")
    return tuple(shape)


def creation(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    shape = _check_shape(op.name, attrs["shape"])
    out = _out(op, [], attrs)
    return Plan([Meta(shape, out)], dict(attrs, shape=list(shape), dtype=out))


def like(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    x = inputs[0]
    out = str(attrs["dtype"]) if attrs.get("dtype") is not None else x.dtype
    return Plan([Meta(x.shape, out)], dict(attrs, dtype=out))


def arange(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    start, end, step = attrs["start"], attrs["end"], attrs["step"]
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, int) and not -(2**63) <= v < 2**63:  # checked under the caller's names
            raise ValueError(f"arange: {name}={v} does not fit in int64 (the bounds cross the "
                             "kernel ABI as int64)")
        if v is not None and not math.isfinite(v):
            raise ValueError(f"arange: {name} must be finite, got {v}")
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must not be 0")
    out = _out(op, [], dict(attrs, start=start, end=end))
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end, step)):
        n = max(0, -((start - end) // step))  # ceil((end - start) / step), exact for any int
    else:
        count = (end - start) / step
        if not math.isfinite(count):
            raise ValueError(f"arange: start={start}, end={end}, step={step} give a count of "
                             f"{count}, expected a finite number of elements")
        n = max(0, math.ceil(count))
    return Plan([Meta((n,), out)], dict(attrs, start=start, end=end, dtype=out))


def linspace(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    if attrs["num"] < 0:
        raise ValueError(f"linspace: num must be >= 0, got {attrs['num']}")
    out = _out(op, [], attrs)
    # Its decomposition computes in float64.
    check_size(op.name, Meta((attrs["num"],), "float64"), f"num={attrs['num']}")
    return Plan([Meta((attrs["num"],), out)], dict(attrs, dtype=out))


def eye(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    n = attrs["n"]
    m = n if attrs.get("m") is None else attrs["m"]
    if n < 0 or m < 0:
        raise ValueError(f"eye: n and m must be >= 0, got n={n}, m={m}")
    out = _out(op, [], attrs)
    return Plan([Meta((n, m), out)], dict(attrs, m=m, dtype=out))


RULES: dict[str, Callable[[OpDef, Inputs, dict[str, Any]], Plan]] = {
    "unary": unary, "binary": binary, "where": where, "reduce": reduce,
    "arg_reduce": arg_reduce, "scan": scan, "matmul": matmul, "linear": linear,
    "attention": attention, "reshape": reshape, "transpose": transpose, "flatten": flatten,
    "squeeze": squeeze, "unsqueeze": unsqueeze, "expand": expand, "concat": concat,
    "stack": stack, "split": split, "slice": slice_, "tile": tile, "pad": pad,
    "matrix_unary": matrix_unary, "gather": gather, "take_along_axis": take_along_axis,
    "scatter": scatter, "topk": topk, "embedding": embedding, "cross_entropy": cross_entropy,
    "optimizer_update": optimizer_update, "grad_like": grad_like,
    "cross_entropy_grad": cross_entropy_grad,
    "creation": creation, "like": like, "arange": arange, "linspace": linspace, "eye": eye,
}


# Byte offsets and byte strides cross the kernel ABI as int64: no tensor may span more.
MAX_TENSOR_BYTES = 2**63 - 1


def check_size(op: str, m: Meta, given: str | Callable[[], str] = "") -> None:
    """A tensor `op` makes must be representable: dims >= 0 and its contiguous size in bytes
    (zero dims counted as 1, as its strides are) at most MAX_TENSOR_BYTES. Else ValueError, or
    hwport.OutOfMemoryError for a valid tensor larger than any device can hold. The runtime
    checks again; checking here names the public op before anything is allocated or run.
    `given`: the arguments the shape came from, named in the message (a callable is asked
    only when the check fails: every op call passes here)."""
    span = 1
    for d in m.shape:
        if d < 0:
            raise ValueError(f"{op}: shape {shape_str(m.shape)} has a negative size")
        span *= d or 1
    size = itemsize(m.dtype)
    if span * size <= MAX_TENSOR_BYTES:
        return
    given = given() if callable(given) else given
    described = (f"a tensor of shape {shape_str(m.shape)} and dtype {m.dtype} ({m.numel} "
                 f"elements of {size} bytes{', from ' + given if given else ''})")
    if span > MAX_TENSOR_BYTES:
        raise ValueError(f"{op}: {described} has more elements than an int64 can count")
    if m.numel == 0:
        raise ValueError(f"{op}: the strides of {described} overflow int64 bytes")
    from hwport.runtime._core import OutOfMemoryError  # here: infer_meta itself is pure

    raise OutOfMemoryError(f"{op}: {described} is larger than any device can hold (at most "
                           f"{MAX_TENSOR_BYTES} bytes)")


MAX_NDIM = 16  # HWP_MAX_NDIM (runtime/include/hwport/types.h): kernels take no more dims

# Attributes whose Python scalar becomes a value of the output's dtype: an int must fit it
# (numpy 2's rule), not wrap; a float converts as `cast` does (promotion.scalar_for_dtype).
_VALUE_ATTRS = {"fill": "value", "full": "fill_value", "full_like": "fill_value",
                "pad": "value"}


def _check_ndim(op: OpDef, inputs: Inputs) -> None:
    for spec, m in zip(op.inputs, inputs, strict=False):
        for i, one in enumerate(m if isinstance(m, list) else [m]):
            if one is not None and one.ndim > MAX_NDIM:
                name = f"{spec.name}[{i}]" if spec.variadic else spec.name
                raise ValueError(f"{op.name}: {name} has {one.ndim} dims "
                                 f"{shape_str(one.shape)}; at most {MAX_NDIM} are supported")


def shape_args(op: OpDef, attrs: dict[str, Any]) -> str:
    """The numeric arguments of a call, which an output's shape may come from: for messages."""
    given = [f"{a.name}={attrs[a.name]!r}" for a in op.attrs
             if a.type in ("ints", "int", "float") and attrs.get(a.name) is not None]
    return ", ".join(given)


def infer(op: OpDef, inputs: Inputs, attrs: dict[str, Any]) -> Plan:
    """The plan for one call of `op` (raises on bad input, naming op and argument); every
    output passes check_size."""
    _check_ndim(op, inputs)
    plan = RULES[op.infer_meta](op, inputs, attrs)
    for m in plan.outputs:
        if m.ndim > MAX_NDIM:
            given = shape_args(op, attrs) or "the inputs"
            raise ValueError(f"{op.name}: the output would have {m.ndim} dims (shape "
                             f"{shape_str(m.shape)}, from {given}); at most {MAX_NDIM} are "
                             "supported")
        check_size(op.name, m, lambda: shape_args(op, attrs))
    value = _VALUE_ATTRS.get(op.name)
    if value is not None and plan.attrs.get(value) is not None:
        plan.attrs[value] = scalar_for_dtype(op.name, value, plan.attrs[value],
                                             plan.outputs[0].dtype)
    return plan
