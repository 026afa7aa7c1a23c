"""The SSA core: Value (an op result or a block argument) with its use list, OpOperand,
Operation (name, operands, results, attributes, regions, parent block), Block, Region.
Every mutation keeps the use-def chains exact: a value's `uses` are precisely the operands
that name it, in attached or detached ops alike, and an erased op holds no uses."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .attributes import Attribute, attr
from .types import Type

if TYPE_CHECKING:
    from .dialect import OpInfo


class IRError(ValueError):
    """A mutation that would break the IR (erasing a value still in use, ...)."""


@dataclass(frozen=True)
class Location:
    """Where the op was created (file:line of the Python code); optional metadata."""

    file: str
    line: int

    def __str__(self) -> str:
        return f'loc("{self.file}":{self.line})'


class Value:
    __slots__ = ("_uses", "type")

    def __init__(self, type: Type) -> None:
        self.type = type
        self._uses: list[OpOperand] = []

    @property
    def uses(self) -> list[OpOperand]:
        return list(self._uses)

    @property
    def users(self) -> list[Operation]:
        return list(dict.fromkeys(u.owner for u in self._uses))

    def has_uses(self) -> bool:
        return bool(self._uses)

    def replace_all_uses_with(self, new: Value) -> None:
        if new is self:
            return
        for use in list(self._uses):
            use.set(new)

    def replace_uses_with_if(self, new: Value, pred: Callable[[OpOperand], bool]) -> None:
        for use in list(self._uses):
            if pred(use):
                use.set(new)

    def defining_op(self) -> Operation | None:
        return None

    def parent_block(self) -> Block | None:
        raise NotImplementedError


class _Owned(Value):
    """A value with an owner (op or block) and its index there."""

    __slots__ = ("index", "owner")

    def __init__(self, type: Type, owner: Any, index: int) -> None:
        super().__init__(type)
        self.owner = owner
        self.index = index


class OpResult(_Owned):
    __slots__ = ()
    owner: Operation

    def defining_op(self) -> Operation:
        return self.owner

    def parent_block(self) -> Block | None:
        return self.owner.parent

    def __repr__(self) -> str:
        return f"<OpResult {self.index} of {self.owner.name}: {self.type}>"


class BlockArgument(_Owned):
    __slots__ = ()
    owner: Block

    def parent_block(self) -> Block:
        return self.owner

    def __repr__(self) -> str:
        return f"<BlockArgument {self.index}: {self.type}>"


class OpOperand:
    """One operand slot of an op; its value may be None (an absent optional input)."""

    __slots__ = ("index", "owner", "value")

    def __init__(self, owner: Operation, index: int, value: Value | None) -> None:
        self.owner = owner
        self.index = index
        self.value: Value | None = None
        self.set(value)

    def set(self, value: Value | None) -> None:
        if value is not None and not isinstance(value, Value):
            raise TypeError(f"{self.owner.name}: operand {self.index} must be a Value or None, "
                            f"got {type(value).__name__}")
        if self.value is not None:
            self.value._uses.remove(self)
        self.value = value
        if value is not None:
            value._uses.append(self)


class Operation:
    """An operation. Create with `Operation.create` (or a Builder); `info` is the registered
    OpInfo (None for an unregistered name, which the verifier refuses)."""

    __slots__ = ("_operands", "attributes", "erased", "info", "loc", "name", "parent",
                 "regions", "results")

    def __init__(self) -> None:  # use Operation.create
        self.name = ""
        self.info: OpInfo | None = None
        self._operands: list[OpOperand] = []
        self.results: list[OpResult] = []
        self.attributes: dict[str, Attribute] = {}
        self.regions: list[Region] = []
        self.parent: Block | None = None
        self.loc: Location | None = None
        self.erased = False

    @classmethod
    def create(cls, name: str, operands: Sequence[Value | None] = (),
               result_types: Sequence[Type] = (),
               attributes: Mapping[str, Any] | None = None, num_regions: int = 0,
               loc: Location | None = None) -> Operation:
        from .dialect import lookup_op

        op = cls()
        op.name = name
        op.info = lookup_op(name)
        op._operands = [OpOperand(op, i, v) for i, v in enumerate(operands)]
        op.results = [OpResult(t, op, i) for i, t in enumerate(result_types)]
        op.attributes = {k: attr(v) for k, v in (attributes or {}).items()}
        op.regions = [Region(op) for _ in range(num_regions)]
        op.loc = loc
        return op

    # ---- operands and results ---------------------------------------------------------
    @property
    def operands(self) -> list[Value | None]:
        return [o.value for o in self._operands]

    @property
    def op_operands(self) -> list[OpOperand]:
        return list(self._operands)

    @property
    def num_operands(self) -> int:
        return len(self._operands)

    def operand(self, i: int) -> Value | None:
        return self._operands[i].value

    def set_operand(self, i: int, value: Value | None) -> None:
        self._operands[i].set(value)

    def set_operands(self, values: Sequence[Value | None]) -> None:
        for o in self._operands:
            o.set(None)
        self._operands = [OpOperand(self, i, v) for i, v in enumerate(values)]

    def result(self, i: int = 0) -> OpResult:
        return self.results[i]

    @property
    def num_results(self) -> int:
        return len(self.results)

    # ---- attributes -------------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        """The Python value of attribute `name` (default when absent)."""
        a = self.attributes.get(name)
        return default if a is None else a.value

    def set_attr(self, name: str, value: Any) -> None:
        self.attributes[name] = attr(value)

    # ---- structure ----------------------------------------------------------------------
    @property
    def parent_region(self) -> Region | None:
        return None if self.parent is None else self.parent.parent

    @property
    def parent_op(self) -> Operation | None:
        region = self.parent_region
        return None if region is None else region.parent

    def has_trait(self, trait: str) -> bool:
        return self.info is not None and trait in self.info.traits

    def walk(self) -> Iterator[Operation]:
        """This op, then every op nested in its regions, in order (pre-order)."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in list(block.ops):
                    yield from op.walk()

    def is_ancestor_of(self, other: Operation) -> bool:
        cur: Operation | None = other
        while cur is not None:
            if cur is self:
                return True
            cur = cur.parent_op
        return False

    # ---- mutation -----------------------------------------------------------------------
    def remove_from_parent(self) -> Operation:
        """Detach from its block (the op and its uses stay alive; insert it elsewhere)."""
        if self.parent is not None:
            self.parent.ops.remove(self)
            self.parent = None
        return self

    def move_before(self, anchor: Operation) -> None:
        self._move(anchor, 0, "move_before")

    def move_after(self, anchor: Operation) -> None:
        self._move(anchor, 1, "move_after")

    def _move(self, anchor: Operation, offset: int, what: str) -> None:
        if anchor is self:
            return
        self._check_not_into_itself(anchor)
        block = anchor.parent
        if block is None:
            raise IRError(f"{what}: {anchor.name} is not in a block")
        self.remove_from_parent()
        block.insert(block.index(anchor) + offset, self)

    def move_to_end(self, block: Block) -> None:
        if block.parent is not None and block.parent.parent is not None:
            self._check_not_into_itself(block.parent.parent)
        self.remove_from_parent()
        block.append(self)

    def _check_not_into_itself(self, target: Operation) -> None:
        if self.is_ancestor_of(target) and target is not self:
            raise IRError(f"cannot move {self.name} into one of its own regions")

    def drop_all_references(self) -> None:
        """Clear the operands of this op and of every op nested in it."""
        for op in self.walk():
            for o in op._operands:
                o.set(None)

    def erase(self) -> None:
        """Remove from the IR: refuses while a result is used outside this op."""
        nested = list(self.walk())
        inside = set(map(id, nested))
        for op in nested:
            for r in op.results:
                for use in r._uses:
                    if id(use.owner) not in inside:
                        raise IRError(
                            f"cannot erase {self.name}: result {r.index} of {op.name} is still "
                            f"used by {use.owner.name} (operand {use.index}); replace its "
                            "uses first")
        self.drop_all_references()
        self.remove_from_parent()
        for op in nested:
            op.erased = True

    def clone(self, mapper: dict[Value, Value] | None = None) -> Operation:
        """A deep copy (regions included); operands are mapped through `mapper` (values not
        in it are kept), and `mapper` gains old -> new for every result and block argument."""
        mapper = {} if mapper is None else mapper
        new = Operation.create(
            self.name, [None if v is None else mapper.get(v, v) for v in self.operands],
            [r.type for r in self.results], dict(self.attributes), 0, self.loc)
        for old, r in zip(self.results, new.results, strict=True):
            mapper[old] = r
        for region in self.regions:
            new.regions.append(region.clone_into(new, mapper))
        return new

    def __repr__(self) -> str:
        return f"<Operation {self.name} ({self.num_operands} -> {self.num_results})>"

    def __str__(self) -> str:
        from .printer import print_op

        return print_op(self)


