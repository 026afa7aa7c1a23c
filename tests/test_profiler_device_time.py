"""hwport.profiler's device time (ABI 1.2 profiler table): the CPU plugin times the stream work
of every launch a profiled op call makes and reports it with the call's correlation id. Checked
against what must hold whatever the timings are: every call that launched work has spans named
after its kernel, inside the profiler's run and after the call began; spans of one in-order
stream do not overlap and follow call order; a composite's device time is its sub-ops'; nested
profilers both get the spans; nothing is reported for calls made while no profiler runs; the
summary's device column, its GPU sort keys and the trace's device track agree with the events;
a plugin whose profiler fails costs the device time, never the profile."""

from __future__ import annotations

import itertools
import json
import time
import warnings

import numpy as np
import pytest

import hwport
from hwport.profiler import Profiler, SortedKeys
from hwport.runtime import _core
from tests.conftest import run_isolated, zoo_plugin_path

PLACE = "custom:cpu"


def _t(shape, seed=0):
    return hwport.to_tensor(np.random.default_rng(seed).standard_normal(shape)
                            .astype(np.float32), place=PLACE)


def _ops(prof):
    return [e for e in prof.events if e.kind == "op"]


def test_each_launching_call_has_its_own_device_spans():
    x, w = _t((256, 256)), _t((256, 256), 1)
    with Profiler() as prof:
        y = hwport.matmul(x, w)
        z = hwport.exp(y * 0.01)
        s = hwport.sum(z)
    after = time.perf_counter_ns()  # stop waited for the device work: it all ended before
    np.testing.assert_allclose(s.numpy(), np.exp((x.numpy() @ w.numpy()) * 0.01).sum(),
                               rtol=1e-3)
    assert PLACE + ":0" in prof.timed_places
    ops = _ops(prof)
    assert [e.name for e in ops] == ["matmul", "multiply", "exp", "sum"]
    ids = [e.correlation_id for e in ops]
    assert all(ids) and len(set(ids)) == len(ids)
    for ev in ops:
        assert ev.device_spans, f"{ev.name} has no device span"
        # y * 0.01 makes its scalar operand's 0-d tensor itself (a fill), then multiplies.
        want = ["fill", "multiply"] if ev.name == "multiply" else [ev.name]
        assert [d.name for d in ev.device_spans] == want
        for d in ev.device_spans:
            assert d.place == PLACE + ":0"
            assert ev.start_ns <= d.start_ns <= d.end_ns <= after
    # One in-order stream: spans never overlap and run in call order.
    spans = [d for ev in ops for d in ev.device_spans]
    for a, b in itertools.pairwise(spans):
        assert a.end_ns <= b.start_ns
    # matmul of 256^3 does measurable work.
    assert ops[0].device_ns > 0


def test_a_composites_device_time_is_its_sub_ops():
    x = hwport.abs(_t((256, 256))) + 0.5
    assert not _core.has_kernel("log2", PLACE, "float32"), "log2 no longer decomposes here"
    with Profiler() as prof:
        hwport.log2(x)
    ops = _ops(prof)
    top = ops[0]
    assert (top.name, top.path, top.parent) == ("log2", "decomposition", None)
    assert len(ops) > 1 and all(e.device_spans for e in ops[1:])
    incl = prof._inclusive_device_ns()
    # Its own launches (the copy into the result, say) plus every sub-op's, nested ones too.
    assert incl[id(top)] == top.device_ns + sum(e.device_ns for e in ops[1:])
    assert sum(e.device_ns for e in ops[1:]) > 0
    for ev in ops:
        children = [c for c in ops if c.parent is ev]
        assert incl.get(id(ev), 0) == ev.device_ns + sum(incl.get(id(c), 0) for c in children)
    assert sum(incl.get(id(e), 0) for e in ops if e.parent is None) == \
        sum(e.device_ns for e in ops)


def test_nested_profilers_both_get_the_inner_spans_and_none_leak_between_runs():
    x = _t((128, 128))
    hwport.exp(x)  # no profiler: nothing is timed or kept
    with Profiler() as outer:
        hwport.exp(x)
        with Profiler() as inner:
            hwport.tanh(x)
        hwport.abs(x)
    hwport.exp(x)
    with Profiler() as later:
        hwport.neg(x)
    o = {e.name: e for e in _ops(outer)}
    (i,) = _ops(inner)
    assert set(o) == {"exp", "tanh", "abs"} and i.name == "tanh"
    assert i is o["tanh"] and i.device_spans  # the same event object, timed once
    assert all(e.device_spans for e in o.values())
    (n,) = _ops(later)
    assert n.device_spans and all(d.name == "neg" for d in n.device_spans)
    assert n.correlation_id not in {e.correlation_id for e in o.values()}


def test_summary_device_column_gpu_keys_and_trace_device_track(tmp_path):
    big, small = _t((384, 384)), _t((8, 8))
    with Profiler() as prof:
        for _ in range(2):
            hwport.matmul(big, big)
            hwport.exp(small)
    text = prof.summary(sorted_by=SortedKeys.GPUTotal, time_unit="us")
    head = text.splitlines()[2].split()
    assert "Device(us)" in head and "device time on custom:cpu:0" in text
    rows = [ln.split() for ln in text.splitlines()[4:-1]]
    col = head.index("Device(us)")
    names = [r[0] for r in rows]
    assert names == ["matmul", "exp"]  # matmul's device time dominates
    for r in rows:
        total = sum(e.device_ns for e in _ops(prof) if e.name == r[0]) / 1e3
        assert abs(float(r[col]) - total) < 1e-3
    path = tmp_path / "trace.json"
    prof.export(str(path))
    trace = json.loads(path.read_text())
    dev = [e for e in trace["traceEvents"] if e.get("cat") == "device"]
    assert len(dev) == sum(len(e.device_spans) for e in _ops(prof))
    assert {e["args"]["op"] for e in dev} == {"matmul", "exp"}
    tracks = {e["tid"] for e in dev}
    named = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e.get("name") == "thread_name"}
    assert all(named[t] == "custom:cpu:0 device" for t in tracks)
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in dev)


