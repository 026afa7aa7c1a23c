"""The memory suite: the memory table, driven directly through the C ABI (device.h).

Cases: allocation patterns (alloc_zero_size, alloc_tiny, alloc_large, alloc_many), alignment,
synchronous copies with odd offsets and sizes (h2d_d2h_offsets, d2d_offsets),
the optional memset_async and async copies on the NULL (synchronous) stream, the memory stats
(stats_track_allocations: what is allocated is counted; leak_check: back to the baseline after
freeing, else a leak), out_of_memory (an error, never a crash; with a small limit through the
plugin's memory-limit variable where one takes effect: HWCHECK_MEMORY_LIMIT_ENV names it, else
HWPORT_CPU_MEMORY_LIMIT / HWPORT_OPENCL_MEMORY_LIMIT, else HWPORT_<DEVICE TYPE>_MEMORY_LIMIT),
the accounting (peak_after_free, stats_after_refused_allocation, beyond_total_refused,
fill_to_total and oom_cycles_no_drift: filling the device in pieces under that cap, docs/abi.md
"Memory accounting"), deallocate_null (no stat moves; a double free is undefined and not
exercised), and the ABI 1.1 DLPack
exchange of device memory (device_address, wrap_device_memory: NOT_SUPPORTED where the plugin
names no DLPack device). An optional function the plugin lacks gives NOT_SUPPORTED; a plugin
that does not load gives one FAIL, memory::plugin-loads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import Case, NotSupported, Result, Target
from . import abi11_common, direct_common
from .direct_common import expect_error, require

NAME = "memory"

# device type -> the variable that caps its allocator (read when the plugin loads).
MEMORY_LIMIT_ENV = {"cpu": "HWPORT_CPU_MEMORY_LIMIT", "opencl": "HWPORT_OPENCL_MEMORY_LIMIT"}


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    failed = direct_common.load_gate(NAME, target, options)
    return failed or [Case(NAME, name) for name in CHECKS]


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    return direct_common.run_check(CHECKS, target, case, state)


class Buffers:
    """Allocations freed on exit, so that a failing check leaves no leak behind."""

    def __init__(self, h, device: int = 0):
        self.h, self.device, self.live = h, device, []

    def alloc(self, nbytes: int):
        buf = self.h.alloc(nbytes, self.device)
        self.live.append(buf)
        return buf

    def free(self, buf) -> None:
        self.live.remove(buf)
        self.h.free(buf, self.device)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        for buf in reversed(self.live):
            self.h.mem.deallocate(self.device, buf)
        self.live.clear()


def _read(h, buf, nbytes: int, offset: int = 0) -> np.ndarray:
    return np.frombuffer(h.d2h(buf, nbytes, offset), np.uint8)


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    if not np.array_equal(got, want):
        bad = np.flatnonzero(got != want)
        raise direct_common.CheckFailed(
            f"{what}: {bad.size} of {want.size} bytes differ, first at byte {int(bad[0])} "
            f"(got {int(got[bad[0]])}, expected {int(want[bad[0]])})",
            first_mismatch=int(bad[0]), mismatches=int(bad.size))


def alloc_zero_size(h, case: Case) -> dict[str, Any]:
    """device.h asks for nbytes > 0: a zero-byte request is refused with a message (out left
    untouched), or, if the plugin accepts it, gives a buffer that can be freed."""
    from ..direct_host import OK, ffi

    out = ffi.new("HWP_Buffer *")
    sentinel = ffi.cast("HWP_Buffer", 0x5A5A)
    out[0] = sentinel
    status = h.mem.allocate(0, 0, out)
    if status == OK:
        require(out[0] != ffi.NULL and out[0] != sentinel,
                "allocate(0 bytes) returned HWP_OK without a buffer")
        h.free(out[0])
        return {"zero_size": "accepted"}
    expect_error(h, status, "allocate(0 bytes)")
    require(out[0] == sentinel, "allocate(0 bytes) failed but wrote its out parameter")
    return {"zero_size": "refused", "message": h.last_error()}


def alloc_tiny(h, case: Case) -> dict[str, Any]:
    rng = np.random.default_rng(case.seed)
    sizes = [*range(1, 18), 31, 33, 63, 65, 127, 129]
    with Buffers(h) as b:
        bufs = [(n, b.alloc(n), rng.integers(0, 256, n, dtype=np.uint8)) for n in sizes]
        for _, buf, data in bufs:
            h.h2d(buf, data)
        for n, buf, data in bufs:
            _same(_read(h, buf, n), data, f"{n}-byte buffer")
    return {"sizes": sizes}


def _device_memory(h) -> int:
    """What the device says it has (0 when it does not say)."""
    has_props = h.optional("device", "get_properties") is not None
    return int(h.properties(0).total_memory) if has_props else 0


def alloc_large(h, case: Case) -> dict[str, Any]:
    total = _device_memory(h)
    nbytes = 32 << 20
    if total:
        nbytes = min(nbytes, total // 4)
    nbytes = nbytes // 4 * 4 + 3  # not a multiple of anything
    # a random block repeated with an odd period: a misplaced chunk cannot match by chance
    block = np.frombuffer(np.random.default_rng(case.seed).bytes((1 << 20) + 7), np.uint8)
    data = np.resize(block, nbytes)
    with Buffers(h) as b:
        buf = b.alloc(nbytes)
        h.h2d(buf, data)
        _same(_read(h, buf, nbytes), data, f"{nbytes}-byte buffer")
        tail = nbytes - 4097
        _same(_read(h, buf, 4097, tail), data[tail:], "the last 4097 bytes")
    return {"nbytes": nbytes}


def alloc_many(h, case: Case) -> dict[str, Any]:
    """Many live buffers at once: distinct handles, no two overlapping (each keeps its own
    pattern), freed in random order."""
    rng = np.random.default_rng(case.seed)
    count = 1500
    sizes = rng.integers(1, 4097, count)
    with Buffers(h) as b:
        bufs = [b.alloc(int(n)) for n in sizes]
        handles = {int(h_ffi_addr(x)) for x in bufs}
        require(len(handles) == count, f"{count - len(handles)} duplicate buffer handles "
                f"among {count} live allocations")
        for i, (buf, n) in enumerate(zip(bufs, sizes, strict=True)):
            h.h2d(buf, np.full(int(n), i % 251, np.uint8))
        for i in rng.permutation(count):
            got = _read(h, bufs[i], int(sizes[i]))
            _same(got, np.full(int(sizes[i]), i % 251, np.uint8),
                  f"buffer {i} of {count} ({int(sizes[i])} bytes; another buffer overlaps it?)")
        for i in rng.permutation(count):
            b.free(bufs[i])
    return {"count": count, "total_bytes": int(sizes.sum())}


def h_ffi_addr(buf) -> int:
    from ..direct_host import ffi

    return int(ffi.cast("uintptr_t", buf))


def alignment(h, case: Case) -> dict[str, Any]:
    """memory_alignment is a power of two; where buffers are host memory (host_address), every
    allocation's address is a multiple of it."""
    h.require("device", "get_properties")
    from ..direct_host import ffi

    props = h.properties(0)
    align = int(props.memory_alignment)
    require(align >= 1 and align & (align - 1) == 0,
            f"memory_alignment {align} is not a power of two")
    host_address = h.optional("memory", "host_address")
    if host_address is None:
        return {"memory_alignment": align, "observed": "property only (opaque buffers)"}
    out = ffi.new("void **")
    with Buffers(h) as b:
        for n in (1, 3, 17, 100, 4095, 65537):
            buf = b.alloc(n)
            h.check(host_address(0, buf, 0, out), "host_address")
            addr = int(ffi.cast("uintptr_t", out[0]))
            require(addr % align == 0, f"a {n}-byte allocation at {addr:#x} is not "
                    f"{align}-byte aligned")
            h.check(host_address(0, buf, n - 1, out), "host_address")
            require(int(ffi.cast("uintptr_t", out[0])) == addr + n - 1,
                    "host_address(buffer, offset) is not the buffer's address + offset")
    return {"memory_alignment": align, "observed": "host addresses"}


