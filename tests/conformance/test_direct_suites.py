"""The direct suites (abi, device, memory, stream) pass on the reference plugins (cpu, opencl) and
on the valid zoo plugins, with NOT_SUPPORTED exactly where the plugin lacks an optional
function; and the pieces they stand on: finding a built-in plugin's file, the isolated load
probe, the host's struct_size discipline."""

from __future__ import annotations

import pytest

from hwport.conformance.model import Status, Target
from hwport.conformance.suites import (
    abi,
    abi_ccl,
    abi_codegen,
    device,
    direct_common,
    memory,
    stream,
)
from tests.conftest import zoo_plugin_path

from .direct_run import run_direct, statuses, zoo_target

# NOT_SUPPORTED without a stream table (synchronize_all_streams needs streams to queue work)
ALL_STREAM_CASES = ({f"stream::{name}" for name in stream.CHECKS}
                    | {"device::synchronize_all_streams"})
# The ABI 1.1 DLPack cases, NOT_SUPPORTED where the plugin names no DLPack device / has no
# native streams.
DLPACK_CASES = {"memory::device_address", "memory::wrap_device_memory", "stream::native_stream",
                "stream::native_stream_wait"}
GATES = ("load", "entry", "init", "abi_major", "struct_sizes", "required_functions")
# NOT_SUPPORTED without a codegen table (every zoo plugin here): all abi::codegen_* cases.
CODEGEN_CASES = {f"abi::{name}" for name in abi_codegen.CHECKS}


def expected_ids() -> set[str]:
    return ({f"abi::{g}" for g in GATES} | {f"abi::{n}" for n in abi.CHECKS}
            | {f"device::{n}" for n in device.CHECKS} | {f"memory::{n}" for n in memory.CHECKS}
            | ALL_STREAM_CASES)


# NOT_SUPPORTED without a CCL table (no plugin here has one: the MPI adapter serves them);
# tests/conformance/test_ccl_abi.py checks the zoo's own tables.
CCL_CASES = {f"abi::{name}" for name in abi_ccl.CHECKS}


def assert_passes(results, not_supported: set[str], judged_apart: frozenset = frozenset()) -> None:
    not_supported = set(not_supported) | CCL_CASES
    got = statuses(results)
    assert set(got) == expected_ids()
    got = {cid: s for cid, s in got.items() if cid not in judged_apart}
    bad = {cid: (s, results[cid].message) for cid, s in got.items()
           if s not in ("PASS", "NOT_SUPPORTED")}
    assert not bad, bad
    assert {cid for cid, s in got.items() if s == "NOT_SUPPORTED"} == not_supported
    for cid in not_supported:
        assert results[cid].message, cid  # says what is missing


def loaded_plugin(device_type: str) -> dict:
    from hwport import runtime

    found = [p for p in runtime.plugins() if p["device_type"] == device_type]
    if not found or found[0]["device_count"] < 1:
        pytest.skip(f"no {device_type} plugin with a device here")
    return found[0]


PROPERTIES_1_1 = frozenset({"device::properties_1_1"})


def assert_properties_1_1_verdict(results, device_type: str) -> None:
    """The reference plugins' device::properties_1_1 is judged against what they report (the
    raw fields, read here through the C ABI): it PASSes exactly when every device's simd_width
    is >= 1 and the other numeric 1.1 fields are in range, and a FAIL names each bad field.
    (While a reference plugin still leaves the 1.1 fields zero, simd_width 0 FAILs.)"""
    from hwport.conformance.direct_host import DirectHost

    h = DirectHost(direct_common.plugin_file(Target(device_type)))
    bad = []
    for d in range(h.device_count()):
        p = h.properties(d)
        bad += [f"device {d}: {f} {getattr(p, f)} < {least}"
                for f, least in (("simd_width", 1), ("architecture_major", 0),
                                 ("architecture_minor", 0),
                                 ("max_threads_per_compute_unit", 0)) if getattr(p, f) < least]
        if p.max_allocation > p.total_memory:
            bad.append(f"device {d}: max_allocation")
        assert p.dlpack_device_type == 0, "a reference plugin names a DLPack device"
    result = results["device::properties_1_1"]
    assert str(result.status) == ("FAIL" if bad else "PASS"), (bad, result.message)
    for needle in bad:
        assert needle in result.message


