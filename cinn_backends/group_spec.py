"""A fused group's iteration structure, between the PIR group and a schedule.

The group iterates an anchor domain (the input shape of its reductions, else its output
shape) split into row axes and inner axes: `r` is the flat index over the rows, `k` over the
inner axes (the reduced axes of a reduction group; the last axis, or every axis when the whole
group is flat, for an elementwise group). Per row: the reduction phases in order (each a
reduction over k of an expression that may read earlier phases' results), then the writes of
every element (k) and of the row's own values (reduced outputs). Expressions are loop IR over
the vars r, k, the dim parameters and the phases' result vars."""

from __future__ import annotations

from dataclasses import dataclass, field

from .loop_ir import BufferParam, Expr, ScalarParam, Var

ROW = Var("r")
INNER = Var("k")
COL = Var("c")  # the column (trailing row axes) of a reduction over non-innermost axes


@dataclass
class Phase:
    result: Var  # the row's reduced value (after finalize)
    op: str  # sum | prod | max | min
    value: Expr  # over ROW, INNER (the element's contribution, in the accumulator dtype)
    init: Expr
    acc_dtype: str
    finalize: Expr | None = None  # over ACC (Var("acc", acc_dtype)): e.g. acc / n for mean


@dataclass
class Write:
    buf: str
    index: Expr
    value: Expr  # already in the buffer's dtype


@dataclass
class GroupSpec:
    name: str
    buffers: list[BufferParam]
    dims: list[ScalarParam]  # one int64 kernel argument per dim symbol of the shape class
    row_dims: list[Expr]
    inner_dims: list[Expr]
    phases: list[Phase] = field(default_factory=list)
    element_writes: list[Write] = field(default_factory=list)  # per (r, k)
    row_writes: list[Write] = field(default_factory=list)  # per r, after the phases
    # a reduction over axes that are not the innermost: the row axes after the reduced
    # ones, indexed by COL (rows are then the other row axes); empty: no columns
    col_dims: list[Expr] = field(default_factory=list)

    @property
    def reduction(self) -> bool:
        return bool(self.phases)

    @property
    def rows(self) -> Expr:
        return _product(self.row_dims)

    @property
    def cols(self) -> Expr:
        return _product(self.col_dims)

    @property
    def inner(self) -> Expr:
        return _product(self.inner_dims)


def _product(dims: list[Expr]) -> Expr:
    from .loop_ir import const, mul

    out: Expr = const(1)
    for d in dims:
        out = mul(out, d)
    return out


def acc_var(dtype: str) -> Var:
    return Var("acc", dtype)


def multiply_by_reciprocals(spec: GroupSpec) -> None:
    """x / d -> x * (1 / d) where d is a row's value made from its reductions (RMSNorm's
    sqrt(mean + eps), softmax's sum): one division per row instead of one per element (up to
    an ulp apart from the division; normalizations' tolerance is `composite`). Divisions by
    anything else (an elementwise divide with a broadcast operand) keep their exact form."""
    from .loop_ir import Binary, const, free_vars, is_float
    from .rewrite import transform

    results = {p.result.name for p in spec.phases}
    if not results:
        return

    def fn(e: Expr) -> Expr | None:
        if isinstance(e, Binary) and e.op == "/" and is_float(e.dtype):
            names = free_vars(e.b)
            if names & results and INNER.name not in names and COL.name not in names:
                a = transform(e.a, fn)
                return Binary("*", a, Binary("/", const(1, e.dtype), e.b, e.dtype), e.dtype)
        return None

    for ph in spec.phases:
        ph.value = transform(ph.value, fn)
    for w in [*spec.element_writes, *spec.row_writes]:
        w.value = transform(w.value, fn)
