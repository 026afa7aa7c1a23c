"""cse: an op that repeats an earlier one visible from it (same name, operands, attributes and
result types; Pure, no regions) is replaced by it. Operands of a Commutative op count in any
order. Values of an enclosing block are visible in nested regions, not the other way."""

from __future__ import annotations

from ..core import Block, Operation
from ..dialect import COMMUTATIVE, PURE
from .manager import Pass, register_pass


def _key(op: Operation) -> tuple:
    operands = [id(v) if v is not None else None for v in op.operands]
    if op.has_trait(COMMUTATIVE):
        operands.sort(key=lambda i: (i is None, i))
    return (op.name, tuple(operands), tuple(sorted(op.attributes.items())),
            tuple(r.type for r in op.results))


def _cse(block: Block, scopes: list[dict[tuple, Operation]]) -> int:
    scopes.append({})
    replaced = 0
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                replaced += _cse(b, scopes)
        if not op.has_trait(PURE) or op.regions or not op.results:
            continue
        key = _key(op)
        earlier = next((s[key] for s in reversed(scopes) if key in s), None)
        if earlier is None:
            scopes[-1][key] = op
            continue
        for old, new in zip(op.results, earlier.results, strict=True):
            old.replace_all_uses_with(new)
        op.erase()
        replaced += 1
    scopes.pop()
    return replaced


@register_pass
class CommonSubexpressionElimination(Pass):
    name = "cse"

    def run(self, op: Operation) -> bool:
        replaced = 0
        for region in op.regions:
            for block in region.blocks:
                replaced += _cse(block, [])
        return replaced > 0