# (offset, nbytes) pairs inside a 4099-byte buffer: odd offsets, odd sizes, both ends, empty.
PIECES = [(0, 1), (1, 3), (3, 17), (7, 1000), (4098, 1), (1, 4097), (2048, 0), (4099, 0),
          (1001, 2047), (0, 4099), (513, 3)]
BUF_BYTES = 4099


def h2d_d2h_offsets(h, case: Case) -> dict[str, Any]:
    rng = np.random.default_rng(case.seed)
    model = rng.integers(0, 256, BUF_BYTES, dtype=np.uint8)
    with Buffers(h) as b:
        buf = b.alloc(BUF_BYTES)
        h.h2d(buf, model)
        for off, n in PIECES:
            chunk = rng.integers(0, 256, n, dtype=np.uint8)
            h.h2d(buf, chunk, offset=off)
            model[off:off + n] = chunk
            _same(_read(h, buf, BUF_BYTES), model, f"after copy_h2d of {n} bytes at {off}")
        for off, n in PIECES:
            _same(_read(h, buf, n, off), model[off:off + n], f"copy_d2h of {n} bytes at {off}")
    return {"pieces": len(PIECES)}


def d2d_offsets(h, case: Case) -> dict[str, Any]:
    rng = np.random.default_rng(case.seed)
    src_model = rng.integers(0, 256, BUF_BYTES, dtype=np.uint8)
    dst_model = rng.integers(0, 256, BUF_BYTES, dtype=np.uint8)
    with Buffers(h) as b:
        src, dst = b.alloc(BUF_BYTES), b.alloc(BUF_BYTES)
        h.h2d(src, src_model)
        h.h2d(dst, dst_model)
        for (soff, n), (far, _) in zip(PIECES, reversed(PIECES), strict=True):
            doff = min(far, BUF_BYTES - n)
            h.d2d(dst, src, n, doff, soff)
            dst_model[doff:doff + n] = src_model[soff:soff + n]
            _same(_read(h, dst, BUF_BYTES), dst_model,
                  f"after copy_d2d of {n} bytes from {soff} to {doff}")
        # within one buffer, disjoint ranges
        h.d2d(src, src, 1000, 3001, 5)
        src_model[3001:4001] = src_model[5:1005].copy()
        _same(_read(h, src, BUF_BYTES), src_model, "copy_d2d within one buffer")
    return {"pieces": len(PIECES)}


