"""uniform for the eager JIT (on index_kernels' helpers): Philox-4x32-10 in the loop IR's int64
arithmetic, bit for bit the stream of phi_ops/philox.py. Element i uses the 128-bit counter
offset + i (four 32-bit words with carries) and the key of the seed; 32 x 32 -> 64-bit
products are taken in 16-bit halves so every intermediate stays a non-negative int64. The
value low + (high - low) * u is computed in float64 and rounded once to the dtype (float16 /
bfloat16 through float32 with the double rounding corrected); targets without float64 are left
to the CPU fallback."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .analysis import Unsupported
from .index_kernels import IndexLowered, Meta, Shapes, finish, flat_kernel, grid_for
from .loop_ir import (
    INDEX,
    Binary,
    BufferParam,
    Cast,
    Expr,
    Let,
    Load,
    ScalarParam,
    Select,
    Stmt,
    Store,
    Var,
    add,
    const,
    div,
    mod,
    mul,
)
from .lower_group import Launch
from .target import TargetInfo

__all__ = ["LOWERINGS"]

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
ROUNDS = 10
B16, B32 = 1 << 16, 1 << 32
# the largest finite value and the midpoint above it (the overflow threshold), exact in float32
_LARGEST = {"float16": (65504.0, 65520.0),
            "bfloat16": (3.3895313892515355e38, 3.3961775292304049e38)}


def _xor(a: Expr, b: Expr) -> Expr:
    return Binary("^", a, b, INDEX)


class _Lets:
    """Binds each intermediate once (a Let with a fresh name)."""

    def __init__(self) -> None:
        self.stmts: list[Stmt] = []
        self.n = 0

    def __call__(self, e: Expr) -> Var:
        v = Var(f"p{self.n}")
        self.n += 1
        self.stmts.append(Let(v, e))
        return v


def _mulhilo(let: _Lets, a: Var, m: int) -> tuple[Var, Var]:
    """(hi, lo) 32-bit words of a * m for a, m < 2**32."""
    mh, ml = m >> 16, m & 0xFFFF
    ah, al = let(div(a, const(B16))), let(mod(a, const(B16)))
    mid = let(add(mul(ah, const(ml)), mul(al, const(mh))))
    t = let(add(mul(al, const(ml)), mul(mod(mid, const(B16)), const(B16))))
    lo = let(mod(t, const(B32)))
    hi = let(add(add(mul(ah, const(mh)), div(mid, const(B16))), div(t, const(B32))))
    return hi, lo


def _round_once(v: Expr, dtype: str, at: Var) -> list[Stmt]:
    """Stores float64 v rounded once to float16 / bfloat16 at out0[at]. Through float32 it
    could round twice: c = float32(v) is wrong only where c lies exactly midway between two
    neighbours h (what c rounds to) and o = 2c - h of the narrow type while v is not c; then
    the neighbour on v's side is the right one. (The narrow type is reached through stores:
    the loop IR converts to it only when storing.)"""
    f32, f64 = "float32", "float64"
    c, h, o, on = Var("rc", f32), Var("rh", f32), Var("ro", f32), Var("ron", f32)

    def b(op: str, x: Expr, y: Expr, dt: str = "bool") -> Expr:
        return Binary(op, x, y, dt)

    back = Cast(Load("out0", at, dtype), f32)
    finite = b("==", b("-", o, o, f32), const(0.0, f32))
    mid = b("&&", b("&&", b("!=", c, h), finite), b("==", on, o))
    c64 = Cast(c, f64)
    # (Binary min/max are index operations in the renderers: Selects here)
    hi_n, lo_n = Select(b(">", h, o), h, o, f32), Select(b("<", h, o), h, o, f32)
    side = Select(b(">", v, c64), hi_n, lo_n, f32)
    fixed = Select(b("&&", mid, b("!=", v, c64)), side, h, f32)
    # c exactly at the overflow midpoint rounds to infinity; v below it must give the largest
    # finite value
    big, edge = _LARGEST[dtype]
    fixed = Select(b("&&", b("==", c, const(edge, f32)), b("<", v, c64)), const(big, f32),
                   Select(b("&&", b("==", c, const(-edge, f32)), b(">", v, c64)),
                          const(-big, f32), fixed, f32), f32)
    return [Let(c, Cast(v, f32)), Store("out0", at, Cast(c, dtype)), Let(h, back),
            Let(o, b("+", c, b("-", c, h, f32), f32)),  # 2c - h, without overflowing
            # * 1.0 (exact): the renderer's common subexpressions would reuse h's load
            Store("out0", at, Cast(o, dtype)), Let(on, b("*", back, const(1.0, f32), f32)),
            Store("out0", at, Cast(fixed, dtype))]


def _uniform(ins: Sequence[Meta], outs: Sequence[Meta], attrs: Mapping[str, Any],
             target: TargetInfo, dialect: str | None) -> IndexLowered:
    if ins or len(outs) != 1 or outs[0][1] not in ("float32", "float64", "float16", "bfloat16"):
        raise Unsupported("uniform: a float output only")
    if not target.float64:
        raise Unsupported("uniform: the value is computed in float64, which the target lacks")
    dtype = outs[0][1]
    words = [Var(f"w{k}") for k in range(4)]
    key0, key1, low, span, total = Var("k0"), Var("k1"), Var("low", "float64"), \
        Var("span", "float64"), Var("total")

    def body(f: Var) -> list[Stmt]:
        let = _Lets()
        i_lo, i_hi = let(mod(f, const(B32))), let(div(f, const(B32)))
        s0 = let(add(words[0], i_lo))
        s1 = let(add(add(words[1], i_hi), div(s0, const(B32))))
        s2 = let(add(words[2], div(s1, const(B32))))
        c = [let(mod(s0, const(B32))), let(mod(s1, const(B32))), let(mod(s2, const(B32))),
             let(mod(add(words[3], div(s2, const(B32))), const(B32)))]
        for r in range(ROUNDS):
            k0 = let(mod(add(key0, const(r * W0)), const(B32))) if r else key0
            k1 = let(mod(add(key1, const(r * W1)), const(B32))) if r else key1
            hi0, lo0 = _mulhilo(let, c[0], M0)
            hi1, lo1 = _mulhilo(let, c[2], M1)
            c = [let(_xor(_xor(hi1, c[1]), k0)), lo1, let(_xor(_xor(hi0, c[3]), k1)), lo0]
        if dtype != "float64":  # the float32 path (24 bits) for every narrower dtype
            bits, scale = div(c[0], const(256)), 2.0**-24
        else:
            bits, scale = _xor(mul(c[1], const(1 << 21)), div(c[0], const(1 << 11))), 2.0**-53
        u = Binary("*", Cast(let(bits), "float64"), const(scale, "float64"), "float64")
        # the product bound first: OpenCL / CUDA contract a * b + c within one expression
        # into an fma, which rounds once where the stream rounds twice
        prod = Var("scaled", "float64")
        let.stmts.append(Let(prod, Binary("*", span, u, "float64")))
        v = Binary("+", low, prod, "float64")
        if dtype in ("float32", "float64"):
            return [*let.stmts, Store("out0", f, Cast(v, dtype) if dtype != "float64" else v)]
        return [*let.stmts, *_round_once(v, dtype, f)]

    kernel = flat_kernel([BufferParam("out0", dtype, "out", 0)],
                         [ScalarParam("total"), *(ScalarParam(w.name) for w in words),
                          ScalarParam("k0"), ScalarParam("k1"), ScalarParam("low", "float64"),
                          ScalarParam("span", "float64")], total, body, target)
    seed = int(attrs.get("seed", 0)) % (1 << 64)
    offset = int(attrs.get("offset", 0)) % (1 << 128)
    lo_v, hi_v = float(attrs.get("low", 0.0)), float(attrs.get("high", 1.0))
    scalars: list[tuple[str, Any]] = [("i64", (offset >> (32 * k)) & 0xFFFFFFFF)
                                      for k in range(4)]
    scalars += [("i64", seed & 0xFFFFFFFF), ("i64", seed >> 32), ("f64", lo_v),
                ("f64", hi_v - lo_v)]

    def plan(names: list[str], shapes: Shapes) -> list[Launch]:
        n = 1
        for d in shapes[("out", 0)]:
            n *= int(d)
        if n == 0:
            return []
        grid, group, extra = grid_for(n, target)
        return [Launch(names[0], grid, group, [("out", 0), ("i64", n), *scalars, *extra])]

    return finish([kernel], target, dialect, plan)


LOWERINGS = {"uniform": _uniform}
