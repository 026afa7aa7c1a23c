"""matmul for the eager JIT (on index_kernels' helpers): out[b, i, j] = sum over k of
x[b, i, k] * y[b, k, j], one output element per iteration of a flat loop, accumulated in the
compute type (float32 for float16/bfloat16) or in wrapping int64 for integers. The pipeline
hands the kernel contiguous operands of equal batch dims (phi_ops.dispatch._launch_matmul:
transposes and broadcasts are views made contiguous before the call).

On a SIMT target: one output element per work-item (a plain loop nest). On a vector CPU target
a packed, cache-blocked GEMM with a register-tiled micro-kernel (gemm_cpu.py): blocks of out
per work item, sums in a different order than the plain loop nest (k blocks, FMA where the
target has it), so results match it to rounding, not bit for bit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .gemm_cpu import gemm_kernel
from .index_kernels import IndexLowered, Meta, Shapes, finish, flat_kernel, grid_for, store_value
from .loop_ir import (
    INDEX,
    Assign,
    Binary,
    BufferParam,
    For,
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

__all__ = ["LOWERINGS"]


def _matmul(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
            target: TargetInfo, dialect: str | None) -> IndexLowered:
    if len(ins) != 2 or len(outs) != 1 or attrs.get("transpose_x") or attrs.get("transpose_y"):
        raise Unsupported("matmul: expected x, y (no transposes) and one output")
    (xs, xt), (ys, yt), (os_, ot) = ins[0], ins[1], outs[0]
    rank = len(xs)
    if rank < 2 or len(ys) != rank or len(os_) != rank or tuple(xs[:-2]) != tuple(ys[:-2]) \
            or xt != yt or ot != xt or xs[-1] != ys[-2]:
        raise Unsupported("matmul: operands of another form than [batch.., m, k] @ [batch.., k, n]")
    if xt == "float64" and not target.float64:
        raise Unsupported("matmul: float64 on a target without it")
    acc_t = compute_dtype(xt) if is_float(xt) else INDEX
    if not target.is_simt:
        return gemm_kernel(xt, yt, ot, acc_t, target, dialect)
    m, k_n, n, total = Var("m"), Var("k_n"), Var("n"), Var("total")

    def body(f: Var) -> list[Stmt]:
        j, r, i, b, k = Var("j"), Var("r"), Var("i"), Var("b"), Var("k")
        xrow, ycol, acc = Var("xrow"), Var("ycol"), Var("acc", acc_t)
        prod = Binary("*", cast(cast(Load("in0", add(xrow, k), xt), compute_dtype(xt)), acc_t),
                      cast(cast(Load("in1", add(ycol, mul(k, n)), yt), compute_dtype(yt)), acc_t),
                      acc_t)
        return [Let(j, mod(f, n)), Let(r, div(f, n)), Let(i, mod(r, m)), Let(b, div(r, m)),
                Let(xrow, mul(add(mul(b, m), i), k_n)), Let(ycol, add(mul(mul(b, k_n), n), j)),
                Local(acc, const(0, acc_t)),
                For(k, const(0), k_n, "serial", [Assign(acc, Binary("+", acc, prod, acc_t))]),
                Store("out0", f, store_value(acc, ot))]

    kernel = flat_kernel([BufferParam("in0", xt, "in", 0), BufferParam("in1", yt, "in", 1),
                          BufferParam("out0", ot, "out", 0)],
                         [ScalarParam("total"), ScalarParam("m"), ScalarParam("k_n"),
                          ScalarParam("n")], total, body, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        x, out = [int(d) for d in shapes[("in", 0)]], [int(d) for d in shapes[("out", 0)]]
        count = 1
        for d in out:
            count *= d
        if count == 0:
            return []
        grid, group, extra = grid_for(count, target)
        return [Launch(names[0], grid, group, [("in", 0), ("in", 1), ("out", 0),
                                               ("i64", count), ("i64", x[-2]), ("i64", x[-1]),
                                               ("i64", out[-1]), *extra])]

    return finish([kernel], target, dialect, plan)


LOWERINGS = {"matmul": _matmul}
