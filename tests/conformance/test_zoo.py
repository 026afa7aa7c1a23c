"""Each broken zoo plugin (tests/plugins/test_plugin.c) gets exactly the expected status on
exactly the affected cases of the direct suites (abi, device, memory, stream), and every other
case the status it has on the valid plugin the variant was derived from.

Variants that only misbehave in ways a worker survives run in this process, as a worker runs
them; the ones that crash or hang go end to end through the hwcheck CLI and its isolated
runner (CRASH/TIMEOUT)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import zoo_plugin_path

from .conftest import hwcheck
from .direct_run import DIRECT_SUITES, run_direct, statuses, zoo_target

GATES = ["load", "entry", "init", "abi_major", "struct_sizes", "required_functions"]

# variant -> (the acceptance check that fails, what its message must say)
LOAD_FAILURES = {
    "missing_entry": ("entry", "does not export hwport_plugin_init"),
    "wrong_major": ("abi_major", "plugin ABI major version 2, host 1"),
    "short_struct": ("struct_sizes", "HWP_PluginApi.struct_size 16 < 56"),
    "short_table": ("struct_sizes", "HWP_MemoryTable.struct_size 40 < 48"),
    "missing_required": ("required_functions", "HWP_MemoryTable.copy_d2d missing"),
    "init_error": ("init", "HWP_ERROR_DEVICE: simulated driver failure"),
    "null_api": ("init", "no HWP_PluginApi"),
}

# variant -> (the valid variant it derives from, {case id: (status, message needle)})
RUNTIME_FAILURES = {
    "bad_device_type": ("good", {"abi::device_type": ("FAIL", "'Bad Type!' is not")}),
    # Under its memory cap (HWPORT_TEST_LEAK_MEMORY_LIMIT) the leaked bytes also fill it up.
    "leak": ("good", {"memory::leak_check": ("FAIL", "leak: bytes_in_use is"),
                      "memory::out_of_memory": ("FAIL", "exceed the device limit"),
                      "memory::fill_to_total": ("FAIL", "after filling the device"),
                      "memory::oom_cycles_no_drift": ("FAIL", "drift: bytes_in_use is")}),
    "false_stats": ("good", {"memory::stats_track_allocations":
                             ("FAIL", "bytes_in_use grew by 0 for 5 allocations")}),
    "stream_order": ("good_streams", {
        "stream::in_order_chain": ("FAIL", "48 overlapping stream-ordered writes"),
        "stream::async_copies_in_order": ("FAIL", "read 1 of 3"),
        "stream::cross_stream_event": ("FAIL", "stream B's copy after waiting"),
        # the ordering cases' chains run out of order too (ordering.py)
        "device::synchronize_all_streams": ("FAIL", "synchronize_device returned"),
        "stream::sync_d2h_waits_all_streams": ("FAIL", "copy_d2h of a buffer 3 streams"),
        "stream::sync_d2d_waits_all_streams": ("FAIL", "copy_d2d of a buffer 3 streams"),
        "stream::null_stream_waits_all_streams": ("FAIL", "copy_d2h_async(NULL stream)"),
        "stream::wait_several_events": ("FAIL", "waiting for the events of 3 producer"),
        "stream::cross_device_event": ("FAIL", "a stream of device 1 after waiting"),
    }),
    # Its streams only run when waited for, so the missing wait shows every time.
    "lazy_native_wait": ("dlpack", {"stream::native_stream_wait": (
        "FAIL", "stream B's copy after native_stream_wait(native_stream(B), A)")}),
    # Their bugs are in the "add" kernel, which these suites never launch (kernels suite).
    "wrong_result": ("good", {}),
    "segfault_kernel": ("good", {}),
}


@pytest.fixture(scope="module")
def base() -> dict[str, dict[str, str]]:
    return {v: statuses(run_direct(zoo_target(v))) for v in ("good", "good_streams", "dlpack")}


def test_the_valid_bases_have_no_failures(base):
    for variant, got in base.items():
        assert set(got.values()) <= {"PASS", "NOT_SUPPORTED"}, (variant, got)
    assert base["good_streams"]["stream::in_order_chain"] == "PASS"
    assert base["dlpack"]["stream::native_stream_wait"] == "PASS"


def expected_load_failure(stage: str) -> dict[str, str]:
    at = GATES.index(stage)
    want = {f"abi::{g}": "PASS" for g in GATES[:at]}
    want[f"abi::{stage}"] = "FAIL"
    want.update({f"{s}::plugin-loads": "FAIL" for s in DIRECT_SUITES[1:]})
    return want


@pytest.mark.parametrize("variant", sorted(LOAD_FAILURES))
def test_plugin_the_host_rejects_fails_at_exactly_that_check(variant):
    stage, needle = LOAD_FAILURES[variant]
    results = run_direct(zoo_target(variant))
    assert statuses(results) == expected_load_failure(stage)
    assert needle in results[f"abi::{stage}"].message, results[f"abi::{stage}"].message
    for suite in DIRECT_SUITES[1:]:
        msg = results[f"{suite}::plugin-loads"].message
        assert msg.startswith(f"plugin did not load: abi::{stage} failed: "), msg
        assert needle in msg


@pytest.mark.parametrize("variant", sorted(RUNTIME_FAILURES))
def test_misbehaving_plugin_fails_exactly_the_affected_cases(variant, base):
    parent, failures = RUNTIME_FAILURES[variant]
    results = run_direct(zoo_target(variant))
    want = dict(base[parent])
    want.update({cid: status for cid, (status, _) in failures.items()})
    assert statuses(results) == want
    for cid, (_, needle) in failures.items():
        assert needle in results[cid].message, (cid, results[cid].message)


def test_leak_and_false_stats_details_show_the_numbers():
    leak = run_direct(zoo_target("leak"), ("memory",))["memory::leak_check"]
    before, after = leak.details["before"], leak.details["after"]
    assert after["bytes_in_use"] > before["bytes_in_use"]
    assert after["num_frees"] - before["num_frees"] == 200  # it counted the frees it ignored
    false = run_direct(zoo_target("false_stats"), ("memory",))["memory::stats_track_allocations"]
    assert false.details["allocated"]["bytes_in_use"] == 0
    assert false.details["allocated"]["num_allocs"] - false.details["before"]["num_allocs"] == 5


def run_through_cli(tmp_path, variants: list[str], timeout: int) -> dict[str, dict[str, dict]]:
    """The direct suites on these zoo variants through the hwcheck CLI (which must fail):
    {plugin: {case id: result}} from its JSON report."""
    args = ["run", "--suite", ",".join(DIRECT_SUITES), "--timeout", str(timeout), "--jobs", "2",
            "--json", "run.json"]
    for v in variants:
        args += ["--plugin", str(zoo_plugin_path(v))]
    proc = hwcheck(*args, cwd=tmp_path, env={"HWPORT_PLUGIN_PROBE_TIMEOUT": str(timeout)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    by_plugin: dict[str, dict[str, dict]] = {}
    for r in json.loads((tmp_path / "run.json").read_text())["results"]:
        by_plugin.setdefault(r["plugin"], {})[r["id"]] = r
    return by_plugin


def test_crashing_and_hanging_plugins_through_the_runner(tmp_path, base):
    """End to end: a hanging synchronize is TIMEOUT on exactly device::synchronize; an init
    that segfaults or hangs is CRASH/TIMEOUT on abi::init, and the other suites say the plugin
    did not load. The run goes on after each."""
    by_plugin = run_through_cli(tmp_path, ["hang_sync", "crash_init", "hang_init"], timeout=3)

    hang_sync = by_plugin["test_hang_sync"]
    want = dict(base["good"], **{"device::synchronize": "TIMEOUT"})
    assert {cid: r["status"] for cid, r in hang_sync.items()} == want

    init_fail = {"abi::load": "PASS", "abi::entry": "PASS", "abi::init": None,
                 "device::plugin-loads": "FAIL", "memory::plugin-loads": "FAIL",
                 "stream::plugin-loads": "FAIL"}
    for variant, status, needle in (("crash_init", "CRASH", "SIGSEGV"),
                                    ("hang_init", "TIMEOUT", "timeout")):
        got = by_plugin[f"libhwport_test_{variant}.so"]
        assert {cid: r["status"] for cid, r in got.items()} == dict(init_fail,
                                                                   **{"abi::init": status})
        assert needle in got["abi::init"]["message"], got["abi::init"]["message"]
        assert "abi::init failed" in got["device::plugin-loads"]["message"]


def test_plugins_that_exit_or_hand_out_garbage_pointers_fail(tmp_path, base):
    """exit() in a constructor or in init (status 0 included) is a failing status on the check
    it happened in, never a pass; a garbage device_type or get_last_error pointer CRASHes the
    case that reads it (and the other suites say the plugin did not load, or crash where they
    read the error string), and the run goes on."""
    by_plugin = run_through_cli(tmp_path, ["exit_constructor", "exit0_init", "exit3_init",
                                           "garbage_device_type", "garbage_last_error"],
                                timeout=10)

    def got(variant: str) -> dict[str, dict]:
        return by_plugin[f"libhwport_test_{variant}.so"]

    not_loaded = {f"{s}::plugin-loads": "FAIL" for s in DIRECT_SUITES[1:]}
    for variant, stage, status in (("exit_constructor", "load", "exited with status 0"),
                                   ("exit0_init", "init", "exited with status 0"),
                                   ("exit3_init", "init", "exited with status 3")):
        results = got(variant)
        at = GATES.index(stage)
        want = {f"abi::{g}": "PASS" for g in GATES[:at]}
        want[f"abi::{stage}"] = "CRASH"
        assert {cid: r["status"] for cid, r in results.items()} == dict(want, **not_loaded)
        assert status in results[f"abi::{stage}"]["message"]
        assert status in results["device::plugin-loads"]["message"]
        assert "ended before reporting" in results["device::plugin-loads"]["message"]

    garbage_type = got("garbage_device_type")
    assert garbage_type["abi::device_type"]["status"] == "CRASH"
    assert {cid: r["status"] for cid, r in garbage_type.items() if cid in not_loaded} == not_loaded
    assert "HWP_PluginApi.device_type" in garbage_type["device::plugin-loads"]["message"]
    assert all(r["status"] == "PASS" for cid, r in garbage_type.items()
               if cid.startswith("abi::") and cid != "abi::device_type"
               and not cid.startswith("abi::codegen_"))  # no codegen table: NOT_SUPPORTED

    garbage_error = got("garbage_last_error")
    assert garbage_error["abi::last_error"]["status"] == "CRASH"
    assert "SIGSEGV" in garbage_error["abi::last_error"]["message"]
