"""The stream suite: the stream and event table and stream-ordered copies, driven directly
through the C ABI (device.h).

The checks are built so that a plugin that runs work out of order, or before what it must wait
for, FAILs: long chains of overlapping memsets/copies on one stream whose result depends on the
order (in_order_chain, async_copies_in_order), a stream that waits for another's event
(cross_stream_event), and host-visible results read the moment query/event/destroy/sync copies
say the work is done (query_vs_synchronize, event_semantics, sync_copy_waits_for_streams,
destroy_waits), and, for the ABI 1.1 exchange with other frameworks, a native stream made to
wait for one of the plugin's streams (native_stream_wait) and the native handles themselves
(native_stream). Each expected result is computed with numpy. A plugin without a stream table
(the host then uses one implicit in-order stream) gives NOT_SUPPORTED, as does one that lacks
the optional functions a case needs; a plugin that does not load gives one FAIL,
stream::plugin-loads.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..model import Case, Result, Target
from . import direct_common, ordering
from .direct_common import expect_error, require
from .memory import _read, _same
from .stream_common import CHAIN_BYTES, Streams, _chain, _needs, _read_back

NAME = "stream"

BIG_BYTES = 8 << 20


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    failed = direct_common.load_gate(NAME, target, options)
    return failed or [Case(NAME, name) for name in CHECKS]


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    return direct_common.run_check(CHECKS, target, case, state)


def _wait_until_ok(query, what: str) -> int:
    """Polls query() until HWP_OK; returns how often it said NOT_READY. A plugin that never
    completes makes the runner time the case out."""
    from ..direct_host import NOT_READY, OK

    not_ready = 0
    while (status := query()) == NOT_READY:
        not_ready += 1
        time.sleep(0.0002)
    require(status == OK, f"{what} returned {status}, expected HWP_OK or HWP_ERROR_NOT_READY")
    return not_ready


def lifecycle(h, case: Case) -> dict[str, Any]:
    from ..direct_host import INVALID_ARGUMENT, NULL, OK

    devices = min(h.device_count(), 2)
    has_events = h.optional("stream", "create_event") is not None
    query = h.optional("stream", "query_stream")
    for d in range(devices):
        with Streams(h, d) as st:
            streams = [st.stream() for _ in range(16)]
            require(len({int(h_addr(s)) for s in streams}) == 16, "duplicate stream handles")
            events = [st.event() for _ in range(16)] if has_events else []
            for s in streams:
                h.sync_stream(s, d)
                if query is not None:
                    require(query(d, s) == OK, f"query_stream on an idle stream of device {d} "
                            f"is not HWP_OK")
            require(len({int(h_addr(e)) for e in events}) == len(events),
                    "duplicate event handles")
    require(h.streams.destroy_stream(0, NULL) == OK, "destroy_stream(NULL) is not a no-op")
    if has_events:
        require(h.streams.destroy_event(0, NULL) == OK, "destroy_event(NULL) is not a no-op")
    expect_error(h, h.streams.create_stream(0, NULL), "create_stream(out NULL)",
                 INVALID_ARGUMENT)
    return {"devices": devices, "streams_each": 16, "events": has_events}


def h_addr(handle) -> int:
    from ..direct_host import ffi

    return int(ffi.cast("uintptr_t", handle))


def in_order_chain(h, case: Case) -> dict[str, Any]:
    rng = np.random.default_rng(case.seed)
    with Streams(h) as st:
        s = st.stream()
        buf = st.alloc(CHAIN_BYTES)
        h.h2d(buf, np.zeros(CHAIN_BYTES, np.uint8))
        want = _chain(h, st, s, buf, rng, CHAIN_BYTES)
        _same(_read_back(h, st, s, buf, CHAIN_BYTES), want,
              "48 overlapping stream-ordered writes on one stream (work ran out of order?)")
    return {"ops": 48, "nbytes": CHAIN_BYTES}


def async_copies_in_order(h, case: Case) -> dict[str, Any]:
    """h2d A, d2h, h2d B, d2h on one stream: the first read sees A, the second B."""
    _needs(h, "copy_h2d_async", "copy_d2h_async")
    rng = np.random.default_rng(case.seed)
    with Streams(h) as st:
        s = st.stream()
        buf = st.alloc(BIG_BYTES)
        outs, datas = [], []
        for _ in range(3):
            data = st.host(np.frombuffer(rng.bytes(BIG_BYTES), np.uint8))
            out = st.host(np.zeros(BIG_BYTES, np.uint8))
            h.h2d_async(buf, data, 0, s)
            h.d2h_async(out, buf, 0, s)
            outs.append(out)
            datas.append(data)
        h.sync_stream(s)
        for i, (out, data) in enumerate(zip(outs, datas, strict=True)):
            _same(out, data, f"read {i + 1} of 3 (each follows its own copy_h2d_async on the "
                  f"same stream)")
    return {"nbytes": BIG_BYTES}


def query_vs_synchronize(h, case: Case) -> dict[str, Any]:
    """query_stream says HWP_OK only once the work is done: the host memory a d2h_async
    writes is complete the moment it does. synchronize_stream leaves the stream idle."""
    from ..direct_host import OK

    _needs(h, "query_stream", "copy_d2h_async")
    rng = np.random.default_rng(case.seed)
    data = np.frombuffer(rng.bytes(BIG_BYTES), np.uint8)
    with Streams(h) as st:
        s = st.stream()
        require(h.query_stream(s) == OK, "query_stream on a new stream is not HWP_OK")
        buf = st.alloc(BIG_BYTES)
        h.h2d(buf, data)
        out = st.host(np.zeros(BIG_BYTES, np.uint8))
        h.d2h_async(out, buf, 0, s)
        not_ready = _wait_until_ok(lambda: h.query_stream(s), "query_stream")
        _same(out.copy(), data, "host memory of a copy_d2h_async when query_stream said "
              "HWP_OK")
        out2 = st.host(np.zeros(BIG_BYTES, np.uint8))
        h.d2h_async(out2, buf, 0, s)
        h.sync_stream(s)
        _same(out2.copy(), data, "host memory of a copy_d2h_async after synchronize_stream")
        require(h.query_stream(s) == OK, "query_stream after synchronize_stream is not HWP_OK")
    return {"not_ready_polls": not_ready}


def _chain_seen_across(h, st: Streams, rng: np.random.Generator, wait, what: str) -> tuple:
    """Streams A and B: a chain of writes on A, then wait(A, B) (what must hold B back until
    A's work so far is done), then B copies A's result and reads it back; only B is
    synchronized, so B must see all of A's chain. Returns (A, B)."""
    a, b = st.stream(), st.stream()
    x, y = st.alloc(CHAIN_BYTES), st.alloc(CHAIN_BYTES)
    h.h2d(x, np.zeros(CHAIN_BYTES, np.uint8))
    h.h2d(y, np.zeros(CHAIN_BYTES, np.uint8))
    want = _chain(h, st, a, x, rng, CHAIN_BYTES)
    wait(a, b)
    h.d2d_async(y, x, CHAIN_BYTES, 0, 0, b)
    got = _read_back(h, st, b, y, CHAIN_BYTES)
    _same(got.copy(), want, f"stream B's copy after {what} (the wait did not hold B back, or "
          f"A ran out of order)")
    h.sync_stream(a)
    return a, b


def cross_stream_event(h, case: Case) -> dict[str, Any]:
    """Stream B waits for an event recorded on stream A after a chain of writes, then copies
    and reads the result; only B is synchronized. B must see all of A's chain."""
    _needs(h, "create_event", "record_event", "stream_wait_event", "copy_d2d_async")

    def wait(a, b) -> None:
        e = st.event()
        h.record_event(a, e)
        h.wait_event(b, e)

    with Streams(h) as st:
        _chain_seen_across(h, st, np.random.default_rng(case.seed), wait,
                           "waiting for stream A's event")
    return {"nbytes": CHAIN_BYTES}


def event_semantics(h, case: Case) -> dict[str, Any]:
    """An event never recorded is complete; synchronize_event returns once the captured work
    is done (the host memory it wrote is complete); query_event says HWP_OK or NOT_READY and
    ends at HWP_OK; recording again on an idle stream replaces what it waits for."""
    from ..direct_host import OK

    _needs(h, "create_event", "record_event", "synchronize_event", "query_event",
           "copy_d2h_async")
    rng = np.random.default_rng(case.seed)
    data = np.frombuffer(rng.bytes(BIG_BYTES), np.uint8)
    with Streams(h) as st:
        s, idle = st.stream(), st.stream()
        e = st.event()
        require(h.query_event(e) == OK, "query_event on an event never recorded is not HWP_OK")
        h.sync_event(e)
        buf = st.alloc(BIG_BYTES)
        h.h2d(buf, data)
        out = st.host(np.zeros(BIG_BYTES, np.uint8))
        h.d2h_async(out, buf, 0, s)
        h.record_event(s, e)
        h.sync_event(e)
        _same(out.copy(), data, "host memory of a copy_d2h_async after synchronize_event")
        out2 = st.host(np.zeros(BIG_BYTES, np.uint8))
        h.d2h_async(out2, buf, 0, s)
        h.record_event(s, e)
        not_ready = _wait_until_ok(lambda: h.query_event(e), "query_event")
        _same(out2.copy(), data, "host memory of a copy_d2h_async when query_event said "
              "HWP_OK")
        h.record_event(idle, e)
        _wait_until_ok(lambda: h.query_event(e), "query_event after recording on an idle "
                       "stream")
        h.sync_stream(s)
    return {"not_ready_polls": not_ready}


def sync_copy_waits_for_streams(h, case: Case) -> dict[str, Any]:
    """device.h: a synchronous copy first waits for all work already submitted to the
    device, on every stream."""
    with Streams(h) as st:
        s = st.stream()
        buf = st.alloc(BIG_BYTES)
        h.h2d(buf, np.zeros(BIG_BYTES, np.uint8))
        if h.optional("memory", "memset_async") is not None:
            want = np.full(BIG_BYTES, 7, np.uint8)
            h.memset(buf, 7, BIG_BYTES, 0, s)
        else:
            _needs(h, "copy_h2d_async")
            want = st.host(np.frombuffer(np.random.default_rng(case.seed).bytes(BIG_BYTES),
                                         np.uint8))
            h.h2d_async(buf, want, 0, s)
        _same(_read(h, buf, BIG_BYTES), want, "copy_d2h right after stream-ordered work (it "
              "did not wait for the stream)")
        h.sync_stream(s)
    return None


def destroy_waits(h, case: Case) -> dict[str, Any]:
    """device.h: destroying a stream waits for its pending work."""
    _needs(h, "copy_d2h_async")
    data = np.frombuffer(np.random.default_rng(case.seed).bytes(BIG_BYTES), np.uint8)
    with Streams(h) as st:
        buf = st.alloc(BIG_BYTES)
        h.h2d(buf, data)
        s = h.create_stream()
        out = st.host(np.zeros(BIG_BYTES, np.uint8))
        h.d2h_async(out, buf, 0, s)
        h.destroy_stream(s)
        _same(out.copy(), data, "host memory of a copy_d2h_async once destroy_stream returned")
    return None


def _native(h, stream, device: int = 0) -> int:
    from ..direct_host import ffi

    out = ffi.new("uintptr_t *")
    h.check(h.require("stream", "native_stream")(device, stream, out), "native_stream")
    return int(out[0])


def native_stream(h, case: Case) -> dict[str, Any]:
    """native_stream gives each stream (and the NULL stream's synchronous queue) a non-zero
    handle, distinct between streams and the same on every call; a NULL out, a bad device
    index and another device's stream are errors that leave out untouched."""
    from ..direct_host import INVALID_ARGUMENT, NULL, ffi

    _needs(h, "native_stream")
    fn = h.require("stream", "native_stream")
    with Streams(h) as st:
        streams = [st.stream() for _ in range(4)]
        handles = [_native(h, s) for s in [NULL, *streams]]
        names = ["the NULL stream", *(f"stream {i}" for i in range(len(streams)))]
        zero = [n for n, v in zip(names, handles, strict=True) if v == 0]
        require(not zero, f"native_stream gave 0 for {', '.join(zero)} (0 is no stream "
                f"in DLPack)")
        require(len(set(handles)) == len(handles), "native_stream gave the same handle to "
                f"different streams: {dict(zip(names, map(hex, handles), strict=True))}")
        again = [_native(h, s) for s in [NULL, *streams]]
        require(again == handles, "native_stream changed between calls")
        out = ffi.new("uintptr_t *")
        bad = [((0, streams[0], NULL), "native_stream(out NULL)", INVALID_ARGUMENT),
               ((h.device_count(), streams[0], out), "native_stream(bad device index)",
                INVALID_ARGUMENT)]
        if h.device_count() > 1:
            bad.append(((1, streams[0], out), "native_stream(device 1, a stream of device 0)",
                        None))
        for args, what, expected in bad:
            out[0] = 0x5A5A
            expect_error(h, fn(*args), what, expected)
            require(out[0] == 0x5A5A, f"{what} failed but wrote its out parameter")
    return {"streams": len(streams), "null_stream_handle_distinct": True}


def native_stream_wait(h, case: Case) -> dict[str, Any]:
    """The native handle of stream B, made to wait (native_stream_wait) for stream A after a
    chain of writes, then B copies and reads the result; only B is synchronized. B must see
    all of A's chain, as in cross_stream_event. Native stream 0 is INVALID_ARGUMENT (DLPack
    forbids it); a wait for the NULL stream (whose work is complete) is HWP_OK."""
    from ..direct_host import INVALID_ARGUMENT, NULL

    _needs(h, "native_stream", "native_stream_wait", "copy_d2d_async")
    fn = h.require("stream", "native_stream_wait")

    def wait(a, b) -> None:
        h.check(fn(0, _native(h, b), a), "native_stream_wait(native_stream(B), A)")

    with Streams(h) as st:
        a, b = _chain_seen_across(h, st, np.random.default_rng(case.seed), wait,
                                  "native_stream_wait(native_stream(B), A)")
        expect_error(h, fn(0, 0, a), "native_stream_wait(native 0, A)", INVALID_ARGUMENT)
        expect_error(h, fn(h.device_count(), _native(h, b), a),
                     "native_stream_wait(bad device index)", INVALID_ARGUMENT)
        h.check(fn(0, _native(h, b), NULL), "native_stream_wait(native_stream(B), NULL stream)")
    return {"nbytes": CHAIN_BYTES}


CHECKS = {
    "lifecycle": lifecycle,
    "in_order_chain": in_order_chain,
    "async_copies_in_order": async_copies_in_order,
    "query_vs_synchronize": query_vs_synchronize,
    "cross_stream_event": cross_stream_event,
    "event_semantics": event_semantics,
    "sync_copy_waits_for_streams": sync_copy_waits_for_streams,
    "destroy_waits": destroy_waits,
    "native_stream": native_stream,
    "native_stream_wait": native_stream_wait,
    **ordering.STREAM_CHECKS,  # implicit ordering
}
