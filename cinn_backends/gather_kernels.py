"""gather and take_along_axis for the eager JIT (on index_kernels' helpers): one flat loop over
the output; each element loads the input at its index. Indices are checked on the host before
the call (phi_ops.dispatch: in [0, dim)); an index outside stores 0 rather than reading outside
the buffer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .index_kernels import IndexLowered, Meta, Shapes, and_, finish, flat_kernel, ge0, grid_for, lt
from .loop_ir import (
    BufferParam,
    If,
    Let,
    Load,
    ScalarParam,
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
    if op == "take_along_axis" and (len(i_shape) != rank or any(
            int(i_shape[d]) != int(x_shape[d]) for d in range(rank) if d != axis)):
        raise Unsupported("take_along_axis: an index that broadcasts")
    n_idx, x_axis, inner, total = Var("n_idx"), Var("x_axis"), Var("inner"), Var("total")

    def body(f: Var) -> list[Stmt]:
        i, r, j, o, k = Var("i"), Var("r"), Var("j"), Var("o"), Var("k")
        at = j if op == "gather" else f  # gather: index[j]; take_along_axis: index[f]
        return [Let(i, mod(f, inner)), Let(r, div(f, inner)), Let(j, mod(r, n_idx)),
                Let(o, div(r, n_idx)), Let(k, cast(Load("in1", at, i_dtype), "int64")),
                If(and_(ge0(k), lt(k, x_axis)),
                   [Store("out0", f, Load("in0", add(mul(add(mul(o, x_axis), k), inner), i),
                                          dtype))],
                   [Store("out0", f, cast(const(0), dtype))])]

    kernel = flat_kernel([BufferParam("in0", dtype, "in", 0),
                          BufferParam("in1", i_dtype, "in", 1),
                          BufferParam("out0", dtype, "out", 0)],
                         [ScalarParam("total"), ScalarParam("n_idx"), ScalarParam("x_axis"),
                          ScalarParam("inner")], total, body, target)

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


def _gather(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
            target: TargetInfo, dialect: str | None) -> IndexLowered:
    return _lowering("gather", ins, outs, attrs, target, dialect)


def _take_along_axis(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
                     target: TargetInfo, dialect: str | None) -> IndexLowered:
    return _lowering("take_along_axis", ins, outs, attrs, target, dialect)


LOWERINGS = {"gather": _gather, "take_along_axis": _take_along_axis}
