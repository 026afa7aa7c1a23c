"""Attributes: immutable, hashable constants attached to operations. Kinds: bool, int (int64),
float (double; equal by bits, so NaN == NaN and 0.0 != -0.0), str, dtype, place, array, null.
Printed in Paddle's form: true, (Int64)3, (Double)0.5, "text", (pd_op.DataType)float32,
(pd_op.Place)Place(custom:cpu:0), [(Int64)1,(Int64)2], null."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .types import DTYPE_SHORT

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class Attribute:
    """Base of every attribute; `.value` is its Python value."""

    __slots__ = ()
    kind = "?"

    @property
    def value(self) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class BoolAttr(Attribute):
    data: bool
    kind = "bool"

    @property
    def value(self) -> bool:
        return self.data

    def __str__(self) -> str:
        return "true" if self.data else "false"


@dataclass(frozen=True)
class Int64Attr(Attribute):
    data: int
    kind = "int"

    def __post_init__(self) -> None:
        if not INT64_MIN <= self.data <= INT64_MAX:
            raise ValueError(f"Int64Attr: {self.data} does not fit in int64")

    @property
    def value(self) -> int:
        return self.data

    def __str__(self) -> str:
        return f"(Int64){self.data}"


@dataclass(frozen=True, eq=False)
class DoubleAttr(Attribute):
    data: float
    kind = "float"

    def _bits(self) -> bytes:
        return struct.pack("<d", math.nan if math.isnan(self.data) else self.data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DoubleAttr) and self._bits() == other._bits()

    def __hash__(self) -> int:
        return hash(("double", self._bits()))

    @property
    def value(self) -> float:
        return self.data

    def __str__(self) -> str:
        return f"(Double){self.data!r}"


@dataclass(frozen=True)
class StrAttr(Attribute):
    data: str
    kind = "str"

    @property
    def value(self) -> str:
        return self.data

    def __str__(self) -> str:
        return json.dumps(self.data)


@dataclass(frozen=True)
class DTypeAttr(Attribute):
    data: str
    kind = "dtype"

    def __post_init__(self) -> None:
        if self.data not in DTYPE_SHORT:
            raise ValueError(f"DTypeAttr: unknown dtype {self.data!r}")

    @property
    def value(self) -> str:
        return self.data

    def __str__(self) -> str:
        return f"(pd_op.DataType){self.data}"


@dataclass(frozen=True)
class PlaceAttr(Attribute):
    data: str  # "custom:cpu:0", "cpu"
    kind = "place"

    def __post_init__(self) -> None:
        if not self.data or any(c in self.data for c in "() ,\n"):
            raise ValueError(f"PlaceAttr: bad place {self.data!r}")

    @property
    def value(self) -> str:
        return self.data

    def __str__(self) -> str:
        return f"(pd_op.Place)Place({self.data})"


@dataclass(frozen=True)
class ArrayAttr(Attribute):
    elements: tuple[Attribute, ...]
    kind = "array"

    @property
    def value(self) -> list[Any]:
        return [e.value for e in self.elements]

    def __str__(self) -> str:
        return "[" + ",".join(str(e) for e in self.elements) + "]"


@dataclass(frozen=True)
class NullAttr(Attribute):
    kind = "null"

    @property
    def value(self) -> None:
        return None

    def __str__(self) -> str:
        return "null"


NULL = NullAttr()


def attr(value: Any) -> Attribute:
    """The attribute of a Python value by its type (bool, int, float, str, list/tuple,
    None, or an Attribute as is). dtypes and places need DTypeAttr / PlaceAttr."""
    if isinstance(value, Attribute):
        return value
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BoolAttr(value)
    if isinstance(value, int):
        return Int64Attr(value)
    if isinstance(value, float):
        return DoubleAttr(value)
    if isinstance(value, str):
        return StrAttr(value)
    if isinstance(value, Sequence):
        return ArrayAttr(tuple(attr(v) for v in value))
    # numpy scalars and the like
    if hasattr(value, "item"):
        return attr(value.item())
    raise TypeError(f"no attribute kind for {type(value).__name__} {value!r}")
