"""cf: structured control flow. cf.if (a bool condition, then/else regions), cf.while
(condition and loop-carried values in, one body region whose block arguments are the carried
values and whose cf.yield gives the next condition and values), cf.yield (the terminator)."""

from __future__ import annotations

from ..core import Block, Operation
from ..dialect import IS_TERMINATOR, Dialect, OperandSpec, OpInfo, register_dialect
from ..types import TensorType

DIALECT = register_dialect(Dialect("cf"))


def _types(values: list) -> str:
    return "(" + ", ".join(str(getattr(v, "type", "<<NULL TYPE>>")) for v in values) + ")"


def _check_condition(op: Operation, what: str, cond: object) -> list[str]:
    t = getattr(cond, "type", None)
    if not (isinstance(t, TensorType) and t.dtype == "bool" and t.shape in ((), (1,))):
        return [f"{what} must be a bool tensor of one element (shape [] or [1]), got {t}"]
    return []


def _single_block(op: Operation, k: int) -> Block | None:
    region = op.regions[k]
    return region.blocks[0] if len(region.blocks) == 1 else None


def _yield_of(block: Block) -> Operation | None:
    last = block.ops[-1] if block.ops else None
    return last if last is not None and last.name == "cf.yield" else None


def _verify_if(op: Operation) -> list[str]:
    errors = _check_condition(op, "the condition (operand 0)", op.operand(0))
    results = [r.type for r in op.results]
    for k, which in enumerate(("then", "else")):
        block = _single_block(op, k)
        if block is None:
            errors.append(f"the {which} region (region {k}) must hold exactly one block")
            continue
        if block.args:
            errors.append(f"the {which} block takes no arguments, it has {len(block.args)}")
        y = _yield_of(block)
        if y is not None and [getattr(v, "type", None) for v in y.operands] != results:
            errors.append(f"the {which} region yields {_types(y.operands)} but the results are "
                          f"({', '.join(map(str, results))})")
    return errors


def _verify_while(op: Operation) -> list[str]:
    if op.num_operands < 1:
        return ["expects the condition as operand 0"]
    errors = _check_condition(op, "the condition (operand 0)", op.operand(0))
    carried = [getattr(v, "type", None) for v in op.operands[1:]]
    if [r.type for r in op.results] != carried:
        errors.append(f"results ({', '.join(str(r.type) for r in op.results)}) must have the "
                      f"carried values' types {_types(op.operands[1:])}")
    block = _single_block(op, 0)
    if block is None:
        return [*errors, "the body region must hold exactly one block"]
    if [a.type for a in block.args] != carried:
        errors.append(f"the body's block arguments {_types(block.args)} must have the carried "
                      f"values' types {_types(op.operands[1:])}")
    y = _yield_of(block)
    if y is not None:
        if y.num_operands < 1:
            errors.append("the body's cf.yield must give the next condition first")
        else:
            errors += _check_condition(op, "the body's next condition (cf.yield operand 0)",
                                       y.operand(0))
            if [getattr(v, "type", None) for v in y.operands[1:]] != carried:
                errors.append(f"the body yields {_types(y.operands[1:])} after the condition, "
                              f"expected the carried types {_types(op.operands[1:])}")
    return errors


for _info in (
    OpInfo("cf.yield", operands=None, results=(), traits=frozenset({IS_TERMINATOR})),
    OpInfo("cf.if", operands=(OperandSpec("cond"),), results=None, num_regions=2,
           verify=_verify_if),
    OpInfo("cf.while", operands=None, results=None, num_regions=1, verify=_verify_while),
):
    DIALECT.register(_info)
