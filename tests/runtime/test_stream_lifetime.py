"""Streams outlive every use of them: a Stream object dropped while tensors, events or a thread's
current-stream slot still refer to its stream (issue 11, defect 3).

Each reproducer runs in a fresh process on custom:cpu and custom:opencl and checks the data and
that allocated bytes return to the baseline. Without the fix, the first (freeing a tensor records
an event on the destroyed stream) is a use-after-free that only scripts/sanitize.sh reports; the
test plugin's strict mode turns it into an abort without a sanitizer. The others fail outright:
a kernel on a destroyed current stream, a thread's stream gone under it, cached blocks of a
dropped stream orphaned under a dangling pool key instead of serving the default stream."""

from __future__ import annotations

import signal
import textwrap

import pytest

import hwport.runtime as rt
from tests.conftest import run_isolated, zoo_plugin_path

N = 1 << 21  # large enough that custom:cpu runs the work on the stream's worker thread


def _has_device(device_type: str) -> bool:
    return any(p["device_type"] == device_type and p["device_count"] > 0 for p in rt.plugins())


PLACES = [
    "custom:cpu",
    pytest.param("custom:opencl", marks=pytest.mark.skipif(
        not _has_device("opencl"), reason="no OpenCL device (PoCL) loaded")),
]

PRELUDE = """
import threading
import numpy as np
import hwport
from hwport.device import Event, Stream, current_stream, memory_stats, stream_guard
from hwport.runtime import _core

P, N = {place!r}, {n}


def make(value, n=N):
    return hwport.to_tensor(np.full(n, value, np.float32), place=P)


def allocated():
    hwport.device.synchronize(P)
    return memory_stats(P)["allocated_bytes"]


def check(t, value):
    got = t.numpy()
    assert got.shape == (N,) and (got == value).all(), (got[:4], got[-4:], value)
"""

# Each function is one reproducer; the script runs them in order and prints "ok <name>".
REPRODUCERS = """
def tensor_used_on_a_dropped_stream():
    # tests/runtime/test_streams.py::test_query_and_synchronize, with the Stream dropped first.
    x = make(1.0)
    s = Stream(P)
    with stream_guard(s):
        y = x
        for _ in range(20):
            y = y + x  # allocated on s; x is used on s
    del s  # the Python object goes before the tensors that used its stream
    check(y, 21.0)
    del x, y  # freeing x used to record an event on the destroyed stream


def current_stream_whose_object_is_gone():
    x = make(2.0)
    default = current_stream(P)
    _core.set_current_stream(Stream(P))  # the temporary goes at once; the slot keeps the stream
    assert current_stream(P) != default
    y = x * x  # runs on that stream
    _core.set_current_stream(default)  # the last reference: destroyed here
    check(y, 4.0)
    del x, y


def event_outlives_its_stream():
    x = make(1.0)
    s, e = Stream(P), Event(P)
    with stream_guard(s):
        y = x * 3.0
    e.record(s)
    del s
    e.synchronize()
    assert e.query() is True
    s2 = Stream(P)
    s2.wait_event(e)
    with stream_guard(s2):
        z = y + x
    del s2
    check(z, 4.0)
    del x, y, z, e


def current_stream_of_a_thread_that_exits():
    x = make(1.0)
    out = {}

    def work():
        _core.set_current_stream(Stream(P))  # never restored: the thread's slot keeps it
        out["y"] = x + x

    t = threading.Thread(target=work)
    t.start()
    t.join()  # the thread's exit released the stream
    check(out["y"], 2.0)
    del x, out


def cached_blocks_of_a_dropped_stream_serve_the_default_stream():
    n = 3 << 20  # 12 MiB: a large-pool block that fills its segment
    hwport.device.synchronize(P)
    hwport.device.empty_cache(P)
    s = Stream(P)
    with stream_guard(s):
        cached, live = make(1.0, n), make(1.0, n)  # a segment each
        del cached  # cached in s's pool; `live` is still alive when s goes
    del s
    before = memory_stats(P)["num_device_allocs"]
    u = make(5.0, n)  # on the default stream: the block s cached
    assert memory_stats(P)["num_device_allocs"] == before, "the cached block was orphaned"
    del live
    v = make(6.0, n)  # the block allocated on s, freed after s went
    assert memory_stats(P)["num_device_allocs"] == before, "the freed block was orphaned"
    assert (u.numpy() == 5.0).all() and (v.numpy() == 6.0).all()
    del u, v


base = allocated()
for name in {names}:
    globals()[name]()
    assert allocated() == base, (name, allocated(), base)
    print("ok", name, flush=True)
"""

NAMES = ["tensor_used_on_a_dropped_stream", "current_stream_whose_object_is_gone",
         "event_outlives_its_stream", "current_stream_of_a_thread_that_exits",
         "cached_blocks_of_a_dropped_stream_serve_the_default_stream"]


def _script(place: str, names: list[str], n: int = N) -> str:
    return (textwrap.dedent(PRELUDE).format(place=place, n=n)
            + textwrap.dedent(REPRODUCERS).replace("{names}", repr(names)))


def _assert_all_ran(proc, names: list[str]) -> None:
    ran = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert proc.returncode == 0 and ran == names, (
        f"exit {proc.returncode}; ran {ran}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")


@pytest.mark.parametrize("place", PLACES)
def test_streams_dropped_before_their_users(place: str) -> None:
    proc = run_isolated(_script(place, NAMES))
    _assert_all_ran(proc, NAMES)


def test_no_call_names_a_destroyed_stream() -> None:
    """The test plugin's strict mode aborts the process on any call that names a destroyed
    stream (a host that swallows the error would otherwise hide it)."""
    place = "custom:test_good_streams"
    # Its one kernel is float32 add; these reproducers use only add and host copies.
    names = ["tensor_used_on_a_dropped_stream", "current_stream_of_a_thread_that_exits",
             "cached_blocks_of_a_dropped_stream_serve_the_default_stream"]
    proc = run_isolated(_script(place, names, n=1 << 12),
                        env={"HWPORT_PLUGIN_PATH": str(zoo_plugin_path("good_streams")),
                             "HWPORT_TEST_STRICT_STREAMS": "1"})
    _assert_all_ran(proc, names)


def test_strict_mode_catches_a_destroyed_stream() -> None:
    """The check above can fail: a call on a stream after destroy_stream aborts the process
    with the plugin's message (driven through the direct host, which does what it is told)."""
    code = f"""
        from hwport.conformance.direct_host import DirectHost
        h = DirectHost({str(zoo_plugin_path("good_streams"))!r})
        h.init_devices()
        s, e = h.create_stream(), h.create_event()
        h.record_event(s, e)
        print("live stream ok", flush=True)
        h.destroy_stream(s)
        h.record_event(s, e)
        print("not reached", flush=True)
    """
    proc = run_isolated(code, env={"HWPORT_TEST_STRICT_STREAMS": "1"})
    assert proc.returncode == -signal.SIGABRT, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout.split() == ["live", "stream", "ok"], proc.stdout
    assert "record_event on a destroyed stream" in proc.stderr, proc.stderr
