"""hwcheck certifies the Python examples through `--plugin <file>.py`, as a vendor would.

In CI each run keeps to the direct suites (abi, device, memory, stream) and a few kernel ops,
a few seconds each; the full certification (every suite, the runtime tier, and for
pyopencl_device's codegen target the kernels-native and compiler tiers) is marked slow."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conformance.conftest import hwcheck

from .conftest import NUMPY_DEVICE, PYOPENCL_DEVICE


def _run(tmp_path, *args: str, timeout: float = 600):
    env = {"HWPORT_PYTHON_PLUGIN_CACHE": str(tmp_path / "cache")}
    proc = hwcheck("run", *args, "--json", "run.json", cwd=tmp_path, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((tmp_path / "run.json").read_text())


def _by_plugin(doc) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for r in doc["results"]:
        assert r["id"] not in out.setdefault(r["plugin"], {}), "a case ran more than once"
        out[r["plugin"]][r["id"]] = r
    return out


def test_hwcheck_checks_the_python_examples_through_the_c_abi(tmp_path):
    # One run for both (the CLI's own start-up is paid once): the direct suites' cases and a
    # kernel op each.
    plugins = [NUMPY_DEVICE] + ([PYOPENCL_DEVICE] if importlib.util.find_spec("pyopencl")
                                else [])
    doc = _run(tmp_path, *(a for p in plugins for a in ("--plugin", str(p))),
               "--suite", "abi,device,memory,stream,kernels", "-k", "abi::", "-k", "device::",
               "-k", "memory::", "-k", "stream::", "-k", "kernels::exp/float32/*",
               "-k", "kernels::add/float32/*", "--jobs", "2")
    # a failing case would be rerun through the .py the user named
    assert [t["spec"] for t in doc["targets"]] == [str(p) for p in plugins]
    found = _by_plugin(doc)
    numpy = found["numpy"]
    assert all(r["status"] in ("PASS", "NOT_SUPPORTED") for r in numpy.values())
    # the entry library exports one symbol and binds in a process without Python's libraries
    for case in ("abi::exported_symbols", "abi::resolves_symbols", "memory::fill_to_total",
                 "memory::oom_cycles_no_drift", "device::concurrent_threads"):
        assert numpy[case]["status"] == "PASS", (case, numpy[case]["message"])
    # no stream table: every stream case says so; the optional parts it lacks are named
    stream = {i for i in numpy if i.startswith("stream::")}
    assert stream and all(numpy[i]["status"] == "NOT_SUPPORTED" for i in stream)
    assert "no copy_*_async" in numpy["memory::async_copies"]["message"]
    _check_paths(numpy)

    if PYOPENCL_DEVICE not in plugins:
        return
    (target,) = [t for t in doc["targets"] if t["spec"] == str(PYOPENCL_DEVICE)]
    if target["plugin"].get("device_count", 0) == 0:
        pytest.skip(f"pyopencl sees no device: {target['plugin'].get('device_count_note')}")
    ocl = found["pyopencl"]
    assert all(r["status"] in ("PASS", "NOT_SUPPORTED") for r in ocl.values()), \
        {i: r["message"] for i, r in ocl.items() if r["status"] != "PASS"}
    # streams are queues, events are markers: the ordering cases run and pass
    for case in ("stream::wait_several_events", "stream::sync_h2d_waits_all_streams",
                 "stream::null_stream_waits_all_streams", "device::synchronize_all_streams",
                 "memory::async_copies", "memory::memset", "memory::d2d_offsets"):
        assert ocl[case]["status"] == "PASS", (case, ocl[case]["message"])
    # its codegen target passes the abi suite's codegen checks, serialization included
    for case in ("abi::codegen_compile_error", "abi::codegen_launch", "abi::codegen_serialize"):
        assert ocl[case]["status"] == "PASS", (case, ocl[case]["message"])
    _check_paths(ocl, codegen=True)


def _check_paths(results: dict[str, dict], codegen: bool = False) -> None:
    """Broadcast and strided inputs reach the kernels through the plugin's own copy kernel;
    the int32 operand of the mixed cases (no cast kernel) is cast on the CPU fallback, or by a
    kernel the eager JIT compiled through the plugin's codegen target."""
    kernels = {i: r["details"] for i, r in results.items() if i.startswith("kernels::")}
    assert len(kernels) > 10
    for case, details in kernels.items():
        if "/mixed-" in case and codegen:
            assert details["path"] == "native" and details["compiled_ops"] == ["cast"], case
        elif "/mixed-" in case:
            assert details["path"] == "fallback" and details["fallback_ops"] == ["cast"], case
        else:
            assert details["path"] == "native", (case, details.get("fallback_ops"))
            assert "compiled_ops" not in details, case


@pytest.mark.slow
@pytest.mark.parametrize("plugin", [NUMPY_DEVICE, PYOPENCL_DEVICE], ids=lambda p: p.stem)
def test_hwcheck_certifies_the_runtime_tier(tmp_path, plugin):
    if plugin == PYOPENCL_DEVICE:
        pytest.importorskip("pyopencl")
    # pyopencl_device's full run (25031 cases, every op compiled on PoCL): ~20 min on 2 cores
    doc = _run(tmp_path, "--plugin", str(plugin), "--jobs", "2", timeout=3600)
    (tiers,) = doc["tiers"].values()
    assert tiers["runtime"]["status"] == "certified", tiers["runtime"]
    assert all(r["status"] in ("PASS", "NOT_SUPPORTED") for r in doc["results"])
    if plugin == PYOPENCL_DEVICE:  # its codegen target: every op on the device, compiled
        for tier in ("kernels-native", "compiler"):
            assert tiers[tier]["status"] == "certified", (tier, tiers[tier])
        paths = {r["details"].get("path") for r in doc["results"] if r["suite"] == "kernels"}
        assert "fallback" not in paths and "compiled" in paths, paths
