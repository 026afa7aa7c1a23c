"""Counter-based random numbers: Philox-4x32-10 (Salmon et al., "Parallel random numbers: as
easy as 1, 2, 3", SC'11), vectorized with numpy, and the `uniform` / `normal` ops built on it.
Every plugin produces the same numbers as these functions.

Streams. A generator call is identified by (seed, offset). The key is the 64-bit seed split
into two 32-bit words, low word first (a negative seed is taken modulo 2**64). Element i of
the output (row-major order) uses the 128-bit counter offset + i, split into four 32-bit words
w0..w3, lowest first (offset + i wraps modulo 2**128). One Philox call per element:

    uniform, float32/float16/bfloat16: u = (r0 >> 8) * 2**-24               in [0, 1)
    uniform, float64:                  u = ((r1 << 21) ^ (r0 >> 11)) * 2**-53 in [0, 1)
                                       (64-bit arithmetic; r0, r1 = output words 0 and 1)
    value = low + (high - low) * u, computed in float64, rounded once (to nearest even) to
    the dtype. After that rounding a value may equal `high`.

`uniform` consumes numel counters, `normal` 2 * numel (see `normal`), `dropout` numel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .promotion import round_float64

PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9  # golden ratio
PHILOX_W1 = 0xBB67AE85  # sqrt(3) - 1
ROUNDS = 10
TWO_PI = 2.0 * math.pi  # 6.283185307179586, the float64 constant of `normal`

_MASK32 = np.uint64(0xFFFFFFFF)
_MASK64 = (1 << 64) - 1


def philox4x32(counters: Any, key: Any, rounds: int = ROUNDS) -> np.ndarray:
    """Philox-4x32 with `rounds` rounds (10 is the standard generator).

    counters: uint32 array [..., 4] (word 0 is the lowest of the 128-bit counter);
    key: uint32 [2] (or broadcastable [..., 2]). Returns uint32 [..., 4]."""
    c = np.asarray(counters)
    k = np.asarray(key)
    if c.shape[-1:] != (4,) or k.shape[-1:] != (2,):
        raise ValueError(f"philox4x32: counters [..., 4] and key [..., 2] expected, "
                         f"got {c.shape} and {k.shape}")
    c = c.astype(np.uint64) & _MASK32
    k = k.astype(np.uint64) & _MASK32
    c0, c1, c2, c3 = c[..., 0], c[..., 1], c[..., 2], c[..., 3]
    k0, k1 = k[..., 0], k[..., 1]
    m0, m1 = np.uint64(PHILOX_M0), np.uint64(PHILOX_M1)
    w0, w1 = np.uint64(PHILOX_W0), np.uint64(PHILOX_W1)
    s32 = np.uint64(32)
    for r in range(rounds):
        if r:
            k0 = (k0 + w0) & _MASK32
            k1 = (k1 + w1) & _MASK32
        p0 = m0 * c0  # < 2**64: exact in uint64
        p1 = m1 * c2
        c0, c1, c2, c3 = ((p1 >> s32) ^ c1 ^ k0, p1 & _MASK32,
                          (p0 >> s32) ^ c3 ^ k1, p0 & _MASK32)
    return np.stack(np.broadcast_arrays(c0, c1, c2, c3), axis=-1).astype(np.uint32)


def seed_key(seed: int) -> np.ndarray:
    """The Philox key of a seed: (low 32 bits, high 32 bits) of seed modulo 2**64."""
    s = int(seed) & _MASK64
    return np.array([s & 0xFFFFFFFF, s >> 32], dtype=np.uint32)


def counters(offset: int, n: int) -> np.ndarray:
    """uint32 [n, 4]: the 128-bit counters offset, offset + 1, ..., offset + n - 1 (mod 2**128),
    word 0 lowest."""
    offset = int(offset) % (1 << 128)
    idx = np.arange(n, dtype=np.uint64)
    lo = np.uint64(offset & _MASK64) + idx  # wraps modulo 2**64
    carry = (lo < idx).astype(np.uint64)
    hi = np.uint64(offset >> 64) + carry  # wraps modulo 2**64 (the 128-bit wrap)
    s32 = np.uint64(32)
    words = np.stack([lo & _MASK32, lo >> s32, hi & _MASK32, hi >> s32], axis=-1)
    return words.astype(np.uint32)


def _numel(shape: Sequence[int]) -> int:
    shape = [int(d) for d in shape]
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    return math.prod(shape)


def unit(n: int, seed: int, offset: int, path: str = "float32") -> np.ndarray:
    """The uniform [0, 1) numbers u of elements 0..n-1 as float64 (exact values):
    path "float32": (r0 >> 8) * 2**-24; path "float64": ((r1 << 21) ^ (r0 >> 11)) * 2**-53."""
    r = philox4x32(counters(offset, n), seed_key(seed)).astype(np.uint64)
    if path == "float32":
        return (r[:, 0] >> np.uint64(8)).astype(np.float64) * 2.0**-24
    if path == "float64":
        bits = (r[:, 1] << np.uint64(21)) ^ (r[:, 0] >> np.uint64(11))
        return bits.astype(np.float64) * 2.0**-53
    raise ValueError(f"unit: path must be 'float32' or 'float64', got {path!r}")


def uniform(shape: Sequence[int], low: float, high: float, seed: int, offset: int,
            dtype: str) -> np.ndarray:
    """The `uniform` op: low + (high - low) * u in float64 rounded once to dtype, with u from
    the float64 path for float64 and the float32 path (24 bits) for the other float dtypes."""
    n = _numel(shape)
    if dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"uniform: dtype must be a float dtype, got {dtype!r}")
    u = unit(n, seed, offset, "float64" if dtype == "float64" else "float32")
    low, high = float(low), float(high)
    with np.errstate(all="ignore"):
        v = low + (high - low) * u
    return round_float64(v, dtype).reshape(tuple(int(d) for d in shape))


def normal(shape: Sequence[int], mean: float, std: float, seed: int, offset: int,
           dtype: str) -> np.ndarray:
    """The `normal` op: Box-Muller over two uniform streams (cosine branch only).

    With n = numel(shape) and i the row-major element index, all in float64:

        u1[i] = 1.0 - U[offset + i]          in (0, 1]   (never 0: log is finite)
        u2[i] = U[offset + n + i]            in [0, 1)
        r     = sqrt(-2.0 * log(u1))
        theta = TWO_PI * u2                  TWO_PI = 6.283185307179586 (float64 of 2*pi)
        z     = r * cos(theta)
        value = mean + std * z               then rounded once to dtype

    where U[c] is the float32-path uniform of counter c: (r0 >> 8) * 2**-24, i.e. exactly what
    `uniform(shape, 0.0, 1.0, seed, c0, "float32")` returns, for every dtype (float64
    included: the streams do not depend on the dtype, only the final rounding does).
    The call consumes counters offset .. offset + 2n - 1.

    As a decomposition into primitives:
        a  = cast(uniform(shape, 0.0, 1.0, seed, offset,     float32), float64)
        b  = cast(uniform(shape, 0.0, 1.0, seed, offset + n, float32), float64)
        u1 = 1.0 - a                                   (subtract; exact)
        z  = sqrt(-2.0 * log(u1)) * cos(TWO_PI * b)    (multiply, log, sqrt, cos; float64)
        out = cast(mean + std * z, dtype)              (multiply, add, cast)
    """
    n = _numel(shape)
    if dtype not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"normal: dtype must be a float dtype, got {dtype!r}")
    a = unit(n, seed, offset, "float32")
    b = unit(n, seed, int(offset) + n, "float32")
    u1 = 1.0 - a
    with np.errstate(all="ignore"):
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(TWO_PI * b)
        v = float(mean) + float(std) * z
    return round_float64(v, dtype).reshape(tuple(int(d) for d in shape))
