"""argsort for the eager JIT (on index_kernels' helpers), stable, with ops.yaml's order:
ascending puts NaN last, descending puts NaN first, ties keep index order. No scratch memory.

- A vector CPU target: one row per work item, ordered by (value in the op's order, index): a
  total order, so any sort gives exactly the stable sort's permutation. Rows of up to
  MERGE_ROW elements: a bottom-up merge sort of (key, index) pairs in private arrays (the
  work item's stack), branch-free merges from both ends of each pair of runs at once, on
  keys that compare with a plain `<` (_sort_key: NaN, infinities and descending folded in);
  longer rows: a heapsort of the row's indices in place in the output. O(n log n) per row,
  any row length.
- A SIMT target: a rank sort, one flat loop over the elements; each counts the elements of its
  row that come before it and writes its own index at that position — fully parallel but O(n)
  work per element, so rows longer than MAX_ROW are left to the CPU fallback (the launch plan
  refuses them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .gather_kernels import axis_of, split_at
from .index_kernels import IndexLowered, Meta, Shapes, finish, flat_kernel, grid_for
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
    Select,
    Stmt,
    Store,
    Unary,
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
from .sort_network import BLOCK, LOG_BLOCK, block_sort
from .target import TargetInfo

__all__ = ["LOWERINGS", "MAX_ROW"]

MAX_ROW = 4096
MERGE_ROW = 4096  # rows up to this long merge-sort in private arrays (vector CPU targets)


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
    if not target.is_simt:
        return _heapsort(dtype, out_dtype, axis, descending, target, dialect)
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


def _value_first(dtype: str, descending: bool, va: Expr, vb: Expr) -> Expr:
    """Whether value va comes strictly before value vb in argsort's order."""
    first = _b(">" if descending else "<", va, vb)
    if is_float(dtype):
        if descending:  # NaN first
            first = _b("||", _b("&&", _b("!=", va, va), _b("==", vb, vb)), first)
        else:  # NaN last
            first = _b("||", _b("&&", _b("!=", vb, vb), _b("==", va, va)), first)
    return first


def _value_first_bits(descending: bool, va: Expr, vb: Expr) -> Expr:
    """_value_first of float64 values with bitwise & and | (no short-circuit branches)."""
    def band(x: Expr, y: Expr) -> Expr:
        return Binary("&", x, y, "bool")

    first = _b(">" if descending else "<", va, vb)
    if descending:  # NaN first
        return Binary("|", band(_b("!=", va, va), _b("==", vb, vb)), first, "bool")
    return Binary("|", band(_b("!=", vb, vb), _b("==", va, va)), first, "bool")


def _comes_before(dtype: str, descending: bool, va: Expr, ia: Expr, vb: Expr,
                  ib: Expr) -> Expr:
    """Whether (va, index ia) comes before (vb, index ib) in argsort's order."""
    tie = _b("==", va, vb)
    if is_float(dtype):
        tie = _b("||", tie, _b("&&", _b("!=", va, va), _b("!=", vb, vb)))
    return _b("||", _value_first(dtype, descending, va, vb),
              _b("&&", tie, _b("<", ia, ib)))


def _sort_key(dtype: str, descending: bool, v: Expr) -> tuple[Expr, str, bool]:
    """(key, its dtype, whether keys compare with NaN rules): a key that orders by plain `<`
    as argsort orders the values, ties (equal keys) only between equal values. float32,
    float16 and bfloat16 values map exactly into float64 with NaN above +inf (+inf becomes
    1e300, beyond every float32; descending negates), integers into int64 (descending: the
    bitwise complement, order-reversing and exact for all of int64). float64 has no spare
    value above +inf: it keeps its values and the NaN-aware comparison."""
    if dtype == "float64":
        return v, "float64", True
    if is_float(dtype):
        d = cast(v, "float64")
        inf = const(float("inf"), "float64")
        big = Select(_b("==", d, inf), const(1e300, "float64"), d, "float64")
        key = Select(_b("!=", d, d), inf, big, "float64")
        return (Unary("neg", key, "float64") if descending else key), "float64", False
    k = cast(v, INDEX)
    return (Unary("bnot", k, INDEX) if descending else k), INDEX, False


