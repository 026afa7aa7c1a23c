"""hwcheck's abi::codegen_* checks (conformance/suites/abi_codegen.py): they pass on the
reference plugins' codegen targets (opencl-c-1.2 on custom:opencl, c99 on the CPU plugin),
and the zoo's broken tables (tests/plugins/zoo_codegen.c) fail exactly the checks their bug
touches, with a message that names it."""

from __future__ import annotations

import pytest

from hwport.conformance.model import Case, Result, Target
from hwport.conformance.suites import abi_codegen
from hwport.conformance.worker import run_case

from .conftest import hwcheck, results_by_id
from .direct_run import statuses, zoo_target
from .test_direct_suites import codegen_not_supported, loaded_plugin

CASES = [f"abi::{name}" for name in abi_codegen.CHECKS]


def codegen_results(target: Target) -> dict[str, Result]:
    """The abi::codegen_* cases alone, run in this process as a worker runs them."""
    states: dict = {}
    return {f"abi::{n}": run_case(target, Case("abi", n), states) for n in abi_codegen.CHECKS}


@pytest.mark.parametrize("device_type", ["opencl", "cpu"])
def test_reference_targets_pass(device_type: str) -> None:
    loaded_plugin(device_type)
    skipped = codegen_not_supported(device_type)
    if "abi::codegen_compile" in skipped:
        pytest.skip(f"the {device_type} plugin has no codegen target here")
    results = codegen_results(Target(device_type))
    want = {cid: "NOT_SUPPORTED" if cid in skipped else "PASS" for cid in CASES}
    assert statuses(results) == want, {c: r.message for c, r in results.items()}
    info = results["abi::codegen_target_info"].details["devices"]["0"]
    dialect = {"opencl": "opencl-c-1.2", "cpu": "c99"}[device_type]
    assert info["dialects"][0] == dialect
    assert ("SIMT" in info["flags"]) == (device_type == "opencl")
    assert results["abi::codegen_compile"].details["dialect"] == dialect
    launch = results["abi::codegen_launch"].details
    assert "stream" in launch and "null_stream" in launch  # both plugins have streams


def test_a_plugin_without_a_table_is_not_supported() -> None:
    results = codegen_results(zoo_target("good"))
    assert set(statuses(results).values()) == {"NOT_SUPPORTED"}
    assert "no codegen table" in results["abi::codegen_table"].message


def test_short_table_fails_the_table_check_and_the_rest_say_why() -> None:
    results = codegen_results(zoo_target("codegen_short_table"))
    assert set(statuses(results).values()) == {"FAIL"}
    assert "must cover get_target_info through unload" in results["abi::codegen_table"].message
    for cid in CASES[1:]:
        assert results[cid].message.startswith("not checked: abi::codegen_table failed"), cid


def test_bad_target_is_caught_by_each_check_it_touches() -> None:
    results = codegen_results(zoo_target("codegen_bad_target"))
    got = statuses(results)
    assert got["abi::codegen_table"] == "PASS"  # the table itself is complete
    assert got["abi::codegen_serialize"] == "NOT_SUPPORTED"  # no SERIALIZE flag
    assert {cid for cid, s in got.items() if s == "FAIL"} == set(CASES) - {
        "abi::codegen_table", "abi::codegen_serialize"}
    info = results["abi::codegen_target_info"].message
    assert "max_group_size is 0" in info and "not SIMT" in info
    assert "changed *out" in results["abi::codegen_compile_error"].message
    assert "compile of hwcheck's trivial c99 kernel -> HWP_ERROR_INVALID_ARGUMENT" in results[
        "abi::codegen_compile"].message


def test_cli_reports_the_codegen_cases(tmp_path) -> None:
    """End to end through `hwcheck run`: the cases run in workers and land in the JSON."""
    loaded_plugin("opencl")
    proc = hwcheck("run", "--plugin", "opencl", "--suite", "abi", "-k", "abi::codegen_*",
                   "--json", str(tmp_path / "run.json"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = results_by_id(tmp_path / "run.json")
    assert {cid: r["status"] for cid, r in found.items()} == {cid: "PASS" for cid in CASES}
