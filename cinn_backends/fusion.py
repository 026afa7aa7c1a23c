"""cinn_fusion: groups fusible pd_op ops into cinn.group regions (pir/dialects/cinn.py).

What fuses (from the ops' traits, which come from ops.yaml's categories):
- elementwise ops (unary, binary, ternary; not random draws) whose result has the group's
  shape: chains of them become one loop nest;
- a reduction with its elementwise producers and consumers: the consumers may have the
  reduction's input shape (x * rsqrt(mean(x*x)) broadcasts the row result back) or its output
  shape; several reductions share a group when they reduce the same shape over the same axes
  (softmax's max and sum, layer_norm's two means);
- the shape ops a kernel reads through an index map (expand, reshape, squeeze, unsqueeze,
  transpose): at the start of a group (a view of an outside value its consumers read) or
  inside one where they keep to its shapes (expand of a row result back over the rows).
Everything else (matmul, index ops, random, scans, control flow) stays an op of its own and
splits groups. Grouping is greedy in program order; an op joins a producer's group only when
no path leaves the group and comes back through an op outside it (the group stays one
convex piece that runs at one point). Groups with fewer than two computing ops are left as
they are: their ops already have kernels."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hwport.pir.core import Block, Operation, Value
from hwport.pir.dialect import ELEMENTWISE
from hwport.pir.passes.manager import Pass, register_pass
from hwport.pir.types import TensorType

REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod"})
INDEX_MAPS = frozenset({"expand", "reshape", "squeeze", "unsqueeze", "transpose"})


def fusion_kind(op: Operation) -> str | None:
    """'elementwise', 'reduce', 'index_map' or None (the op does not fuse)."""
    if not op.name.startswith("pd_op.") or op.regions or op.info is None:
        return None
    if not all(isinstance(r.type, TensorType) and r.type.is_static for r in op.results):
        return None
    if any(v is not None and not isinstance(v.type, TensorType) for v in op.operands):
        return None
    od = op.info.op_def
    name = od.name
    if od.category == "random" or len(op.results) != 1:
        return None
    if ELEMENTWISE in op.info.traits:
        return "elementwise"
    if name in REDUCTIONS:
        return "reduce"
    if name in INDEX_MAPS:
        return "index_map"
    return None


@dataclass
class _Group:
    gid: int
    ops: list[Operation] = field(default_factory=list)
    # the reduction signature the group holds (input shape, axes), if any
    reduce: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    shapes: set[tuple[int, ...]] = field(default_factory=set)  # result shapes allowed in it

    @property
    def computing(self) -> int:
        return sum(1 for op in self.ops if fusion_kind(op) != "index_map")


def _reduce_signature(op: Operation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    shape = tuple(op.operand(0).type.shape)
    axis = op.attr("axis")
    axes = list(range(len(shape))) if axis in (None, []) else \
        [a for a in ([axis] if isinstance(axis, int) else axis)]
    return shape, tuple(sorted(a % len(shape) if shape else 0 for a in axes))


def _reduced_shapes(sig: tuple[tuple[int, ...], tuple[int, ...]]) -> set[tuple[int, ...]]:
    shape, axes = sig
    keep = tuple(1 if i in axes else d for i, d in enumerate(shape))
    drop = tuple(d for i, d in enumerate(shape) if i not in axes)
    return {shape, keep, drop}


class _Grouper:
    def __init__(self, block: Block) -> None:
        self.block = block
        self.group_of: dict[Operation, _Group] = {}
        self.groups: list[_Group] = []
        # every value -> the grouped ops it depends on (transitively, through any op)
        self.ancestors: dict[Value, frozenset[Operation]] = {}

    def _anc(self, v: Value | None) -> frozenset[Operation]:
        if v is None:
            return frozenset()
        return self.ancestors.get(v, frozenset())

    def _closes_cycle(self, members: set[Operation]) -> bool:
        """True when an operand of the merged set, made outside it, depends on a member."""
        for op in members:
            for v in op.operands:
                if v is None:
                    continue
                d = v.defining_op() if hasattr(v, "defining_op") else None
                if d in members:
                    continue
                if self._anc(v) & members:
                    return True
        return False

    def _fits(self, group: _Group, op: Operation, kind: str) -> bool:
        shape = tuple(op.result().type.shape)
        if kind == "reduce":
            sig = _reduce_signature(op)
            return (group.reduce is None and sig[0] in group.shapes) or group.reduce == sig
        # an index map joins where it keeps to the group's shapes (expand of a row result
        # back over the rows); one that makes a new shape (a reshape of the group's result)
        # starts a group of its own, which its consumers join
        return shape in group.shapes

    def _new_group(self, op: Operation, kind: str) -> _Group:
        g = _Group(len(self.groups))
        self.groups.append(g)
        g.ops.append(op)
        self._absorb_shapes(g, op, kind)
        self.group_of[op] = g
        return g

    @staticmethod
    def _absorb_shapes(g: _Group, op: Operation, kind: str) -> None:
        if kind == "reduce":
            g.reduce = _reduce_signature(op)
            g.shapes |= _reduced_shapes(g.reduce)
        elif kind == "index_map":
            g.shapes.add(tuple(op.result().type.shape))
        else:
            g.shapes.add(tuple(op.result().type.shape))

    def _merge(self, into: _Group, other: _Group) -> None:
        for o in other.ops:
            self.group_of[o] = into
        into.ops.extend(other.ops)
        into.shapes |= other.shapes
        into.reduce = into.reduce or other.reduce
        self.groups[other.gid] = _Group(other.gid)  # emptied

    def run(self) -> list[_Group]:
        for op in self.block.ops:
            kind = fusion_kind(op)
            deps: set[Operation] = set()
            for v in op.operands:
                deps |= self._anc(v)
                d = v.defining_op() if v is not None and hasattr(v, "defining_op") else None
                if d is not None and d in self.group_of:
                    deps.add(d)
            if kind is not None:
                self._place(op, kind)
            anc = frozenset(deps)
            for r in op.results:
                self.ancestors[r] = anc
        return [g for g in self.groups if g.ops and g.computing >= 2]

    def _place(self, op: Operation, kind: str) -> None:
        producers: list[_Group] = []
        for v in op.operands:
            d = v.defining_op() if v is not None and hasattr(v, "defining_op") else None
            g = self.group_of.get(d) if d is not None else None
            if g is not None and g not in producers:
                producers.append(g)
        joined: _Group | None = None
        for g in producers:
            if joined is None:
                if not self._fits(g, op, kind):
                    continue
                if self._closes_cycle(set(g.ops) | {op}):
                    continue
                g.ops.append(op)
                self.group_of[op] = g
                if kind != "elementwise":
                    self._absorb_shapes(g, op, kind)
                joined = g
            elif self._compatible(joined, g) and \
                    not self._closes_cycle(set(joined.ops) | set(g.ops)):
                self._merge(joined, g)
        if joined is None:
            self._new_group(op, kind)

    @staticmethod
    def _compatible(a: _Group, b: _Group) -> bool:
        if a.reduce is not None and b.reduce is not None:
            return a.reduce == b.reduce
        big, small = (a, b) if a.reduce is not None else (b, a)
        return bool(small.shapes & big.shapes) and \
            (big.reduce is not None or small.shapes == big.shapes)


def _outside_users(v: Value, members: set[Operation]) -> bool:
    return any(u not in members for u in v.users)


def _build_group_op(block: Block, group: _Group, gid: int) -> Operation:
    ops = sorted(group.ops, key=block.index)
    members = set(ops)
    inputs: list[Value] = []
    for op in ops:
        for v in op.operands:
            if v is not None and v.defining_op() not in members and v not in inputs:
                inputs.append(v)
    outputs = [r for op in ops for r in op.results if _outside_users(r, members)]
    gop = Operation.create("cinn.group", inputs, [v.type for v in outputs],
                           {"group_id": gid}, num_regions=1)
    body = gop.regions[0].add_block([v.type for v in inputs])
    last = block.index(ops[-1])
    first = block.index(ops[0])
    block.insert(last + 1, gop)
    # outside ops between the group's first and last op that use its results run after it
    between = [o for o in block.ops[first:last + 1] if o not in members]
    produced = {r for op in ops for r in op.results}
    movers: list[Operation] = []
    for o in between:
        if any(v in produced for v in o.operands):
            movers.append(o)
            produced |= set(o.results)
    for op in ops:
        op.remove_from_parent()
        body.append(op)
    for v, arg in zip(inputs, body.args, strict=True):
        v.replace_uses_with_if(arg, lambda use: use.owner in members)
    body.append(Operation.create("cinn.yield", list(outputs)))
    for k, v in enumerate(outputs):
        v.replace_uses_with_if(gop.result(k), lambda use, b=body: use.owner.parent is not b)
    anchor = gop
    for o in movers:
        o.move_after(anchor)
        anchor = o
    return gop


def fuse_block(block: Block, first_id: int = 0) -> int:
    """Groups `block`'s fusible ops into cinn.group ops; returns how many it made."""
    groups = _Grouper(block).run()
    for k, g in enumerate(groups):
        _build_group_op(block, g, first_id + k)
    return len(groups)


def _blocks(op: Operation) -> Iterable[Block]:
    for region in op.regions:
        for block in region.blocks:
            yield block
            for inner in list(block.ops):
                if inner.name != "cinn.group":
                    yield from _blocks(inner)


@register_pass
class CinnFusion(Pass):
    """cinn_fusion: fusible ops into cinn.group regions (this module's docstring)."""

    name = "cinn_fusion"
    options: ClassVar[dict[str, Any]] = {}

    def run(self, op: Operation) -> bool:
        made = 0
        for block in list(_blocks(op)):
            made += fuse_block(block, made)
        return made > 0