def memset(h, case: Case) -> dict[str, Any]:
    """memset_async on the NULL stream: synchronous, exactly the bytes asked for."""
    h.require("memory", "memset_async")
    rng = np.random.default_rng(case.seed)
    model = rng.integers(0, 256, BUF_BYTES, dtype=np.uint8)
    with Buffers(h) as b:
        buf = b.alloc(BUF_BYTES)
        h.h2d(buf, model)
        for i, (off, n) in enumerate(PIECES):
            value = (37 * i + 11) % 256
            h.memset(buf, value, n, off)
            model[off:off + n] = value
            _same(_read(h, buf, BUF_BYTES), model, f"after memset of {n} bytes at {off} to "
                  f"{value}")
    return {"pieces": len(PIECES)}


def async_copies(h, case: Case) -> dict[str, Any]:
    """The stream-ordered copies on the NULL stream: each returns with its copy complete."""
    present = [n for n in ("copy_h2d_async", "copy_d2h_async", "copy_d2d_async")
               if h.optional("memory", n) is not None]
    if not present:
        raise NotSupported("the plugin has no copy_*_async")
    rng = np.random.default_rng(case.seed)
    model = rng.integers(0, 256, BUF_BYTES, dtype=np.uint8)
    other_model = model.copy()
    with Buffers(h) as b:
        buf, other = b.alloc(BUF_BYTES), b.alloc(BUF_BYTES)
        h.h2d(buf, model)
        h.h2d(other, model)
        for off, n in PIECES:
            if "copy_h2d_async" in present:
                chunk = rng.integers(0, 256, n, dtype=np.uint8)
                h.h2d_async(buf, chunk, off)
                model[off:off + n] = chunk
                _same(_read(h, buf, BUF_BYTES), model, f"after copy_h2d_async of {n} bytes "
                      f"at {off}")
            if "copy_d2h_async" in present:
                out = np.zeros(n, np.uint8)
                h.d2h_async(out, buf, off)
                _same(out, model[off:off + n], f"copy_d2h_async of {n} bytes at {off}")
            if "copy_d2d_async" in present:
                dst_off = BUF_BYTES - n - off % (BUF_BYTES - n + 1)
                h.d2d_async(other, buf, n, dst_off, off)
                other_model[dst_off:dst_off + n] = model[off:off + n]
                _same(_read(h, other, BUF_BYTES), other_model, f"after copy_d2d_async of {n} "
                      f"bytes from {off} to {dst_off}")
    return {"functions": present}


def _stats_before(h) -> dict[str, int]:
    h.require("memory", "get_memory_stats")
    return h.stats()


def stats_track_allocations(h, case: Case) -> dict[str, Any]:
    """Allocations show in the stats: num_allocs/num_frees count each call, bytes_in_use
    grows by at least what was asked for (rounding up is allowed, up to 2x + 64 KiB each),
    peak >= in use, and in use <= bytes_limit when there is one. Another device's stats do not
    move."""
    before = _stats_before(h)
    sizes = [1, 100, 4096, 1 << 20, 12345]
    other = 1 if h.device_count() > 1 else None
    other_before = h.stats(other) if other is not None else None
    with Buffers(h) as b:
        bufs = [b.alloc(n) for n in sizes]
        mid = h.stats()
        if other is not None:
            other_mid = h.stats(other)
            require(other_mid["bytes_in_use"] == other_before["bytes_in_use"]
                    and other_mid["num_allocs"] == other_before["num_allocs"],
                    "allocations on device 0 changed device 1's stats",
                    device1_before=other_before, device1_after=other_mid)
        grown = mid["bytes_in_use"] - before["bytes_in_use"]
        details = {"before": before, "allocated": mid, "requested": sum(sizes)}
        require(mid["num_allocs"] - before["num_allocs"] == len(sizes),
                f"num_allocs grew by {mid['num_allocs'] - before['num_allocs']} for "
                f"{len(sizes)} allocations", **details)
        require(sum(sizes) <= grown <= 2 * sum(sizes) + len(sizes) * (64 << 10),
                f"bytes_in_use grew by {grown} for {len(sizes)} allocations of "
                f"{sum(sizes)} bytes in all", **details)
        require(mid["peak_bytes_in_use"] >= mid["bytes_in_use"],
                f"peak_bytes_in_use {mid['peak_bytes_in_use']} < bytes_in_use "
                f"{mid['bytes_in_use']}", **details)
        require(not mid["bytes_limit"] or mid["bytes_in_use"] <= mid["bytes_limit"],
                f"bytes_in_use {mid['bytes_in_use']} > bytes_limit {mid['bytes_limit']}",
                **details)
        for buf in bufs:
            b.free(buf)
    after = h.stats()
    require(after["num_frees"] - mid["num_frees"] == len(sizes),
            f"num_frees grew by {after['num_frees'] - mid['num_frees']} for {len(sizes)} "
            f"deallocations", before=before, allocated=mid, after=after)
    return {"before": before, "allocated": mid, "after": after, "requested": sum(sizes)}


