"""matmul for the eager JIT (on index_kernels' helpers): out[b, i, j] = sum over k of
x[b, i, k] * y[b, k, j], one output element per iteration of a flat loop, accumulated in the
compute type (float32 for float16/bfloat16) or in wrapping int64 for integers. The pipeline
hands the kernel contiguous operands of equal batch dims (phi_ops.dispatch._launch_matmul:
transposes and broadcasts are views made contiguous before the call).

On a SIMT target: one output element per work-item (a plain loop nest). On a vector CPU target
a register tile: each work item is a tile of ROWS rows x `cols` columns of out (cols = twice
the target's preferred vector width), accumulated over the whole k axis in a private array the
C compiler keeps in vector registers (a fully unrolled loop over the tile's rows, a vectorized
loop over its columns: per k, one vector load of y's row segment feeds ROWS multiply-adds).
Tiles are numbered with the row block fastest, so the work items of one chunk share one
column strip of y (k x cols), which stays in cache. Tiles at the right or bottom edge run the
same loops with their extents clipped. Every output is the same sum in the same order (k
ascending) as the plain loop nest: results are bit-identical."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .index_kernels import IndexLowered, Meta, Shapes, finish, flat_kernel, grid_for, store_value
from .loop_ir import (
    INDEX,
    STORAGE_ONLY,
    Alloc,
    Assign,
    Binary,
    BufferParam,
    Const,
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
        return _tiled(xt, yt, ot, acc_t, target, dialect)
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


ROWS = 4  # rows of out per register tile
ROW_BLOCKS = 64  # register tiles (of ROWS rows) per work item
PACKED = 8192  # elements of the packed panel of y (k block x tile columns)


def _tile_cols(target: TargetInfo) -> int:
    return max(4, min(64, 2 * target.preferred_vector_width))


def _tiled(xt: str, yt: str, ot: str, acc_t: str, target: TargetInfo,
           dialect: str | None) -> IndexLowered:
    """A work item: batch b, column tile jt (cols columns of out), a run of ROW_BLOCKS row
    blocks. Per block of kb rows of k, the y panel [kb x cols] is copied into a private packed
    array (contiguous: y's rows are n apart, often a power of two that maps a column strip onto
    a few cache sets), then each row block of the run accumulates that k block into its
    register tile, starting from the partial sums it stored after the previous k block (exact:
    the partial sums are stored in the accumulator's own type; float16/bfloat16 outputs, which
    would round them, take the whole k axis as one block and read y in place)."""
    cols = _tile_cols(target)
    kb = PACKED // cols
    staged = ot not in STORAGE_ONLY and (acc_t == ot or not is_float(ot))
    m, k_n, n, total = Var("m"), Var("k_n"), Var("n"), Var("total")
    mb, nb, nc = Var("mb"), Var("nb"), Var("nc")  # row blocks, column tiles, row-block runs

    def val(buf: str, index: Expr, dt: str) -> Expr:
        return cast(cast(Load(buf, index, dt), compute_dtype(dt)), acc_t)

    def tile(rows: Expr, width: Expr, x0: Expr, o0: Expr, k0: Expr, kl: Expr) -> list[Stmt]:
        """acc[r, c] (+)= sum over kk < kl of x[x0 + r*k_n + k0 + kk] * panel[kk, c], for r <
        rows, c < width (constant extents for a full tile: unrolled and vectorized)."""
        r, c, kk, a = Var("r"), Var("c"), Var("kk"), Var("a", acc_t)
        rkind = "unrolled" if isinstance(rows, Const) else "serial"
        at, ot_ = add(mul(r, cols), c), add(add(o0, mul(r, n)), c)
        if staged:
            panel = Load("packed", add(mul(kk, cols), c), acc_t)
            start: list[Stmt] = [If(Binary("==", k0, const(0), "bool"), [
                For(r, const(0), rows, rkind, [
                    For(c, const(0), width, "vectorized", [Store("acc", at, const(0, acc_t))])])],
                [For(r, const(0), rows, rkind, [
                    For(c, const(0), width, "vectorized", [
                        Store("acc", at, val("out0", ot_, ot))])])])]
        else:
            panel = val("in1", add(add(Var("y0"), mul(add(k0, kk), n)), c), yt)
            start = [For(r, const(0), rows, rkind, [
                For(c, const(0), width, "vectorized", [Store("acc", at, const(0, acc_t))])])]
        return [
            *start,
            For(kk, const(0), kl, "serial", [
                For(r, const(0), rows, rkind, [
                    Let(a, val("in0", add(add(x0, mul(r, k_n)), add(k0, kk)), xt)),
                    For(c, const(0), width, "vectorized", [
                        Store("acc", at, Binary("+", Load("acc", at, acc_t),
                                                Binary("*", a, panel, acc_t), acc_t))])])]),
            For(r, const(0), rows, rkind, [
                For(c, const(0), width, "vectorized", [
                    Store("out0", ot_, store_value(Load("acc", at, acc_t), ot))])]),
        ]

    def body(t: Var) -> list[Stmt]:
        ic, jt, b, rest = Var("ic"), Var("jt"), Var("b"), Var("rest")
        j0, y0, width = Var("j0"), Var("y0"), Var("width")
        blk, k0, kl, kk, c = Var("blk"), Var("k0"), Var("kl"), Var("kk"), Var("c")
        ibb, i0, rows, x0, o0 = Var("ibb"), Var("i0"), Var("rows"), Var("x0"), Var("o0")
        rb_lo, rb_hi = Var("rb_lo"), Var("rb_hi")
        full = Binary("&&", Binary("==", rows, const(ROWS), "bool"),
                      Binary("==", width, const(cols), "bool"), "bool")
        k_blocks = div(add(k_n, const(kb - 1)), const(kb)) if staged else const(1)
        pack: list[Stmt] = []
        if staged:
            pack = [For(kk, const(0), kl, "serial", [
                For(c, const(0), width, "vectorized", [
                    Store("packed", add(mul(kk, cols), c),
                          val("in1", add(add(y0, mul(add(k0, kk), n)), c), yt))])])]
        return [Let(ic, mod(t, nc)), Let(rest, div(t, nc)), Let(jt, mod(rest, nb)),
                Let(b, div(rest, nb)), Let(j0, mul(jt, const(cols))),
                Let(width, minimum(sub(n, j0), const(cols))),
                Let(y0, add(mul(mul(b, k_n), n), j0)),
                Let(rb_lo, mul(ic, const(ROW_BLOCKS))),
                Let(rb_hi, minimum(add(rb_lo, const(ROW_BLOCKS)), mb)),
                Alloc("acc", acc_t, ROWS * cols),
                *([Alloc("packed", acc_t, kb * cols)] if staged else []),
                For(blk, const(0), k_blocks, "serial", [
                    Let(k0, mul(blk, const(kb)) if staged else const(0)),
                    Let(kl, minimum(sub(k_n, k0), const(kb)) if staged else k_n),
                    *pack,
                    For(ibb, rb_lo, sub(rb_hi, rb_lo), "serial", [
                        Let(i0, mul(ibb, const(ROWS))),
                        Let(rows, minimum(sub(m, i0), const(ROWS))),
                        Let(x0, mul(add(mul(b, m), i0), k_n)),
                        Let(o0, add(mul(add(mul(b, m), i0), n), j0)),
                        If(full, tile(const(ROWS), const(cols), x0, o0, k0, kl),
                           tile(rows, width, x0, o0, k0, kl))])])]

    kernel = flat_kernel([BufferParam("in0", xt, "in", 0), BufferParam("in1", yt, "in", 1),
                          BufferParam("out0", ot, "out", 0)],
                         [ScalarParam("total"), ScalarParam("m"), ScalarParam("k_n"),
                          ScalarParam("n"), ScalarParam("mb"), ScalarParam("nb"),
                          ScalarParam("nc")], total, body, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        x, out = [int(d) for d in shapes[("in", 0)]], [int(d) for d in shapes[("out", 0)]]
        if math.prod(out) == 0:
            return []
        m_, n_ = out[-2], out[-1]
        mb_, nb_ = -(-m_ // ROWS), -(-n_ // cols)
        nc_ = -(-mb_ // ROW_BLOCKS)
        items = math.prod(out[:-2]) * nb_ * nc_
        chunk = max(1, -(-items // max(1, 4 * target.compute_units)))
        grid = -(-items // chunk)
        return [Launch(names[0], (grid, 1, 1), (1, 1, 1), [
            ("in", 0), ("in", 1), ("out", 0), ("i64", items), ("i64", m_), ("i64", x[-1]),
            ("i64", n_), ("i64", mb_), ("i64", nb_), ("i64", nc_), ("i64", chunk)])]

    return finish([kernel], target, dialect, plan)


LOWERINGS = {"matmul": _matmul}
