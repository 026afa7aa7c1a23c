"""The verifier: registered ops, operand/result/attribute specs, SSA dominance, region and
terminator rules, each op's own checks, and result types against InferMeta. Every message
names the op, its position (`op 3 "pd_op.add"` of the program's block, nested positions
through their parents) and the mismatch; VerificationError lists them all."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .core import Block, BlockArgument, Operation, OpResult, Value
from .dialect import IS_TERMINATOR, NO_TERMINATOR, check_attr
from .infer import InferMetaError
from .symbolic import UNKNOWN
from .types import TensorType, Type, VectorType

if TYPE_CHECKING:
    from .program import Program


class VerificationError(ValueError):
    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("the program does not verify:\n  " + "\n  ".join(errors))


def position(op: Operation) -> str:
    """op 2 "pd_op.exp" (in region 0 of op 1 "cf.if") ..."""
    parts = []
    cur: Operation | None = op
    while cur is not None and cur.parent is not None and cur.name != "builtin.module":
        block = cur.parent
        here = f'op {block.index(cur)} "{cur.name}"'
        parent = block.parent_op
        if parent is not None and parent.name != "builtin.module":
            region = block.parent
            k = parent.regions.index(region)
            b = region.blocks.index(block)
            here += f" (block {b} of region {k} of" if len(region.blocks) > 1 else (
                f" (region {k} of")
            parts.append(here)
            cur = parent
            continue
        parts.append(here)
        break
    else:
        if cur is not None and cur.parent is None and cur.name != "builtin.module":
            parts.append(f'op "{cur.name}" (detached)')
    if not parts:
        return f'"{op.name}"'
    return " ".join(parts) + ")" * (len(parts) - 1)


def _describe(v: Value) -> str:
    if isinstance(v, OpResult):
        return f"result {v.index} of {position(v.owner)}"
    if isinstance(v, BlockArgument):
        parent = v.owner.parent_op
        where = "the program's block" if parent is None or parent.name == "builtin.module" \
            else f"a block of {position(parent)}"
        return f"argument {v.index} of {where}"
    return repr(v)


def type_matches(expected: Type | None, actual: Type | None) -> bool:
    """Equal, except that an unknown (-1) dim on either side matches any dim."""
    if isinstance(expected, TensorType) and isinstance(actual, TensorType):
        return (expected.dtype == actual.dtype and expected.ndim == actual.ndim and all(
            e == a or UNKNOWN in (e, a) for e, a in zip(expected.shape, actual.shape,
                                                         strict=True)))
    if isinstance(expected, VectorType) and isinstance(actual, VectorType):
        return len(expected.types) == len(actual.types) and all(
            type_matches(e, a) for e, a in zip(expected.types, actual.types, strict=True))
    return expected == actual


class _Verifier:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.index: dict[int, dict[int, int]] = {}  # id(block) -> id(op) -> position

    def err(self, op: Operation, text: str) -> None:
        self.errors.append(f"{position(op)}: {text}")

    def block_index(self, block: Block) -> dict[int, int]:
        idx = self.index.get(id(block))
        if idx is None:
            idx = {id(o): i for i, o in enumerate(block.ops)}
            self.index[id(block)] = idx
        return idx

    def dominates(self, v: Value, user: Operation) -> bool:
        """v is visible at user: defined earlier in user's block or in an enclosing one."""
        def_block = v.parent_block()
        if def_block is None:
            return False
        cur: Operation | None = user
        while cur is not None and cur.parent is not def_block:
            cur = cur.parent_op
        if cur is None:
            return False
        if isinstance(v, BlockArgument):
            return True
        idx = self.block_index(def_block)
        return cur is not v.owner and idx[id(v.owner)] < idx[id(cur)]

    def block(self, block: Block, needs_terminator: bool, owner: Operation) -> None:
        for i, op in enumerate(block.ops):
            if op.has_trait(IS_TERMINATOR) and i != len(block.ops) - 1:
                self.err(op, f"a terminator must end its block, but {len(block.ops) - 1 - i} "
                         "op(s) follow it")
            self.op(op)
        if needs_terminator and (not block.ops or not block.ops[-1].has_trait(IS_TERMINATOR)):
            last = f'ends with "{block.ops[-1].name}"' if block.ops else "is empty"
            region = block.parent
            k = owner.regions.index(region) if region in owner.regions else "?"
            self.err(owner, f"block {region.blocks.index(block)} of region {k} {last}; it "
                     "must end with a terminator (cf.yield)")

    def op(self, op: Operation) -> None:
        info = op.info
        for i, v in enumerate(op.operands):
            if v is None:
                continue
            if not self.dominates(v, op):
                defined = v.parent_block() is not None and (
                    not isinstance(v, OpResult) or not v.owner.erased)
                why = ("is used before its definition" if defined else
                       "is not defined in the program (erased or never inserted)")
                self.err(op, f"operand {i} ({_describe(v) if defined else 'a value'}) {why}")
        if info is None:
            self.err(op, f"unregistered op {op.name!r}")
            return
        before = len(self.errors)
        self.specs(op)
        if info.verify is not None and len(self.errors) == before:  # its checks need the specs
            for text in info.verify(op):
                self.err(op, text)
        needs_term = NO_TERMINATOR not in info.traits
        for region in op.regions:
            for block in region.blocks:
                self.block(block, needs_term, op)

    def specs(self, op: Operation) -> None:
        info = op.info
        before = len(self.errors)
        if info.operands is not None:
            if op.num_operands != len(info.operands):
                self.err(op, f"expects {len(info.operands)} operand(s) "
                         f"({', '.join(s.name for s in info.operands)}), got {op.num_operands}")
                return
            for i, (spec, v) in enumerate(zip(info.operands, op.operands, strict=True)):
                if v is None:
                    if not spec.optional:
                        self.err(op, f"operand {i} ({spec.name}) is required but null")
                    continue
                want = VectorType if spec.variadic else TensorType
                if not isinstance(v.type, want):
                    kind = "a vec[...] (builtin.combine)" if spec.variadic else \
                        "a builtin.tensor"
                    self.err(op, f"operand {i} ({spec.name}) must be {kind}, got {v.type}")
        if info.results is not None and op.num_results != len(info.results):
            self.err(op, f"expects {len(info.results)} result(s), got {op.num_results}")
            return
        if len(op.regions) != info.num_regions:
            self.err(op, f"expects {info.num_regions} region(s), got {len(op.regions)}")
        amap = info.attr_map
        for spec in info.attrs:
            a = op.attributes.get(spec.name)
            if a is None:
                if spec.required:
                    self.err(op, f"attribute {spec.name} is required")
                continue
            problem = check_attr(spec, a)
            if problem is not None:
                self.err(op, f"attribute {spec.name} must be {problem}, got {a}")
        if not info.extra_attrs:
            for name in op.attributes:
                if name not in amap and name != "stop_gradient":
                    self.err(op, f"unknown attribute {name!r} (it takes "
                             f"{', '.join(amap) or 'none'})")
        infer = info.interfaces.get("InferMeta")
        if infer is not None and len(self.errors) == before:
            self.results(op, infer)

    def results(self, op: Operation, infer: object) -> None:
        try:
            expected = infer(op.info, [None if v is None else v.type for v in op.operands],
                             op.attributes)
        except InferMetaError as exc:
            self.err(op, f"InferMeta refuses the operands: {exc}")
            return
        for i, (e, r) in enumerate(zip(expected, op.results, strict=True)):
            if not type_matches(e, r.type):
                self.err(op, f"result {i} has type {r.type} but InferMeta gives {e}")


def verify(program: Program | Operation) -> None:
    """Raises VerificationError when anything is wrong."""
    v = _Verifier()
    module = program if isinstance(program, Operation) else program.module
    v.op(module)
    if v.errors:
        raise VerificationError(v.errors)
