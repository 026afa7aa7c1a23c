"""cinn: the fusion compiler's ops (cinn_backends/, DESIGN.md "CINN, the fusion compiler").

- cinn.group holds a fused group of pd_op ops in one region of one block. The region is
  isolated from above: its block arguments stand for the operands (the values the group reads
  from outside) and its cinn.yield gives the results (the values used after it). The compiler
  lowers the whole region to generated kernels; a device without a codegen target, or a group
  that fails to compile, runs the region's ops one by one instead.
  Attribute `group_id` names it in logs and warnings (unique within its program).
- cinn.yield is its terminator."""

from __future__ import annotations

from ..core import Operation
from ..dialect import IS_TERMINATOR, PURE, AttrSpec, Dialect, OpInfo, register_dialect

DIALECT = register_dialect(Dialect("cinn"))


def _verify_group(op: Operation) -> list[str]:
    region = op.regions[0]
    if len(region.blocks) != 1:
        return ["the region must hold exactly one block"]
    block = region.blocks[0]
    errors = []
    args = [a.type for a in block.args]
    operands = [getattr(v, "type", None) for v in op.operands]
    if args != operands:
        errors.append(f"block arguments ({', '.join(map(str, args))}) must have the operands' "
                      f"types ({', '.join(map(str, operands))})")
    last = block.ops[-1] if block.ops else None
    if last is None or last.name != "cinn.yield":
        return [*errors, "the block must end with cinn.yield"]
    yielded = [getattr(v, "type", None) for v in last.operands]
    results = [r.type for r in op.results]
    if yielded != results:
        errors.append(f"cinn.yield gives ({', '.join(map(str, yielded))}) but the results are "
                      f"({', '.join(map(str, results))})")
    for inner in block.ops:
        for v in inner.operands:
            if v is not None and v.parent_block() is not block:
                errors.append(f"{inner.name} reads a value defined outside the group "
                              "(the region is isolated from above: pass it as an operand)")
                return errors
    return errors


DIALECT.register(OpInfo("cinn.yield", operands=None, results=(),
                        traits=frozenset({IS_TERMINATOR})))
DIALECT.register(OpInfo("cinn.group", operands=None, results=None, num_regions=1,
                        attrs=(AttrSpec("group_id", "int", 0),), traits=frozenset({PURE}),
                        verify=_verify_group))
