"""hwcheck certifies the Python examples through `--plugin <file>.py`, as a vendor would.

In CI each run keeps to the direct suites (abi, device, memory, stream) and a few kernel ops,
a few seconds each; the full certification (every suite, the runtime tier) is marked slow."""

from __future__ import annotations

import json

import pytest

from tests.conformance.conftest import hwcheck, results_by_id

from .conftest import NUMPY_DEVICE, PYOPENCL_DEVICE

DIRECT = ["--suite", "abi,device,memory,stream,kernels",
          "-k", "abi::", "-k", "device::", "-k", "memory::", "-k", "stream::"]


def _run(tmp_path, plugin, *selection: str):
    env = {"HWPORT_PYTHON_PLUGIN_CACHE": str(tmp_path / "cache")}
    proc = hwcheck("run", "--plugin", str(plugin), *selection, "--jobs", "2", "--json",
                   "run.json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return results_by_id(tmp_path / "run.json"), json.loads((tmp_path / "run.json").read_text())


def _not_passed(results):
    return {i: r["message"] for i, r in results.items() if r["status"] != "PASS"}


def test_hwcheck_checks_numpy_device_through_the_c_abi(tmp_path):
    results, doc = _run(tmp_path, NUMPY_DEVICE, *DIRECT, "-k", "kernels::exp/float32/*")
    assert doc["targets"][0]["device_type"] == "numpy"
    assert all(r["status"] in ("PASS", "NOT_SUPPORTED") for r in results.values())
    # the entry library exports one symbol and binds in a process without Python's libraries
    for case in ("abi::exported_symbols", "abi::resolves_symbols", "memory::fill_to_total",
                 "memory::oom_cycles_no_drift", "device::concurrent_threads"):
        assert results[case]["status"] == "PASS", (case, results[case]["message"])
    # no stream table: every stream case says so; the optional parts it lacks are named
    stream = {i for i in results if i.startswith("stream::")}
    assert stream and all(results[i]["status"] == "NOT_SUPPORTED" for i in stream)
    assert "no copy_*_async" in results["memory::async_copies"]["message"]
    kernels = [r for i, r in results.items() if i.startswith("kernels::exp/float32/")]
    assert len(kernels) > 5 and all(r["details"]["path"] == "native" for r in kernels)
    # a failing case would be rerun through the .py the user named
    assert doc["targets"][0]["spec"] == str(NUMPY_DEVICE)


def test_hwcheck_checks_pyopencl_device_on_pocl(tmp_path):
    pytest.importorskip("pyopencl")
    results, doc = _run(tmp_path, PYOPENCL_DEVICE, *DIRECT, "-k", "kernels::add/float32/*")
    plugin = doc["targets"][0]["plugin"]
    if plugin.get("device_count", 0) == 0:
        pytest.skip(f"pyopencl sees no OpenCL device: {plugin.get('device_count_note')}")
    assert all(r["status"] in ("PASS", "NOT_SUPPORTED") for r in results.values()), \
        _not_passed(results)
    # streams are queues, events are markers: the ordering cases run and pass
    for case in ("stream::wait_several_events", "stream::sync_h2d_waits_all_streams",
                 "stream::null_stream_waits_all_streams", "device::synchronize_all_streams",
                 "memory::async_copies", "memory::memset"):
        assert results[case]["status"] == "PASS", (case, results[case]["message"])
    kernels = {i: r["details"] for i, r in results.items() if i.startswith("kernels::add/")}
    assert len(kernels) > 5
    # broadcast and strided inputs reach the kernel through the plugin's own copy kernel; only
    # the int32 operand of the mixed cases is cast on the CPU fallback (no cast kernel)
    for case, details in kernels.items():
        if "/mixed-" in case:
            assert details["path"] == "fallback" and details["fallback_ops"] == ["cast"], case
        else:
            assert details["path"] == "native", (case, details["fallback_ops"])


@pytest.mark.slow
@pytest.mark.parametrize("plugin", [NUMPY_DEVICE, PYOPENCL_DEVICE], ids=lambda p: p.stem)
def test_hwcheck_certifies_the_runtime_tier(tmp_path, plugin):
    if plugin == PYOPENCL_DEVICE:
        pytest.importorskip("pyopencl")
    results, doc = _run(tmp_path, plugin)
    (tiers,) = doc["tiers"].values()
    assert tiers["runtime"]["status"] == "certified", tiers["runtime"]
    assert not [r for r in results.values() if r["status"] not in ("PASS", "NOT_SUPPORTED")]
