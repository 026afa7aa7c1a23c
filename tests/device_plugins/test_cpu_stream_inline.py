"""The CPU plugin's inline launches (device_plugins/cpu/stream.c): work of at most a million
elements (multiply-adds for matmul) on an idle stream runs on the caller's thread, so a small
step pays no worker wake-up. Every stream guarantee holds for it: order behind queued work and
behind stream_wait_event, completion when the call returns, and errors reported once, by the
launch itself (inline) or by the next synchronize (queued)."""

from __future__ import annotations

import numpy as np
import pytest

from hwport.conformance.direct_host import (
    DEVICE_ERROR,
    DTYPE_CODE,
    INVALID_ARGUMENT,
    NOT_READY,
    OK,
    DeviceArray,
    ffi,
)

F32 = DTYPE_CODE["float32"]
BIG = 1 << 22  # elements: milliseconds of work, above the inline threshold (runs on the worker)
INLINE_MAX = 1_000_000  # the default threshold (device_plugins/cpu/internal.h)


@pytest.fixture
def streams(cpu):
    made = [cpu.create_stream() for _ in range(2)]
    yield made
    for s in made:
        cpu.destroy_stream(s)


def memory(arr: DeviceArray) -> np.ndarray:
    """The device memory itself (the CPU plugin's buffers are host memory): read without a
    copy, which would synchronize the device first."""
    n = arr.host.size
    return np.frombuffer(ffi.buffer(ffi.cast("char *", arr.buffer), n * 4), dtype=np.float32)


def fill(cpu, arr, value, stream):
    cpu.check(cpu.call_kernel("fill", F32, [], [arr.view()], attrs={"value": float(value)},
                              stream=stream), "fill")


def queue_big_work(cpu, arr, value, stream, times: int = 8) -> None:
    """Several fills of a BIG array, so the stream still holds work a moment later. One fill
    takes well under a millisecond with the pool and streaming stores, and on two cores the
    pool's threads can keep the caller off the CPU that long; eight make that unlikely, and
    the tests that rely on it retry."""
    for _ in range(times):
        fill(cpu, arr, value, stream)


def test_small_launches_on_an_idle_stream_are_complete_on_return(cpu, streams):
    """Up to the threshold, an idle stream's launch has run when the call returns (query says
    OK with no synchronize), including an MLP step's matmul (8x128 @ 128x512 = 2^19 MACs)."""
    s = streams[0]
    at_threshold = DeviceArray.empty(cpu, (INLINE_MAX,), np.float32)
    rng = np.random.default_rng(0)
    x = DeviceArray(cpu, rng.standard_normal((8, 128), dtype=np.float32))
    w = DeviceArray(cpu, rng.standard_normal((128, 512), dtype=np.float32))
    y = DeviceArray.empty(cpu, (8, 512), np.float32)
    try:
        for i in range(3):
            fill(cpu, at_threshold, i + 1, s)
            assert cpu.streams.query_stream(0, s) == OK
            assert np.all(memory(at_threshold)[-4:] == i + 1)  # no copy, no sync
        cpu.check(cpu.call_kernel("matmul", F32, [x.view(), w.view()], [y.view()], stream=s),
                  "matmul")
        assert cpu.streams.query_stream(0, s) == OK
        np.testing.assert_allclose(memory(y).reshape(8, 512), x.host @ w.host, rtol=1e-4, atol=1e-4)
    finally:
        for d in (at_threshold, x, w, y):
            d.free()


