"""The first passes of sort_kernel's merge sort as a sorting network: each block of BLOCK
consecutive (key, index) pairs of the merge arrays ("kA", "iA"; position p in slot p + 1) is
sorted by Batcher's network (19 compare-exchanges for 8) into "kB", "iB", in place of the merge
passes of widths 1, 2 and 4 (latency-bound: a merge step's load feeds the next step's
address; the compare-exchanges of one layer are independent).

A network does not keep ties in order by itself, so each compare-exchange orders by (key,
index): the result is the stable sort's order. The block at the end of a row, when shorter,
is padded with keys that sort after every real key (a tie goes by index: the pad's is larger)
and only its real slots are stored back."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

from .loop_ir import (
    INDEX,
    Alloc,
    Assign,
    Binary,
    Const,
    Expr,
    For,
    If,
    Let,
    Load,
    Local,
    Select,
    Stmt,
    Store,
    Var,
    add,
    cast,
    const,
    div,
    minimum,
    mul,
    sub,
)

__all__ = ["BLOCK", "LOG_BLOCK", "block_sort"]

BLOCK, LOG_BLOCK = 8, 3
# Batcher's odd-even merge sort network for 8 elements (checked by the 0-1 principle below)
NETWORK = ((0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (1, 2), (5, 6),
           (0, 4), (1, 5), (2, 6), (3, 7), (2, 4), (3, 5), (1, 2), (3, 4), (5, 6))


def _sorts_all_01(network: tuple[tuple[int, int], ...], size: int) -> bool:
    for bits in product((0, 1), repeat=size):
        v = list(bits)
        for a, b in network:
            if v[b] < v[a]:
                v[a], v[b] = v[b], v[a]
        if any(v[i] > v[i + 1] for i in range(size - 1)):
            return False
    return True


assert _sorts_all_01(NETWORK, BLOCK)


def _b(op: str, a: Expr, b: Expr) -> Expr:
    return Binary(op, a, b, "bool")


def _pad_key(kdt: str, nan_rules: bool, descending: bool) -> Const:
    if kdt == INDEX:
        return const(2**63 - 1, INDEX)
    if nan_rules:  # float64 values: NaN sorts last ascending, -inf last descending
        return const(float("-inf") if descending else float("nan"), "float64")
    return const(float("inf"), "float64")


def block_sort(kdt: str, nan_rules: bool, descending: bool, n: Expr,
               first: Callable[[Expr, Expr], Expr]) -> list[Stmt]:
    """Statements sorting every BLOCK-block of kA/iA in place; first(ka, kb): whether key ka
    sorts strictly before key kb."""
    blk, base = Var("nb_blk"), Var("nb_base")
    pad = _pad_key(kdt, nan_rules, descending)

    def network(tag: str, partial: bool) -> list[Stmt]:
        """The keys stay in kA (a partial block's pads in `padk`); the network permutes the
        positions, reloading each compare's keys by position. A swap is integer arithmetic
        on 0/1 comparison results: GCC compiles selects, and even a bitwise | of two
        float comparisons, into branches here (mispredicted half the time)."""
        ix = [Var(f"ni{tag}{j}") for j in range(BLOCK)]
        out: list[Stmt] = [Local(ix[j], add(base, const(j))) for j in range(BLOCK)]
        keys = "padk" if partial else "kA"
        if partial:  # this block's keys, padded, in a private array indexed pos - base
            out += [Alloc("padk", kdt, BLOCK)]
            for j in range(BLOCK):
                pos = add(base, const(j))
                out.append(Store("padk", const(j), Select(
                    _b("<", pos, n), Load("kA", add(minimum(pos, n), const(1)), kdt), pad,
                    kdt)))

        def key(i: Expr) -> Expr:
            return Load(keys, sub(i, base) if partial else add(i, const(1)), kdt)

        for c, (a, b) in enumerate(NETWORK):
            ia, ib = ix[a], ix[b]
            ka, kb = Var(f"nka{tag}{c}", kdt), Var(f"nkb{tag}{c}", kdt)
            sw, d = Var(f"nsw{tag}{c}"), Var(f"nd{tag}{c}")
            tie = _b("==", ka, kb)
            if nan_rules:
                tie = Binary("|", tie, Binary("&", _b("!=", ka, ka), _b("!=", kb, kb),
                                              "bool"), "bool")
            out += [
                Let(ka, key(ia)), Let(kb, key(ib)),
                # b before a: by key, or an equal key and a smaller index (exclusive cases)
                Let(sw, add(cast(first(kb, ka), INDEX),
                            mul(cast(tie, INDEX), cast(_b("<", ib, ia), INDEX)))),
                Let(d, mul(sub(ib, ia), sw)), Assign(ia, add(ia, d)), Assign(ib, sub(ib, d))]
        for j in range(BLOCK):
            pos = add(base, const(j))
            st = [Store("kB", add(pos, const(1)), key(ix[j])),
                  Store("iB", add(pos, const(1)), cast(ix[j], "int32"))]
            out += [If(_b("<", pos, n), st)] if partial else st
        return out

    # into kB/iB (the keys of kA are read while positions move); the index array is not
    # read: a block's positions are its indices before sorting
    return [For(blk, const(0), div(add(n, const(BLOCK - 1)), const(BLOCK)), "serial", [
        Let(base, mul(blk, const(BLOCK))),
        If(_b("<=", add(base, const(BLOCK)), n), network("f", False), network("p", True))])]
