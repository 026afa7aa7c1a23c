"""scatter for the eager JIT (on index_kernels' helpers), with ops.yaml's ordering contract:
one flat loop over the output; each element starts from x and visits the updates in index
order — assign: the last update whose index hits it wins; add: bool ors, integers wrap (int64),
floats accumulate in float64 (float32 on a target without it) and round once. No atomics,
deterministic on every target.

- SIMT: one work-item per output element, walking the whole index (work: output elements x
  index length).
- Vector CPU: a work item per block of up to BLOCK contiguous elements of one output row
  (x[o, r, c0 : c0 + BLOCK]): the block starts from x in a private accumulator array, the
  index is walked once for the block, and each update row that hits r is combined into it by
  a vectorized loop (work: output rows x blocks x index length + hits x row length)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .gather_kernels import axis_of, split_at
from .index_kernels import IndexLowered, Meta, Shapes, finish, flat_kernel, grid_for, store_value
from .loop_ir import (
    INDEX,
    Alloc,
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
    minimum,
    mod,
    mul,
    sub,
)
from .lower_group import Launch
from .target import TargetInfo

__all__ = ["LOWERINGS"]

_INTS = ("int8", "uint8", "int16", "int32", "int64")


def _scatter(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
             target: TargetInfo, dialect: str | None) -> IndexLowered:
    if len(ins) != 3 or len(outs) != 1:
        raise Unsupported("scatter: expected x, index, updates and one output")
    (x_shape, dtype), (i_shape, i_dtype), (_, u_dtype) = ins
    reduce = attrs.get("reduce", "assign")
    if (i_dtype not in _INTS or u_dtype != dtype or outs[0][1] != dtype or not x_shape
            or len(i_shape) != 1 or reduce not in ("assign", "add")):
        raise Unsupported("scatter: index, updates or reduce of another form")
    axis = axis_of(attrs, len(x_shape))
    if is_float(dtype):
        acc_t = "float64" if target.float64 else compute_dtype(dtype)
        if dtype == "float64" and not target.float64:
            raise Unsupported("scatter: float64 on a target without it")
    else:
        acc_t = "bool" if dtype == "bool" else INDEX
    n_idx, x_axis, inner, total = Var("n_idx"), Var("x_axis"), Var("inner"), Var("total")

    def load(buf: str, at: Expr, dt: str) -> Expr:
        return cast(cast(Load(buf, at, dt), compute_dtype(dt)), acc_t)

    def combine(acc: Expr, upd: Expr) -> Expr:
        if reduce == "assign":
            return upd
        if acc_t == "bool":
            return Binary("||", acc, upd, "bool")
        return Binary("+", acc, upd, acc_t)

    if not target.is_simt:
        return _blocked(dtype, i_dtype, acc_t, axis, load, combine, target, dialect)

    def body(f: Var) -> list[Stmt]:
        i, row, r, o, j = Var("i"), Var("row"), Var("r"), Var("o"), Var("j")
        acc = Var("acc", acc_t)
        upd = load("in2", add(mul(add(mul(o, n_idx), j), inner), i), dtype)
        if reduce == "assign":
            new: Expr = upd
        elif acc_t == "bool":
            new = Binary("||", acc, upd, "bool")
        else:
            new = Binary("+", acc, upd, acc_t)
        hit = Binary("==", cast(Load("in1", j, i_dtype), INDEX), r, "bool")
        return [Let(i, mod(f, inner)), Let(row, div(f, inner)), Let(r, mod(row, x_axis)),
                Let(o, div(row, x_axis)), Local(acc, load("in0", f, dtype)),
                For(j, const(0), n_idx, "serial", [If(hit, [Assign(acc, new)])]),
                Store("out0", f, store_value(acc, dtype))]

    kernel = flat_kernel([BufferParam("in0", dtype, "in", 0), BufferParam("in1", i_dtype, "in", 1),
                          BufferParam("in2", dtype, "in", 2), BufferParam("out0", dtype, "out", 0)],
                         [ScalarParam("total"), ScalarParam("n_idx"), ScalarParam("x_axis"),
                          ScalarParam("inner")], total, body, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        outer, x_n, inner_n = split_at([int(d) for d in shapes[("in", 0)]], axis)
        n = outer * x_n * inner_n
        if n == 0:
            return []
        j_n = int(shapes[("in", 1)][0])
        grid, group, extra = grid_for(n, target)
        return [Launch(names[0], grid, group, [("in", 0), ("in", 1), ("in", 2), ("out", 0),
                                               ("i64", n), ("i64", j_n), ("i64", x_n),
                                               ("i64", inner_n), *extra])]

    return finish([kernel], target, dialect, plan)


BLOCK = 256  # output elements per work item (a private accumulator array) on CPU targets


def _blocked(dtype: str, i_dtype: str, acc_t: str, axis: int, load: Any, combine: Any,
             target: TargetInfo, dialect: str | None) -> IndexLowered:
    n_idx, x_axis, inner, items, nb = (Var("n_idx"), Var("x_axis"), Var("inner"), Var("items"),
                                       Var("nb"))

    def body(t: Var) -> list[Stmt]:
        blk, row, r, o, c0, width, base, j, c, ub = (
            Var("blk"), Var("row"), Var("r"), Var("o"), Var("c0"), Var("width"), Var("base"),
            Var("j"), Var("c"), Var("ub"))
        return [
            Let(blk, mod(t, nb)), Let(row, div(t, nb)), Let(r, mod(row, x_axis)),
            Let(o, div(row, x_axis)), Let(c0, mul(blk, const(BLOCK))),
            Let(width, minimum(sub(inner, c0), const(BLOCK))),
            Let(base, add(mul(row, inner), c0)),
            Alloc("acc", acc_t, BLOCK),
            For(c, const(0), width, "vectorized", [Store("acc", c, load("in0", add(base, c),
                                                                        dtype))]),
            For(j, const(0), n_idx, "serial", [
                If(Binary("==", cast(Load("in1", j, i_dtype), INDEX), r, "bool"), [
                    Let(ub, add(mul(add(mul(o, n_idx), j), inner), c0)),
                    For(c, const(0), width, "vectorized", [
                        Store("acc", c, combine(Load("acc", c, acc_t),
                                                load("in2", add(ub, c), dtype)))])])]),
            For(c, const(0), width, "vectorized", [
                Store("out0", add(base, c), store_value(Load("acc", c, acc_t), dtype))])]

    kernel = flat_kernel([BufferParam("in0", dtype, "in", 0), BufferParam("in1", i_dtype, "in", 1),
                          BufferParam("in2", dtype, "in", 2), BufferParam("out0", dtype, "out", 0)],
                         [ScalarParam("items"), ScalarParam("n_idx"), ScalarParam("x_axis"),
                          ScalarParam("inner"), ScalarParam("nb")], items, body, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        outer, x_n, inner_n = split_at([int(d) for d in shapes[("in", 0)]], axis)
        if outer * x_n * inner_n == 0:
            return []
        nb_ = -(-inner_n // BLOCK)
        count = outer * x_n * nb_
        chunk = max(1, -(-count // max(1, 4 * target.compute_units)))
        j_n = int(shapes[("in", 1)][0])
        return [Launch(names[0], (-(-count // chunk), 1, 1), (1, 1, 1), [
            ("in", 0), ("in", 1), ("in", 2), ("out", 0), ("i64", count), ("i64", j_n),
            ("i64", x_n), ("i64", inner_n), ("i64", nb_), ("i64", chunk)])]

    return finish([kernel], target, dialect, plan)


LOWERINGS = {"scatter": _scatter}
