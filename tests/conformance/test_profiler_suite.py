"""hwcheck's profiler suite (ABI 1.2 profiler table): PASSes the CPU plugin, which times its
stream work and its codegen launches; FAILs the zoo's profiler bugs naming what is wrong;
NOT_SUPPORTED where there is no table (good) or only a 1.0 one (older_minor, whose 1.2
functions are traps beyond its struct_size: calling one would abort the run)."""

from __future__ import annotations

import shutil

import pytest

from hwport.conformance.model import Target
from tests.conftest import installed_plugin

from .direct_run import run_direct, zoo_target


def _cpu_target() -> Target:
    return Target("", str(installed_plugin("device_plugins/cpu/libhwport_cpu.so")))


def _profiler(target: Target) -> dict:
    return {cid: (str(r.status), r.message) for cid, r in
            run_direct(target, ("profiler",)).items()}


def test_the_cpu_plugin_passes():
    res = _profiler(_cpu_target())
    # codegen_spans needs the C compiler of the CPU plugin's c99 target (NOT_SUPPORTED without)
    assert {cid: s for cid, (s, _) in res.items()} == {
        "profiler::table": "PASS", "profiler::spans": "PASS",
        "profiler::codegen_spans": "PASS" if shutil.which("cc") or shutil.which("gcc")
        else "NOT_SUPPORTED"}, res


@pytest.mark.parametrize("variant, case, needle", [
    ("profiler_start_fails", "profiler::table", "performance counters are in use"),
    ("profiler_start_fails", "profiler::spans", "performance counters are in use"),
    ("profiler_ids", "profiler::spans", "correlation ids no launch carried: [1]"),
])
def test_profiler_bugs_fail_naming_the_problem(variant, case, needle):
    res = _profiler(zoo_target(variant))
    status, message = res[case]
    assert status == "FAIL" and needle in message, res


def test_the_table_of_the_buggy_ids_variant_itself_is_valid():
    assert _profiler(zoo_target("profiler_ids"))["profiler::table"][0] == "PASS"


@pytest.mark.parametrize("variant", ["good", "older_minor"])
def test_no_table_or_a_1_0_table_is_not_supported(variant):
    res = _profiler(zoo_target(variant))
    assert {s for s, _ in res.values()} == {"NOT_SUPPORTED"}, res
