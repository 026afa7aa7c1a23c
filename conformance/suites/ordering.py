"""Implicit ordering (docs/abi.md, "Implicit ordering"): the synchronous entry points of the
memory table, the NULL-stream forms of the stream-ordered ones and synchronize_device against
work still queued on several created streams; a stream waiting for several events of several
streams; a stream waiting for an event of another device's stream. The stream suite runs
STREAM_CHECKS, the device suite synchronize_all_streams.

Every case first queues long work on each of several streams: a delay (fills of a scratch
buffer, calibrated to last about DELAY_S on this device) and then a chain of 48 overlapping
writes to the stream's own region of a shared buffer (stream_common._chain). The call under
test comes right after, while that work is pending (details.pending_at_call counts the streams
that query_stream still reported busy), so a plugin that does not order FAILs every time, not
by luck: its call runs before the chains, and their writes land after it.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..model import Case, NotSupported
from .direct_common import require
from .memory import Buffers, _same
from .stream_common import Streams, _chain, _needs, _read_back

DELAY_S = 0.04
REGION = 1 << 18  # bytes each stream's chain writes
STREAMS = 3
MAX_DELAY_OPS = 256
MAX_SCRATCH = 64 << 20

# DirectHost -> {device: (ops, scratch bytes)}: calibrated once per host and device
_calibrated: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _delay_kind(h) -> str:
    for kind in ("memset_async", "copy_d2d_async", "copy_h2d_async"):
        if h.optional("memory", kind) is not None:
            return kind
    raise NotSupported("the plugin has no stream-ordered memset or copy to queue work with")


def _fill(h, st: Streams, s, scratch, ops: int, nbytes: int) -> None:
    """Enqueues `ops` fills of `nbytes` of `scratch` on stream `s`."""
    kind = _delay_kind(h)
    src = st.host(np.zeros(nbytes, np.uint8)) if kind == "copy_h2d_async" else None
    for i in range(ops):
        if kind == "memset_async":
            h.memset(scratch, i & 0xFF, nbytes, 0, s, st.device)
        elif kind == "copy_d2d_async":
            h.d2d_async(scratch, scratch, nbytes // 2, 0, nbytes // 2, s, st.device)
        else:
            h.h2d_async(scratch, src, 0, s, st.device)


def _delay(h, st: Streams, s, ops: int, nbytes: int) -> None:
    """Enqueues `ops` fills of a fresh scratch buffer of `nbytes` on stream `s`."""
    _fill(h, st, s, st.alloc(nbytes), ops, nbytes)


def delay_size(h, st: Streams) -> tuple[int, int]:
    """(ops, bytes) of a delay that keeps a stream of st.device busy for about DELAY_S (timed
    on one stream after a warm-up fill; the real delays run on fresh buffers, several streams
    at once, so they last longer if anything)."""
    known = _calibrated.setdefault(h, {})
    if st.device not in known:
        s = st.stream()
        ops, nbytes = 4, 4 << 20
        scratch, size = None, 0
        while True:
            if size < nbytes:
                if scratch is not None:
                    st.free(scratch)
                scratch, size = st.alloc(nbytes), nbytes
            _fill(h, st, s, scratch, 1, nbytes)  # first touch of the pages, not timed
            h.sync_stream(s, st.device)
            t0 = time.perf_counter()
            _fill(h, st, s, scratch, ops, nbytes)
            h.sync_stream(s, st.device)
            took = time.perf_counter() - t0
            if took >= DELAY_S / 4 or (ops >= MAX_DELAY_OPS and nbytes >= MAX_SCRATCH):
                break
            if ops < MAX_DELAY_OPS:
                ops *= 4
            else:
                nbytes *= 4
        st.free(scratch)
        ops = max(4, min(MAX_DELAY_OPS, math.ceil(ops * DELAY_S / max(took, 1e-6))))
        known[st.device] = (ops, nbytes)
    return known[st.device]


def busy(h, st: Streams, streams: list, buf, rng: np.random.Generator,
         weights: list[int] | None = None) -> np.ndarray:
    """Queues on stream i a delay (`weights[i]` times the calibrated one; by default the
    first stream's is the longest and the last's the shortest, so a plugin that waits only for
    the stream it saw last misses the others every time) and then a chain on bytes
    [i * REGION, (i + 1) * REGION) of `buf` (zeros before); returns the content of `buf` once
    all of it has run."""
    ops, nbytes = delay_size(h, st)
    weights = weights or list(range(len(streams), 0, -1))
    want = np.zeros(len(streams) * REGION, np.uint8)
    for i, s in enumerate(streams):
        _delay(h, st, s, ops * weights[i], nbytes)
        want[i * REGION:(i + 1) * REGION] = _chain(h, st, s, buf, rng, REGION, base=i * REGION)
    return want


def pending(h, streams: list, device: int = 0) -> int | None:
    """How many of `streams` query_stream reports busy (None without query_stream)."""
    from ..direct_host import NOT_READY

    if h.optional("stream", "query_stream") is None:
        return None
    return sum(h.query_stream(s, device) == NOT_READY for s in streams)


def same_regions(got: np.ndarray, want: np.ndarray, what: str, who: str = "stream") -> None:
    """_same, naming the streams whose regions differ."""
    bad = [i for i in range(len(want) // REGION)
           if not np.array_equal(got[i * REGION:(i + 1) * REGION],
                                 want[i * REGION:(i + 1) * REGION])]
    if bad:
        _same(got, want, f"{what}; wrong in the region of {who} {', '.join(map(str, bad))} "
              f"of {len(want) // REGION}")


def _sync_all(h, streams: list, device: int = 0) -> None:
    for s in streams:
        h.sync_stream(s, device)


def _zeros(h, buf, nbytes: int, device: int = 0) -> None:
    h.h2d(buf, np.zeros(nbytes, np.uint8), device=device)  # while every stream is idle


Write = Callable[[Any, Any, np.ndarray], None]


def _write_over_busy(h, case: Case, write: Write, what: str, fill: int | None = None) -> dict:
    """Streams write their regions of a buffer; `write(dst, src, data)` (src a buffer holding
    `data`, written while the streams were idle) overwrites all of it at once. Once every
    stream is synchronized the buffer must hold `data`: the write came after the queued work."""
    rng = np.random.default_rng(case.seed)
    n = STREAMS * REGION
    data = (np.full(n, fill, np.uint8) if fill is not None
            else np.frombuffer(rng.bytes(n), np.uint8))
    with Streams(h) as st:
        streams = [st.stream() for _ in range(STREAMS)]
        dst, src = st.alloc(n), st.alloc(n)
        _zeros(h, dst, n)
        h.h2d(src, data)
        busy(h, st, streams, dst, rng)
        busy_at_call = pending(h, streams)
        write(dst, src, data)
        _sync_all(h, streams)
        same_regions(np.frombuffer(h.d2h(dst, n), np.uint8), data,
                     f"{what} into a buffer {STREAMS} streams were still writing, read once they "
                     f"were synchronized (it did not wait for their queued work)")
    return {"streams": STREAMS, "pending_at_call": busy_at_call}


Read = Callable[[Any, int], Callable[[], np.ndarray]]


def _read_busy(h, case: Case, read: Read, what: str) -> dict:
    """Streams write their regions of a buffer; `read(buf, n)` reads all of it at once and
    returns how to get what it read (called once the streams are synchronized: host memory is
    snapshotted by `read` itself). It must be all the streams' queued work."""
    rng = np.random.default_rng(case.seed)
    n = STREAMS * REGION
    with Streams(h) as st:
        streams = [st.stream() for _ in range(STREAMS)]
        buf = st.alloc(n)
        _zeros(h, buf, n)
        want = busy(h, st, streams, buf, rng)
        busy_at_call = pending(h, streams)
        result = read(buf, n)
        _sync_all(h, streams)
        same_regions(result(), want, f"{what} of a buffer {STREAMS} streams were still "
                     f"writing (it did not wait for their queued work)")
    return {"streams": STREAMS, "pending_at_call": busy_at_call}


