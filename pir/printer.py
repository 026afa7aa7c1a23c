"""The text form, in Paddle's layout:

    {
        (%0) = "builtin.data" () {name:"x"} : () -> builtin.tensor<s0x4xf32>
        (%1) = "pd_op.exp" (%0) {} : (builtin.tensor<s0x4xf32>) -> builtin.tensor<s0x4xf32>
        (%2) = "cf.if" (%c) {} : (builtin.tensor<b>) -> builtin.tensor<s0x4xf32> {
        ^bb0:
            () = "cf.yield" (%1) {} : (builtin.tensor<s0x4xf32>) -> ()
        } {
        ...
        }
    }

Values are numbered in order of definition across the program; an absent optional operand
is <<NULL VALUE>> of type <<NULL TYPE>>; a location, when kept, follows the signature."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .core import Block, Operation, Value

if TYPE_CHECKING:
    from .program import Program

NULL_VALUE = "<<NULL VALUE>>"
NULL_TYPE = "<<NULL TYPE>>"
INDENT = "    "


class _Namer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.keep: list[Value] = []  # ids stay valid while the printer runs

    def define(self, v: Value) -> str:
        self.keep.append(v)
        name = self.names.setdefault(id(v), f"%{len(self.names)}")
        return name

    def use(self, v: Value | None) -> str:
        if v is None:
            return NULL_VALUE
        # A value not (yet) defined in the printed IR: a use before its definition or of a
        # value from elsewhere. Printed so that a broken program can still be shown.
        return self.names.get(id(v), f"%<undefined {type(v).__name__}>")


def _number(namer: _Namer, op: Operation) -> None:
    for r in op.results:
        namer.define(r)
    for region in op.regions:
        for block in region.blocks:
            for a in block.args:
                namer.define(a)
            for inner in block.ops:
                _number(namer, inner)


def _type(v: Value | None) -> str:
    return NULL_TYPE if v is None else str(v.type)


def _op_lines(namer: _Namer, op: Operation, depth: int, with_loc: bool) -> list[str]:
    pad = INDENT * depth
    results = ", ".join(namer.use(r) for r in op.results)
    operands = ", ".join(namer.use(v) for v in op.operands)
    attrs = ",".join(f"{k}:{a}" for k, a in op.attributes.items())
    ins = ", ".join(_type(v) for v in op.operands)
    outs = ", ".join(str(r.type) for r in op.results) or "()"
    line = f'{pad}({results}) = "{op.name}" ({operands}) {{{attrs}}} : ({ins}) -> {outs}'
    if with_loc and op.loc is not None:
        line += f" {op.loc}"
    if not op.regions:
        return [line]
    lines = [line + " {"]
    for k, region in enumerate(op.regions):
        if k:
            lines.append(pad + "} {")
        for i, block in enumerate(region.blocks):
            lines.append(pad + _block_header(namer, block, i))
            for inner in block.ops:
                lines += _op_lines(namer, inner, depth + 1, with_loc)
    lines.append(pad + "}")
    return lines


def _block_header(namer: _Namer, block: Block, i: int) -> str:
    args = ", ".join(f"{namer.use(a)}: {a.type}" for a in block.args)
    return f"^bb{i}({args}):" if block.args else f"^bb{i}:"


def print_program(program: Program, locations: bool = True) -> str:
    namer = _Namer()
    _number(namer, program.module)
    block = program.block
    lines = ["{"]
    if block.args:
        lines.append(_block_header(namer, block, 0))
    for op in block.ops:
        lines += _op_lines(namer, op, 1, locations)
    lines.append("}")
    return "\n".join(lines) + "\n"


def print_op(op: Operation, locations: bool = True) -> str:
    """One op (and its regions) on its own; values defined outside it print as undefined."""
    namer = _Namer()
    _number(namer, op)
    return "\n".join(_op_lines(namer, op, 0, locations))


def value_name(program: Program, v: Value) -> str:
    """The name `v` has in the printed program (%N)."""
    namer = _Namer()
    _number(namer, program.module)
    return namer.use(v)
