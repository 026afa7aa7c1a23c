"""The loop IR: what a fused group becomes before a renderer writes it in a dialect.

Expressions are immutable and hashable (structural equality: hoisting and common
subexpressions key on them). Every expression has a dtype, one of the ops.yaml dtype names:
"int64" for indices and dims, "bool" for conditions, "float32"/"float64" (and the integer
types) for values. float16 and bfloat16 are storage only: a Load of such a buffer has that
dtype and is Cast to float32 before any arithmetic; a Store of such a buffer stores a Cast of a
float32 value (round to nearest even). Integer arithmetic wraps (two's complement).

Statements: For (kind serial | parallel | vectorized | unrolled | group | thread; a parallel
or group loop is the grid id along `axis`, a thread loop the thread id in the group: their
extent is the launch's grid / group size, known to the launch computation), Store, Let
(an immutable scalar), Local + Assign (a mutable scalar), Reduce (acc = op(acc, value)),
Alloc (a private or group-local array), Barrier (all threads of the group), ShuffleXor (a
value from another lane of the thread's sub-group, on targets with sub-group shuffles), If.

A Kernel has buffer params (name, dtype, role in | out | scratch and the group's input/output
index), scalar params (int64 dims and schedule parameters, float64 scalars) and a body."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

INDEX = "int64"
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int8", "uint8", "int16", "int32", "int64")
STORAGE_ONLY = ("float16", "bfloat16")

BINARY_OPS = ("+", "-", "*", "/", "%", "min", "max", "==", "!=", "<", "<=", ">", ">=",
              "&&", "||", "&", "|", "^")
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=", "&&", "||")
UNARY_OPS = ("neg", "not", "bnot")
REDUCE_OPS = ("sum", "prod", "max", "min")
LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled", "group", "thread")


def compute_dtype(dtype: str) -> str:
    """The type values of `dtype` are computed in (float16/bfloat16 in float32)."""
    return "float32" if dtype in STORAGE_ONLY else dtype


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


# ---- expressions ---------------------------------------------------------------------------
class Expr:
    __slots__ = ()
    dtype: str

    # index arithmetic sugar (int64 expressions), folding constants
    def __add__(self, o: Expr | int) -> Expr:
        return add(self, o)

    def __radd__(self, o: int) -> Expr:
        return add(o, self)

    def __mul__(self, o: Expr | int) -> Expr:
        return mul(self, o)

    def __rmul__(self, o: int) -> Expr:
        return mul(o, self)

    def __sub__(self, o: Expr | int) -> Expr:
        return sub(self, o)

    def __floordiv__(self, o: Expr | int) -> Expr:
        return div(self, o)

    def __mod__(self, o: Expr | int) -> Expr:
        return mod(self, o)


@dataclass(frozen=True, eq=True)
class Const(Expr):
    value: Any
    dtype: str


@dataclass(frozen=True, eq=True)
class Var(Expr):
    """A named scalar: a dim or scalar parameter, a loop variable, a Let/Local."""

    name: str
    dtype: str = INDEX


@dataclass(frozen=True, eq=True)
class Unary(Expr):
    op: str
    a: Expr
    dtype: str


@dataclass(frozen=True, eq=True)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str


@dataclass(frozen=True, eq=True)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr
    dtype: str


@dataclass(frozen=True, eq=True)
class Cast(Expr):
    a: Expr
    dtype: str


@dataclass(frozen=True, eq=True)
class Call(Expr):
    """A named math function of the IR's library (render/expr.py FUNCTIONS), by name."""

    fn: str
    args: tuple[Expr, ...]
    dtype: str


@dataclass(frozen=True, eq=True)
class Load(Expr):
    """buf[index] (a buffer parameter or an Alloc'd array); dtype = the element dtype."""

    buf: str
    index: Expr
    dtype: str


def _cached_hash(self: Expr) -> int:
    """A node's hash, computed once (the generated one would walk the whole DAG each time)."""
    h = self.__dict__.get("_hash")
    if h is None:
        h = hash((type(self).__name__, *(getattr(self, f.name) for f in fields(self))))  # type: ignore[arg-type]
        object.__setattr__(self, "_hash", h)
    return h


