"""The InferMeta interface of pd_op: result types from operand types and attributes, through
the op library's own rules (phi_ops/infer_meta.py) — on concrete shapes exactly as eager
dispatch runs them, on symbolic shapes as follows:

1. the families whose shapes need symbolic arithmetic or assumptions have a rule here
   (broadcasting with 1, matmul/linear's inner dim, reshape with -1, expand, concat's sum,
   split); what they assume is recorded in a `Constraints` list (s0 == s1, s0 ~ 4 for
   "broadcastable", numel % k == 0 for reshape);
2. every other rule runs unchanged on SymExpr dims (they only pass dims through, compare,
   add and multiply them: reductions, transpose, flatten, squeeze, gather, pad, tile, ...);
3. a rule that needs more (an order comparison, a slice of a symbolic dim) runs twice on
   concrete probe values; an output dim equal to one input dim's probe in both runs is that
   dim, a dim equal in both runs is static, anything else is unknown (-1).

Unknown dims (-1) of the operands enter as fresh symbols, so they flow through every rule;
an output dim that depends on one is unknown again."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from hwport.phi_ops import infer_meta as concrete
from hwport.phi_ops.infer_meta import Meta, shape_str
from hwport.phi_ops.promotion import result_type
from hwport.phi_ops.schema import OpDef

from .attributes import Attribute, NullAttr
from .dialect import AttrSpec, OpInfo, default_attr
from .eager_attrs import meta_attrs
from .symbolic import UNKNOWN, Constraints, Dim, SymExpr, product, simplify, sym
from .types import TensorType, Type, VectorType

_UNKNOWN_PREFIX = "_u"


class InferMetaError(ValueError):
    """The op's infer-meta refused its operands or attributes."""


def py_attrs(info: OpInfo, attrs: dict[str, Attribute]) -> dict[str, Any]:
    """The Python values infer-meta takes: every attribute of the spec (missing ones at
    their default), null -> None (an ints attribute defaulting to [] -> [])."""
    out: dict[str, Any] = {}
    for spec in info.attrs:
        a = attrs.get(spec.name)
        if a is None:
            a = default_attr(spec)
        v = a.value
        if v is None and isinstance(a, NullAttr) and _empty_list_default(spec):
            v = []
        out[spec.name] = v
    return out


def _empty_list_default(spec: AttrSpec) -> bool:
    return spec.kind == "ints" and spec.default == []


# ---- the symbolic context ---------------------------------------------------------------

class _Ctx:
    def __init__(self, op: str, constraints: Constraints | None) -> None:
        self.op = op
        self.constraints = constraints

    def record(self, kind: str, a: Dim, b: Dim) -> None:
        if self.constraints is None or _has_unknown(a) or _has_unknown(b):
            return
        self.constraints.add(kind, a, b, self.op)

    def same(self, a: Dim, b: Dim, what: Callable[[], str]) -> Dim:
        """a and b must be equal: an error for two different ints, a constraint otherwise.
        (what() describes them, asked only for the error.)"""
        if a == b:
            return a
        if isinstance(a, int) and isinstance(b, int):
            raise ValueError(f"{self.op}: {what()} ({a} vs {b})")
        self.record("eq", a, b)
        return b if isinstance(b, int) else a

    def bcast(self, a: Dim, b: Dim, what: Callable[[], str]) -> Dim:
        if a == 1 or a == b:
            return b
        if b == 1:
            return a
        if isinstance(a, int) and isinstance(b, int):
            raise ValueError(f"{self.op}: cannot broadcast {what()} ({a} vs {b})")
        if isinstance(a, int) or isinstance(b, int):  # a symbol against n > 1: it is 1 or n
            n, s = (a, b) if isinstance(a, int) else (b, a)
            self.record("broadcastable", s, n)
            return n
        if _has_unknown(a):
            return b
        if _has_unknown(b):
            return a
        self.record("eq", a, b)  # two symbols broadcast together are assumed equal
        return a

    def broadcast(self, shapes: Sequence[Sequence[Dim]], names: Sequence[str]) -> tuple:
        ndim = max((len(s) for s in shapes), default=0)
        out: list[Dim] = [1] * ndim
        for k in range(ndim):
            for s, n in zip(shapes, names, strict=True):
                if k >= ndim - len(s):
                    d = s[k - ndim + len(s)]
                    out[k] = self.bcast(out[k], d, lambda n=n, s=s, k=k:
                                        f"{n} of shape {shape_str(s)} at dim {k}")
        return tuple(out)