def leak_check(h, case: Case) -> dict[str, Any]:
    """Rounds of allocating and freeing: bytes_in_use is back at its baseline after each."""
    before = _stats_before(h)
    rng = np.random.default_rng(case.seed)
    rounds = []
    for r in range(3):
        with Buffers(h) as b:
            bufs = [b.alloc(int(n)) for n in rng.integers(1, 1 << 16, 200)]
            for i in rng.permutation(len(bufs)):
                b.free(bufs[i])
        now = h.stats()
        rounds.append(now["bytes_in_use"])
        require(now["bytes_in_use"] == before["bytes_in_use"],
                f"leak: bytes_in_use is {now['bytes_in_use']} after round {r + 1} of 200 "
                f"allocations all freed, {before['bytes_in_use']} before "
                f"({now['bytes_in_use'] - before['bytes_in_use']} bytes not given back)",
                before=before, after=now)
    return {"baseline": before["bytes_in_use"], "after_rounds": rounds}


def _expect_oom(h, nbytes: int, what: str, device: int = 0) -> str:
    from ..direct_host import OK, OUT_OF_MEMORY, ffi

    out = ffi.new("HWP_Buffer *")
    sentinel = ffi.cast("HWP_Buffer", 0x5A5A)
    out[0] = sentinel
    status = h.mem.allocate(device, nbytes, out)
    if status == OK and out[0] != sentinel:  # granted: give it back before failing the check
        h.mem.deallocate(device, out[0])
        out[0] = sentinel
    msg = expect_error(h, status, what, OUT_OF_MEMORY)
    require(out[0] == sentinel, f"{what} failed but wrote its out parameter")
    return msg


def _still_works(h, what: str) -> None:
    data = np.arange(4096, dtype=np.uint8)
    with Buffers(h) as b:
        buf = b.alloc(data.nbytes)
        h.h2d(buf, data)
        _same(_read(h, buf, data.nbytes), data, f"a buffer allocated {what}")


# Names a plugin's memory-limit variable for hwcheck, for plugins that do not follow the
# HWPORT_<DEVICE TYPE>_MEMORY_LIMIT convention.
LIMIT_ENV_OVERRIDE = "HWCHECK_MEMORY_LIMIT_ENV"
CAP = 1 << 20  # the memory cap (bytes) under which the accounting cases fill the device


def _limit_env_candidates(device_type: str) -> list[str]:
    """The plugin's memory-limit variable: the one named by HWCHECK_MEMORY_LIMIT_ENV, the known
    one of a reference plugin, else the convention HWPORT_<DEVICE TYPE>_MEMORY_LIMIT."""
    import os

    names = [os.environ.get(LIMIT_ENV_OVERRIDE, ""), MEMORY_LIMIT_ENV.get(device_type, ""),
             f"HWPORT_{device_type.upper()}_MEMORY_LIMIT" if device_type else ""]
    return list(dict.fromkeys(n for n in names if n))


def _device_type(h) -> str:
    from ..direct_host import ffi, member

    device_type = member(h.api, "HWP_PluginApi", "device_type")
    return ffi.string(device_type).decode() if device_type else ""


def _limited_host(h, limit: int):
    """(a second host of the plugin under its memory-limit variable set to `limit`, the
    variable), or None where no candidate variable (_limit_env_candidates) takes effect: the
    plugin then advertises (total_memory, bytes_limit) more than `limit`."""
    from ..direct_host import DirectHost

    name = _device_type(h)
    for env_var in _limit_env_candidates(name):
        small = DirectHost(h.so_path, env={env_var: str(limit)})
        require(small.api is not None, f"the plugin did not load with {env_var}={limit}: "
                f"{small.init_message}")
        small.init_devices()
        if 0 < _advertised_limit(small) <= limit:
            return small, env_var
        require(env_var != MEMORY_LIMIT_ENV.get(name),
                f"{env_var}={limit} did not take effect: the plugin advertises "
                f"{_advertised_limit(small)} bytes (total_memory / bytes_limit)")
    return None