def test_without_device_spans_the_summary_has_no_device_column():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Profiler() as prof:
            pass
    assert "Device(" not in prof.summary()


BROKEN_SCRIPT = r"""
import json, warnings, numpy as np, hwport
x = hwport.to_tensor(np.array([0.5, 1.0], np.float32), place="custom:test_profiler_start_fails")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with hwport.profiler.Profiler() as prof:
        y = hwport.add(x, x)
print("RESULT " + json.dumps({
    "events": [[e.name, e.path, e.device_spans] for e in prof.events if e.kind == "op"],
    "warnings": [str(w.message) for w in caught], "y": y.numpy().tolist()}))
"""


def test_a_failing_plugin_profiler_costs_the_device_time_not_the_profile():
    proc = run_isolated(BROKEN_SCRIPT, {"HWPORT_PLUGIN_PATH":
                                        str(zoo_plugin_path("profiler_start_fails"))})
    assert proc.returncode == 0, proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT "):])
    assert res["events"] == [["add", "native", None]]
    assert res["y"] == [1.0, 2.0]
    assert any("no device time" in w and "performance counters are in use" in w
               for w in res["warnings"]), res["warnings"]


def test_opencl_device_time_from_event_profiling():
    """The OpenCL plugin reports at stop() what its launches' events timed, converted from
    OpenCL's own clock to the host's (calibrated to tens of µs: 1 ms allowed here)."""
    try:
        hwport.device.get_device_properties("custom:opencl")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no OpenCL device: {exc}")
    place = "custom:opencl"
    x = hwport.to_tensor(np.random.default_rng(0).standard_normal((128, 128))
                         .astype(np.float32), place=place)
    before = time.perf_counter_ns()
    with Profiler() as prof:
        y = hwport.matmul(x, x)
        hwport.nn.functional.softmax(y, axis=-1)
    after = time.perf_counter_ns()
    assert place + ":0" in prof.timed_places
    ops = [e for e in _ops(prof) if e.place.startswith(place)]
    assert [e.name for e in ops] == ["matmul", "softmax"]
    slack = 1_000_000
    for ev in ops:
        assert ev.device_spans and ev.device_ns > 0, ev.name
        for d in ev.device_spans:
            assert d.name == ev.name and d.place == place + ":0"
            assert before - slack <= d.start_ns <= d.end_ns <= after + slack
    # The softmax ran after the matmul it reads, on the same in-order queue.
    assert ops[0].device_spans[-1].end_ns <= ops[1].device_spans[0].start_ns + slack


def test_eager_jit_launches_have_device_time():
    """An op that runs as an eager-JIT kernel (here: custom:opencl with its hand-written kernels
    disabled) is timed too: the host passes the op call's correlation id in HWP_CodegenLaunch
    (appended in 1.2), and the span is named after the compiled function. Launches outside a
    profiler carry no id, so the warm-up reports nothing."""
    proc = run_isolated("""
import json, time
import numpy as np
import hwport
from hwport.profiler import Profiler
try:
    hwport.device.get_device_properties("custom:opencl")
except Exception:
    print(json.dumps(None)); raise SystemExit
a = np.linspace(-1, 1, 64 * 64, dtype="float32").reshape(64, 64)
x = hwport.to_tensor(a, place="custom:opencl")
hwport.exp(x); hwport.sum(x, axis=1)  # compiled outside the profile
before = time.perf_counter_ns()
with Profiler() as prof:
    y = hwport.exp(x)
    s = hwport.sum(y, axis=1)
after = time.perf_counter_ns()
ops = [e for e in prof.events if e.kind == "op"]
print(json.dumps({
    "ok": bool(np.allclose(s.numpy(), np.exp(a).sum(1), rtol=1e-5)),
    "compiled": sorted(k[0] for k in hwport.runtime.compiled_stats() if k[1] == "opencl"),
    "cpu": sorted(k[0] for k in hwport.runtime.fallback_stats() if k[1] == "opencl"),
    "before": before, "after": after,
    "ops": [{"name": e.name, "id": e.correlation_id,
             "spans": [[d.name, d.place, d.start_ns, d.end_ns] for d in e.device_spans]}
            for e in ops]}))
""", env={"HWPORT_DISABLE_NATIVE_KERNELS": "opencl"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.splitlines()[-1])
    if doc is None:
        pytest.skip("no OpenCL device")
    assert doc["ok"] and doc["cpu"] == [] and {"exp", "sum"} <= set(doc["compiled"])
    assert [o["name"] for o in doc["ops"]] == ["exp", "sum"]
    slack = 1_000_000  # OpenCL's clock is calibrated to the host's within tens of µs
    for op in doc["ops"]:
        assert op["id"] and len(op["spans"]) == 1, op
        name, place, start, end = op["spans"][0]
        # the compiled function's name, not the op's: the span says what ran
        assert name.startswith("cinn_") and place == "custom:opencl:0"
        assert doc["before"] - slack <= start <= end <= doc["after"] + slack