for _cls in (Const, Var, Unary, Binary, Select, Cast, Call, Load):
    _cls.__hash__ = _cached_hash  # type: ignore[method-assign]


def const(value: Any, dtype: str = INDEX) -> Const:
    if dtype == "bool":
        return Const(bool(value), dtype)
    return Const(float(value) if is_float(dtype) else int(value), dtype)


def _e(v: Expr | int) -> Expr:
    return v if isinstance(v, Expr) else const(v)


def add(a: Expr | int, b: Expr | int) -> Expr:
    a, b = _e(a), _e(b)
    if isinstance(a, Const) and a.dtype == INDEX and a.value == 0:
        return b
    if isinstance(b, Const) and b.dtype == INDEX and b.value == 0:
        return a
    if isinstance(a, Const) and isinstance(b, Const) and a.dtype == b.dtype == INDEX:
        return const(a.value + b.value)
    # (y / D) * D + y % D  ->  y   (re-linearizing a delinearized index)
    if (isinstance(a, Binary) and a.op == "*" and isinstance(a.a, Binary) and a.a.op == "/"
            and a.a.b == a.b and isinstance(b, Binary) and b.op == "%" and b.a == a.a.a
            and b.b == a.b):
        return b.a
    return Binary("+", a, b, a.dtype)


def sub(a: Expr | int, b: Expr | int) -> Expr:
    a, b = _e(a), _e(b)
    if isinstance(b, Const) and b.dtype == INDEX and b.value == 0:
        return a
    if isinstance(a, Const) and isinstance(b, Const) and a.dtype == b.dtype == INDEX:
        return const(a.value - b.value)
    return Binary("-", a, b, a.dtype)


def mul(a: Expr | int, b: Expr | int) -> Expr:
    a, b = _e(a), _e(b)
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Const) and x.dtype == INDEX:
            if x.value == 0:
                return x
            if x.value == 1:
                return y
    if isinstance(a, Const) and isinstance(b, Const) and a.dtype == b.dtype == INDEX:
        return const(a.value * b.value)
    return Binary("*", a, b, a.dtype)


def div(a: Expr | int, b: Expr | int) -> Expr:
    """Integer division of non-negative index expressions."""
    a, b = _e(a), _e(b)
    if isinstance(b, Const) and b.value == 1:
        return a
    if isinstance(a, Const) and a.value == 0:
        return a
    if isinstance(a, Const) and isinstance(b, Const) and a.dtype == INDEX:
        return const(a.value // b.value)
    return Binary("/", a, b, a.dtype)


def mod(a: Expr | int, b: Expr | int) -> Expr:
    a, b = _e(a), _e(b)
    if isinstance(b, Const) and b.value == 1:
        return const(0)
    if isinstance(a, Const) and isinstance(b, Const) and a.dtype == INDEX:
        return const(a.value % b.value)
    return Binary("%", a, b, a.dtype)


def minimum(a: Expr | int, b: Expr | int) -> Expr:
    a, b = _e(a), _e(b)
    if a == b:
        return a
    return Binary("min", a, b, a.dtype)


def cast(a: Expr, dtype: str) -> Expr:
    if a.dtype == dtype:
        return a
    if isinstance(a, Const) and dtype not in STORAGE_ONLY:
        return const(a.value, dtype)
    return Cast(a, dtype)


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, Unary | Cast):
        return (e.a,)
    if isinstance(e, Binary):
        return (e.a, e.b)
    if isinstance(e, Select):
        return (e.cond, e.a, e.b)
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Load):
        return (e.index,)
    return ()


def nodes(exprs: Iterable[Expr]) -> list[Expr]:
    """Every distinct node (by identity) of the expressions, each once: expressions are DAGs
    (a value read twice is one object), which a naive walk would visit exponentially often."""
    out: list[Expr] = []
    seen: set[int] = set()
    stack = list(exprs)
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        out.append(x)
        stack.extend(children(x))
    return out


def free_vars(e: Expr) -> set[str]:
    return {x.name for x in nodes([e]) if isinstance(x, Var)}