class Block:
    __slots__ = ("args", "ops", "parent")

    def __init__(self, parent: Region | None = None,
                 arg_types: Sequence[Type] = ()) -> None:
        self.parent = parent
        self.args: list[BlockArgument] = []
        self.ops: list[Operation] = []
        for t in arg_types:
            self.add_argument(t)

    def add_argument(self, type: Type) -> BlockArgument:
        a = BlockArgument(type, self, len(self.args))
        self.args.append(a)
        return a

    def erase_argument(self, i: int) -> None:
        arg = self.args[i]
        if arg._uses:
            raise IRError(f"cannot erase block argument {i}: it is still used by "
                          f"{arg._uses[0].owner.name}")
        del self.args[i]
        for k, a in enumerate(self.args):
            a.index = k

    def append(self, op: Operation) -> Operation:
        return self.insert(len(self.ops), op)

    def insert(self, index: int, op: Operation) -> Operation:
        if op.parent is not None:
            raise IRError(f"{op.name} is already in a block; move it or remove it first")
        if op.erased:
            raise IRError(f"{op.name} was erased")
        self.ops.insert(index, op)
        op.parent = self
        return op

    def index(self, op: Operation) -> int:
        for i, o in enumerate(self.ops):
            if o is op:
                return i
        raise IRError(f"{op.name} is not in this block")

    @property
    def terminator(self) -> Operation | None:
        if self.ops and self.ops[-1].has_trait("IsTerminator"):
            return self.ops[-1]
        return None

    @property
    def parent_op(self) -> Operation | None:
        return None if self.parent is None else self.parent.parent

    def __iter__(self) -> Iterator[Operation]:
        return iter(list(self.ops))

    def __len__(self) -> int:
        return len(self.ops)


class Region:
    __slots__ = ("blocks", "parent")

    def __init__(self, parent: Operation | None = None) -> None:
        self.parent = parent
        self.blocks: list[Block] = []

    def add_block(self, arg_types: Sequence[Type] = ()) -> Block:
        b = Block(self, arg_types)
        self.blocks.append(b)
        return b

    @property
    def block(self) -> Block:
        """The first block (created when the region has none)."""
        return self.blocks[0] if self.blocks else self.add_block()

    def clone_into(self, parent: Operation, mapper: dict[Value, Value]) -> Region:
        new = Region(parent)
        for b in self.blocks:
            nb = new.add_block([a.type for a in b.args])
            for old, a in zip(b.args, nb.args, strict=True):
                mapper[old] = a
        for b, nb in zip(self.blocks, new.blocks, strict=True):
            for op in b.ops:
                nb.append(op.clone(mapper))
        return new