def sync_h2d_waits_all_streams(h, case: Case) -> dict[str, Any]:
    """device.h: copy_h2d first waits for the work already submitted to the device, on every
    stream."""
    _needs(h)
    return _write_over_busy(h, case, lambda dst, src, data: h.h2d(dst, data), "copy_h2d")


def sync_d2h_waits_all_streams(h, case: Case) -> dict[str, Any]:
    """copy_d2h after queued work on several streams sees all of it."""
    _needs(h)

    def read(buf, n: int):
        got = np.frombuffer(h.d2h(buf, n), np.uint8)
        return lambda: got

    return _read_busy(h, case, read, "copy_d2h")


def sync_d2d_waits_all_streams(h, case: Case) -> dict[str, Any]:
    """copy_d2d into a buffer the streams are writing comes after their work, and copy_d2d
    from a buffer they are writing copies all of their work."""
    _needs(h)
    details = _write_over_busy(h, case, lambda dst, src, data: h.d2d(dst, src, data.nbytes),
                               "copy_d2d")
    with Buffers(h) as keep:
        def read(buf, n: int):
            out = keep.alloc(n)
            h.d2d(out, buf, n)
            return lambda: np.frombuffer(h.d2h(out, n), np.uint8)

        details["from_busy"] = _read_busy(h, case, read, "copy_d2d")
    return details