def codegen_not_supported(device_type: str) -> set[str]:
    """The abi::codegen_* cases a reference plugin is NOT_SUPPORTED in, from what its table
    says: all without a table (codegen_table too) or a bare one, all but codegen_table when its
    device 0 has no target now (e.g. no C compiler), else codegen_serialize without the
    SERIALIZE flag. Everything else must PASS."""
    from hwport.conformance.codegen_host import SERIALIZE, Codegen
    from hwport.conformance.direct_host import DirectHost

    h = DirectHost(direct_common.plugin_file(Target(device_type)))
    cg = Codegen(h)
    if not cg.present:
        return set(CODEGEN_CASES)
    if cg.bare:
        return CODEGEN_CASES - {"abi::codegen_table"}
    h.init_devices()
    status, info = cg.target_info(0)
    if status != 0:
        return CODEGEN_CASES - {"abi::codegen_table"}
    return set() if info.flags & SERIALIZE else {"abi::codegen_serialize"}


def test_cpu_plugin_passes():
    # tests/conftest.py sets HWPORT_CPU_DEVICES=2, so multi-device cases run too.
    loaded_plugin("cpu")
    results = run_direct(Target("cpu"))
    assert_passes(results, DLPACK_CASES | codegen_not_supported("cpu"), PROPERTIES_1_1)
    assert_properties_1_1_verdict(results, "cpu")
    assert "names no DLPack device" in results["memory::device_address"].message
    assert "no stream.native_stream" in results["stream::native_stream_wait"].message
    assert results["device::multi_device"].details["devices"] == 2
    assert results["memory::out_of_memory"].details["limit_env"] == "HWPORT_CPU_MEMORY_LIMIT"
    assert "limited" in results["memory::out_of_memory"].details
    assert results["abi::device_type"].details["device_type"] == "cpu"


def test_opencl_plugin_passes():
    info = loaded_plugin("opencl")
    results = run_direct(Target("opencl"))
    single = ({"device::multi_device", "stream::cross_device_event"}
              if info["device_count"] == 1 else set())
    assert_passes(results, single | DLPACK_CASES, PROPERTIES_1_1)
    assert results["abi::codegen_launch"].details["null_stream"]["group"][0] >= 1
    assert_properties_1_1_verdict(results, "opencl")
    assert (results["memory::out_of_memory"].details["limit_env"]
            == "HWPORT_OPENCL_MEMORY_LIMIT")


def test_zoo_good_passes_with_optional_parts_not_supported():
    results = run_direct(zoo_target("good"))
    assert_passes(results, {"device::init_device", "device::set_device", "memory::memset",
                            "memory::async_copies"} | ALL_STREAM_CASES | DLPACK_CASES
                  | CODEGEN_CASES)
    assert "stream table" in results["stream::in_order_chain"].message
    assert results["device::properties_1_1"].details["devices"][0]["simd_width"] == 1
    assert results["abi::required_functions"].details == {"kernels": 1, "optional": []}


def test_zoo_good_streams_passes_every_stream_case():
    results = run_direct(zoo_target("good_streams"))
    assert_passes(results, {"device::init_device", "device::set_device"} | DLPACK_CASES
                  | CODEGEN_CASES)
    assert results["abi::required_functions"].details["optional"] == ["stream"]
    assert "no stream.native_stream" in results["stream::native_stream"].message


def test_zoo_dlpack_passes_every_case_with_its_dlpack_devices():
    results = run_direct(zoo_target("dlpack"))
    assert_passes(results, {"device::init_device", "device::set_device"} | CODEGEN_CASES)
    devices = results["device::properties_1_1"].details["devices"]
    assert [d["dlpack_device"] for d in devices] == [[12, 100], [12, 101]]  # kDLExtDev
    assert results["memory::wrap_device_memory"].details["stats_checked"] is True


@pytest.mark.parametrize("variant", ["newer_minor", "older_minor"])
def test_other_minor_versions_pass(variant):
    # older_minor holds trap pointers beyond its struct sizes: the suites never touch them
    # (the process would abort).
    results = run_direct(zoo_target(variant))
    optional = {"device::init_device", "device::set_device", "memory::memset",
                "memory::async_copies"} | ALL_STREAM_CASES | DLPACK_CASES | CODEGEN_CASES
    if variant == "older_minor":  # no get_properties / get_memory_stats either
        optional |= {"device::properties", "device::properties_1_1", "memory::alignment",
                     "memory::stats_track_allocations",
                     "memory::leak_check", "abi::properties_struct_size",
                     "memory::peak_after_free", "memory::stats_after_refused_allocation",
                     "memory::beyond_total_refused", "memory::fill_to_total",
                     "memory::oom_cycles_no_drift",
                     "abi::stats_struct_size"}
    assert_passes(results, optional)
    assert results["abi::abi_major"].details["abi_version"] == {
        "newer_minor": "1.3", "older_minor": "1.0"}.get(variant, "1.2")


