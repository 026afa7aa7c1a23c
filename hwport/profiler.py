"""hwport.profiler: records every op call of a thread (Paddle's paddle.profiler, in small).

    with hwport.profiler.Profiler() as prof:
        y = hwport.sigmoid(x)
    prof.summary()                 # a table by total time: calls, total, avg, max, min, path
    prof.export("trace.json")      # a Chrome trace (chrome://tracing, ui.perfetto.dev)

The profiler is the outermost layer of the op-call pipeline (runtime/src/layers.h): each op
call on a thread where a Profiler is running is one event with its name, input shapes and
dtypes, place, host time and the path kernel selection took (native kernel, decomposition,
counted CPU fallback). The ops a decomposition runs are events nested under it, so their time
is also part of their parent's. Device time comes from plugins with a profiler table (ABI 1.2):
each kernel launch carries its op call's correlation id and the plugin reports the device work
it timed for it as spans (`Event.device_spans`, a Device column in the summary, device tracks in
the trace); elsewhere with synchronize=True each op waits for its device work, so its host time
covers it. docs/profiler.md has the details.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Self

from hwport.runtime import _core

_LAYER_NAME = "profiler"


class ProfilerTarget(Enum):
    """The devices to profile (Paddle's names); every place's op calls are recorded."""

    CPU = 0
    GPU = 1
    CUSTOM_DEVICE = 3


class SortedKeys(Enum):
    """How summary() sorts its rows (Paddle's keys): host time (CPU*) or device time (GPU*:
    the device work of the calls, their nested calls' included, on any device)."""

    CPUTotal = 0
    CPUAvg = 1
    CPUMax = 2
    CPUMin = 3
    GPUTotal = 4
    GPUAvg = 5
    GPUMax = 6
    GPUMin = 7


@dataclass(slots=True, frozen=True)
class DeviceSpan:
    """A piece of device work a plugin timed for an op call's launch (perf_counter_ns clock)."""

    name: str
    place: str
    start_ns: int
    end_ns: int

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(slots=True, eq=False)
class Event:
    """One op call (kind "op"), user range (kind "user": RecordEvent) or profiler step
    (kind "step": Profiler.step). parent is the op or range it ran in (None: top level)."""

    name: str
    kind: str
    tid: int
    depth: int
    parent: Event | None
    start_ns: int = 0
    end_ns: int = 0
    place: str = ""
    dtype: str = ""
    shapes: list[Any] | None = None  # per input: a shape, a list of them, or None
    dtypes: list[Any] | None = None  # None: not recorded (record_shapes=False, user ranges)
    path: str = ""
    error: str = ""
    correlation_id: int = 0  # what the call's kernel launches carried to the plugin
    device_spans: list[DeviceSpan] | None = None  # the device work of its own launches

    @property
    def device_ns(self) -> int:
        """Device time of the call's own launches (its nested calls' not included)."""
        return sum(d.duration_ns for d in self.device_spans) if self.device_spans else 0

    @property
    def duration_ns(self) -> int:
        """Host time; an event still open (a report made while profiling) counts until now."""
        return (self.end_ns or time.perf_counter_ns()) - self.start_ns


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.profilers: list[Profiler] = []
        self.stack: list[Event] = []
        self.tid = threading.get_native_id()
        self.synchronize = 0  # how many running profilers asked for synchronize=True


_STATE = _ThreadState()


def _describe(value: Any, what: Callable[[Any], Any]) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [what(t) for t in value]
    return what(value)


def _shape(t: Any) -> list[int]:
    return list(t.shape)


def _dtype(t: Any) -> str:
    return str(t.dtype)


class _ProfilerLayer:
    """The pipeline layer (registered in the "profiler" slot): one Event per op call."""

    def on_call(self, call: _core.OpCall, next: _core.LayerNext) -> Any:
        state = _STATE
        stack = state.stack
        ev = Event(call.op, "op", state.tid, len(stack), stack[-1] if stack else None,
                   place=str(call.place), dtype=call.dtype)
        if any(p._record_shapes for p in state.profilers):
            ev.shapes = [_describe(v, _shape) for v in call.inputs]
            ev.dtypes = [_describe(v, _dtype) for v in call.inputs]
        for p in state.profilers:
            p._events.append(ev)
        stack.append(ev)
        ev.correlation_id = call.correlation_id
        ev.start_ns = time.perf_counter_ns()
        try:
            out = next(call)
            if state.synchronize:
                _core.synchronize(call.place)
            return out
        except BaseException as exc:
            ev.error = type(exc).__name__
            raise
        finally:
            ev.end_ns = time.perf_counter_ns()
            ev.path = call.path
            stack.pop()


_LAYER = _ProfilerLayer()


def _ensure_registered() -> None:
    if _core.registered_layer(_LAYER_NAME) is not _LAYER:
        _core.register_layer(_LAYER_NAME, _LAYER)


# Registered at import, inactive until a Profiler starts: the pipeline then pays one check of
# the thread's layer mask per call (benchmarks/bench_layers.py measures it).
_ensure_registered()


def _open(name: str) -> Event:
    state = _STATE
    stack = state.stack
    ev = Event(name, "user", state.tid, len(stack), stack[-1] if stack else None)
    for p in state.profilers:
        p._events.append(ev)
    stack.append(ev)
    ev.start_ns = time.perf_counter_ns()
    return ev


def _close(ev: Event) -> None:
    ev.end_ns = time.perf_counter_ns()
    stack = _STATE.stack
    if stack and stack[-1] is ev:
        stack.pop()
    elif ev in stack:  # ranges closed out of order: the ones opened after it stay open
        stack.remove(ev)


class _Scope:
    """`with obj:` runs obj._on_enter() and, however the block ends, obj._on_exit()."""

    def _on_enter(self) -> None:
        raise NotImplementedError

    def _on_exit(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._on_enter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._on_exit()


class RecordEvent(_Scope):
    """A user range, nested with the op calls it contains: `with RecordEvent("forward"):`,
    or begin()/end(). Costs nothing but the call while no Profiler runs on the thread."""

    def __init__(self, name: str, event_type: Any = None) -> None:
        self.name = name
        self.event_type = event_type  # Paddle's TracerEventType; every range here is "user"
        self._event: Event | None = None

    def begin(self) -> None:
        if _STATE.profilers and self._event is None:
            self._event = _open(self.name)

    def end(self) -> None:
        if self._event is not None:
            _close(self._event)
            self._event = None

    _on_enter = begin
    _on_exit = end


class Profiler(_Scope):
    """Records the op calls of the thread that starts it, until stop(); nestable (each
    running Profiler gets every event). `with Profiler() as prof:` starts and stops it.

    targets are accepted for Paddle's sake (every place is recorded); on_trace_ready(prof) runs
    at stop (e.g. export_chrome_tracing(dir)); record_shapes=False leaves input shapes and
    dtypes out; synchronize=True waits for each op's device work, so host time covers it."""

    def __init__(self, *, targets: Iterable[ProfilerTarget] | None = None,
                 on_trace_ready: Callable[[Profiler], Any] | None = None,
                 record_shapes: bool = True, synchronize: bool = False) -> None:
        self.targets = list(targets) if targets is not None else list(ProfilerTarget)
        for t in self.targets:
            if not isinstance(t, ProfilerTarget):
                raise TypeError(f"Profiler: targets expected ProfilerTarget values, got "
                                f"{type(t).__name__} {t!r}")
        self.on_trace_ready = on_trace_ready
        self._record_shapes = record_shapes
        self._synchronize = synchronize
        self._events: list[Event] = []
        self._thread: int | None = None
        self._start_ns = 0
        self._stop_ns = 0
        self._step = 0
        self._step_event: Event | None = None
        self._device_session = False
        self._timed_places: list[str] = []

    # ---- recording ------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("Profiler.start: this profiler is already running")
        _ensure_registered()
        _core.layer_enter(_LAYER_NAME)
        state = _STATE
        state.profilers.append(self)
        state.synchronize += self._synchronize
        self._thread = threading.get_ident()
        self._start_device_timing()
        self._start_ns = time.perf_counter_ns()
        self._open_step()

    def stop(self) -> None:
        if self._thread is None:
            raise RuntimeError("Profiler.stop: this profiler is not running")
        if self._thread != threading.get_ident():
            raise RuntimeError("Profiler.stop: call it on the thread that started the profiler")
        self._close_step()
        state = _STATE
        state.profilers.remove(self)
        state.synchronize -= self._synchronize
        self._thread = None
        self._stop_ns = time.perf_counter_ns()
        _core.layer_leave(_LAYER_NAME)
        self._stop_device_timing()
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # A plugin's profiler failing costs the device time, never the profile.
    def _start_device_timing(self) -> None:
        try:
            self._timed_places = list(_core.device_profiler_start())
            self._device_session = True
        except Exception as exc:  # noqa: BLE001 - reported, then profiling goes on
            warnings.warn(f"Profiler.start: no device time: {exc}", RuntimeWarning,
                          stacklevel=3)

    def _stop_device_timing(self) -> None:
        if not self._device_session:
            return
        self._device_session = False
        try:
            spans = _core.device_profiler_stop()
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"Profiler.stop: device time lost: {exc}", RuntimeWarning,
                          stacklevel=3)
            return
        by_id = {ev.correlation_id: ev for ev in self._events if ev.correlation_id}
        for corr, place, name, begin, end in spans:
            ev = by_id.get(corr)
            if ev is not None:
                if ev.device_spans is None:
                    ev.device_spans = []
                ev.device_spans.append(DeviceSpan(name, place, begin, end))

    @property
    def timed_places(self) -> list[str]:
        """The places whose plugins timed device work during the last start..stop."""
        return list(self._timed_places)

    def _on_enter(self) -> None:
        self.start()

    def _on_exit(self) -> None:
        self.stop()

    def step(self, num_samples: int | None = None) -> None:
        """Ends the current ProfileStep#n range (one per training step) and opens the next."""
        self._close_step()
        self._step += 1
        if self._thread is not None:
            self._open_step()

    # Step ranges (kind "step") are this profiler's own, outside the nesting of op calls: they
    # begin and end between top-level calls, so a trace viewer still shows the calls inside.
    def _open_step(self) -> None:
        self._step_event = Event(f"ProfileStep#{self._step}", "step", _STATE.tid, 0, None,
                                 start_ns=time.perf_counter_ns())
        self._events.append(self._step_event)

    def _close_step(self) -> None:
        if self._step_event is not None:
            self._step_event.end_ns = time.perf_counter_ns()
            self._step_event = None

    @property
    def events(self) -> list[Event]:
        """The recorded events in start order (op calls and user ranges)."""
        return list(self._events)

    # ---- reporting ------------------------------------------------------------------------

    def _rows(self, sorted_by: SortedKeys) -> list[dict[str, Any]]:
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        child_ns: dict[int, int] = {}
        device_ns = self._inclusive_device_ns()
        for ev in self._events:
            if ev.parent is not None:
                child_ns[id(ev.parent)] = child_ns.get(id(ev.parent), 0) + ev.duration_ns
        for ev in self._events:
            if ev.kind == "step":
                continue
            r = rows.setdefault((ev.kind, ev.name), {
                "name": ev.name, "kind": ev.kind, "calls": 0, "total": 0, "self": 0,
                "max": 0, "min": None, "paths": {}, "device": 0, "device_max": 0,
                "device_min": None})
            dev = device_ns.get(id(ev), 0)
            r["device"] += dev
            r["device_max"] = max(r["device_max"], dev)
            r["device_min"] = dev if r["device_min"] is None else min(r["device_min"], dev)
            d = ev.duration_ns
            r["calls"] += 1
            r["total"] += d
            r["self"] += d - child_ns.get(id(ev), 0)
            r["max"] = max(r["max"], d)
            r["min"] = d if r["min"] is None else min(r["min"], d)
            path = ev.path or ev.kind
            r["paths"][path] = r["paths"].get(path, 0) + 1
        key = {SortedKeys.CPUTotal: lambda r: r["total"],
               SortedKeys.CPUAvg: lambda r: r["total"] / r["calls"],
               SortedKeys.CPUMax: lambda r: r["max"],
               SortedKeys.CPUMin: lambda r: r["min"],
               SortedKeys.GPUTotal: lambda r: r["device"],
               SortedKeys.GPUAvg: lambda r: r["device"] / r["calls"],
               SortedKeys.GPUMax: lambda r: r["device_max"],
               SortedKeys.GPUMin: lambda r: r["device_min"]}[sorted_by]
        return sorted(rows.values(), key=lambda r: (-key(r), r["name"]))

    def _inclusive_device_ns(self) -> dict[int, int]:
        """id(event) -> device time of its launches and its nested calls' (children start
        after their parent, so one backward pass adds each total into its parent's)."""
        total: dict[int, int] = {}
        for ev in reversed(self._events):
            t = total.get(id(ev), 0) + ev.device_ns
            if t:
                total[id(ev)] = t
                if ev.parent is not None:
                    total[id(ev.parent)] = total.get(id(ev.parent), 0) + t
        return total

    @property
    def has_device_time(self) -> bool:
        """True when some plugin reported device work for the recorded calls."""
        return any(ev.device_spans for ev in self._events)

    def summary(self, sorted_by: SortedKeys = SortedKeys.CPUTotal, op_detail: bool = True,
                thread_sep: bool = False, time_unit: str = "ms") -> str:
        """Prints (and returns) a table of the recorded calls by name, sorted by `sorted_by`
        (total time by default): calls, total, avg, max, min, self time (less the nested
        calls'), and the path(s) taken with their counts."""
        if not isinstance(sorted_by, SortedKeys):
            raise TypeError(f"Profiler.summary: sorted_by expected a SortedKeys, got "
                            f"{type(sorted_by).__name__} {sorted_by!r}")
        scale = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}.get(time_unit)
        if scale is None:
            raise ValueError(f"Profiler.summary: time_unit expected one of 's', 'ms', 'us', "
                             f"'ns', got {time_unit!r}")
        rows = self._rows(sorted_by)
        device = self.has_device_time
        head = ["Name", "Calls", f"Total({time_unit})", f"Avg({time_unit})",
                f"Max({time_unit})", f"Min({time_unit})", f"Self({time_unit})"]
        head += [f"Device({time_unit})", f"DeviceAvg({time_unit})"] if device else []
        head.append("Path")
        body = []
        for r in rows:
            paths = ", ".join(p if len(r["paths"]) == 1 else f"{p} {n}"
                              for p, n in sorted(r["paths"].items()))
            values = [r["total"], r["total"] / r["calls"], r["max"], r["min"], r["self"]]
            values += [r["device"], r["device"] / r["calls"]] if device else []
            body.append([r["name"], str(r["calls"])] + [f"{v / scale:.4f}" for v in values]
                        + [paths])
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
        line = "-" * (sum(widths) + 2 * (len(widths) - 1))
        left = (0, len(head) - 1)

        def fmt(row: list[str]) -> str:
            return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                             for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()

        wall = (self._stop_ns or time.perf_counter_ns()) - self._start_ns
        timed = f"; device time on {', '.join(self._timed_places)}" if device else ""
        title = (f"hwport profiler: {sum(r['calls'] for r in rows if r['kind'] == 'op')} op "
                 f"calls in {wall / scale:.4f} {time_unit} (host time{timed})")
        text = "\n".join([title, line, fmt(head), line, *map(fmt, body), line])
        print(text)
        return text

    def chrome_trace(self) -> dict[str, Any]:
        """The events as a Chrome trace (complete events, ph "X", ts/dur in µs)."""
        pid = os.getpid()
        base = self._start_ns
        out: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
             "args": {"name": "hwport"}}]
        tids = sorted({ev.tid for ev in self._events})
        out += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": t,
                 "args": {"name": f"thread {t}"}} for t in tids]
        for ev in self._events:
            ts = (ev.start_ns - base) / 1e3
            args: dict[str, Any] = {}
            if ev.kind == "op":
                args = {"place": ev.place, "dtype": ev.dtype, "path": ev.path}
                if ev.shapes is not None:
                    args["shapes"] = ev.shapes
                    args["dtypes"] = ev.dtypes
            if ev.error:
                args["error"] = ev.error
            out.append({"name": ev.name, "cat": ev.kind, "ph": "X", "ts": ts,
                        "dur": (ev.start_ns + ev.duration_ns - base) / 1e3 - ts, "pid": pid,
                        "tid": ev.tid, "args": args})
        # Device work on one track per place (Perfetto shows it under the host threads), each
        # span naming the op call whose launch it was.
        places = sorted({d.place for ev in self._events for d in ev.device_spans or ()})
        track = {p: -(i + 1) for i, p in enumerate(places)}
        out += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": track[p],
                 "args": {"name": f"{p} device"}} for p in places]
        for ev in self._events:
            for d in ev.device_spans or ():
                ts = (d.start_ns - base) / 1e3
                out.append({"name": d.name, "cat": "device", "ph": "X", "ts": ts,
                            "dur": (d.end_ns - base) / 1e3 - ts, "pid": pid,
                            "tid": track[d.place],
                            "args": {"op": ev.name, "correlation_id": ev.correlation_id}})
        return {"traceEvents": out, "displayTimeUnit": "ms"}

    def export(self, path: str, format: str = "json") -> None:
        """Writes the Chrome trace to `path` (format "json", Paddle's default)."""
        if format != "json":
            raise ValueError(f"Profiler.export: format expected 'json', got {format!r}")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.chrome_trace(), f)


def export_chrome_tracing(dir_name: str,
                          worker_name: str | None = None) -> Callable[[Profiler], None]:
    """An on_trace_ready callback writing the trace into `dir_name` (as Paddle's does)."""
    def handle(prof: Profiler) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"host_{socket.gethostname()}pid_{os.getpid()}"
        stamp = time.strftime("%Y_%m_%d_%H_%M_%S")
        prof.export(os.path.join(dir_name, f"{worker}_time_{stamp}.paddle_trace.json"))

    return handle


__all__ = ["DeviceSpan", "Event", "Profiler", "ProfilerTarget", "RecordEvent", "SortedKeys",
           "export_chrome_tracing"]