def null_stream_waits_all_streams(h, case: Case) -> dict[str, Any]:
    """device.h: a NULL stream passed to a stream-ordered copy or memset means synchronous:
    the call waits for the device's earlier work on every stream, does its own, and returns
    with it complete. Each of the four the plugin has is checked."""
    from ..direct_host import NULL

    _needs(h)
    done: dict[str, Any] = {}
    fns = [k for k in ("copy_h2d_async", "copy_d2h_async", "copy_d2d_async", "memset_async")
           if h.optional("memory", k) is not None]
    if not fns:
        raise NotSupported("the plugin has no stream-ordered copy or memset")
    if "copy_h2d_async" in fns:
        done["copy_h2d_async"] = _write_over_busy(
            h, case, lambda dst, src, data: h.h2d_async(dst, data, 0, NULL),
            "copy_h2d_async(NULL stream)")
    if "memset_async" in fns:
        done["memset_async"] = _write_over_busy(
            h, case, lambda dst, src, data: h.memset(dst, 0xA5, data.nbytes, 0, NULL),
            "memset_async(NULL stream)", fill=0xA5)
    if "copy_d2d_async" in fns:
        done["copy_d2d_async"] = _write_over_busy(
            h, case, lambda dst, src, data: h.d2d_async(dst, src, data.nbytes, 0, 0, NULL),
            "copy_d2d_async(NULL stream)")
    if "copy_d2h_async" in fns:
        def read(buf, n: int):
            out = np.zeros(n, np.uint8)
            h.d2h_async(out, buf, 0, NULL)
            got = out.copy()  # complete when the call returns
            return lambda: got

        done["copy_d2h_async"] = _read_busy(h, case, read, "copy_d2h_async(NULL stream)")
    return done


def wait_several_events(h, case: Case) -> dict[str, Any]:
    """A consumer stream waits for one event of each of three producer streams (each after a
    chain on its own region), then copies all regions and reads them back; only the consumer
    is synchronized: it must see every producer's chain. Twice: the first event waited for is
    the slowest producer's, then the last one is (a plugin that keeps only the last, or only
    the first, of the waits lets the consumer run while the slowest producer still writes)."""
    _needs(h, "create_event", "record_event", "stream_wait_event", "copy_d2d_async")
    rng = np.random.default_rng(case.seed)
    n = STREAMS * REGION
    with Streams(h) as st:
        producers = [st.stream() for _ in range(STREAMS)]
        consumer = st.stream()
        x, y = st.alloc(n), st.alloc(n)
        rounds = {"slowest waited first": list(range(STREAMS, 0, -1)),
                  "slowest waited last": list(range(1, STREAMS + 1))}
        for label, weights in rounds.items():
            _zeros(h, x, n)
            _zeros(h, y, n)
            want = busy(h, st, producers, x, rng, weights)
            for s in producers:
                e = st.event()
                h.record_event(s, e)
                h.wait_event(consumer, e)
            h.d2d_async(y, x, n, 0, 0, consumer)
            got = _read_back(h, st, consumer, y, n).copy()
            same_regions(got, want, f"the consumer stream's copy after waiting for the events "
                         f"of {STREAMS} producer streams ({label}; a wait was dropped)",
                         who="producer")
            _sync_all(h, producers)
    return {"producers": STREAMS, "rounds": list(rounds)}