def _has_unknown(d: Dim) -> bool:
    return isinstance(d, SymExpr) and any(s.startswith(_UNKNOWN_PREFIX) for s in d.symbols)


def _ones(m: Meta) -> Meta:
    return Meta((1,) * m.ndim, m.dtype)


def _dtype_of(op: OpDef, inputs: list[Any], attrs: dict[str, Any]) -> list[str]:
    """Output dtypes by the concrete rule run on all-ones shapes (dtype rules do not depend
    on sizes; all-ones shapes satisfy every broadcast and inner-dim check)."""
    probe = [None if m is None else [_ones(t) for t in m] if isinstance(m, list) else _ones(m)
             for m in inputs]
    return [m.dtype for m in concrete.RULES[op.infer_meta](op, probe, attrs).outputs]


# ---- rules that need symbolic arithmetic -----------------------------------------------------

def _binary(ctx: _Ctx, op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> list[Meta]:
    names = [i.name for i in op.inputs]
    shape = ctx.broadcast([m.shape for m in ins], names)
    return [Meta(shape, _dtype_of(op, ins, attrs)[0])]


def _matmul(ctx: _Ctx, op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> list[Meta]:
    """Unify the inner dims and broadcast the batch dims here (recording what that assumes),
    then let the concrete rule, which now sees equal dims, assemble the result."""
    x, y = ins
    if x.ndim == 0 or y.ndim == 0:
        return concrete.matmul(op, ins, attrs).outputs  # its error
    kx = x.ndim - (2 if attrs.get("transpose_x") and x.ndim >= 2 else 1)
    ky = 0 if y.ndim == 1 else y.ndim - (1 if attrs.get("transpose_y") else 2)
    k = ctx.same(x.shape[kx], y.shape[ky], lambda: "inner dimensions differ: x "
                 f"{shape_str(x.shape)}, y {shape_str(y.shape)}")
    xs, ys = list(x.shape), list(y.shape)
    xs[kx], ys[ky] = k, k
    bx, by = xs[:-2], ys[:-2]
    batch = list(ctx.broadcast([bx, by], ["x's batch dims", "y's batch dims"]))
    xs = batch[len(batch) - len(bx):] + xs[len(bx):] if bx else xs
    ys = batch[len(batch) - len(by):] + ys[len(by):] if by else ys
    return concrete.matmul(op, [Meta(tuple(xs), x.dtype), Meta(tuple(ys), y.dtype)],
                           attrs).outputs


def _linear(ctx: _Ctx, op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> list[Meta]:
    x, w, b = ins
    if w.ndim != 2 or x.ndim == 0:
        return concrete.linear(op, ins, attrs).outputs  # its error
    ctx.same(x.shape[-1], w.shape[0], lambda: f"x {shape_str(x.shape)} features vs weight "
             f"{shape_str(w.shape)}")
    if b is not None:
        if b.ndim != 1:
            raise ValueError(f"linear: bias must have shape [{w.shape[1]}], got "
                             f"{shape_str(b.shape)}")
        ctx.same(b.shape[0], w.shape[1], lambda: "bias size vs weight's out features")
    return [Meta((*x.shape[:-1], w.shape[1]), _dtype_of(op, ins, attrs)[0])]


def _reshape(ctx: _Ctx, op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> list[Meta]:
    x = ins[0]
    shape: list[Dim] = list(attrs["shape"])
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        return concrete.reshape(op, [Meta((0,), x.dtype)], attrs).outputs  # its error
    numel = product(x.shape)
    known = product(d for d in shape if d != -1)
    if -1 in shape:
        q = SymExpr._of(numel).exact_div(known) if known else None
        if q is None:
            if isinstance(numel, int):
                concrete.reshape(op, [Meta(x.shape, x.dtype)], attrs)  # raises
            ctx.record("divisible", numel, known)
            q = _fresh_unknown()
        shape[shape.index(-1)] = q
    else:
        ctx.same(numel, known, lambda: f"cannot reshape x of shape {shape_str(x.shape)} into "
                 f"{shape_str(shape)}")
    return [Meta(tuple(shape), x.dtype)]


def _expand(ctx: _Ctx, op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> list[Meta]:
    """A symbolic dim expanded to a size n is 1 or n (recorded); the concrete rule then runs
    with it as n."""
    x = ins[0]
    target = list(attrs["shape"])
    lead = len(target) - x.ndim
    xs = list(x.shape)
    for i, s in enumerate(x.shape):
        d = target[lead + i] if 0 <= lead + i < len(target) else -1
        if isinstance(s, SymExpr) and d >= 0 and d != s:
            ctx.record("broadcastable", s, d)
            xs[i] = d
    return concrete.expand(op, [Meta(tuple(xs), x.dtype)], attrs).outputs


def _concat(ctx: _Ctx, op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> list[Meta]:
    xs = ins[0]
    if not xs or xs[0].ndim == 0:
        return concrete.concat(op, ins, attrs).outputs  # its error
    first = xs[0]
    axis = concrete.normalize_axis(op.name, "axis", attrs["axis"], first.ndim)
    shape = list(first.shape)
    for i, m in enumerate(xs[1:], 1):
        if m.ndim != first.ndim:
            raise ValueError(f"{op.name}: xs[{i}] has shape {shape_str(m.shape)} but xs[0] "
                             f"has {shape_str(first.shape)}: all dims but axis {axis} must "
                             "match")
        for k in range(first.ndim):
            if k != axis:
                shape[k] = ctx.same(shape[k], m.shape[k], lambda i=i, k=k: f"xs[{i}] dim {k} vs "
                                    "xs[0]")
    shape[axis] = simplify(sum((m.shape[axis] for m in xs), start=0))
    return [Meta(tuple(shape), result_type(*(m.dtype for m in xs)))]


def _split(ctx: _Ctx, op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> list[Meta]:
    x = ins[0]
    if x.ndim == 0:
        return concrete.split(op, ins, attrs).outputs  # its error
    axis = concrete.normalize_axis(op.name, "axis", attrs["axis"], x.ndim)
    dim = x.shape[axis]
    if isinstance(dim, int):  # the split dim is static: the concrete rule decides
        probe = [Meta(tuple(d if k == axis else 1 for k, d in enumerate(x.shape)), x.dtype)]
        sizes = [m.shape[axis] for m in concrete.split(op, probe, attrs).outputs]
    else:
        sections: list[Dim] = list(attrs["sections"])
        if len(sections) == 1 and not attrs.get("_sizes"):
            n = sections[0]
            if n <= 0:
                raise ValueError(f"split: sections={n} must be > 0")
            part = dim.exact_div(n)
            if part is None:
                ctx.record("divisible", dim, n)
                part = _fresh_unknown()
            sizes = [part] * n
        elif sections.count(-1) == 1:
            rest = sum(s for s in sections if s != -1)
            sizes = [simplify(dim - rest) if s == -1 else s for s in sections]
        else:
            ctx.same(dim, sum(sections), lambda: f"sections {sections} must add up to dim {axis}")
            sizes = sections
    outs = []
    for s in sizes:
        shape = list(x.shape)
        shape[axis] = s
        outs.append(Meta(tuple(shape), x.dtype))
    return outs


SYMBOLIC_RULES = {"binary": _binary, "where": _binary, "matmul": _matmul, "linear": _linear,
                  "reshape": _reshape, "expand": _expand, "concat": _concat, "split": _split}

_fresh = itertools.count()


def _fresh_unknown() -> SymExpr:
    return sym(f"{_UNKNOWN_PREFIX}{next(_fresh)}")


# ---- probes ---------------------------------------------------------------------------------

def _probe_sets() -> tuple[tuple[int, ...], ...]:
    primes = [p for p in range(11, 400) if all(p % q for q in range(2, int(p**0.5) + 1))]
    # Two sets of large values (even, divisible by 2..10, so parity and small-divisor checks
    # pass; larger than the attributes rules compare them with), and a small set that
    # catches an output that only looked static because the large dims clamped an attribute
    # (a slice from 10 to 0 of a dim of size 6).
    return (tuple(5040 * p for p in primes[:16]), tuple(5040 * p for p in primes[16:32]),
            tuple(range(2, 34, 2)))


_PROBES = _probe_sets()


def _probe(op: OpDef, ins: list[Any], attrs: dict[str, Any]) -> list[Meta]:
    """Run the concrete rule with symbolic dims replaced by probe values (each distinct dim
    expression its own value): an output dim that is the same in every run is static, one
    that is an input dim's probe in every run is that dim, anything else unknown. The small
    run may fail (a k larger than the small dim): it then only takes no part."""
    exprs: list[SymExpr] = []
    for m in _flat(ins):
        for d in m.shape:
            if isinstance(d, SymExpr) and d not in exprs:
                exprs.append(d)
    if len(exprs) > len(_PROBES[0]):
        raise ValueError(f"{op.name}: too many distinct symbolic dims ({len(exprs)})")
    runs: list[list[Meta] | None] = []
    for k, probes in enumerate(_PROBES):
        value = dict(zip(exprs, probes, strict=False))
        sub = _map_metas(ins, lambda m, value=value: Meta(
            tuple(value.get(d, d) if isinstance(d, SymExpr) else d for d in m.shape),
            m.dtype))
        try:
            runs.append(concrete.RULES[op.infer_meta](op, sub, attrs).outputs)
        except (ValueError, TypeError, IndexError):
            if k < 2:
                raise
            runs.append(None)
    done = [r for r in runs if r is not None]
    backs = [dict(zip(probes, exprs, strict=False)) for probes, r in zip(_PROBES, runs,
                                                                       strict=True) if r]
    outs = []
    for metas in zip(*done, strict=True):
        shape: list[Dim] = []
        for dims in zip(*(m.shape for m in metas), strict=True):
            if len(set(dims)) == 1:
                shape.append(dims[0])
                continue
            mapped = {back.get(d) for back, d in zip(backs, dims, strict=True)}
            one = next(iter(mapped))
            shape.append(one if len(mapped) == 1 and one is not None else _fresh_unknown())
        outs.append(Meta(tuple(shape), metas[0].dtype))
    return outs


def _flat(ins: list[Any]) -> list[Meta]:
    return [t for m in ins if m is not None for t in (m if isinstance(m, list) else [m])]


def _map_metas(ins: list[Any], fn: Any) -> list[Any]:
    return [None if m is None else [fn(t) for t in m] if isinstance(m, list) else fn(m)
            for m in ins]


# ---- the interface ----------------------------------------------------------------------------

def infer_metas(op: OpDef, ins: list[Any], attrs: dict[str, Any],
                constraints: Constraints | None = None) -> list[Meta]:
    """Output metas of `op` for input metas whose dims may be ints, -1 or SymExprs."""
    static = all(isinstance(d, int) and d >= 0 for m in _flat(ins) for d in m.shape)
    if static:
        return concrete.infer(op, ins, attrs).outputs
    ins = _map_metas(ins, lambda m: Meta(tuple(_fresh_unknown() if d == UNKNOWN else d
                                                for d in m.shape), m.dtype))
    ctx = _Ctx(op.name, constraints)
    rule = SYMBOLIC_RULES.get(op.infer_meta)
    if rule is not None:
        outs = rule(ctx, op, ins, attrs)
    else:
        try:
            outs = concrete.RULES[op.infer_meta](op, ins, attrs).outputs
        except TypeError:  # the rule compares or slices a symbolic dim
            outs = _probe(op, ins, attrs)
    return [Meta(tuple(UNKNOWN if _has_unknown(d) else simplify(d) for d in m.shape),
                 m.dtype) for m in outs]


def _meta_of(op: str, name: str, t: Type | None, variadic: bool) -> Any:
    if t is None:
        return None
    if variadic:
        if not isinstance(t, VectorType):
            raise InferMetaError(f"{op}: operand {name} must be a vec[...] (builtin.combine), "
                                 f"got {t}")
        return [_meta_of(op, f"{name}[{i}]", e, False) for i, e in enumerate(t.types)]
    if not isinstance(t, TensorType):
        raise InferMetaError(f"{op}: operand {name} must be a builtin.tensor, got {t}")
    return Meta(t.shape, t.dtype)


def infer_result_types(info: OpInfo, operand_types: Sequence[Type | None],
                       attrs: dict[str, Attribute],
                       constraints: Constraints | None = None) -> list[Type]:
    """The InferMeta interface of a pd_op op: its result types."""
    op: OpDef = info.op_def
    ins = [_meta_of(info.name, spec.name, t, spec.variadic)
           for spec, t in zip(op.inputs, operand_types, strict=True)]
    try:
        outs = infer_metas(op, ins, meta_attrs(op.name, py_attrs(info, attrs)), constraints)
    except (ValueError, TypeError, IndexError, ArithmeticError, MemoryError) as exc:
        # MemoryError: a valid tensor larger than any device can hold (phi_ops.check_size)
        raise InferMetaError(str(exc)) from None
    types = [TensorType(m.shape, m.dtype) for m in outs]
    if op.outputs and op.outputs[0].variadic:
        return [VectorType(tuple(types))]
    return list(types)
