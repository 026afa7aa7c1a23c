"""matmul on a vector CPU target (c99): a GEMM schedule in the loop IR, laid out as in Goto's
algorithm / BLIS, written so a C compiler at -O3 turns its micro-kernel into register code
(no intrinsics: the compiler vectorizes the loops it is told to).

One work item (a group of the grid) computes one block of out: batch b, MC rows x NC columns.
Per block of KC rows of k:
- pack y's [KC x NC] panel into `bp` as micro-panels of NR columns (each KC x NR, contiguous:
  y's rows are n apart, often a power of two that maps a column strip onto few cache sets);
- pack x's [MC x KC] block into `ap` as micro-panels of MR rows (each KC x MR, k-major);
  both are zero-padded to whole micro-panels, so every micro-kernel runs the full tile;
- for each NR-wide micro-panel of bp (it stays in L1) and each MR-row micro-panel of ap (the
  block stays in L2): the micro-kernel, then the tile goes back clipped to the block.

The micro-kernel is a vectorized loop over the lanes of one vector of the tile's columns
whose body keeps MR x W scalar accumulators and runs a constant number of k steps (LONG, then
SHORT for the rest of the block: GCC vectorizes an outer loop only around an inner loop of
known trip count): vectorizing that outer loop turns each accumulator into a vector register,
each k step into W vector loads of bp feeding MR x W multiply-adds with broadcast elements of
ap. 12 x 1 below 16 lanes (12 independent accumulators hide the multiply-add latency, where 6
reach ~75% of peak, and fit with the load in the 16 vector registers of SSE/AVX2); 8 x 3 at
16 lanes (AVX-512: 32 registers). A private accumulator array, the obvious spelling, stays in
memory: GCC does not promote arrays accessed as vectors.

The block of out starts at zero and every micro-kernel call adds its accumulators to it
(`+=`: a select between 0 and the partial sum also blocks the outer-loop vectorization); a
float16/bfloat16 out, which would round the partial sums, keeps them in a private float32
copy of the block (`cb`), written once at the end. Rows per block shrink (kernel argument
`mcb`) so that a matmul makes at least MIN_BLOCKS work items. Fewer than SKINNY_M rows take
gemm_skinny.py's kernel instead. The private arrays stay small (they live on the stack of the
thread that runs the group: ~400 KB for float32)."""

from __future__ import annotations

import dataclasses
import math

