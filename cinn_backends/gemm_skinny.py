"""matmul with few rows (m < SKINNY_M: a matrix-vector product, a decode step's projection)
on a vector CPU target: gemm_cpu's register tile would compute mostly padding rows, and its
packing of y, read once here, would cost as much as the product.

One work item: batch b, a block of NB columns. Per k, one row segment of y (streamed from
memory once) is multiplied by x[b, i, k] and added to row i's sums, for each of the m rows
(the sums, m x NB, stay in L1 in a private array in the accumulator's type), in a vectorized
loop over the block's columns; the sums go to out (rounded once) at the end."""

from __future__ import annotations

from .index_kernels import flat_kernel, store_value
from .loop_ir import (
    Alloc,
    Binary,
    BufferParam,
    Expr,
    For,
    Kernel,
    Let,
    Load,
    ScalarParam,
    Stmt,
    Store,
    Var,
    add,
    cast,
    compute_dtype,
    const,
    div,
    minimum,
    mod,
    mul,
    sub,
)
from .target import TargetInfo

__all__ = ["NB", "SKINNY_M", "skinny_kernel"]

SKINNY_M = 8  # rows below this take this kernel
NB = 512  # columns per work item: SKINNY_M x NB sums, 16 KB in float32


def skinny_kernel(xt: str, yt: str, ot: str, acc_t: str, target: TargetInfo) -> Kernel:
    m, k_n, n, nblk = Var("m"), Var("k_n"), Var("n"), Var("nblk")

    def val(buf: str, index: Expr, dt: str) -> Expr:
        return cast(cast(Load(buf, index, dt), compute_dtype(dt)), acc_t)

    def body(w: Var) -> list[Stmt]:
        b, jb, j0, nb = Var("b"), Var("jb"), Var("j0"), Var("nb")
        i, c, kk, a, yrow = Var("i"), Var("c"), Var("kk"), Var("a", acc_t), Var("yrow")
        at = add(mul(i, const(NB)), c)
        return [
            Let(jb, mod(w, nblk)), Let(b, div(w, nblk)), Let(j0, mul(jb, const(NB))),
            Let(nb, minimum(sub(n, j0), const(NB))),
            Alloc("sums", acc_t, SKINNY_M * NB),
            For(i, const(0), m, "serial", [
                For(c, const(0), nb, "vectorized", [Store("sums", at, const(0, acc_t))])]),
            For(kk, const(0), k_n, "serial", [
                Let(yrow, add(mul(add(mul(b, k_n), kk), n), j0)),
                For(i, const(0), m, "serial", [
                    Let(a, val("in0", add(mul(add(mul(b, m), i), k_n), kk), xt)),
                    For(c, const(0), nb, "vectorized", [
                        Store("sums", at, Binary("+", Load("sums", at, acc_t), Binary(
                            "*", a, val("in1", add(yrow, c), yt), acc_t), acc_t))])])]),
            For(i, const(0), m, "serial", [
                For(c, const(0), nb, "vectorized", [
                    Store("out0", add(add(mul(add(mul(b, m), i), n), j0), c),
                          store_value(Load("sums", at, acc_t), ot))])]),
        ]

    return flat_kernel([BufferParam("in0", xt, "in", 0), BufferParam("in1", yt, "in", 1),
                        BufferParam("out0", ot, "out", 0)],
                       [ScalarParam("items"), ScalarParam("m"), ScalarParam("k_n"),
                        ScalarParam("n"), ScalarParam("nblk")], Var("items"), body, target)