def out_of_memory(h, case: Case) -> dict[str, Any]:
    """A request the device cannot satisfy returns HWP_ERROR_OUT_OF_MEMORY with a message, the
    plugin keeps working; under a small limit (the plugin's limit variable), requests succeed
    up to the limit, fail past it, and succeed again once memory is freed."""
    details: dict[str, Any] = {}
    details["absurd"] = _expect_oom(h, 1 << 62, "allocate(2**62 bytes)")
    if h.optional("memory", "get_memory_stats") is not None:
        s = h.stats()
        if s["bytes_limit"]:
            over = s["bytes_limit"] - s["bytes_in_use"] + 1
            details["over_limit"] = _expect_oom(h, over, f"allocate({over} bytes, 1 byte more "
                                                         f"than bytes_limit leaves)")
    _still_works(h, "after an out-of-memory error")
    limit = 1 << 20
    limited = _limited_host(h, limit)
    if limited:
        small, env_var = limited
        keep = small.alloc(limit * 3 // 4)
        details["limited"] = _expect_oom(small, limit // 2, f"allocate({limit // 2} bytes) "
                                         f"with {limit * 3 // 4} of {limit} in use "
                                         f"({env_var})")
        small.free(keep)
        again = small.alloc(limit // 2)
        small.free(again)
        _still_works(small, f"under {env_var} after freeing")
        details["limit_env"] = env_var
    return details


def peak_after_free(h, case: Case) -> dict[str, Any]:
    """peak_bytes_in_use is a high-water mark: after allocating A and B and freeing both, the
    peak still covers A + B on top of the baseline (bytes given back: leak_check)."""
    before = _stats_before(h)
    sizes = [(1 << 20) + 3, 12345]
    with Buffers(h) as b:
        for buf in [b.alloc(n) for n in sizes]:
            b.free(buf)
    after = h.stats()
    want = before["bytes_in_use"] + sum(sizes)
    require(after["peak_bytes_in_use"] >= want,
            f"peak_bytes_in_use is {after['peak_bytes_in_use']} after {sum(sizes)} bytes were "
            f"live on top of {before['bytes_in_use']} and then freed (at least {want} expected: "
            f"the peak forgot the high-water mark)", before=before, after=after)
    return {"before": before, "after": after, "sizes": sizes}


ACCOUNTED = ("bytes_in_use", "num_allocs", "num_frees")


def _unchanged(h, before: dict[str, int], what: str) -> dict[str, int]:
    after = h.stats()
    moved = {k: after[k] - before[k] for k in ACCOUNTED if after[k] != before[k]}
    require(not moved, f"{what} changed the memory stats: " + ", ".join(
        f"{k} {d:+d}" for k, d in moved.items()), before=before, after=after)
    return after


def stats_after_refused_allocation(h, case: Case) -> dict[str, Any]:
    """A refused allocation (out of memory: 2**62 bytes; a zero-byte request where it is
    refused) leaves bytes_in_use, num_allocs and num_frees as they were."""
    from ..direct_host import OK, ffi

    before = _stats_before(h)
    _expect_oom(h, 1 << 62, "allocate(2**62 bytes)")
    mid = _unchanged(h, before, "a refused allocate(2**62 bytes)")
    out = ffi.new("HWP_Buffer *")
    if h.mem.allocate(0, 0, out) == OK:  # allowed (alloc_zero_size): nothing refused to check
        h.free(out[0])
        return {"before": before, "zero_size": "accepted"}
    _unchanged(h, mid, "a refused allocate(0 bytes)")
    return {"before": before, "zero_size": "refused"}


def _advertised_limit(h) -> int:
    """The least of total_memory (device properties) and bytes_limit (stats) that the plugin
    advertises; 0 when it advertises neither."""
    limits = [_device_memory(h)]
    if h.optional("memory", "get_memory_stats") is not None:
        limits.append(h.stats()["bytes_limit"])
    return min((x for x in limits if x), default=0)


def beyond_total_refused(h, case: Case) -> dict[str, Any]:
    """One allocation of 1 byte more than the device advertises (total_memory or bytes_limit,
    the smaller; under the 1 MiB memory cap where the plugin has a limit variable) is refused
    with HWP_ERROR_OUT_OF_MEMORY; the plugin keeps working."""
    limited = _limited_host(h, CAP)
    g = limited[0] if limited else h
    limit = _advertised_limit(g)
    if not limit:
        raise NotSupported("the plugin advertises neither total_memory nor bytes_limit")
    _expect_oom(g, limit + 1, f"allocate({limit + 1} bytes, 1 more than the advertised "
                f"{limit})")
    _still_works(g, "after an allocation beyond the device's memory was refused")
    return {"advertised": limit, "requested": limit + 1,
            "limit_env": limited[1] if limited else None}


FILL_LIMIT = 64 << 20  # an uncapped device is filled only if it advertises at most this


def _capped(h) -> tuple[Any, int, str | None]:
    """(the host to fill, its advertised limit, the limit variable used): under the memory cap
    where a limit variable takes effect, else the plugin itself if it advertises at most
    FILL_LIMIT; NotSupported (with the reason) otherwise."""
    limited = _limited_host(h, CAP)
    if limited:
        return limited[0], _advertised_limit(limited[0]), limited[1]
    limit = _advertised_limit(h)
    if not limit:
        raise NotSupported("the plugin advertises neither total_memory nor bytes_limit")
    if limit > FILL_LIMIT:
        tried = ", ".join(_limit_env_candidates(_device_type(h)))
        raise NotSupported(
            f"no memory-limit variable took effect (tried {tried}; name the plugin's with "
            f"{LIMIT_ENV_OVERRIDE}) and the advertised {limit} bytes are more than hwcheck "
            f"fills without a cap ({FILL_LIMIT})")
    return h, limit, None


def _fill(g, limit: int) -> tuple[list, int]:
    """Allocates odd-sized pieces (limit/7 + 13 bytes) until one is refused, which must be a
    clean HWP_ERROR_OUT_OF_MEMORY (out untouched) before more than `limit` bytes were
    granted. Returns (the live pieces, the piece size); the caller frees them."""
    from ..direct_host import OK, OUT_OF_MEMORY, ffi

    piece = limit // 7 + 13
    live: list = []
    out = ffi.new("HWP_Buffer *")
    sentinel = ffi.cast("HWP_Buffer", 0x5A5A)
    try:
        while len(live) * piece <= limit:
            out[0] = sentinel
            status = g.mem.allocate(0, piece, out)
            if status != OK:
                what = f"allocate({piece} bytes) with {len(live)} pieces live"
                expect_error(g, status, what, OUT_OF_MEMORY)
                require(out[0] == sentinel, f"{what} failed but wrote its out parameter")
                require(len(live) >= limit // piece - 1,
                        f"{what} was refused with {len(live) * piece} of {limit} bytes granted "
                        f"(refused early)")
                return live, piece
            live.append(out[0])
    except BaseException:
        _free_all(g, live)
        raise
    granted = len(live) * piece
    _free_all(g, live)
    raise direct_common.CheckFailed(f"{granted // piece} pieces of {piece} bytes ({granted} "
                                    f"bytes) were all granted on a device that advertises "
                                    f"{limit}: allocations beyond the advertised memory are "
                                    f"not refused", granted=granted, advertised=limit)


def _free_all(g, live: list) -> None:
    for buf in reversed(live):
        g.free(buf)
    live.clear()


def fill_to_total(h, case: Case) -> dict[str, Any]:
    """Filling the device in pieces up to its advertised memory (under the 1 MiB cap where the
    plugin has a limit variable, else only a device advertising at most 64 MiB) ends in a clean
    HWP_ERROR_OUT_OF_MEMORY; after freeing, bytes_in_use is back at its baseline and the
    device works again."""
    g, limit, env_var = _capped(h)
    before = _stats_or_none(g)
    live, piece = _fill(g, limit)
    pieces = len(live)
    _free_all(g, live)
    after = _stats_or_none(g)
    if before is not None:
        require(after["bytes_in_use"] == before["bytes_in_use"],
                f"bytes_in_use is {after['bytes_in_use']} after filling the device until out "
                f"of memory and freeing all, {before['bytes_in_use']} before", before=before,
                after=after)
    _still_works(g, "after filling the device until out of memory and freeing all")
    return {"advertised": limit, "piece": piece, "pieces_granted": pieces, "limit_env": env_var}


ROUNDS = 5


def oom_cycles_no_drift(h, case: Case) -> dict[str, Any]:
    """Rounds of filling the device until out of memory (as fill_to_total) and freeing all:
    each round gets as many pieces as the first, num_allocs and num_frees each grow by exactly
    the pieces granted, bytes_in_use is back at its baseline and peak_bytes_in_use equals the
    first round's (no drift in any counter)."""
    g, limit, env_var = _capped(h)
    if g.optional("memory", "get_memory_stats") is None:
        raise NotSupported("the plugin has no get_memory_stats")
    base = g.stats()
    counts, first, prev = [], None, base
    for r in range(ROUNDS):
        live, _ = _fill(g, limit)
        counts.append(len(live))
        _free_all(g, live)  # empties live
        now = g.stats()
        where = f"after round {r + 1} of filling until out of memory and freeing all"
        details = {"baseline": base, "after": now, "pieces_per_round": counts}
        require(now["bytes_in_use"] == base["bytes_in_use"],
                f"drift: bytes_in_use is {now['bytes_in_use']} {where}, "
                f"{base['bytes_in_use']} before "
                f"({now['bytes_in_use'] - base['bytes_in_use']:+d} bytes)", **details)
        for k in ("num_allocs", "num_frees"):
            require(now[k] - prev[k] == counts[-1],
                    f"drift: {k} grew by {now[k] - prev[k]} in round {r + 1}, which granted "
                    f"{counts[-1]} pieces (a refused allocation counted?)", **details)
        require(counts[-1] == counts[0], f"drift: round {r + 1} was granted {counts[-1]} pieces,"
                f" round 1 {counts[0]}", **details)
        first = first if first is not None else now["peak_bytes_in_use"]
        require(now["peak_bytes_in_use"] == first,
                f"drift: peak_bytes_in_use is {now['peak_bytes_in_use']} {where}, "
                f"{first} after round 1", **details)
        prev = now
    _still_works(g, "after rounds of out-of-memory errors")
    return {"advertised": limit, "pieces_per_round": counts, "limit_env": env_var}


def deallocate_null(h, case: Case) -> dict[str, Any]:
    """deallocate(NULL) is a no-op returning HWP_OK (device.h): the stats do not move (no
    free is counted). A double free is the host's bug and undefined (docs/abi.md): not
    exercised."""
    from ..direct_host import NULL, OK

    before = _stats_or_none(h)
    status = h.mem.deallocate(0, NULL)
    require(status == OK, f"deallocate(NULL) returned {status}: {h.last_error()} (device.h: "
            f"NULL is a no-op)")
    if before is not None:
        _unchanged(h, before, "deallocate(NULL)")
    return None


# Offsets into a DLPACK_BYTES buffer whose device addresses are checked: odd, aligned, the last
# byte. DLPack consumers reach byte k of a tensor as its data pointer + k.
DLPACK_BYTES = 4099
ADDRESS_OFFSETS = (0, 1, 3, 64, 1000, 2049, DLPACK_BYTES - 1)


def _out_untouched(what: str, out, sentinel) -> None:
    require(out[0] == sentinel, f"{what} failed but wrote its out parameter")


def device_address(h, case: Case) -> dict[str, Any]:
    """device_address(buf, off) is device_address(buf, 0) + off (DLPack consumers do that
    pointer arithmetic), stable, and disjoint between live buffers; a NULL buffer, an offset
    past the end, a NULL out or a bad device index are errors that leave out untouched."""
    from ..direct_host import INVALID_ARGUMENT, NULL, ffi

    abi11_common.dlpack_device(h)
    fn = h.require("memory", "device_address")
    rng = np.random.default_rng(case.seed)
    with Buffers(h) as b:
        buf, other = b.alloc(DLPACK_BYTES), b.alloc(DLPACK_BYTES)
        h.h2d(buf, rng.integers(0, 256, DLPACK_BYTES, dtype=np.uint8))
        base = abi11_common.address(h, buf)
        require(base != 0, "device_address(buffer, 0) is NULL")
        wrong = {off: got for off in ADDRESS_OFFSETS
                 if (got := abi11_common.address(h, buf, off)) != base + off}
        require(not wrong, "device_address(buffer, offset) is not device_address(buffer, 0) + "
                "offset at offsets " + ", ".join(f"{off} (got base {got - base:+d})"
                                                 for off, got in wrong.items()),
                wrong={str(k): v - base for k, v in wrong.items()})
        require(abi11_common.address(h, buf) == base, "device_address(buffer, 0) changed "
                "between calls")
        second = abi11_common.address(h, other)
        require(second + DLPACK_BYTES <= base or base + DLPACK_BYTES <= second,
                f"two live {DLPACK_BYTES}-byte buffers overlap: device addresses {base:#x} and "
                f"{second:#x}")
        out = ffi.new("void **")
        sentinel = ffi.cast("void *", 0x5A5A)
        for args, what in (((0, NULL, 0, out), "device_address(NULL buffer)"),
                           ((0, buf, DLPACK_BYTES + 1, out),
                            f"device_address(buffer, {DLPACK_BYTES + 1}) of a "
                            f"{DLPACK_BYTES}-byte buffer"),
                           ((0, buf, 1 << 62, out), "device_address(buffer, 2**62)"),
                           ((h.device_count(), buf, 0, out), "device_address(bad device index)")):
            out[0] = sentinel
            expect_error(h, fn(*args), what, INVALID_ARGUMENT)
            _out_untouched(what, out, sentinel)
        expect_error(h, fn(0, buf, 0, NULL), "device_address(out NULL)", INVALID_ARGUMENT)
    return {"offsets": list(ADDRESS_OFFSETS)}


class Wraps:
    """Buffers from wrap_device_memory, released (release_device_buffer) on exit."""

    def __init__(self, h, device: int = 0):
        self.h, self.device, self.live = h, device, []
        self.wrap = h.require("memory", "wrap_device_memory")
        self.release_fn = h.require("memory", "release_device_buffer")

    def __call__(self, address: int, nbytes: int):
        from ..direct_host import ffi

        out = ffi.new("HWP_Buffer *")
        self.h.check(self.wrap(self.device, ffi.cast("void *", address), nbytes, out),
                     f"wrap_device_memory({address:#x}, {nbytes})")
        self.live.append(out[0])
        return out[0]

    def release(self, buf) -> None:
        self.live.remove(buf)
        self.h.check(self.release_fn(self.device, buf), "release_device_buffer")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        for buf in reversed(self.live):
            self.release_fn(self.device, buf)
        self.live.clear()


def _stats_or_none(h) -> dict[str, int] | None:
    return h.stats() if h.optional("memory", "get_memory_stats") is not None else None


def _wrap_errors(h, wraps: Wraps, address: int) -> None:
    from ..direct_host import INVALID_ARGUMENT, NULL, ffi

    out = ffi.new("HWP_Buffer *")
    sentinel = ffi.cast("HWP_Buffer", 0x5A5A)
    for args, what in (((0, NULL, 64, out), "wrap_device_memory(NULL address)"),
                       ((0, ffi.cast("void *", address), 0, out),
                        "wrap_device_memory(0 bytes)"),
                       ((h.device_count(), ffi.cast("void *", address), 64, out),
                        "wrap_device_memory(bad device index)")):
        out[0] = sentinel
        expect_error(h, wraps.wrap(*args), what, INVALID_ARGUMENT)
        _out_untouched(what, out, sentinel)
    expect_error(h, wraps.wrap(0, ffi.cast("void *", address), 64, NULL),
                 "wrap_device_memory(out NULL)", INVALID_ARGUMENT)


def wrap_device_memory(h, case: Case) -> dict[str, Any]:
    """Memory of a buffer, addressed as a DLPack consumer does (device_address(buf, 0) + off),
    wrapped without a copy: reads through the wrap see the buffer's bytes, writes through it
    show in the buffer, copies between wraps and buffers work, the stats do not count it, the
    same address wrapped twice gives two buffers that are released one by one (the first
    release leaves the second usable), and NULL / zero-size arguments are errors."""
    from ..direct_host import PluginError

    abi11_common.dlpack_device(h)
    rng = np.random.default_rng(case.seed)
    model = rng.integers(0, 256, DLPACK_BYTES, dtype=np.uint8)
    off, n = 1000, 2048
    with Buffers(h) as b, Wraps(h) as wraps:
        buf, copy = b.alloc(DLPACK_BYTES), b.alloc(n)
        h.h2d(buf, model)
        address = abi11_common.address(h, buf) + off
        before = _stats_or_none(h)
        w = wraps(address, n)
        _same(_read(h, w, n), model[off:off + n], f"copy_d2h of the {n} bytes wrapped at byte "
              f"{off} of a buffer")
        _same(_read(h, w, 17, 5), model[off + 5:off + 22], "copy_d2h of 17 bytes at offset 5 "
              "of the wrapped buffer")
        chunk = rng.integers(0, 256, 100, dtype=np.uint8)
        h.h2d(w, chunk, offset=10)
        model[off + 10:off + 110] = chunk
        _same(_read(h, buf, DLPACK_BYTES), model, "the buffer after copy_h2d of 100 bytes at "
              "offset 10 of a wrap of its memory (the write did not reach the memory)")
        h.d2d(copy, w, n)
        _same(_read(h, copy, n), model[off:off + n], "copy_d2d from the wrapped buffer")
        during = _stats_or_none(h)
        if before is not None:
            require(during["bytes_in_use"] == before["bytes_in_use"]
                    and during["num_allocs"] == before["num_allocs"],
                    "wrap_device_memory changed the memory stats (device.h: wrapped memory is "
                    "not counted)", before=before, after=during)
        again = wraps(address, n)
        wraps.release(w)
        what = "a second wrap of the same address after the first was released"
        try:
            _same(_read(h, again, n), model[off:off + n], what)
        except PluginError as e:
            raise direct_common.CheckFailed(f"{what}: {e}", status=e.status) from None
        wraps.release(again)
        _same(_read(h, buf, DLPACK_BYTES), model, "the buffer after its wraps were released")
        _wrap_errors(h, wraps, address)
        after = _stats_or_none(h)
        if before is not None:
            require(after["bytes_in_use"] == before["bytes_in_use"]
                    and after["num_frees"] == before["num_frees"],
                    "release_device_buffer changed the memory stats", before=before, after=after)
    return {"offset": off, "nbytes": n, "stats_checked": before is not None}


CHECKS = {
    "alloc_zero_size": alloc_zero_size,
    "alloc_tiny": alloc_tiny,
    "alloc_large": alloc_large,
    "alloc_many": alloc_many,
    "alignment": alignment,
    "h2d_d2h_offsets": h2d_d2h_offsets,
    "d2d_offsets": d2d_offsets,
    "memset": memset,
    "async_copies": async_copies,
    "stats_track_allocations": stats_track_allocations,
    "leak_check": leak_check,
    "out_of_memory": out_of_memory,
    "peak_after_free": peak_after_free,
    "stats_after_refused_allocation": stats_after_refused_allocation,
    "beyond_total_refused": beyond_total_refused,
    "fill_to_total": fill_to_total,
    "oom_cycles_no_drift": oom_cycles_no_drift,
    "deallocate_null": deallocate_null,
    "device_address": device_address,
    "wrap_device_memory": wrap_device_memory,
}
