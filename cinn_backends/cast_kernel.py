"""The float -> integer cast for the eager JIT (on index_kernels' helpers), with ops.yaml's
semantics (phi_ops.promotion.cast_array): truncation toward zero, NaN -> 0, saturation at the
integer type's range. lower_group's rendered C conversion leaves those cases undefined, so the
eager JIT sends these casts here and every other cast to lower_group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .index_kernels import IndexLowered, Meta, Shapes, finish, flat_kernel, grid_for
from .loop_ir import (
    Binary,
    BufferParam,
    Cast,
    Load,
    ScalarParam,
    Select,
    Stmt,
    Store,
    Var,
    compute_dtype,
    const,
)
from .lower_group import Launch
from .target import TargetInfo

__all__ = ["FLOATS", "INTS", "LOWERINGS"]

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = {"int8": (-(2**7), 2**7), "uint8": (0, 2**8), "int16": (-(2**15), 2**15),
        "int32": (-(2**31), 2**31), "int64": (-(2**63), 2**63)}  # [min, max + 1)


def _cast(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
          target: TargetInfo, dialect: str | None) -> IndexLowered:
    if len(ins) != 1 or len(outs) != 1 or ins[0][1] not in FLOATS or outs[0][1] not in INTS:
        raise Unsupported("cast: only float -> integer casts are lowered here")
    src, dst = ins[0][1], outs[0][1]
    if src == "float64" and not target.float64:
        raise Unsupported("cast: float64 on a target without it")
    cdt = compute_dtype(src)
    lo, hi = INTS[dst]
    total = Var("total")

    def body(f: Var) -> list[Stmt]:
        v = Cast(Load("in0", f, src), cdt) if cdt != src else Load("in0", f, src)
        value = Select(Binary("!=", v, v, "bool"), const(0, dst),
                       Select(Binary(">=", v, const(float(hi), cdt), "bool"), const(hi - 1, dst),
                              Select(Binary("<", v, const(float(lo), cdt), "bool"),
                                     const(lo, dst), Cast(v, dst), dst), dst), dst)
        return [Store("out0", f, value)]

    kernel = flat_kernel([BufferParam("in0", src, "in", 0), BufferParam("out0", dst, "out", 0)],
                         [ScalarParam("total")], total, body, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        count = 1
        for d in shapes[("out", 0)]:
            count *= int(d)
        if count == 0:
            return []
        grid, group, extra = grid_for(count, target)
        return [Launch(names[0], grid, group, [("in", 0), ("out", 0), ("i64", count), *extra])]

    return finish([kernel], target, dialect, plan)


LOWERINGS = {"cast": _cast}
