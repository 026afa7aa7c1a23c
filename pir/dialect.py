"""Dialects and the op registry: an `OpInfo` per op name holds its operand, result and
attribute specs, traits, interfaces (InferMeta, ...), region count and custom verifier."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .attributes import (
    NULL,
    ArrayAttr,
    Attribute,
    BoolAttr,
    DoubleAttr,
    DTypeAttr,
    Int64Attr,
    NullAttr,
    PlaceAttr,
    StrAttr,
)

if TYPE_CHECKING:
    from .core import Operation

# Traits
PURE = "Pure"
ELEMENTWISE = "Elementwise"
BROADCAST = "Broadcast"
REDUCTION = "Reduction"
INJECTIVE = "Injective"
SAME_SHAPE = "SameOperandsAndResultShape"
COMMUTATIVE = "Commutative"
IS_TERMINATOR = "IsTerminator"
NO_TERMINATOR = "NoTerminator"  # its regions' blocks need no terminator (builtin.module)

REQUIRED = object()


@dataclass(frozen=True)
class OperandSpec:
    name: str
    optional: bool = False
    variadic: bool = False  # one operand of VectorType (builtin.combine makes it)


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: str  # bool int float str dtype ints floats place any
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass
class OpInfo:
    name: str  # "pd_op.add"
    operands: tuple[OperandSpec, ...] | None = ()  # None: any number, any type
    results: tuple[OperandSpec, ...] | None = ()  # None: any number
    attrs: tuple[AttrSpec, ...] = ()
    traits: frozenset[str] = frozenset()
    interfaces: dict[str, Any] = field(default_factory=dict)
    num_regions: int = 0
    verify: Callable[[Operation], list[str]] | None = None  # extra checks: error texts
    extra_attrs: bool = False  # attributes beyond `attrs` are allowed
    op_def: Any = None  # pd_op: the phi_ops OpDef

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def attr_map(self) -> dict[str, AttrSpec]:
        return {a.name: a for a in self.attrs}


class Dialect:
    def __init__(self, name: str) -> None:
        self.name = name
        self.ops: dict[str, OpInfo] = {}

    def register(self, info: OpInfo) -> OpInfo:
        if not info.name.startswith(self.name + "."):
            raise ValueError(f"{info.name} does not belong to dialect {self.name}")
        self.ops[info.name] = info
        return info


_DIALECTS: dict[str, Dialect] = {}


def register_dialect(dialect: Dialect) -> Dialect:
    _DIALECTS[dialect.name] = dialect
    return dialect


def all_dialects() -> dict[str, Dialect]:
    _load_builtin_dialects()
    return dict(_DIALECTS)


def lookup_op(name: str) -> OpInfo | None:
    _load_builtin_dialects()
    d = _DIALECTS.get(name.split(".", 1)[0])
    return None if d is None else d.ops.get(name)


_LOADED: list[bool] = []  # non-empty once the dialects PIR ships are registered


def _load_builtin_dialects() -> None:
    if _LOADED:
        return
    _LOADED.append(True)
    from .dialects import builtin, cf, cinn, dist, kernel, pd_op  # noqa: F401 (they register themselves)


# ---- attribute kinds ------------------------------------------------------------------------

_NUMBER = (BoolAttr, Int64Attr, DoubleAttr)


def check_attr(spec: AttrSpec, a: Attribute) -> str | None:
    """None when `a` fits `spec`, else what was expected."""
    if isinstance(a, NullAttr):
        ok_null = spec.default is None or (spec.kind == "ints" and spec.default == [])
        return None if ok_null else f"{_EXPECTED[spec.kind]} (null is not allowed)"
    ok = {
        "bool": lambda: isinstance(a, BoolAttr),
        "int": lambda: isinstance(a, Int64Attr),
        "float": lambda: isinstance(a, _NUMBER),
        "str": lambda: isinstance(a, StrAttr),
        "dtype": lambda: isinstance(a, DTypeAttr),
        "place": lambda: isinstance(a, PlaceAttr),
        "ints": lambda: isinstance(a, ArrayAttr)
        and all(isinstance(e, Int64Attr) for e in a.elements),
        "floats": lambda: isinstance(a, ArrayAttr)
        and all(isinstance(e, (Int64Attr, DoubleAttr)) for e in a.elements),
        "any": lambda: True,
    }[spec.kind]()
    return None if ok else _EXPECTED[spec.kind]


_EXPECTED = {"bool": "a bool", "int": "an int64", "float": "a number", "str": "a str",
             "dtype": "a dtype", "place": "a place", "ints": "a list of int64",
             "floats": "a list of numbers", "any": "an attribute"}


def to_attr(op: str, spec: AttrSpec, value: Any) -> Attribute:
    """The attribute of a Python `value` for `spec` (ints given one int become a list, float
    attributes keep ints exact); TypeError naming the op and the attribute otherwise."""
    if isinstance(value, Attribute):
        a = value
    elif value is None:
        a = NULL
    else:
        a = _convert(op, spec, value)
    problem = check_attr(spec, a)
    if problem is not None:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(f"{op}: attribute {spec.name} expected {problem}, got "
                        f"{type(value).__name__} {shown}")
    return a


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _convert(op: str, spec: AttrSpec, value: Any) -> Attribute:
    if hasattr(value, "item") and not isinstance(value, (list, tuple)) and getattr(
            value, "ndim", 0) == 0:
        value = value.item()  # numpy scalar
    kind = spec.kind
    if kind == "bool" and isinstance(value, bool):
        return BoolAttr(value)
    if kind == "int" and _is_int(value):
        return Int64Attr(value)
    if kind == "float":
        if isinstance(value, bool):
            return BoolAttr(value)
        if _is_int(value):
            return Int64Attr(value)
        if isinstance(value, float):
            return DoubleAttr(value)
    if kind == "str" and isinstance(value, str):
        return StrAttr(value)
    if kind == "dtype":
        return DTypeAttr(str(value))
    if kind == "place":
        return PlaceAttr(str(value))
    if kind == "ints":
        if _is_int(value):
            return ArrayAttr((Int64Attr(value),))
        if isinstance(value, (list, tuple)) and all(_is_int(v) for v in value):
            return ArrayAttr(tuple(Int64Attr(int(v)) for v in value))
    if kind == "floats" and isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return ArrayAttr(tuple(Int64Attr(v) if _is_int(v) else DoubleAttr(float(v))
                                   for v in value))
    if kind == "any":
        from .attributes import attr

        return attr(value)
    shown = repr(value)
    raise TypeError(f"{op}: attribute {spec.name} expected {_EXPECTED[kind]}, got "
                    f"{type(value).__name__} {shown[:60]}")


def default_attr(spec: AttrSpec) -> Attribute:
    if spec.default is None:
        return NULL
    if spec.kind in ("ints", "floats"):
        return ArrayAttr(tuple(Int64Attr(v) if _is_int(v) else DoubleAttr(float(v))
                               for v in spec.default))
    if spec.kind == "float" and isinstance(spec.default, float) and math.isnan(spec.default):
        return DoubleAttr(math.nan)
    return _convert("default", spec, spec.default)
