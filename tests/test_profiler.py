"""hwport.profiler: the op calls it records (names, counts, shapes, dtypes, paths, nesting of
decompositions) against an independent record of the pipeline's calls (the op names its C++
entry logs, _core._pipeline_call_log), the Chrome trace (valid JSON, complete events that
nest), the summary (sorted by total time, totals recomputed from the events), user ranges,
steps, threads, and a clean layer mask after exceptions."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter

import numpy as np
import pytest

import hwport
from hwport.phi_ops.schema import load_ops
from hwport.profiler import Profiler, RecordEvent, SortedKeys
from hwport.runtime import _core
from tests.conftest import run_isolated, zoo_plugin_path

PLACE = "custom:cpu"
OPS = load_ops()


def _t(a, dtype=np.float32):
    return hwport.to_tensor(np.asarray(a, dtype=dtype), place=PLACE)


class DispatchCalls:
    """The oracle: the op names the pipeline's entry (runtime/src/pipeline.cpp call_op, which
    every op function, operator and C++ formula's sub-op enters) saw, in order."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __enter__(self):
        _core._pipeline_call_log(True)
        return self

    def __exit__(self, *exc):
        self.names = list(_core._pipeline_call_log(False))


def _ops(prof):
    return [e for e in prof.events if e.kind == "op"]


def _decomposing_unary():
    """sigmoid, or another float composite the CPU plugin has no kernel for."""
    cands = ["sigmoid"] + sorted(n for n, o in OPS.items()
                                 if not o.is_primitive and o.category == "unary")
    for op in cands:
        if not _core.has_kernel(op, PLACE, "float32") and "float32" in OPS[op].kernel_dtypes:
            return op
    pytest.skip("every unary composite has a native kernel on custom:cpu")


def test_records_exactly_the_calls_made_with_shapes_dtypes_place_and_path():
    x, y = _t(np.ones((2, 3))), _t(np.arange(3))
    with Profiler() as prof, DispatchCalls() as oracle:
        hwport.add(x, y)
        hwport.exp(x)
        hwport.exp(y)
        hwport.sum(x, axis=0)
        hwport.cast(x, "float64")
    events = _ops(prof)
    assert [e.name for e in events] == oracle.names
    assert Counter(e.name for e in events)["exp"] == 2
    add, exp_x, exp_y, sum_, cast = events
    assert exp_x.shapes == [[2, 3]]
    assert add.shapes == [[2, 3], [3]] and add.dtypes == ["float32", "float32"]
    assert exp_y.shapes == [[3]] and sum_.shapes == [[2, 3]]
    assert cast.dtypes == ["float32"]
    for e in events:
        assert e.place == "custom:cpu:0"
        assert e.depth == 0 and e.parent is None and e.duration_ns >= 0
        assert e.path == ("native" if _core.has_kernel(e.name, PLACE, e.dtype) else "fallback")
    assert {e.path for e in events} == {"native"}
    assert _core.layer_mask() == 0


def test_a_decomposition_shows_its_sub_ops_nested():
    op = _decomposing_unary()
    x = _t([-2.0, 0.5, 3.0])
    with Profiler() as prof, DispatchCalls() as oracle:
        out = getattr(hwport, op)(x)
    events = _ops(prof)
    assert [e.name for e in events] == oracle.names
    top, *subs = events
    assert (top.name, top.path, top.depth, top.parent) == (op, "decomposition", 0, None)
    assert subs, f"{op} ran no sub-ops"
    for s in subs:
        assert s.parent is not None and s.depth == s.parent.depth + 1
        assert top.start_ns <= s.start_ns <= s.end_ns <= top.end_ns
        assert s.path in ("native", "decomposition")
    assert all(s.parent is top for s in subs if s.depth == 1)
    if op == "sigmoid":
        assert {"exp", "divide", "where"} <= {s.name for s in subs}
        np.testing.assert_allclose(out.numpy(), 1 / (1 + np.exp(-x.numpy())), rtol=1e-5)


def test_a_fused_composite_is_native():
    fused = [o for o in ("softmax", "layer_norm") if _core.has_kernel(o, PLACE, "float32")]
    if not fused:
        pytest.skip("no fused composite kernel on custom:cpu")
    with Profiler() as prof:
        hwport.softmax(_t([[1.0, 2.0]]), axis=-1)
    (ev,) = _ops(prof)
    assert (ev.name, ev.path) == ("softmax", "native")


