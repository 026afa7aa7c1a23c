"""hwcheck's abi::ccl_* checks (conformance/suites/abi_ccl.py): a plugin without a CCL table
is NOT_SUPPORTED (the MPI adapter serves it); the zoo's own tables (tests/plugins/zoo_ccl.c)
pass when well formed, and each broken one fails abi::ccl_table with its bug named."""

from __future__ import annotations

import pytest

from hwport.conformance.model import Case, Result, Target
from hwport.conformance.suites import abi, abi_ccl
from hwport.conformance.worker import run_case

from .direct_run import statuses, zoo_target

CASES = [f"abi::{name}" for name in abi_ccl.CHECKS]


def ccl_results(target: Target) -> dict[str, Result]:
    states: dict = {}
    return {f"abi::{n}": run_case(target, Case("abi", n), states) for n in abi_ccl.CHECKS}


def test_the_checks_are_in_the_abi_suite() -> None:
    assert set(abi_ccl.CHECKS) <= set(abi.CHECKS)


@pytest.mark.parametrize("target", [zoo_target("good"), Target("cpu")], ids=["zoo", "cpu"])
def test_no_table_is_not_supported_and_says_the_adapter_serves(target: Target) -> None:
    results = ccl_results(target)
    assert set(statuses(results).values()) == {"NOT_SUPPORTED"}
    assert "MPI adapter serves" in results["abi::ccl_table"].message


@pytest.mark.parametrize("variant", ["ccl_good", "ccl_threshold", "ccl_bad_root"])
def test_well_formed_tables_pass(variant: str) -> None:
    results = ccl_results(zoo_target(variant))
    assert statuses(results) == dict.fromkeys(CASES, "PASS"), \
        {c: r.message for c, r in results.items()}
    table = results["abi::ccl_table"].details
    assert table["unique_id_size"] == 16
    assert table["optional"] == {"reduce": False, "reduce_scatter": False, "all_to_all": False}


@pytest.mark.parametrize(("variant", "needle"), [
    ("ccl_null_required", "HWP_CclTable.all_gather NULL (required in a 1.2 table)"),
    ("ccl_bad_id_size", "HWP_CclTable.unique_id_size 0: must be 1..128"),
    ("ccl_short_table", "must cover unique_id_size through group_end"),
])
def test_broken_tables_fail_the_table_check(variant: str, needle: str) -> None:
    results = ccl_results(zoo_target(variant))
    assert statuses(results) == dict.fromkeys(CASES, "FAIL")
    table = results["abi::ccl_table"].message
    assert needle in table, table
    assert "the runtime ignores this table" in table
    assert results["abi::ccl_unique_id"].message.startswith(
        "not checked: abi::ccl_table failed")


def test_ignored_tables_really_are_ignored_by_the_runtime() -> None:
    """What ccl_table's message promises: the runtime serves such a plugin with its adapter
    (checked in a fresh interpreter: plugins load once per process)."""
    from tests.conftest import run_isolated, zoo_plugin_path

    code = ("from hwport.runtime import _core\n"
            "from hwport.distributed.env import adapter_path\n"
            "_core.ccl_load_adapter('mpi', str(adapter_path('mpi')))\n"
            "for d in ('test_ccl_good', 'test_ccl_null_required'):\n"
            "    print(d, _core.ccl_backend(f'custom:{d}:0'))\n")
    paths = ":".join(str(zoo_plugin_path(v)) for v in ("ccl_good", "ccl_null_required"))
    from tests.distributed.mpi_run import mpi_skip_reason

    if mpi_skip_reason():
        pytest.skip(mpi_skip_reason())
    out = run_isolated(code, env={"HWPORT_PLUGIN_PATH": paths})
    assert out.returncode == 0, out.stderr
    assert "test_ccl_good test_ccl_good" in out.stdout
    assert "test_ccl_null_required mpi" in out.stdout
