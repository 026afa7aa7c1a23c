"""argmax / argmin and cumsum / cumprod for the eager JIT (on index_kernels' helpers): a flat
loop over the (outer, inner) positions of the reduced or scanned axis, each running along the
axis serially — first occurrence wins and NaN counts as the maximum (argmax) / minimum
(argmin); scans accumulate floats in their compute type (float32 for float16/bfloat16) and
integers in wrapping int64, as phi_ops.reference does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .gather_kernels import axis_of, split_at
from .index_kernels import IndexLowered, Meta, Shapes, finish, flat_kernel, grid_for, store_value
from .loop_ir import (
    INDEX,
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
    sub,
)
from .lower_group import Launch
from .target import TargetInfo

__all__ = ["LOWERINGS"]


def _b(op: str, a: Expr, b: Expr, dtype: str = "bool") -> Expr:
    return Binary(op, a, b, dtype)


def _row_kernel(op: str, ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
                target: TargetInfo, dialect: str | None) -> IndexLowered:
    if len(ins) != 1 or len(outs) != 1 or not ins[0][0]:
        raise Unsupported(f"{op}: expected one input of rank >= 1 and one output")
    (x_shape, x_dtype), out_dtype = ins[0], outs[0][1]
    axis = axis_of(attrs, len(x_shape))
    scan = op in ("cumsum", "cumprod")
    if x_dtype == "float64" and not target.float64:
        raise Unsupported(f"{op}: float64 on a target without it")
    n, inner, total = Var("n"), Var("inner"), Var("total")
    cdt = compute_dtype(x_dtype)

    def body(f: Var) -> list[Stmt]:
        o, i, base, k, v = Var("o"), Var("i"), Var("base"), Var("k"), Var("v", cdt)
        stmts: list[Stmt] = [Let(o, div(f, inner)), Let(i, mod(f, inner)),
                             Let(base, add(mul(mul(o, n), inner), i))]
        at = add(base, mul(k, inner))
        if scan:
            acc_t = compute_dtype(out_dtype) if is_float(out_dtype) else INDEX
            acc = Var("acc", acc_t)
            x = cast(cast(Load("in0", at, x_dtype), cdt), acc_t)
            step = _b("+" if op == "cumsum" else "*", acc, x, acc_t)
            return [*stmts, Local(acc, const(0 if op == "cumsum" else 1, acc_t)),
                    For(k, const(0), n, "serial", [Assign(acc, step),
                                                   Store("out0", at, store_value(acc, out_dtype))])]
        best, bi = Var("best", cdt), Var("bi")
        better = _b(">" if op == "argmax" else "<", v, best)
        if is_float(x_dtype):  # NaN wins over any number; the first NaN stays
            better = _b("||", better, _b("&&", _b("!=", v, v), _b("==", best, best)))
        return [*stmts, Local(best, cast(Load("in0", base, x_dtype), cdt)), Local(bi, const(0)),
                For(k, const(1), sub(n, 1), "serial", [
                    Let(v, cast(Load("in0", at, x_dtype), cdt)),
                    If(better, [Assign(best, v), Assign(bi, k)])]),
                Store("out0", f, cast(bi, out_dtype))]

    kernel = flat_kernel([BufferParam("in0", x_dtype, "in", 0),
                          BufferParam("out0", out_dtype, "out", 0)],
                         [ScalarParam("total"), ScalarParam("n"), ScalarParam("inner")], total,
                         body, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        outer, n_axis, inner_n = split_at([int(d) for d in shapes[("in", 0)]], axis)
        m = outer * inner_n
        if m == 0 or n_axis == 0:
            return []
        grid, group, extra = grid_for(m, target)
        return [Launch(names[0], grid, group, [("in", 0), ("out", 0), ("i64", m),
                                               ("i64", n_axis), ("i64", inner_n), *extra])]

    return finish([kernel], target, dialect, plan)


def _make(op: str) -> Any:
    def lowering(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
                 target: TargetInfo, dialect: str | None) -> IndexLowered:
        return _row_kernel(op, ins, outs, attrs, target, dialect)
    return lowering


LOWERINGS = {op: _make(op) for op in ("argmax", "argmin", "cumsum", "cumprod")}