FALLBACK_SCRIPT = r"""
import json, numpy as np, hwport
from hwport.runtime import fallback_stats, reset_fallback_stats
x = hwport.to_tensor(np.array([0.5, 1.0], np.float32), place="custom:test_good")
reset_fallback_stats()
with hwport.profiler.Profiler() as prof:
    hwport.exp(x)
    hwport.add(x, x)
print("RESULT " + json.dumps({
    "events": [[e.name, e.path, e.place] for e in prof.events if e.kind == "op"],
    "stats": sorted(k[0] for k in fallback_stats() if k[1] == "test_good")}))
"""


def test_a_cpu_fallback_op_shows_as_fallback():
    proc = run_isolated(FALLBACK_SCRIPT, {"HWPORT_PLUGIN_PATH": str(zoo_plugin_path("good")),
                                          "HWPORT_FALLBACK": "allow"})
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT "):])
    # The runtime's own count (fallback_stats) is the oracle of which op fell back.
    assert res["stats"] == ["exp"]
    assert res["events"] == [["exp", "fallback", "custom:test_good:0"],
                             ["add", "native", "custom:test_good:0"]]


def test_chrome_trace_is_valid_json_with_complete_nested_events(tmp_path):
    op = _decomposing_unary()
    x = _t(np.linspace(-1, 1, 4))
    with Profiler() as prof:
        with RecordEvent("block"):
            getattr(hwport, op)(x)
            hwport.add(x, x)
        hwport.exp(x)
    path = tmp_path / "trace.json"
    prof.export(str(path))
    trace = json.loads(path.read_text())
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] != "device"]
    recorded = prof.events
    assert [e["name"] for e in xs] == [e.name for e in recorded]
    for e in xs:
        assert {"name", "cat", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["ts"] >= 0 and e["dur"] >= 0
        if e["cat"] == "op":
            assert {"shapes", "dtypes", "path", "place"} <= set(e["args"])
    # Durations in µs agree with the events' ns.
    for e, ev in zip(xs, recorded, strict=True):
        assert abs(e["dur"] - ev.duration_ns / 1e3) < 1e-3
    # Events of one thread nest or are disjoint (what a trace viewer needs), and each child lies
    # in its parent.
    index = {id(ev): i for i, ev in enumerate(recorded)}
    eps = 1e-3
    for ev, e in zip(recorded, xs, strict=True):
        if ev.parent is not None:
            p = xs[index[id(ev.parent)]]
            assert p["ts"] - eps <= e["ts"] and e["ts"] + e["dur"] <= p["ts"] + p["dur"] + eps
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in xs if e["cat"] != "step"]
    for a0, a1 in spans:
        for b0, b1 in spans:
            assert b1 <= a0 + eps or a1 <= b0 + eps or (a0 - eps <= b0 and b1 <= a1 + eps) \
                or (b0 - eps <= a0 and a1 <= b1 + eps)
    names = {e["name"]: e for e in xs}
    assert names["block"]["cat"] == "user"
    block = next(ev for ev in recorded if ev.name == "block")
    assert [ev.name for ev in recorded if ev.parent is block] == [op, "add"]
    assert names[op]["args"]["path"] == "decomposition"


def _summary_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("Name"))
    return [re.split(r"\s{2,}", ln.strip()) for ln in lines[head + 2:-1]]


def test_summary_is_sorted_by_total_time_and_totals_match_the_events(capsys):
    x = _t(np.ones(64))
    with Profiler() as prof:
        for _ in range(3):
            hwport.exp(x)
        hwport.add(x, x)
        hwport.sigmoid(x)
    text = prof.summary(time_unit="us")
    assert capsys.readouterr().out.strip() == text.strip()
    rows = _summary_rows(text)
    totals = [float(r[2]) for r in rows]
    assert totals == sorted(totals, reverse=True)
    events = _ops(prof)
    by_name = {r[0]: r for r in rows}
    assert set(by_name) == {e.name for e in events}
    for name, r in by_name.items():
        mine = [e for e in events if e.name == name]
        assert int(r[1]) == len(mine)
        assert float(r[2]) == pytest.approx(sum(e.duration_ns for e in mine) / 1e3, abs=1e-3)
        assert r[-1].split()[0] in ("native", "decomposition", "fallback")
    assert sum(e.name == "exp" and e.parent is None for e in events) == 3
    # Sorted by another key: the averages descend.
    avg = [float(r[3]) for r in _summary_rows(prof.summary(SortedKeys.CPUAvg, time_unit="us"))]
    assert avg == sorted(avg, reverse=True)
    with pytest.raises(ValueError, match="time_unit"):
        prof.summary(time_unit="min")


