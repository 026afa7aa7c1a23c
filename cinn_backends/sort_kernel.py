"""argsort for the eager JIT (on index_kernels' helpers), stable, with ops.yaml's order:
ascending puts NaN last, descending puts NaN first, ties keep index order. A rank sort: one
flat loop over the elements; each counts the elements of its row that come before it and
writes its own index at that position — no scratch memory, O(n) work per element, so rows
longer than MAX_ROW are left to the CPU fallback (the launch plan refuses them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .gather_kernels import axis_of, split_at
from .index_kernels import IndexLowered, Meta, Shapes, finish, flat_kernel, grid_for
from .loop_ir import (
    Assign,
    Binary,
    BufferParam,
    Expr,
    For,
    If,
    Let,
    Load,
    Local,
    ScalarParam,
    Stmt,
    Store,
    Var,
    add,
    cast,
    compute_dtype,
    const,
    div,
    is_float,
    mod,
    mul,
)
from .lower_group import Launch
from .target import TargetInfo

__all__ = ["LOWERINGS", "MAX_ROW"]

MAX_ROW = 4096


def _b(op: str, a: Expr, b: Expr) -> Expr:
    return Binary(op, a, b, "bool")


def _argsort(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
             target: TargetInfo, dialect: str | None) -> IndexLowered:
    if len(ins) != 1 or len(outs) != 1 or outs[0][1] not in ("int64", "int32"):
        raise Unsupported("argsort: expected one input and an integer output")
    (x_shape, dtype), out_dtype = ins[0], outs[0][1]
    if dtype == "float64" and not target.float64:
        raise Unsupported("argsort: float64 on a target without it")
    rank = max(1, len(x_shape))
    axis = axis_of(attrs, rank)
    descending = bool(attrs.get("descending", False))
    cdt = compute_dtype(dtype)
    n, inner, total = Var("n"), Var("inner"), Var("total")

    def body(f: Var) -> list[Stmt]:
        i, row, k, o, base, m = Var("i"), Var("row"), Var("k"), Var("o"), Var("base"), Var("m")
        me, other, rank_v = Var("me", cdt), Var("other", cdt), Var("rank")
        first = _b(">" if descending else "<", other, me)
        tie = _b("==", other, me)
        if is_float(dtype):
            nan_me, nan_other = _b("!=", me, me), _b("!=", other, other)
            if descending:  # NaN first
                first = _b("||", _b("&&", nan_other, _b("==", me, me)), first)
            else:  # NaN last
                first = _b("||", _b("&&", nan_me, _b("==", other, other)), first)
            tie = _b("||", tie, _b("&&", nan_me, nan_other))
        before = _b("||", first, _b("&&", tie, _b("<", m, k)))
        return [Let(i, mod(f, inner)), Let(row, div(f, inner)), Let(k, mod(row, n)),
                Let(o, div(row, n)), Let(base, add(mul(mul(o, n), inner), i)),
                Let(me, cast(Load("in0", f, dtype), cdt)), Local(rank_v, const(0)),
                For(m, const(0), n, "serial", [
                    Let(other, cast(Load("in0", add(base, mul(m, inner)), dtype), cdt)),
                    If(before, [Assign(rank_v, add(rank_v, const(1)))])]),
                Store("out0", add(base, mul(rank_v, inner)), cast(k, out_dtype))]

    kernel = flat_kernel([BufferParam("in0", dtype, "in", 0),
                          BufferParam("out0", out_dtype, "out", 0)],
                         [ScalarParam("total"), ScalarParam("n"), ScalarParam("inner")], total,
                         body, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch] | None:
        shape = [int(d) for d in shapes[("in", 0)]] or [1]
        outer, n_axis, inner_n = split_at(shape, axis)
        count = outer * n_axis * inner_n
        if count == 0:
            return []
        if n_axis > MAX_ROW:
            return None
        grid, group, extra = grid_for(count, target)
        return [Launch(names[0], grid, group, [("in", 0), ("out", 0), ("i64", count),
                                               ("i64", n_axis), ("i64", inner_n), *extra])]

    return finish([kernel], target, dialect, plan)


LOWERINGS = {"argsort": _argsort}