def _cross_device(h, rng: np.random.Generator, a_dev: int, b_dev: int) -> None:
    """A chain on a stream of device a_dev, copied to host memory on that stream, then an
    event; a stream of device b_dev waits for it, uploads the host memory to its own buffer and
    reads it back. Only the b_dev stream is synchronized: it must see the whole chain."""
    with Streams(h, a_dev) as sa, Streams(h, b_dev) as sb:
        a, b = sa.stream(), sb.stream()
        xa, xb = sa.alloc(REGION), sb.alloc(REGION)
        _zeros(h, xa, REGION, a_dev)
        _zeros(h, xb, REGION, b_dev)
        bridge = sa.host(np.zeros(REGION, np.uint8))
        want = busy(h, sa, [a], xa, rng)
        h.d2h_async(bridge, xa, 0, a, a_dev)
        e = sa.event()
        h.record_event(a, e, a_dev)
        h.wait_event(b, e, b_dev)  # the event is device a_dev's
        h.h2d_async(xb, bridge, 0, b, b_dev)
        got = _read_back(h, sb, b, xb, REGION).copy()
        _same(got, want, f"a stream of device {b_dev} after waiting for an event recorded on a "
              f"stream of device {a_dev} (the wait did not hold it back)")
        h.sync_stream(a, a_dev)


def cross_device_event(h, case: Case) -> dict[str, Any]:
    """device.h: an event may be waited on by a stream of another device of the same plugin.
    Every device d waits for device d+1's event and d+1 for d's (up to 4 devices)."""
    _needs(h, "create_event", "record_event", "stream_wait_event", "copy_h2d_async",
           "copy_d2h_async")
    n = h.device_count()
    if n < 2:
        raise NotSupported(f"the plugin has {n} device (a cross-device wait needs two)")
    rng = np.random.default_rng(case.seed)
    devices = min(n, 4)
    pairs = sorted({(d, (d + 1) % devices) for d in range(devices)}
                   | {((d + 1) % devices, d) for d in range(devices)})
    for a_dev, b_dev in pairs:
        _cross_device(h, rng, a_dev, b_dev)
    return {"pairs": [list(p) for p in pairs]}


def synchronize_all_streams(h, case: Case) -> dict[str, Any]:
    """device.h: synchronize_device blocks until all work submitted to the device, on every
    stream, has completed. Several streams queue long work ending in a copy_d2h_async to host
    memory; the moment synchronize_device returns, that host memory is complete and every
    stream's query_stream says HWP_OK (for each device, up to 2)."""
    from ..direct_host import OK

    _needs(h)
    has_d2h = h.optional("memory", "copy_d2h_async") is not None
    has_query = h.optional("stream", "query_stream") is not None
    if not (has_d2h or has_query):
        raise NotSupported("the plugin has neither copy_d2h_async nor query_stream (nothing "
                           "shows whether a stream's work is complete without waiting for it)")
    rng = np.random.default_rng(case.seed)
    seen = {}
    for d in range(min(h.device_count(), 2)):
        with Streams(h, d) as st:
            streams = [st.stream() for _ in range(STREAMS)]
            buf = st.alloc(STREAMS * REGION)
            _zeros(h, buf, STREAMS * REGION, d)
            want = busy(h, st, streams, buf, rng)
            outs = [st.host(np.zeros(REGION, np.uint8)) for _ in streams]
            if has_d2h:
                for i, (s, out) in enumerate(zip(streams, outs, strict=True)):
                    h.d2h_async(out, buf, i * REGION, s, d)
            busy_at_call = pending(h, streams, d)
            h.sync_device(d)
            got = np.concatenate([out.copy() for out in outs])
            idle = [h.query_stream(s, d) == OK for s in streams] if has_query else []
            if has_d2h:
                same_regions(got, want, f"device {d}: host memory of copy_d2h_async on "
                             f"{STREAMS} streams the moment synchronize_device returned")
            busy_after = [i for i, ok in enumerate(idle) if not ok]
            require(not busy_after, f"device {d}: query_stream of stream(s) {busy_after} is "
                    f"not HWP_OK right after synchronize_device")
            seen[d] = {"pending_at_call": busy_at_call}
    return {"streams": STREAMS, "devices": seen}


STREAM_CHECKS = {
    "sync_h2d_waits_all_streams": sync_h2d_waits_all_streams,
    "sync_d2h_waits_all_streams": sync_d2h_waits_all_streams,
    "sync_d2d_waits_all_streams": sync_d2d_waits_all_streams,
    "null_stream_waits_all_streams": null_stream_waits_all_streams,
    "wait_several_events": wait_several_events,
    "cross_device_event": cross_device_event,
}