def calls(e: Expr) -> set[tuple[str, str]]:
    """(function, dtype of its first argument) of every Call in e."""
    return {(x.fn, x.args[0].dtype if x.args else x.dtype) for x in nodes([e])
            if isinstance(x, Call)}


# ---- statements ----------------------------------------------------------------------------
class Stmt:
    __slots__ = ()


@dataclass
class For(Stmt):
    var: Var
    start: Expr
    extent: Expr  # iterations: var = start, start + step, ... below start + extent
    kind: str = "serial"
    body: list[Stmt] = field(default_factory=list)
    step: int = 1
    axis: int = 0  # parallel / group / thread: the grid or group dimension

    def __post_init__(self) -> None:
        if self.kind not in LOOP_KINDS:
            raise ValueError(f"loop kind {self.kind!r}; expected one of {LOOP_KINDS}")


@dataclass
class Store(Stmt):
    buf: str
    index: Expr
    value: Expr


@dataclass
class Let(Stmt):
    var: Var
    value: Expr


@dataclass
class Local(Stmt):
    """A mutable scalar, initialized."""

    var: Var
    init: Expr


@dataclass
class Assign(Stmt):
    var: Var
    value: Expr


@dataclass
class Reduce(Stmt):
    """var = op(var, value): sum, prod, max or min (max/min propagate NaN)."""

    var: Var
    op: str
    value: Expr


@dataclass
class Alloc(Stmt):
    """An array of `size` elements: scope private (per thread) or local (per group)."""

    name: str
    dtype: str
    size: int
    scope: str = "private"


@dataclass
class Barrier(Stmt):
    """Every thread of the group reaches it before any goes on; local memory is visible."""


@dataclass
class ShuffleXor(Stmt):
    """Defines `var` (immutable, as a Let) as `value` computed by the lane whose index in the
    thread's sub-group (warp) is this lane's index xor `mask`: a register exchange without
    local memory or a barrier. Every thread of the group executes it (converged, outside any
    thread-dependent If); `mask` < the sub-group width, which divides the group size."""

    var: Var
    value: Expr
    mask: int


@dataclass
class If(Stmt):
    cond: Expr
    then: list[Stmt] = field(default_factory=list)
    orelse: list[Stmt] = field(default_factory=list)


# ---- kernels -------------------------------------------------------------------------------
@dataclass(frozen=True)
class BufferParam:
    name: str
    dtype: str
    role: str  # in | out | scratch
    index: int  # the group's input / output index (scratch: its number)


@dataclass(frozen=True)
class ScalarParam:
    name: str
    dtype: str = INDEX  # int64 | float64


@dataclass
class Kernel:
    name: str
    buffers: list[BufferParam]
    scalars: list[ScalarParam]
    body: list[Stmt]
    simt: bool = False
    group_size: tuple[int, int, int] = (1, 1, 1)  # threads per group (SIMT), fixed in source
    # Vectorized stores of whole aligned vectors may bypass the caches (non-temporal): outputs
    # too large to be read again from cache. A hint; a renderer without such stores ignores it.
    stream_stores: bool = False

    @property
    def params(self) -> list[BufferParam | ScalarParam]:
        return [*self.buffers, *self.scalars]


def walk(stmts: list[Stmt]) -> list[Stmt]:
    """Every statement, nested ones included, in order."""
    out: list[Stmt] = []
    for s in stmts:
        out.append(s)
        if isinstance(s, For):
            out += walk(s.body)
        elif isinstance(s, If):
            out += walk(s.then) + walk(s.orelse)
    return out


def stmt_exprs(s: Stmt) -> list[Expr]:
    if isinstance(s, For):
        return [s.start, s.extent]
    if isinstance(s, Store):
        return [s.index, s.value]
    if isinstance(s, Let | Assign | Reduce | ShuffleXor):
        return [s.value]
    if isinstance(s, Local):
        return [s.init]
    if isinstance(s, If):
        return [s.cond]
    return []


def kernel_calls(k: Kernel) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for s in walk(k.body):
        for e in stmt_exprs(s):
            out |= calls(e)
    return out
