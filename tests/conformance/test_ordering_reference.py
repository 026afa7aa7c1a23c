"""The reference plugins order as device.h says: every implicit-ordering case PASSes on the
CPU plugin, with three devices (HWPORT_CPU_DEVICES) so the cross-device waits really run, and
on OpenCL (cross_device_event NOT_SUPPORTED where it has one device)."""

from __future__ import annotations

from hwport.conformance.model import Target
from hwport.conformance.suites import ordering
from tests.conftest import installed_plugin

from .direct_run import run_direct
from .test_direct_suites import loaded_plugin

CASES = {"device::synchronize_all_streams",
         *(f"stream::{name}" for name in ordering.STREAM_CHECKS)}


def ordering_results(target: Target) -> dict:
    results = run_direct(target, ("device", "stream"))
    return {cid: r for cid, r in results.items() if cid in CASES}


def test_cpu_with_three_devices_passes_every_ordering_case():
    so = installed_plugin("device_plugins/cpu/libhwport_cpu.so")
    results = ordering_results(Target("", str(so), {"HWPORT_CPU_DEVICES": "3"}))
    assert set(results) == CASES
    bad = {cid: (str(r.status), r.message) for cid, r in results.items()
           if str(r.status) != "PASS"}
    assert not bad, bad
    pairs = results["stream::cross_device_event"].details["pairs"]
    assert pairs == [[0, 1], [0, 2], [1, 0], [1, 2], [2, 0], [2, 1]]
    assert set(results["device::synchronize_all_streams"].details["devices"]) == {0, 1}


def test_cpu_with_one_device_has_no_cross_device_case():
    so = installed_plugin("device_plugins/cpu/libhwport_cpu.so")
    results = ordering_results(Target("", str(so), {"HWPORT_CPU_DEVICES": "1"}))
    cross = results.pop("stream::cross_device_event")
    assert str(cross.status) == "NOT_SUPPORTED"
    assert "1 device" in cross.message
    assert {str(r.status) for r in results.values()} == {"PASS"}


def test_opencl_passes_every_ordering_case():
    info = loaded_plugin("opencl")
    results = ordering_results(Target("opencl"))
    want = {cid: "PASS" for cid in CASES}
    if info["device_count"] == 1:
        want["stream::cross_device_event"] = "NOT_SUPPORTED"
    assert {cid: str(r.status) for cid, r in results.items()} == want, {
        cid: r.message for cid, r in results.items() if str(r.status) != want[cid]}
