"""gather and take_along_axis for the eager JIT (on index_kernels' helpers): one flat loop over
the output; each element loads the input at its index. Indices are checked on the host before
the call (phi_ops.dispatch: in [0, dim)); an index outside stores 0 rather than reading outside
the buffer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .index_kernels import (
    IndexLowered,
    Meta,
    Shapes,
    and_,
    delinearize,
    finish,
    flat_kernel,
    ge0,
    grid_for,
    lt,
    rows_kernel,
)
from .loop_ir import (
    BufferParam,
    Expr,
    If,
    Let,
    Load,
    ScalarParam,
    Select,
    Stmt,
    Store,
    Var,
    add,
    cast,
    const,
    div,
    mod,
    mul,
)
from .lower_group import Launch
from .target import TargetInfo

__all__ = ["LOWERINGS", "axis_of", "split_at"]

_INTS = ("int8", "uint8", "int16", "int32", "int64")


def axis_of(attrs: Mapping[str, Any], rank: int) -> int:
    axis = int(attrs.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise Unsupported(f"axis {axis} out of range for rank {rank}")
    return axis


def split_at(shape: Sequence[int], axis: int) -> tuple[int, int, int]:
    outer = inner = 1
    for d in shape[:axis]:
        outer *= int(d)
    for d in shape[axis + 1:]:
        inner *= int(d)
    return outer, int(shape[axis]), inner


def _lowering(op: str, ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
              target: TargetInfo, dialect: str | None) -> IndexLowered:
    if len(ins) != 2 or len(outs) != 1:
        raise Unsupported(f"{op}: expected x, index and one output")
    (x_shape, dtype), (i_shape, i_dtype) = ins
    if i_dtype not in _INTS or outs[0][1] != dtype or not x_shape:
        raise Unsupported(f"{op}: index of dtype {i_dtype}, or a 0-d x")
    rank = len(x_shape)
    axis = axis_of(attrs, rank)
    if op == "gather" and len(i_shape) != 1:
        raise Unsupported("gather: a 1-D index only")
    n_idx, x_axis, inner, total = Var("n_idx"), Var("x_axis"), Var("inner"), Var("total")

    # a row (o, j) of `inner` elements: out[o, j, :] = x[o, index[j], :], zeros for an index
    # out of range
    j, o, k, src, ok = Var("j"), Var("o"), Var("k"), Var("src"), Var("ok", "bool")

    def row_part(r: Var) -> list[Stmt]:
        return [Let(j, mod(r, n_idx)), Let(o, div(r, n_idx)),
                Let(k, cast(Load("in1", j, i_dtype), "int64")),
                Let(ok, and_(ge0(k), lt(k, x_axis))),
                Let(src, mul(add(mul(o, x_axis), Select(ok, k, const(0), "int64")), inner))]

    def col_part(r: Var, i: Var) -> list[Stmt]:
        return [Store("out0", add(mul(r, inner), i),
                      Select(ok, Load("in0", add(src, i), dtype), cast(const(0), dtype),
                             dtype))]

    kernel = rows_kernel([BufferParam("in0", dtype, "in", 0),
                          BufferParam("in1", i_dtype, "in", 1),
                          BufferParam("out0", dtype, "out", 0)],
                         [ScalarParam("total"), ScalarParam("n_idx"), ScalarParam("x_axis"),
                          ScalarParam("inner")], total, inner, row_part, col_part, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        out = [int(d) for d in shapes[("out", 0)]]
        _, x_n, _ = split_at([int(d) for d in shapes[("in", 0)]], axis)
        outer, j_n, inner_n = split_at(out, axis)
        n = outer * j_n * inner_n
        if n == 0:
            return []
        grid, group, extra = grid_for(n, target)
        return [Launch(names[0], grid, group, [("in", 0), ("in", 1), ("out", 0), ("i64", n),
                                               ("i64", j_n), ("i64", x_n), ("i64", inner_n),
                                               *extra])]

    return finish([kernel], target, dialect, plan)


def _gather_op(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
            target: TargetInfo, dialect: str | None) -> IndexLowered:
    return _lowering("gather", ins, outs, attrs, target, dialect)


def _take_along_axis(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
                     target: TargetInfo, dialect: str | None) -> IndexLowered:
    """out[c] = x[c with c[axis] = index[c]]; x and index broadcast against each other in the
    other dims (a size-1 dim has stride 0: the strides are kernel arguments)."""
    if len(ins) != 2 or len(outs) != 1:
        raise Unsupported("take_along_axis: expected x, index and one output")
    (x_shape, dtype), (i_shape, i_dtype) = ins
    rank = len(x_shape)
    if i_dtype not in _INTS or outs[0][1] != dtype or not rank or len(i_shape) != rank:
        raise Unsupported("take_along_axis: index of another dtype or rank")
    axis = axis_of(attrs, rank)
    od = [Var(f"o{d}") for d in range(rank)]
    xs = [Var(f"xs{d}") for d in range(rank)]
    js = [Var(f"is{d}") for d in range(rank)]
    x_axis, total = Var("x_axis"), Var("total")

    def body(f: Var) -> list[Stmt]:
        stmts, coords = delinearize(f, od, "c")
        x_at: Expr = const(0)
        i_at: Expr = const(0)
        for d in range(rank):
            i_at = add(i_at, mul(coords[d], js[d]))
            if d != axis:
                x_at = add(x_at, mul(coords[d], xs[d]))
        k = Var("k")
        stmts += [Let(k, cast(Load("in1", i_at, i_dtype), "int64")),
                  If(and_(ge0(k), lt(k, x_axis)),
                     [Store("out0", f, Load("in0", add(x_at, mul(k, xs[axis])), dtype))],
                     [Store("out0", f, cast(const(0), dtype))])]
        return stmts

    kernel = flat_kernel([BufferParam("in0", dtype, "in", 0),
                          BufferParam("in1", i_dtype, "in", 1),
                          BufferParam("out0", dtype, "out", 0)],
                         [ScalarParam("total"), ScalarParam("x_axis"),
                          *(ScalarParam(v.name) for v in (*od, *xs, *js))], total, body, target)

    def strides(shape: list[int]) -> list[int]:
        out, step = [0] * len(shape), 1
        for d in range(len(shape) - 1, -1, -1):
            out[d] = 0 if shape[d] == 1 else step
            step *= shape[d]
        return out

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        x = [int(d) for d in shapes[("in", 0)]]
        out = [int(d) for d in shapes[("out", 0)]]
        n = 1
        for d in out:
            n *= d
        if n == 0:
            return []
        x_st = strides(x)
        x_st[axis] = strides([2 if d == axis else v for d, v in enumerate(x)])[axis]
        grid, group, extra = grid_for(n, target)
        args: list[tuple[str, Any]] = [("in", 0), ("in", 1), ("out", 0), ("i64", n),
                                       ("i64", x[axis])]
        args += [("i64", v) for v in (*out, *x_st, *strides([int(d) for d in
                                                             shapes[("in", 1)]]))]
        return [Launch(names[0], grid, group, [*args, *extra])]

    return finish([kernel], target, dialect, plan)


LOWERINGS = {"gather": _gather_op, "take_along_axis": _take_along_axis}