def _heapsort(dtype: str, out_dtype: str, axis: int, descending: bool, target: TargetInfo,
              dialect: str | None) -> IndexLowered:
    cdt = compute_dtype(dtype)
    _, kdt, nan_rules = _sort_key(dtype, descending, Var("v", cdt))
    n, inner, rows, depth = Var("n"), Var("inner"), Var("rows"), Var("depth")

    def body(f: Var) -> list[Stmt]:
        i, o, base = Var("i"), Var("o"), Var("base")
        p, s_, e = Var("p"), Var("s"), Var("e")

        def at(pos: Expr) -> Expr:
            return add(base, mul(pos, inner))

        def idx(pos: Expr) -> Expr:
            return cast(Load("out0", at(pos), out_dtype), INDEX)

        def key(ix: Expr) -> Expr:
            return cast(Load("in0", add(base, mul(ix, inner)), dtype), cdt)

        def sift(start: Expr, end: Expr, tag: str) -> list[Stmt]:
            """Sifts the heap entry at `start` down within [0, end): the root of each subtree
            is the entry that comes last."""
            root, done, step = Var(f"root{tag}"), Var(f"done{tag}"), Var(f"step{tag}")
            c, c2, big = Var(f"c{tag}"), Var(f"c2{tag}"), Var(f"big{tag}")
            ic, ic2, ib, ir = Var(f"ic{tag}"), Var(f"ic2{tag}"), Var(f"ib{tag}"), Var(f"ir{tag}")
            vc, vc2, vb, vr = (Var(f"v{x}{tag}", cdt) for x in ("c", "c2", "b", "r"))
            return [
                Local(root, start), Local(done, const(0)),
                For(step, const(0), depth, "serial", [
                    Let(c, add(mul(root, const(2)), const(1))),
                    If(_b("&&", _b("==", done, const(0)), _b("<", c, end)), [
                        Let(c2, add(c, const(1))), Let(ic, idx(c)), Let(vc, key(ic)),
                        Local(big, c), Local(ib, ic), Local(vb, vc),
                        If(_b("<", c2, end), [
                            Let(ic2, idx(c2)), Let(vc2, key(ic2)),
                            If(_comes_before(dtype, descending, vc, ic, vc2, ic2), [
                                Assign(big, c2), Assign(ib, ic2), Assign(vb, vc2)])]),
                        Let(ir, idx(root)), Let(vr, key(ir)),
                        If(_comes_before(dtype, descending, vr, ir, vb, ib), [
                            Store("out0", at(root), cast(ib, out_dtype)),
                            Store("out0", at(big), cast(ir, out_dtype)),
                            Assign(root, big)],
                           [Assign(done, const(1))])],
                       [Assign(done, const(1))])])]

        def merge_pass(src: str, dst: str, w: Expr) -> list[Stmt]:
            """Merges each pair of sorted runs of w pairs of (k{src}, i{src}) into the dst
            arrays (a run at the end without a partner is copied); position p lives in slot
            p + 1 (slot 0 and slot n + 1 are the ends a pointer may reach, never taken).
            Both ends at once: the front takes the smallest remaining element, the back the
            largest, two independent dependency chains per step (one chain, load -> compare
            -> pointer, bounds a branch-free merge). Branch-free: which side is taken is
            data (bitwise &, |; the slot as index arithmetic: GCC turns a select of the
            values into a branch, which mispredicts about every other step)."""
            pi, q, lo, mid, hi = Var("pi"), Var("q"), Var("lo"), Var("mid"), Var("hi")
            a, b, c, d = Var("a"), Var("b"), Var("c"), Var("d")

            def step(x: Var, y: Var, dst_pos: Expr, front: bool, tag: str) -> list[Stmt]:
                """front: take x (left) unless y (right) comes first; back: take y (right)
                unless x comes last. Ties: the left run's elements have the smaller indices,
                so a tie takes left at the front, right at the back."""
                kx, ky = Var(f"kx{tag}", kdt), Var(f"ky{tag}", kdt)
                take, sel = Var(f"take{tag}", "bool"), Var(f"sel{tag}")
                if front:  # x while it is in its run and y is exhausted or not before it
                    y_first = _value_first_bits(descending, ky, kx) if nan_rules \
                        else _b("<", ky, kx)
                    cond = Binary("&", _b("<", x, mid), Binary("|", _b(">=", y, hi), Unary(
                        "not", y_first, "bool"), "bool"), "bool")
                    pick, other = x, y
                else:  # y while it is in its run and x is exhausted or not after it
                    y_first = _value_first_bits(descending, ky, kx) if nan_rules \
                        else _b("<", ky, kx)
                    cond = Binary("&", _b(">=", y, mid), Binary("|", _b("<", x, lo), Unary(
                        "not", y_first, "bool"), "bool"), "bool")
                    pick, other = y, x
                t = cast(take, INDEX)
                return [
                    Let(kx, Load("k" + src, add(x, const(1)), kdt)),
                    Let(ky, Load("k" + src, add(y, const(1)), kdt)),
                    Let(take, cond), Let(sel, add(other, mul(sub(pick, other), t))),
                    Store("k" + dst, add(dst_pos, const(1)),
                          Load("k" + src, add(sel, const(1)), kdt)),
                    Store("i" + dst, add(dst_pos, const(1)),
                          Load("i" + src, add(sel, const(1)), "int32")),
                    Assign(pick, add(pick, t) if front else sub(pick, t)),
                    Assign(other, add(other, sub(const(1), t)) if front
                           else sub(other, sub(const(1), t)))]

            half = div(sub(hi, lo), const(2))
            return [For(pi, const(0), div(add(n, sub(mul(w, const(2)), const(1))),
                                          mul(w, const(2))), "serial", [
                Let(lo, mul(pi, mul(w, const(2)))), Let(mid, minimum(add(lo, w), n)),
                Let(hi, minimum(add(lo, mul(w, const(2))), n)),
                Local(a, lo), Local(b, mid), Local(c, sub(mid, const(1))),
                Local(d, sub(hi, const(1))),
                For(q, const(0), half, "serial", [
                    *step(a, b, add(lo, q), True, "f"),
                    *step(c, d, sub(sub(hi, const(1)), q), False, "r")]),
                If(_b("==", mod(sub(hi, lo), const(2)), const(1)),
                   step(a, b, add(lo, half), True, "m"))])]

        lvl, w, last, top = Var("lvl"), Var("w"), Var("last"), Var("top")
        passes = Var("passes")

        def first_key(ka: Expr, kb: Expr) -> Expr:
            return _value_first_bits(descending, ka, kb) if nan_rules else _b("<", ka, kb)

        merge = [
            Alloc("kA", kdt, MERGE_ROW + 2), Alloc("kB", kdt, MERGE_ROW + 2),
            Alloc("iA", "int32", MERGE_ROW + 2), Alloc("iB", "int32", MERGE_ROW + 2),
            For(p, const(0), n, "serial", [
                Store("kA", add(p, const(1)), _sort_key(dtype, descending, key(p))[0]),
                Store("iA", add(p, const(1)), cast(p, "int32"))]),
            *[Store(arr, pos, const(0, kdt if arr[0] == "k" else "int32"))
              for arr in ("kA", "kB", "iA", "iB") for pos in (const(0), add(n, const(1)))],
            *block_sort(kdt, nan_rules, descending, n, first_key),
            Local(w, const(BLOCK)),
            Let(passes, Binary("max", sub(depth, const(1 + LOG_BLOCK)), const(0), INDEX)),
            For(lvl, const(0), passes, "serial", [
                If(_b("==", mod(lvl, const(2)), const(0)), merge_pass("B", "A", w),
                   merge_pass("A", "B", w)),
                Assign(w, mul(w, const(2)))]),
            If(_b("==", mod(passes, const(2)), const(1)),
               [For(p, const(0), n, "serial", [
                   Store("out0", at(p), cast(Load("iA", add(p, const(1)), "int32"),
                                             out_dtype))])],
               [For(p, const(0), n, "serial", [
                   Store("out0", at(p), cast(Load("iB", add(p, const(1)), "int32"),
                                             out_dtype))])])]
        heap = [
            For(p, const(0), n, "serial", [Store("out0", at(p), cast(p, out_dtype))]),
            For(s_, const(0), div(n, const(2)), "serial", [
                *sift(sub(sub(div(n, const(2)), const(1)), s_), n, "_b")]),
            For(e, const(0), sub(n, const(1)), "serial", [
                Let(last, sub(sub(n, const(1)), e)), Let(top, Load("out0", at(0), out_dtype)),
                Store("out0", at(0), Load("out0", at(last), out_dtype)),
                Store("out0", at(last), top),
                *sift(const(0), last, "_x")])]
        return [Let(i, mod(f, inner)), Let(o, div(f, inner)),
                Let(base, add(mul(mul(o, n), inner), i)),
                If(_b("<=", n, const(MERGE_ROW)), merge, heap)]

    kernel = flat_kernel([BufferParam("in0", dtype, "in", 0),
                          BufferParam("out0", out_dtype, "out", 0)],
                         [ScalarParam("rows"), ScalarParam("n"), ScalarParam("inner"),
                          ScalarParam("depth")], rows, body, target)

    def plan(names: list[str], shapes: Shapes) -> list[Launch] | None:
        shape = [int(d) for d in shapes[("in", 0)]] or [1]
        outer, n_axis, inner_n = split_at(shape, axis)
        if outer * n_axis * inner_n == 0:
            return []
        count = outer * inner_n
        chunk = max(1, -(-count // max(1, 4 * target.compute_units)))
        return [Launch(names[0], (-(-count // chunk), 1, 1), (1, 1, 1), [
            ("in", 0), ("out", 0), ("i64", count), ("i64", n_axis), ("i64", inner_n),
            ("i64", max(1, (n_axis - 1).bit_length() + 1)), ("i64", chunk)])]

    return finish([kernel], target, dialect, plan)


LOWERINGS = {"argsort": _argsort}