from .gemm_skinny import NB, SKINNY_M, skinny_kernel
from .index_kernels import IndexLowered, Shapes, finish, flat_kernel, store_value
from .loop_ir import (
    STORAGE_ONLY,
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
    Select,
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
from .lower_group import Launch
from .target import TargetInfo
from .targets import renderer_for

__all__ = ["Tiling", "gemm_kernel", "tiling"]

_BYTES = {"float32": 4, "float64": 8, "int64": 8}
# multiply-adds contract to FMA where the ISA has it (C99 mode turns contraction off): twice
# the micro-kernel's throughput, and each product-sum rounds once instead of twice
_C99_OPTIONS = " -ffp-contract=fast"
MIN_BLOCKS = 4  # work items a matmul is split into at least, where m allows
LONG, SHORT = 64, 8  # k steps per micro-kernel call (k blocks are zero-padded to SHORT)


@dataclasses.dataclass(frozen=True)
class Tiling:
    """MR x NR register tile, KC x NC panel of y, MC x KC block of x (elements)."""

    mr: int
    v: int  # lanes of one vector of the accumulator's type
    w: int  # vectors per tile row: NR = v * w
    kc: int
    mc: int
    nc: int

    @property
    def nr(self) -> int:
        return self.v * self.w


def tiling(acc_t: str, target: TargetInfo) -> Tiling:
    """16 float32 lanes (AVX-512: 32 vector registers): 8 rows x 3 vectors (24 accumulators,
    ~1.8x the 12 x 1 tile's throughput, measured); narrower vectors (16 registers): 12 rows x
    1 vector."""
    lanes32 = max(4, min(16, target.preferred_vector_width))
    v = max(2, lanes32 * 4 // _BYTES.get(acc_t, 4))  # one vector of the accumulator's type
    mr, w = (8, 3) if lanes32 >= 16 else (12, 1)
    kc = 256 if _BYTES.get(acc_t, 4) == 4 else 128  # the private panels' bytes stay put
    return Tiling(mr=mr, v=v, w=w, kc=kc, mc=mr * (144 // mr), nc=v * w * max(1, 256 // (v * w)))


def _b(op: str, a: Expr, b: Expr) -> Expr:
    return Binary(op, a, b, "bool")


def gemm_kernel(xt: str, yt: str, ot: str, acc_t: str, target: TargetInfo,
                dialect: str | None) -> IndexLowered:
    t = tiling(acc_t, target)
    mr, nr, kc_max, mc_max, nc_max = t.mr, t.nr, t.kc, t.mc, t.nc
    v, w = t.v, t.w
    private_c = ot in STORAGE_ONLY  # partial sums in a private float32 block, not in out
    m, k_n, n = Var("m"), Var("k_n"), Var("n")
    mblk, nblk, items = Var("mblk"), Var("nblk"), Var("items")
    mcb = Var("mcb")  # rows per block: MC, or fewer (a multiple of MR) to make more blocks

    def val(buf: str, index: Expr, dt: str) -> Expr:
        return cast(cast(Load(buf, index, dt), compute_dtype(dt)), acc_t)

    def ceil_div(a: Expr, d: int) -> Expr:
        return div(add(a, const(d - 1)), const(d))

    def body(item: Var) -> list[Stmt]:
        jb, rest, ib, b = Var("jb"), Var("rest"), Var("ib"), Var("b")
        i0, j0, mc, nc = Var("i0"), Var("j0"), Var("mc"), Var("nc")
        kb, k0, kc, kp = Var("kb"), Var("k0"), Var("kc"), Var("kp")
        zr, zc = Var("zr"), Var("zc")
        out: list[Stmt] = [
            Let(jb, mod(item, nblk)), Let(rest, div(item, nblk)), Let(ib, mod(rest, mblk)),
            Let(b, div(rest, mblk)), Let(i0, mul(ib, mcb)),
            Let(j0, mul(jb, const(nc_max))), Let(mc, minimum(sub(m, i0), mcb)),
            Let(nc, minimum(sub(n, j0), const(nc_max))),
            Alloc("ap", acc_t, mc_max * kc_max), Alloc("bp", acc_t, kc_max * nc_max),
        ]
        # the block starts at zero and every k block adds to it (a plain `+=` store: a select
        # between 0 and the partial sum keeps GCC from vectorizing the micro-kernel)
        if private_c:
            out += [Alloc("cb", acc_t, mc_max * nc_max),
                    For(zr, const(0), const(mc_max * nc_max), "vectorized",
                        [Store("cb", zr, const(0, acc_t))])]
        else:
            out.append(For(zr, const(0), mc, "serial", [
                For(zc, const(0), nc, "vectorized", [
                    Store("out0", add(add(mul(add(mul(b, m), add(i0, zr)), n), j0), zc),
                          store_value(const(0, acc_t), ot))])]))
        out.append(For(kb, const(0), ceil_div(k_n, kc_max), "serial", [
            Let(k0, mul(kb, const(kc_max))), Let(kc, minimum(sub(k_n, k0), const(kc_max))),
            Let(kp, mul(ceil_div(kc, SHORT), const(SHORT))),
            *_pack_b(b, j0, nc, k0, kc, kp), *_pack_a(b, i0, mc, k0, kc, kp),
            *_tiles(b, i0, j0, mc, nc, kp)]))
        if private_c:
            out += _store_private(b, i0, j0, mc, nc)
        return out

    def _pack_b(b: Expr, j0: Expr, nc: Expr, k0: Expr, kc: Expr, kp: Expr) -> list[Stmt]:
        """bp[(jp * KC + kk) * NR + c] = y[b, k0 + kk, j0 + jp * NR + c], 0 past nc or kc."""
        jp, kk, c, jc, row = Var("pb_jp"), Var("pb_kk"), Var("pb_c"), Var("pb_j"), Var("pb_row")
        dst = add(mul(add(mul(jp, const(kc_max)), kk), const(nr)), c)
        full = For(c, const(0), const(nr), "vectorized", [
            Store("bp", dst, val("in1", add(add(row, jc), c), yt))])
        # an edge panel: the index is clamped into the row (no read past it), the value zeroed
        edge = For(c, const(0), const(nr), "vectorized", [
            Store("bp", dst, Select(_b("<", add(jc, c), nc), val("in1", add(
                row, minimum(add(jc, c), sub(nc, const(1)))), yt), const(0, acc_t), acc_t))])
        zero = For(c, const(0), const(nr), "vectorized", [Store("bp", dst, const(0, acc_t))])
        # row by row of y (contiguous reads; a micro-panel at a time would read y's rows n
        # apart, which for n a power of two all map to the same few cache sets)
        return [For(kk, const(0), kc, "serial", [
                    Let(row, add(mul(add(mul(b, k_n), add(k0, kk)), n), j0)),
                    For(jp, const(0), ceil_div(nc, nr), "serial", [
                        Let(jc, mul(jp, const(nr))),
                        If(_b("<=", add(jc, const(nr)), nc), [full], [edge])])]),
                For(kk, kc, sub(kp, kc), "serial", [
                    For(jp, const(0), ceil_div(nc, nr), "serial", [zero])])]

    def _pack_a(b: Expr, i0: Expr, mc: Expr, k0: Expr, kc: Expr, kp: Expr) -> list[Stmt]:
        """ap[(ip * KC + kk) * MR + r] = x[b, i0 + ip * MR + r, k0 + kk], 0 past mc or kc."""
        ip, r, kk, ir, src = Var("pa_ip"), Var("pa_r"), Var("pa_kk"), Var("pa_i"), Var("pa_src")
        dst = add(mul(add(mul(ip, const(kc_max)), kk), const(mr)), r)
        # k by k: each store fills the next MR elements of the micro-panel (one cache line
        # written at a time), reading MR rows of x in step
        row0 = add(mul(add(mul(b, m), i0), k_n), k0)
        full = For(kk, const(0), kc, "serial", [
            For(r, const(0), const(mr), "unrolled", [
                Store("ap", dst, val("in0", add(add(src, mul(r, k_n)), kk), xt))])])
        edge = For(kk, const(0), kc, "serial", [
            For(r, const(0), const(mr), "unrolled", [
                Let(ir, minimum(add(mul(ip, const(mr)), r), sub(mc, const(1)))),
                Store("ap", dst, Select(_b("<", add(mul(ip, const(mr)), r), mc), val(
                    "in0", add(add(row0, mul(ir, k_n)), kk), xt), const(0, acc_t), acc_t))])])
        return [For(ip, const(0), ceil_div(mc, mr), "serial", [
            Let(src, add(row0, mul(mul(ip, const(mr)), k_n))),
            If(_b("<=", mul(add(ip, const(1)), const(mr)), mc), [full], [edge]),
            For(kk, kc, sub(kp, kc), "serial", [
                For(r, const(0), const(mr), "unrolled", [Store("ap", dst, const(0, acc_t))])])])]

    def _tiles(b: Expr, i0: Expr, j0: Expr, mc: Expr, nc: Expr, kp: Expr) -> list[Stmt]:
        jp, ip, c = Var("jp"), Var("ip"), Var("c")
        rows, cols = Var("rows"), Var("cols")
        abase, bbase, obase = Var("abase"), Var("bbase"), Var("obase")
        qc, ks, long_end = Var("qc"), Var("ks"), Var("long_end")
        accs = [[Var(f"acc{r}_{q}", acc_t) for q in range(w)] for r in range(mr)]

        def add_to(buf: str, idx: Expr, dt: str, value: Expr) -> Stmt:
            total = Binary("+", val(buf, idx, dt), value, acc_t)
            return Store(buf, idx, total if dt == acc_t else store_value(total, dt))

        def part(r: int | Expr, col: Expr) -> tuple[str, Expr, str]:
            """where row r, column col of the tile sums: (buffer, index, type)"""
            if private_c:
                return "cb", add(add(mul(add(mul(ip, const(mr)), r), const(nc_max)),
                                     mul(jp, const(nr))), col), acc_t
            return "out0", add(add(obase, mul(r, n)), col), ot

        def micro(k_start: Expr, steps: int, sink) -> Stmt:
            """the vectorized loop over the lanes of one vector of the tile's columns: `steps`
            k steps from k_start (a constant trip count: GCC vectorizes an outer loop only
            around one), then each accumulator to sink(r, column, acc)"""
            kk = Var("kk")
            kx = add(k_start, kk)
            bvs = [Var(f"bv{q}", acc_t) for q in range(w)]
            return For(c, const(0), const(v), "vectorized", [
                *[Local(a, const(0, acc_t)) for row in accs for a in row],
                For(kk, const(0), const(steps), "serial", [
                    *[Let(bv, Load("bp", add(add(bbase, mul(kx, const(nr))), add(c, const(
                        q * v))), acc_t)) for q, bv in enumerate(bvs)],
                    *[Assign(a, Binary("+", a, Binary("*", Load(
                        "ap", add(abase, add(mul(kx, const(mr)), const(r))), acc_t), bvs[q],
                        acc_t), acc_t)) for r, row in enumerate(accs) for q, a in enumerate(row)]]),
                *[sink(r, add(c, const(q * v)), a) for r, row in enumerate(accs)
                  for q, a in enumerate(row)]])

        def chunks(sink) -> list[Stmt]:
            """kp k steps (a multiple of SHORT) as LONG-step micro-kernels, then SHORT-step
            ones (each adds its accumulators to the tile's sums: a load and a store of
            the tile per LONG steps)"""
            return [For(qc, const(0), div(kp, const(LONG)), "serial", [
                        Let(ks, mul(qc, const(LONG))), micro(ks, LONG, sink)]),
                    Let(long_end, mul(div(kp, const(LONG)), const(LONG))),
                    For(qc, const(0), div(sub(kp, long_end), const(SHORT)), "serial", [
                        Let(ks, add(long_end, mul(qc, const(SHORT)))),
                        micro(ks, SHORT, sink)])]

        def to_part(r: int, col: Expr, a: Var) -> Stmt:
            return add_to(*part(r, col), a)

        def to_tile(r: int, col: Expr, a: Var) -> Stmt:
            return add_to("tile", add(const(r * nr), col), acc_t, a)

        er, ec = Var("er"), Var("ec")
        # an edge tile sums in a private tile, then goes back clipped to its rows and columns
        edge = [Alloc("tile", acc_t, mr * nr),
                For(er, const(0), const(mr * nr), "vectorized",
                    [Store("tile", er, const(0, acc_t))]),
                *chunks(to_tile),
                For(er, const(0), rows, "serial", [
                    For(ec, const(0), cols, "serial", [
                        add_to(*part(er, ec), Load("tile", add(mul(er, const(nr)), ec),
                                                   acc_t))])])]
        return [For(jp, const(0), ceil_div(nc, nr), "serial", [
            Let(bbase, mul(jp, const(kc_max * nr))),
            Let(cols, minimum(sub(nc, mul(jp, const(nr))), const(nr))),
            For(ip, const(0), ceil_div(mc, mr), "serial", [
                Let(abase, mul(ip, const(kc_max * mr))),
                Let(rows, minimum(sub(mc, mul(ip, const(mr))), const(mr))),
                Let(obase, add(mul(add(add(mul(b, m), i0), mul(ip, const(mr))), n),
                               add(j0, mul(jp, const(nr))))),
                If(_b("&&", _b("==", rows, const(mr)), _b("==", cols, const(nr))),
                   chunks(to_part), edge)])])]

    def _store_private(b: Expr, i0: Expr, j0: Expr, mc: Expr, nc: Expr) -> list[Stmt]:
        r, c = Var("sr"), Var("sc")
        return [For(r, const(0), mc, "serial", [
            For(c, const(0), nc, "vectorized", [
                Store("out0", add(add(mul(add(mul(b, m), add(i0, r)), n), j0), c),
                      store_value(Load("cb", add(mul(r, const(nc_max)), c), acc_t), ot))])])]

    kernel = flat_kernel([BufferParam("in0", xt, "in", 0), BufferParam("in1", yt, "in", 1),
                          BufferParam("out0", ot, "out", 0)],
                         [ScalarParam("items"), ScalarParam("m"), ScalarParam("k_n"),
                          ScalarParam("n"), ScalarParam("mblk"), ScalarParam("nblk"),
                          ScalarParam("mcb")], items, body, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        x, out = [int(d) for d in shapes[("in", 0)]], [int(d) for d in shapes[("out", 0)]]
        if math.prod(out) == 0:
            return []
        m_, n_, k_ = out[-2], out[-1], x[-1]
        batch = math.prod(out[:-2])
        if m_ < SKINNY_M:
            count = batch * -(-n_ // NB)
            return [Launch(names[1], (count, 1, 1), (1, 1, 1), [
                ("in", 0), ("in", 1), ("out", 0), ("i64", count), ("i64", m_), ("i64", k_),
                ("i64", n_), ("i64", -(-n_ // NB)), ("i64", 1)])]
        nb_ = -(-n_ // nc_max)
        # at least MIN_BLOCKS work items where m allows (they run on the device's threads):
        # shorter row blocks, never below MR rows
        want_mb = -(-max(MIN_BLOCKS, target.compute_units) // (batch * nb_))
        rows = -(-m_ // max(1, want_mb))  # rows per block for want_mb blocks
        mcb_ = min(mc_max, max(mr, -(-rows // mr) * mr))
        mb_ = -(-m_ // mcb_)
        count = batch * mb_ * nb_
        # one block per group, unless there are far more blocks than threads to share them
        chunk = max(1, count // max(1, 64 * target.compute_units))
        return [Launch(names[0], (-(-count // chunk), 1, 1), (1, 1, 1), [
            ("in", 0), ("in", 1), ("out", 0), ("i64", count), ("i64", m_), ("i64", k_),
            ("i64", n_), ("i64", mb_), ("i64", nb_), ("i64", mcb_), ("i64", chunk)])]

    skinny = skinny_kernel(xt, yt, ot, acc_t, target)
    lowered = finish([kernel, skinny], target, dialect, plan)
    # the renderer's options for this target (as lower_group takes them: on x86-64 with
    # 16-lane vectors, 512-bit vectors used), and contraction to FMA
    options_for = getattr(renderer_for(lowered.dialect), "options_for", None)
    options = options_for(target) if callable(options_for) else lowered.options
    if lowered.dialect == "c99":
        options += _C99_OPTIONS
    return dataclasses.replace(lowered, options=options)
