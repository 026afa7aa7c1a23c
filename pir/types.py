"""Types of PIR values: `TensorType` (shape of static or symbolic dims, dtype) and
`VectorType` (a list of types: what builtin.combine makes for a variadic operand). Immutable
and hashable. Printed as Paddle does: builtin.tensor<s0x4xf32>, vec[builtin.tensor<2xf32>,...]."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .symbolic import UNKNOWN, Dim, SymExpr, is_static, parse_dim, simplify

# dtype name (phi_ops) <-> its short form in the text format (Paddle's)
DTYPE_SHORT = {"bool": "b", "int8": "i8", "uint8": "ui8", "int16": "i16", "int32": "i32",
               "int64": "i64", "float16": "f16", "bfloat16": "bf16", "float32": "f32",
               "float64": "f64"}
DTYPE_LONG = {v: k for k, v in DTYPE_SHORT.items()}
_PLAIN_SYMBOL = re.compile(r"[a-wyzA-Z_][a-wyzA-Z0-9_]*")  # no 'x': that separates dims


class Type:
    """Base of every value type."""

    __slots__ = ()


@dataclass(frozen=True)
class TensorType(Type):
    shape: tuple[Dim, ...]
    dtype: str

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_SHORT:
            raise ValueError(f"TensorType: unknown dtype {self.dtype!r}; expected one of "
                             f"{', '.join(DTYPE_SHORT)}")
        shape = tuple(simplify(d) if isinstance(d, SymExpr) else int(d) for d in self.shape)
        for d in shape:
            if isinstance(d, int) and d < UNKNOWN:
                raise ValueError(f"TensorType: dim {d} in shape {list(shape)}; dims are >= 0, "
                                 "-1 (unknown) or symbolic")
        object.__setattr__(self, "shape", shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(is_static(d) for d in self.shape)

    def __str__(self) -> str:
        dims = [_dim_text(d) for d in self.shape]
        return "builtin.tensor<" + "x".join([*dims, DTYPE_SHORT[self.dtype]]) + ">"


@dataclass(frozen=True)
class VectorType(Type):
    types: tuple[Type, ...]

    def __str__(self) -> str:
        return "vec[" + ",".join(str(t) for t in self.types) + "]"


def _dim_text(d: Dim) -> str:
    text = str(d)
    if isinstance(d, int) or _PLAIN_SYMBOL.fullmatch(text):
        return text
    return f"({text})"


def tensor(shape: Sequence[Dim | str], dtype: str) -> TensorType:
    """TensorType from a shape whose entries are ints, SymExprs or symbol/expression text
    ("s0", "s0*2"); None means unknown (-1)."""
    dims: list[Dim] = []
    for d in shape:
        if d is None:
            dims.append(UNKNOWN)
        elif isinstance(d, str):
            dims.append(parse_dim(d))
        else:
            dims.append(d)
    return TensorType(tuple(dims), dtype)


@functools.lru_cache(maxsize=4096)
def parse_tensor_body(body: str) -> TensorType:
    """The text between builtin.tensor< and >: dims separated by x (outside parentheses),
    then the dtype's short name. (Cached: types are immutable, and a program repeats few.)"""
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "x" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    short = parts[-1].strip()
    if short not in DTYPE_LONG:
        raise ValueError(f"unknown dtype {short!r} in builtin.tensor<{body}>")
    dims = []
    for part in parts[:-1]:
        text = part.strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1]
        dims.append(parse_dim(text))
    return TensorType(tuple(dims), DTYPE_LONG[short])