def test_a_report_made_while_profiling_counts_open_ranges_until_now():
    with Profiler() as prof, RecordEvent("open"):
        hwport.exp(_t([1.0]))
        trace = prof.chrome_trace()
    (rng,) = [e for e in trace["traceEvents"] if e["name"] == "open"]
    (op,) = [e for e in trace["traceEvents"] if e["name"] == "exp"]
    assert rng["dur"] >= 0 and op["ts"] + op["dur"] <= rng["ts"] + rng["dur"] + 1e-3


def test_start_stop_steps_and_record_event_outside_a_profiler():
    x = _t([1.0])
    with RecordEvent("nobody listens"):  # no profiler: nothing recorded, nothing breaks
        hwport.exp(x)
    prof = Profiler()
    hwport.exp(x)
    prof.start()
    assert _core.layer_mask() == _core.layer_bits()["profiler"]
    hwport.neg(x)
    prof.step()
    hwport.abs(x)
    prof.stop()
    hwport.exp(x)
    assert _core.layer_mask() == 0
    assert [e.name for e in _ops(prof)] == ["neg", "abs"]
    steps = [e for e in prof.events if e.kind == "step"]
    assert [s.name for s in steps] == ["ProfileStep#0", "ProfileStep#1"]
    neg, abs_ = _ops(prof)
    assert steps[0].start_ns <= neg.start_ns <= neg.end_ns <= steps[0].end_ns
    assert steps[1].start_ns <= abs_.start_ns <= abs_.end_ns <= steps[1].end_ns
    with pytest.raises(RuntimeError, match="not running"):
        prof.stop()


def test_nested_profilers_each_record_their_span():
    x = _t([1.0])
    with Profiler() as outer:
        hwport.exp(x)
        with Profiler() as inner:
            hwport.neg(x)
        hwport.abs(x)
        assert _core.layer_mask() == _core.layer_bits()["profiler"]
    assert [e.name for e in _ops(outer)] == ["exp", "neg", "abs"]
    assert [e.name for e in _ops(inner)] == ["neg"]
    assert _core.layer_mask() == 0


def test_a_profiler_records_only_its_own_thread():
    x = _t([1.0, 2.0])
    go = threading.Event()

    def worker():
        go.wait()
        for _ in range(3):
            hwport.neg(x)

    t = threading.Thread(target=worker)
    t.start()
    with Profiler() as prof:
        go.set()
        hwport.exp(x)
        t.join()
    assert [e.name for e in _ops(prof)] == ["exp"]
    assert {e.tid for e in _ops(prof)} == {threading.get_native_id()}


def test_an_exception_leaves_the_mask_clean_and_is_recorded():
    class Refuse:
        def on_call(self, call, next):
            raise KeyError("refused")

    x = _t([1.0])
    _core.register_layer("amp", Refuse())
    try:
        with pytest.raises(KeyError), Profiler() as prof:
            _core.layer_enter("amp")
            try:
                hwport.exp(x)
            finally:
                _core.layer_leave("amp")
    finally:
        _core.register_layer("amp", None)
    assert _core.layer_mask() == 0
    (ev,) = _ops(prof)
    assert (ev.name, ev.error, ev.path) == ("exp", "KeyError", "")
    # The profiler still works afterwards.
    with Profiler() as again:
        hwport.exp(x)
    assert [(e.name, e.error) for e in _ops(again)] == [("exp", "")]


def test_synchronize_and_record_shapes_options():
    x = _t(np.ones((4, 4)))
    with Profiler(synchronize=True, record_shapes=False) as prof:
        y = hwport.exp(x)
    (ev,) = _ops(prof)
    assert ev.shapes is None and ev.dtypes is None and ev.path == "native"
    np.testing.assert_allclose(y.numpy(), np.exp(np.ones((4, 4))), rtol=1e-6)
    with pytest.raises(TypeError, match="ProfilerTarget"):
        Profiler(targets=["cpu"])


def test_the_profiler_layer_is_registered_but_inactive_after_import():
    assert _core.registered_layer("profiler") is hwport.profiler._LAYER
    assert _core.layer_mask() == 0
