"""The profiler suite: the ABI 1.2 profiler table (profiler.h), driven directly through the C
ABI. It gives hwport.profiler device time: while a device is profiled, every kernel launch with a
nonzero correlation id has its device work reported, as spans with that id, through the host's
sink.

The checks FAIL a plugin that reports work of a launch that carried no id, loses a launch's
work, reports spans outside the time the work can have taken (they must be on the host's
CLOCK_MONOTONIC, within 1 ms), out of launch order on one in-order stream, after stop()
returned, or that accepts a NULL sink or a bad device. The launches are `add` kernels whose
results are checked with numpy, so timing must leave the results alone. A plugin without the
table (optional) gives NOT_SUPPORTED: hwport.profiler then shows host time only.

codegen_spans does the same for the codegen table's launches (HWP_CodegenLaunch.correlation_id,
appended in 1.2: how the eager JIT's kernels get device time): the abi suite's fill kernel,
launched with an id and without, must give exactly one span with that id, named after the
function (the name stays valid until stop(), even if the module is gone by then: here it is
unloaded before stop). NOT_SUPPORTED without a codegen target.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from ..codegen_host import FILL_NAME
from ..model import Case, NotSupported, Result, Target
from . import direct_common
from .direct_common import expect_error, require

NAME = "profiler"

_IDS = (101, 102, 103, 104)  # the profiled launches; 0 and _AFTER_STOP must not be reported
_AFTER_STOP = 105
_ELEMENTS = 1 << 16
# A device with its own clock converts its timestamps to CLOCK_MONOTONIC (profiler.h); this much
# conversion error is allowed (the OpenCL plugin's calibration is off by tens of µs on PoCL).
_CLOCK_SLACK_NS = 1_000_000


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    failed = direct_common.load_gate(NAME, target, options)
    return failed or [Case(NAME, name) for name in CHECKS]


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    return direct_common.run_check(CHECKS, target, case, state)


def _table(h):
    """(start, stop), or NOT_SUPPORTED when the plugin fills neither."""
    if h.profiler is None:
        raise NotSupported("the plugin has no profiler table (optional): hwport.profiler shows "
                           "host time only")
    start, stop = h.optional("profiler", "start"), h.optional("profiler", "stop")
    if start is None and stop is None:
        raise NotSupported("the profiler table holds no functions (its struct_size predates "
                           "ABI 1.2): hwport.profiler shows host time only")
    require(start is not None and stop is not None,
            f"the profiler table has {'start' if start else 'stop'} but not "
            f"{'stop' if start else 'start'}: both are required")
    return start, stop


class _Sink:
    """A thread-safe HWP_DeviceSpanSink recording (correlation_id, device, name, begin, end)."""

    def __init__(self) -> None:
        from ..direct_host import ffi

        self.spans: list[tuple[int, int, str, int, int]] = []
        self.bad: list[str] = []
        self._lock = threading.Lock()

        @ffi.callback("void(void *, const HWP_DeviceSpan *)")
        def sink(_ctx, span):
            if span == ffi.NULL:
                with self._lock:
                    self.bad.append("the sink was called with a NULL span")
                return
            name = ffi.string(span.name).decode(errors="replace") if span.name else None
            with self._lock:
                if span.struct_size < ffi.sizeof("HWP_DeviceSpan"):
                    self.bad.append(f"a span's struct_size is {span.struct_size}, expected "
                                    f">= {ffi.sizeof('HWP_DeviceSpan')}")
                if name is None:
                    self.bad.append(f"span of correlation id {span.correlation_id} has a NULL "
                                    f"name")
                self.spans.append((int(span.correlation_id), int(span.device), name or "",
                                   int(span.begin_ns), int(span.end_ns)))

        self.fn = sink


def _add_kernel(h) -> int:
    from ..direct_host import DTYPE_CODE

    f32 = DTYPE_CODE["float32"]
    if ("add", f32) not in h.registrations:
        raise NotSupported("the plugin registers no float32 add kernel to time")
    return f32


def table(h, case: Case) -> dict[str, Any]:
    from ..direct_host import INVALID_ARGUMENT, NULL, OK

    start, stop = _table(h)
    sink = _Sink()
    n = h.device_count()
    expect_error(h, start(0, NULL, NULL), "profiler.start(0, sink NULL)", INVALID_ARGUMENT)
    expect_error(h, start(n, sink.fn, NULL), f"profiler.start(device {n}, the device count)",
                 INVALID_ARGUMENT)
    expect_error(h, stop(n), f"profiler.stop(device {n}, the device count)", INVALID_ARGUMENT)
    require(stop(0) == OK, f"profiler.stop on a device never started is not HWP_OK: "
            f"{h.last_error()}")
    require(start(0, sink.fn, NULL) == OK, f"profiler.start(0) failed: {h.last_error()}")
    require(start(0, sink.fn, NULL) == OK, f"profiler.start on a started device (it replaces "
            f"the sink) failed: {h.last_error()}")
    require(stop(0) == OK and stop(0) == OK, f"profiler.stop failed (twice in a row): "
            f"{h.last_error()}")
    return {"devices": n}


def spans(h, case: Case) -> dict[str, Any]:
    from ..direct_host import NULL, OK, DeviceArray

    start, stop = _table(h)
    f32 = _add_kernel(h)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(_ELEMENTS).astype(np.float32)
    y = rng.standard_normal(_ELEMENTS).astype(np.float32)
    arrays = [DeviceArray(h, x), DeviceArray(h, y)]
    outs = [DeviceArray.empty(h, x.shape, np.float32) for _ in range(len(_IDS) + 2)]
    stream = h.create_stream(0) if h.streams is not None else NULL
    sink = _Sink()
    try:
        require(start(0, sink.fn, NULL) == OK, f"profiler.start(0) failed: {h.last_error()}")
        began = time.monotonic_ns()
        launches = [*_IDS[:2], 0, *_IDS[2:]]
        for out, corr in zip(outs, launches, strict=False):
            st = h.call_kernel("add", f32, [a.view() for a in arrays], [out.view()],
                               stream=stream, correlation_id=corr)
            require(st == OK, f"add (correlation id {corr}) failed: {h.last_error()}")
        if stream != NULL:
            h.sync_stream(stream)
        h.sync_device(0)
        ended = time.monotonic_ns()
        require(stop(0) == OK, f"profiler.stop(0) failed: {h.last_error()}")
        reported = list(sink.spans)
        st = h.call_kernel("add", f32, [a.view() for a in arrays], [outs[-1].view()],
                           stream=stream, correlation_id=_AFTER_STOP)
        require(st == OK, f"add after stop failed: {h.last_error()}")
        if stream != NULL:
            h.sync_stream(stream)
        h.sync_device(0)
        for out in outs:
            require(np.array_equal(out.read(), x + y), "add's result is wrong while profiled")
    finally:
        if stream != NULL:
            h.destroy_stream(stream)
        for a in [*arrays, *outs]:
            a.free()
    require(not sink.bad, "; ".join(sink.bad[:3]))
    ids = [s[0] for s in reported]
    require(0 not in ids, "a span was reported for a launch whose correlation id was 0 (not "
            "profiled)")
    require(all(s[0] != _AFTER_STOP for s in sink.spans), "a span was reported after "
            "profiler.stop returned")
    unknown = sorted(set(ids) - set(_IDS))
    require(not unknown, f"spans with correlation ids no launch carried: {unknown}")
    missing = [c for c in _IDS if c not in ids]
    require(not missing, f"no span for the launches with correlation ids {missing}")
    for corr, dev, _name, b, e in reported:
        require(dev == 0, f"span of correlation id {corr} names device {dev}, expected 0")
        require(b <= e, f"span of correlation id {corr} ends before it begins ({b} > {e})")
        require(began - _CLOCK_SLACK_NS <= b and e <= ended + _CLOCK_SLACK_NS,
                f"span of correlation id {corr} [{b}, {e}] lies outside the launches' time "
                f"[{began}, {ended}] on CLOCK_MONOTONIC (by more than "
                f"{_CLOCK_SLACK_NS // 1000} µs)")
    first_begin = {c: min(s[3] for s in reported if s[0] == c) for c in _IDS}
    order = sorted(_IDS, key=lambda c: first_begin[c])
    if stream != NULL or h.streams is None:
        require(order == list(_IDS), f"spans of one in-order stream begin out of launch "
                f"order: {order}")
    return {"spans": len(reported), "names": sorted({s[2] for s in reported})}


def codegen_spans(h, case: Case) -> dict[str, Any]:
    from ..direct_host import NULL, OK
    from .abi_codegen import _compiled, _run_fill

    start, stop = _table(h)
    cg, info, dialect, module, function = _compiled(h)  # NOT_SUPPORTED without a target
    sink = _Sink()
    stream = h.create_stream(0) if h.streams is not None else NULL
    try:
        require(start(0, sink.fn, NULL) == OK, f"profiler.start(0) failed: {h.last_error()}")
        began = time.monotonic_ns()
        _run_fill(h, cg, info, function, stream, correlation_id=0)
        _run_fill(h, cg, info, function, stream, correlation_id=_IDS[0])
        ended = time.monotonic_ns()
    finally:
        if stream != NULL:
            h.destroy_stream(stream)
        h.sync_device(0)
        cg.unload(module)  # before stop: the span's name must outlive the module
    require(stop(0) == OK, f"profiler.stop(0) failed: {h.last_error()}")
    require(not sink.bad, "; ".join(sink.bad[:3]))
    reported = list(sink.spans)
    ids = sorted({s[0] for s in reported})
    require(ids == [_IDS[0]], f"a profiled codegen launch (correlation id {_IDS[0]}) and an "
            f"unprofiled one (id 0) gave spans with ids {ids}, expected exactly [{_IDS[0]}] "
            f"(read HWP_CodegenLaunch.correlation_id when HWP_HAS_FIELD says it is there)")
    for corr, dev, name, b, e in reported:
        require(dev == 0, f"span of correlation id {corr} names device {dev}, expected 0")
        require(name == FILL_NAME, f"the codegen launch's span is named {name!r}, expected "
                f"the function's name {FILL_NAME!r}")
        require(b <= e and began - _CLOCK_SLACK_NS <= b and e <= ended + _CLOCK_SLACK_NS,
                f"span [{b}, {e}] lies outside the launch's time [{began}, {ended}] on "
                f"CLOCK_MONOTONIC (by more than {_CLOCK_SLACK_NS // 1000} µs)")
    return {"dialect": dialect, "spans": len(reported)}


CHECKS = {"table": table, "spans": spans, "codegen_spans": codegen_spans}
