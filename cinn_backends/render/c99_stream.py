"""Streaming (non-temporal) stores in the c99 dialect (Kernel.stream_stores): a vectorized
element loop whose every store writes an output at `base + var` is rendered as

    head:   the loop, plain stores, up to the first element whose output address is 64-byte
            aligned (all of it when the address is not a multiple of the element size);
    blocks: 64 bytes of the lead output at a time: the loop body over the block's elements
            with its stores into a small local array, then hw_stream64 writes each output's
            block with non-temporal stores (x86's movnt: no read for ownership of the line)
            where its address is aligned (the lead's always is; another output's is checked,
            a misaligned movnt faults), plain stores otherwise;
    tail:   the loop, plain stores, over the rest;

and a store fence at the kernel's end (non-temporal stores are weakly ordered). The values are
the loop's own (the same body, element by element), so results do not depend on it. For
outputs too large to be read again from cache: the autotuner measures it (Tuning.stream)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..loop_ir import Binary, Expr, For, Let, Stmt, Store, Var, const, free_vars

if TYPE_CHECKING:
    from .c99 import C99Renderer

LINE = 64  # bytes a block of the lead output covers (one cache line, one AVX-512 vector)

HELPERS = """#if defined(__SSE2__)
#include <immintrin.h>
#endif
#if defined(__GNUC__)
#define HW_ALIGN64 __attribute__((aligned(64)))
#else
#define HW_ALIGN64
#endif
/* `bytes` (a multiple of 64) from src to dst: non-temporal stores when dst is 64-byte aligned
   (movnt faults otherwise), plain stores else */
HW_INLINE void hw_stream64(void *dst, const void *src, int64_t bytes) {
#if defined(__SSE2__)
  if (((uintptr_t)dst & 63) == 0) {
    char *d = (char *)dst;
    const char *s = (const char *)src;
    for (int64_t b = 0; b < bytes; b += 64) {
#if defined(__AVX512F__)
      _mm512_stream_si512((void *)(d + b), _mm512_loadu_si512((const void *)(s + b)));
#elif defined(__AVX__)
      _mm256_stream_si256((__m256i *)(d + b), _mm256_loadu_si256((const __m256i *)(s + b)));
      _mm256_stream_si256((__m256i *)(d + b + 32),
                          _mm256_loadu_si256((const __m256i *)(s + b + 32)));
#else
      for (int q = 0; q < 64; q += 16)
        _mm_stream_si128((__m128i *)(d + b + q), _mm_loadu_si128((const __m128i *)(s + b + q)));
#endif
    }
    return;
  }
#endif
  memcpy(dst, src, (size_t)bytes);
}
HW_INLINE void hw_sfence(void) {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}
"""
FENCE = "  hw_sfence();\n"


def offset_of(index: Expr, var: str, lets: dict[str, Expr]) -> Expr | None:
    """X with index == X + var and X free of var and of the loop body's Lets; None if the
    index has another form."""
    while isinstance(index, Var) and index.name in lets:
        index = lets[index.name]
    if isinstance(index, Var) and index.name == var:  # a flat group's element loop
        return const(0)
    if not isinstance(index, Binary) or index.op != "+":
        return None
    for x, y in ((index.a, index.b), (index.b, index.a)):
        if isinstance(y, Var) and y.name == var and not (free_vars(x) & ({var} | set(lets))):
            return x
    return None


def render_loop(r: C99Renderer, s: For, level: int) -> list[str] | None:
    """The streamed loop, or None (rendered as usual): a loop whose statements are Lets and
    Stores of outputs at base + var (not a lane loop, whose stores go to its lane array)."""
    if s.step != 1:
        return None
    lets = {st.var.name: st.value for st in s.body if isinstance(st, Let)}
    stores = [st for st in s.body if isinstance(st, Store)]
    if not stores or len(stores) + len(lets) != len(s.body):
        return None
    bases: list[Expr] = []
    for st in stores:
        base = offset_of(st.index, s.var.name, lets)
        if st.buf not in r.outputs or base is None:
            return None
        bases.append(base)
    sizes = [r.elem_size(st.buf) for st in stores]
    block = LINE // min(sizes)  # elements per block: 64 bytes of the narrowest output
    pad, v = "  " * level, s.var.name
    lead = f"&{stores[0].buf}[{r.expr(bases[0])} + {v}_lo]"
    out = [pad + "{",
           f"{pad}  const int64_t {v}_lo = {r.expr(s.start)}, {v}_hi = {r._loop_end(s)};",
           f"{pad}  const uintptr_t {v}_addr = (uintptr_t){lead};",
           f"{pad}  int64_t {v}_a = {v}_hi;  /* the first element of the first block */",
           f"{pad}  if ({v}_addr % {sizes[0]} == 0)",
           f"{pad}    {v}_a = HW_MIN({v}_hi, {v}_lo + (int64_t)((({LINE} - {v}_addr % {LINE})"
           f" % {LINE}) / {sizes[0]}));",
           f"{pad}  const int64_t {v}_b = {v}_a + ({v}_hi - {v}_a) / {block} * {block};"]
    out += _plain(r, v, s.body, f"{v}_lo", f"{v}_a", level + 1)
    vb = f"{v}_blk"
    out.append(f"{pad}  for (int64_t {vb} = {v}_a; {vb} < {v}_b; {vb} += {block}) {{")
    inner = pad + "    "
    for n, st in enumerate(stores):
        out.append(f"{inner}{r.buftype(st.buf)} nt{n}[{block}] HW_ALIGN64;")
    # a constant trip count: the compiler makes the block one vector operation per array
    lane = Var(f"{v}_l")
    body: list[Stmt] = [Let(s.var, Binary("+", Var(vb), lane, "int64"))]
    body += [st if not isinstance(st, Store) else Store(f"nt{stores.index(st)}", lane, st.value)
             for st in s.body]
    out += _plain(r, lane.name, body, "0", str(block), level + 2)
    for n, (st, base) in enumerate(zip(stores, bases, strict=True)):
        out.append(f"{inner}hw_stream64(&{st.buf}[{r.expr(base)} + {vb}], nt{n}, "
                   f"{block * sizes[n]});")
    out += [f"{pad}  }}", *_plain(r, v, s.body, f"{v}_b", f"{v}_hi", level + 1), pad + "}"]
    r.streamed = True
    return out


def _plain(r: C99Renderer, v: str, body: list[Stmt], lo: str, hi: str,
           level: int) -> list[str]:
    """A vectorized loop of `body` over v in [lo, hi)."""
    pad = "  " * level
    out = [pad + "HW_SIMD", f"{pad}for (int64_t {v} = {lo}; {v} < {hi}; ++{v}) {{"]
    r.plain_stmts(body, level + 1, out)
    return [*out, pad + "}"]
