"""The parser of the text form (pir/printer.py): parse(str(program)) prints identically.
Errors are ParseError naming the line and column and what was expected."""

from __future__ import annotations

import json
import re

from .attributes import (
    NULL,
    ArrayAttr,
    Attribute,
    BoolAttr,
    DoubleAttr,
    DTypeAttr,
    Int64Attr,
    PlaceAttr,
    StrAttr,
)
from .core import Block, Location, Operation, Region, Value
from .printer import NULL_TYPE, NULL_VALUE
from .program import Program
from .types import Type, VectorType, parse_tensor_body

_WS = re.compile(r"\s*")
_VALUE = re.compile(r"%[A-Za-z0-9_.$-]+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?(?:inf|nan|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BLOCK = re.compile(r"\^[A-Za-z0-9_]+")


class ParseError(ValueError):
    pass


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.scopes: list[dict[str, Value]] = [{}]

    # ---- lexing -------------------------------------------------------------------------
    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()

    def error(self, expected: str) -> ParseError:
        line = self.text.count("\n", 0, self.pos) + 1
        col = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        found = self.text[self.pos:self.pos + 20].split("\n")[0]
        return ParseError(f"line {line}, column {col}: expected {expected}, found "
                          f"{found!r}" if found else f"line {line}, column {col}: expected "
                          f"{expected}, found the end of the text")

    def peek(self, s: str) -> bool:
        self.ws()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.accept(s):
            raise self.error(repr(s))

    def regex(self, rx: re.Pattern[str], what: str) -> str:
        self.ws()
        m = rx.match(self.text, self.pos)
        if not m:
            raise self.error(what)
        self.pos = m.end()
        return m.group(0)

    # ---- values ---------------------------------------------------------------------------
    def define(self, name: str, v: Value) -> None:
        if name in self.scopes[-1]:
            raise self.error(f"a new value name ({name} is defined twice)")
        self.scopes[-1][name] = v

    def lookup(self, name: str) -> Value:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise self.error(f"a defined value ({name} is used before its definition)")

    # ---- types ------------------------------------------------------------------------------
    def type(self) -> Type | None:
        if self.accept(NULL_TYPE):
            return None
        if self.accept("builtin.tensor<"):
            end = self.text.find(">", self.pos)
            if end < 0:
                raise self.error("'>'")
            try:
                t = parse_tensor_body(self.text[self.pos:end])
            except ValueError as exc:
                raise self.error(f"a tensor type ({exc})") from None
            self.pos = end + 1
            return t
        if self.accept("vec["):
            types: list[Type] = []
            if not self.accept("]"):
                while True:
                    types.append(self.type())
                    if self.accept("]"):
                        break
                    self.expect(",")
            return VectorType(tuple(types))
        raise self.error("a type (builtin.tensor<...>, vec[...] or <<NULL TYPE>>)")

    # ---- attributes -------------------------------------------------------------------------
    def attribute(self) -> Attribute:
        if self.accept("true"):
            return BoolAttr(True)
        if self.accept("false"):
            return BoolAttr(False)
        if self.accept("null"):
            return NULL
        if self.accept("(Int64)"):
            return Int64Attr(int(self.regex(_INT, "an integer")))
        if self.accept("(Double)"):
            return DoubleAttr(float(self.regex(_FLOAT, "a number")))
        if self.accept("(pd_op.DataType)"):
            try:
                return DTypeAttr(self.regex(_IDENT, "a dtype name"))
            except ValueError as exc:
                raise self.error(str(exc)) from None
        if self.accept("(pd_op.Place)Place("):
            end = self.text.find(")", self.pos)
            if end < 0:
                raise self.error("')'")
            place = PlaceAttr(self.text[self.pos:end])
            self.pos = end + 1
            return place
        if self.peek('"'):
            return StrAttr(json.loads(self.regex(_STRING, "a string")))
        if self.accept("["):
            elements: list[Attribute] = []
            if not self.accept("]"):
                while True:
                    elements.append(self.attribute())
                    if self.accept("]"):
                        break
                    self.expect(",")
            return ArrayAttr(tuple(elements))
        raise self.error("an attribute")

    # ---- operations ---------------------------------------------------------------------------
    def op(self, block: Block) -> None:
        self.expect("(")
        result_names: list[str] = []
        if not self.accept(")"):
            while True:
                result_names.append(self.regex(_VALUE, "a result name (%N)"))
                if self.accept(")"):
                    break
                self.expect(",")
        self.expect("=")
        name = json.loads(self.regex(_STRING, 'an op name ("dialect.op")'))
        self.expect("(")
        operands: list[Value | None] = []
        if not self.accept(")"):
            while True:
                if self.accept(NULL_VALUE):
                    operands.append(None)
                else:
                    operands.append(self.lookup(self.regex(_VALUE, "an operand (%N)")))
                if self.accept(")"):
                    break
                self.expect(",")
        self.expect("{")
        attrs: dict[str, Attribute] = {}
        if not self.accept("}"):
            while True:
                key = self.regex(_IDENT, "an attribute name")
                self.expect(":")
                attrs[key] = self.attribute()
                if self.accept("}"):
                    break
                self.expect(",")
        self.expect(":")
        self.expect("(")
        operand_types: list[Type | None] = []
        if not self.accept(")"):
            while True:
                operand_types.append(self.type())
                if self.accept(")"):
                    break
                self.expect(",")
        if len(operand_types) != len(operands):
            raise self.error(f"{len(operands)} operand types for {name}, got "
                             f"{len(operand_types)}")
        for i, (v, t) in enumerate(zip(operands, operand_types, strict=True)):
            if (None if v is None else v.type) != t:
                raise self.error(f"operand {i} of {name} to have the type of its value "
                                 f"({None if v is None else v.type}), got {t}")
        self.expect("->")
        result_types: list[Type] = []
        if not self.accept("()"):
            while True:
                result_types.append(self.type())
                if not self.accept(","):
                    break
        if len(result_types) != len(result_names):
            raise self.error(f"{len(result_names)} result types for {name}, got "
                             f"{len(result_types)}")
        loc = None
        if self.accept("loc("):
            file = json.loads(self.regex(_STRING, "a file name string"))
            self.expect(":")
            loc = Location(file, int(self.regex(_INT, "a line number")))
            self.expect(")")
        op = Operation.create(name, operands, result_types, attrs, 0, loc)
        block.append(op)
        if self.peek("{"):
            while self.accept("{"):
                region = Region(op)
                op.regions.append(region)
                self.scopes.append({})
                self.blocks(region)
                self.scopes.pop()
                self.expect("}")
        for n, r in zip(result_names, op.results, strict=True):
            self.define(n, r)

    def block_header(self, block: Block) -> None:
        self.regex(_BLOCK, "a block label (^bb0)")
        if self.accept("("):
            if not self.accept(")"):
                while True:
                    n = self.regex(_VALUE, "a block argument (%N)")
                    self.expect(":")
                    self.define(n, block.add_argument(self.type()))
                    if self.accept(")"):
                        break
                    self.expect(",")
        self.expect(":")

    def ops(self, block: Block) -> None:
        while self.peek("("):
            self.op(block)

    def blocks(self, region: Region) -> None:
        while self.peek("^"):
            block = region.add_block()
            self.block_header(block)
            self.ops(block)
        if not region.blocks:
            raise self.error("a block label (^bb0) opening the region")

    def program(self) -> Program:
        p = Program()
        self.expect("{")
        if self.peek("^"):
            self.block_header(p.block)
        self.ops(p.block)
        self.expect("}")
        self.ws()
        if self.pos != len(self.text):
            raise self.error("the end of the text")
        return p


def parse(text: str) -> Program:
    """The program of a text made by str(program)."""
    return _Parser(text).program()