def test_small_launch_waits_behind_queued_work_and_events(cpu, streams):
    """A small (inline-eligible) launch on stream b after b waits for an event of stream a, and
    one on a after a's big work, see that work's result: neither jumps the queue."""
    a, b = streams
    big = DeviceArray.empty(cpu, (BIG,), np.float32)
    tail_a = DeviceArray.empty(cpu, (16,), np.float32)
    tail_b = DeviceArray.empty(cpu, (16,), np.float32)
    ev = cpu.create_event()
    try:
        for v in (1.0, 2.0, 3.0, 4.0):
            fill(cpu, big, v, a)  # BIG: queued on a's worker
            cpu.check(cpu.streams.record_event(0, a, ev), "record_event")
            cpu.check(cpu.streams.stream_wait_event(0, b, ev), "stream_wait_event")
            tail_view = big.view(big.host[-16:])
            cpu.check(cpu.call_kernel("copy", F32, [tail_view], [tail_b.view()], stream=b),
                      "copy")
            cpu.check(cpu.call_kernel("copy", F32, [tail_view], [tail_a.view()], stream=a),
                      "copy")
            cpu.sync_stream(b)
            assert np.all(memory(tail_b) == v)  # b waited for a's fill
            assert cpu.streams.query_event(0, ev) == OK
            cpu.sync_stream(a)
            assert np.all(memory(tail_a) == v)
    finally:
        cpu.streams.destroy_event(0, ev)
        for d in (big, tail_a, tail_b):
            d.free()


@pytest.fixture
def bad_gather(cpu):
    """A launcher of a gather whose 1-element index is out of range: it fails when it runs.
    Its arrays are made up front (an upload is a synchronous copy: it drains the device)."""
    x = DeviceArray(cpu, np.arange(12, dtype=np.float32).reshape(4, 3))
    idx = DeviceArray(cpu, np.array([9], np.int64))
    out = DeviceArray.empty(cpu, (1, 3), np.float32)

    def launch(stream) -> int:
        return cpu.call_kernel("gather", F32, [x.view(), idx.view()], [out.view()],
                               attrs={"axis": 0}, stream=stream)

    yield launch
    for d in (x, idx, out):
        d.free()


def test_inline_error_is_the_launchs_own_and_reported_once(cpu, streams, bad_gather):
    s = streams[0]
    ok = DeviceArray.empty(cpu, (16,), np.float32)
    st = bad_gather(s)  # s is idle: runs inline
    cpu.expect_error(st, INVALID_ARGUMENT, "gather", "index 9 is out of range [0, 4)")
    assert cpu.streams.synchronize_stream(0, s) == OK  # not reported again
    assert cpu.streams.query_stream(0, s) == OK
    fill(cpu, ok, 5.0, s)  # the stream still works
    cpu.sync_stream(s)
    assert np.all(memory(ok) == 5.0)
    ok.free()


def test_queued_error_is_reported_by_the_next_synchronize_once(cpu, streams, bad_gather):
    """Behind big work the same failure is asynchronous: the launch says OK, the next
    synchronize says DEVICE_ERROR naming the op, the one after OK."""
    s = streams[0]
    big = DeviceArray.empty(cpu, (BIG,), np.float32)
    seen_queued = False
    try:
        for _ in range(10):
            queue_big_work(cpu, big, 1.0, s)
            st = bad_gather(s)
            if st == OK:  # queued behind the fill (the usual case)
                seen_queued = True
                status = cpu.streams.synchronize_stream(0, s)
                msg = cpu.last_error()
                assert status == DEVICE_ERROR, msg
                assert "earlier asynchronous work" in msg and "gather" in msg, msg
                assert "out of range" in msg, msg
            else:  # the fill had finished already: it ran inline
                cpu.expect_error(st, INVALID_ARGUMENT, "gather", "out of range")
            assert cpu.streams.synchronize_stream(0, s) == OK
            if seen_queued:
                break
        assert seen_queued
    finally:
        big.free()


def test_big_work_still_runs_on_the_worker(cpu, streams):
    """Above the threshold the launch returns before the work is done (the stream is async)."""
    s = streams[0]
    big = DeviceArray.empty(cpu, (BIG,), np.float32)
    pending = 0
    try:
        for v in range(10):
            queue_big_work(cpu, big, v, s)
            pending += cpu.streams.query_stream(0, s) == NOT_READY
            cpu.sync_stream(s)
            assert memory(big)[-1] == v
            if pending:
                break
        assert pending
    finally:
        big.free()
