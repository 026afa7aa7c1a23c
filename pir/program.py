"""Program: a builtin.module op whose one block holds the program's ops, plus the
constraints on its symbolic dims that infer-meta recorded while it was built."""

from __future__ import annotations

from collections.abc import Iterator

from .core import Block, Operation, Value
from .symbolic import Constraints


class Program:
    def __init__(self, module: Operation | None = None) -> None:
        if module is None:
            module = Operation.create("builtin.module", num_regions=1)
            module.regions[0].add_block()
        if module.name != "builtin.module":
            raise ValueError(f"Program: expected a builtin.module, got {module.name}")
        self.module = module
        self.constraints = Constraints()

    @property
    def block(self) -> Block:
        return self.module.regions[0].blocks[0]

    @property
    def ops(self) -> list[Operation]:
        return list(self.block.ops)

    def walk(self) -> Iterator[Operation]:
        """Every op of the program (the module excluded), nested ones after their parent."""
        for op in list(self.block.ops):
            yield from op.walk()

    def clone(self) -> Program:
        mapper: dict[Value, Value] = {}
        p = Program(self.module.clone(mapper))
        p.constraints.items = list(self.constraints.items)
        return p

    def verify(self) -> None:
        """Raises VerificationError listing every problem (see pir.verifier)."""
        from .verifier import verify

        verify(self)

    def __str__(self) -> str:
        from .printer import print_program

        return print_program(self)

    @staticmethod
    def parse(text: str) -> Program:
        from .parser import parse

        return parse(text)