def test_plugin_file_of_a_builtin_plugin_comes_from_the_runtime():
    from hwport import runtime

    cpu = loaded_plugin("cpu")
    assert direct_common.plugin_file(Target("cpu")) == cpu["path"]
    assert direct_common.plugin_file(Target("cpu"), {"plugin": {"path": "/x.so"}}) == "/x.so"
    path = str(zoo_plugin_path("good"))
    assert direct_common.plugin_file(Target("whatever", path)) == path
    with pytest.raises(LookupError, match=r"no_such_type.*loaded: cpu"):
        direct_common.plugin_file(Target("no_such_type"))
    assert runtime.plugins()  # nothing above loaded or unloaded a plugin


def test_probe_reports_the_stage_that_failed_and_collect_follows_it():
    ok = direct_common.probe(zoo_target("good"))
    assert ok == {"stage": "ok", "message": "", "device_type": "test_good"}
    crashed = direct_common.probe(zoo_target("crash_init"))
    assert crashed["stage"] == "init" and "signal 11" in crashed["message"]
    # abi lists its acceptance checks up to the failing one; the others one FAIL case
    assert [c.name for c in abi.collect(zoo_target("crash_init"), {})] == [
        "load", "entry", "init"]
    for suite in (device, memory, stream):
        cases = suite.collect(zoo_target("crash_init"), {})
        assert [c.name for c in cases] == ["plugin-loads"]
        assert "abi::init failed: crashed" in cases[0].params["reason"]


def test_unknown_device_type_is_a_load_failure_not_an_exception():
    target = Target("no_such_type")
    assert [c.name for c in abi.collect(target, {})] == ["load"]
    results = run_direct(target, ("device",))
    assert statuses(results) == {"device::plugin-loads": "FAIL"}
    assert "no loaded plugin has device type 'no_such_type'" in results[
        "device::plugin-loads"].message


def test_host_reads_plugin_structs_only_as_far_as_struct_size():
    from hwport.conformance.direct_host import NULL, DirectHost, covers, field_end, member

    h = DirectHost(zoo_plugin_path("older_minor"))
    assert h.api.struct_size == field_end("HWP_PluginApi", "get_last_error")
    # non-NULL trap pointers lie beyond struct_size: the host must see them as absent
    assert h.api.stream != NULL  # the raw field holds a pointer ...
    assert member(h.api, "HWP_PluginApi", "stream") is None  # ... but not covered
    assert h.streams is None
    assert h.optional("device", "get_properties") is None
    assert h.optional("memory", "memset_async") is None
    assert covers(h.mem, "HWP_MemoryTable", "copy_d2d")
    assert not covers(h.mem, "HWP_MemoryTable", "copy_h2d_async")


def test_results_carry_measurements():
    results = run_direct(zoo_target("good_streams"), ("memory",))
    stats = results["memory::stats_track_allocations"].details
    grown = stats["allocated"]["bytes_in_use"] - stats["before"]["bytes_in_use"]
    assert grown == stats["requested"] == 1 + 100 + 4096 + (1 << 20) + 12345
    assert results["memory::alloc_many"].details["count"] == 1500
    assert results["memory::alloc_zero_size"].details["zero_size"] == "refused"
    assert results["memory::alloc_zero_size"].status == Status.PASS


def test_struct_size_check_catches_a_plugin_that_writes_past_it():
    """abi::properties_struct_size's guard, against a stand-in get_properties (a C callback)
    that ignores struct_size and fills the whole v1 struct, as a careless plugin would."""
    from hwport.conformance.direct_host import ffi
    from hwport.conformance.model import CheckFailed

    @ffi.callback("HWP_Status(int32_t, HWP_DeviceProperties *)")
    def careless(_device, props):
        ffi.memmove(props, b"\x01" * ffi.sizeof("HWP_DeviceProperties"),
                    ffi.sizeof("HWP_DeviceProperties"))
        return 0

    @ffi.callback("HWP_Status(int32_t, HWP_DeviceProperties *)")
    def careful(_device, props):
        n = props.struct_size
        ffi.memmove(props, b"\x01" * n, n)
        return 0

    with pytest.raises(CheckFailed, match="wrote past it"):
        abi._struct_size_respected("HWP_DeviceProperties", "name", lambda p: careless(0, p))
    got = abi._struct_size_respected("HWP_DeviceProperties", "name", lambda p: careful(0, p))
    assert got == {"struct_size": 8 + 256}
