"""dce: erase Pure ops whose results are unused (chains included, in nested regions too)."""

from __future__ import annotations

from ..core import Block, Operation
from .manager import Pass, register_pass
from .rewrite import is_trivially_dead


def _sweep(block: Block) -> int:
    erased = 0
    for op in reversed(block.ops):
        for region in op.regions:
            for b in region.blocks:
                erased += _sweep(b)
        if is_trivially_dead(op):
            op.erase()
            erased += 1
    return erased


@register_pass
class DeadCodeElimination(Pass):
    name = "dce"

    def run(self, op: Operation) -> bool:
        erased = 0
        for region in op.regions:
            for block in region.blocks:
                erased += _sweep(block)
        return erased > 0
