"""The transfers suite: synchronous copies (h2d, d2h, d2d) and memset at sizes up to
min(256 MiB, total_memory / 4) and at unaligned offsets, through the plugin's C tables
(conformance.direct_host), like the memory suite.

Every case checks the WHOLE destination the moment the synchronous call returns, without any
synchronize first: the bytes before the offset and a guard after the end keep their pattern,
the range holds exactly the data. An h2d case also overwrites its host source right after the
call returns (the ABI lets the host reuse it then), so a copy that finishes later (a chunk left
to another thread) shows. d2h writes into a host buffer at the same offset, with a guard.
memset is memset_async on the NULL stream, which is synchronous (NOT_SUPPORTED without it).

A case is "transfers::<op>/<size>-off<offset>" with size a ladder spec (ladder.py): an int, or
"max-1" (the largest transfer minus one byte). The default run samples 4097 B, 1 MiB + 1 and
16 MiB + 3 at offsets 0, 1, 3 and 4095, and the largest at offset 4095; --thorough
sweeps 2^k - 1, 2^k, 2^k + 1 for every k up to the largest, at every offset.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from ..model import Case, Result, Target
from . import direct_common, ladder
from .direct_common import require

NAME = "transfers"
OPS = ("h2d", "d2h", "d2d", "memset")
OFFSETS = (0, 1, 3, 4095)
DEFAULT_SIZES = ("4097", "1048577", "16777219")
LARGEST = ("max-1",)
LARGEST_OFFSETS = (4095,)
GUARD = 4099  # bytes after the destination range that must keep their pattern
MEMSET_VALUE = 0xA5


def _sizes(thorough: bool) -> list[tuple[str, tuple[int, ...]]]:
    if not thorough:
        return [(s, OFFSETS) for s in DEFAULT_SIZES] + [(s, LARGEST_OFFSETS) for s in LARGEST]
    top = ladder.MAX_TRANSFER.bit_length() - 1  # 2^28: the ladder ends at max (resolved)
    specs = [s for s in ladder.full_ladder(top) if int(s) < ladder.MAX_TRANSFER] + ["max-1"]
    return [(s, OFFSETS) for s in specs]


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    failed = direct_common.load_gate(NAME, target, options)
    if failed:
        return failed
    return [Case(NAME, f"{op}/{size}-off{off}", {"op": op, "size": size, "offset": off})
            for op in OPS for size, offsets in _sizes(ladder.is_thorough(options))
            for off in offsets]


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    return direct_common.run_check({case.name: _dispatch}, target, case, state)


# ---- patterns and checks ---------------------------------------------------------------------

def _pattern(case: Case, which: int, nbytes: int, period: int) -> np.ndarray:
    """A random block repeated with an odd period: a misplaced chunk cannot match by chance.
    Keyed by the case too, so that stale bytes of an earlier case never look right."""
    seed = zlib.crc32(f"{case.seed}/{case.name}/{which}".encode())
    block = np.frombuffer(np.random.default_rng(seed).bytes(period), np.uint8)
    return np.resize(block, nbytes)


def _same(got: np.ndarray, want: np.ndarray, what: str, label: str, at: int = 0) -> None:
    """FAILs with the first differing byte (its position in the destination) and the count."""
    if np.array_equal(got, want):
        return
    bad = np.flatnonzero(got != want)
    first = int(bad[0])
    require(False, f"{label}: {what}: {bad.size} of {want.size} bytes differ, the first at "
            f"destination byte {at + first} (got {int(got[first]):#04x}, want "
            f"{int(want[first]):#04x}), checked as the synchronous call returned",
            first_mismatch=at + first, mismatches=int(bad.size))


def _check_buffer(got: np.ndarray, before: np.ndarray, data: np.ndarray | int, off: int,
                  n: int, label: str) -> None:
    _same(got[:off], before[:off], "the bytes before the offset changed", label)
    want = np.full(n, data, np.uint8) if isinstance(data, int) else data
    _same(got[off:off + n], want, "the destination range is wrong", label, off)
    _same(got[off + n:], before[off + n:], "the bytes after the range changed", label, off + n)


def _setup(h, case: Case) -> tuple[int, int, int, str]:
    """(bytes, offset, bytes allocated, label) of the case on this device."""
    total_memory = int(h.properties(0).total_memory)
    largest = ladder.max_transfer({"total_memory": total_memory})
    off = int(case.params["offset"])
    n = min(ladder.resolve(case.params["size"], {"total_memory": total_memory}, minimum=1),
            largest - 1)
    return n, off, off + n + GUARD, f"{case.params['op']} of {n} bytes at offset {off}"


class _Buffer:
    """One device allocation, freed on exit."""

    def __init__(self, h, nbytes: int):
        self.h, self.buf = h, h.alloc(nbytes)

    def __enter__(self):
        return self.buf

    def __exit__(self, *exc: Any) -> None:
        self.h.free(self.buf)


def _read_all(h, buf, nbytes: int) -> np.ndarray:
    return np.frombuffer(h.d2h(buf, nbytes), np.uint8)


def h2d(h, case: Case) -> dict[str, Any]:
    n, off, total, label = _setup(h, case)
    before = _pattern(case, 0, total, (1 << 20) + 7)
    with _Buffer(h, total) as buf:
        h.h2d(buf, before)
        data = _pattern(case, 1, n, (1 << 20) + 13)
        h.h2d(buf, data, off)
        np.bitwise_not(data, out=data)  # the host reuses its source once the call returned
        got = _read_all(h, buf, total)
        np.bitwise_not(data, out=data)
        _check_buffer(got, before, data, off, n, label)
    return {"nbytes": n, "offset": off}


def d2h(h, case: Case) -> dict[str, Any]:
    from ..direct_host import ffi

    n, off, total, label = _setup(h, case)
    src = _pattern(case, 0, total, (1 << 20) + 7)
    with _Buffer(h, total) as buf:
        h.h2d(buf, src)
        before = _pattern(case, 2, total, (1 << 20) + 17)
        host = before.copy()
        h.check(h.mem.copy_d2h(0, ffi.from_buffer(host) + off, buf, off, n), "copy_d2h")
        _check_buffer(host, before, src[off:off + n], off, n, label)
    return {"nbytes": n, "offset": off}


def d2d(h, case: Case) -> dict[str, Any]:
    n, off, total, label = _setup(h, case)
    src_data = _pattern(case, 0, total, (1 << 20) + 7)
    before = _pattern(case, 2, total, (1 << 20) + 17)
    with _Buffer(h, total) as src, _Buffer(h, total) as dst:
        h.h2d(src, src_data)
        h.h2d(dst, before)
        h.d2d(dst, src, n, dst_offset=off, src_offset=off)
        _check_buffer(_read_all(h, dst, total), before, src_data[off:off + n], off, n, label)
    return {"nbytes": n, "offset": off}


def memset(h, case: Case) -> dict[str, Any]:
    h.require("memory", "memset_async")
    n, off, total, label = _setup(h, case)
    before = _pattern(case, 0, total, (1 << 20) + 7)
    with _Buffer(h, total) as buf:
        h.h2d(buf, before)
        h.memset(buf, MEMSET_VALUE, n, off)  # the NULL stream: synchronous
        _check_buffer(_read_all(h, buf, total), before, MEMSET_VALUE, off, n, label)
    return {"nbytes": n, "offset": off}


_CHECKS = {"h2d": h2d, "d2h": d2h, "d2d": d2d, "memset": memset}


def _dispatch(h, case: Case) -> dict[str, Any] | None:
    return _CHECKS[case.params["op"]](h, case)
