"""The memory-accounting and guard-region zoo (tests/plugins/test_plugin.c, ids 200-249): each
broken variant gets exactly the expected status on exactly the affected cases, and every other
case the status it has on the valid plugin it derives from (good).

The accounting variants run the direct suites in this process, as a worker runs them; overrun
(a kernel bug) goes through the hwcheck CLI with the kernels and guards suites."""

from __future__ import annotations

import json

import pytest

from tests.conftest import zoo_plugin_path

from .conftest import hwcheck
from .direct_run import run_direct, statuses, zoo_target

# variant -> {case id: (status, message needle)}; every other case as on good.
ACCOUNTING_FAILURES = {
    "peak_forgets": {"memory::peak_after_free": ("FAIL", "the peak forgot the high-water mark")},
    "refused_counts": {
        "memory::stats_after_refused_allocation": ("FAIL", "num_allocs +1"),
        "memory::oom_cycles_no_drift": ("FAIL", "num_allocs grew by 7 in round 1, which "
                                                "granted 6 pieces"),
    },
    "no_limit": {
        "memory::out_of_memory": ("FAIL", "returned HWP_OK; expected an error"),
        "memory::beyond_total_refused": ("FAIL", "allocate(1048577 bytes, 1 more than the "
                                                 "advertised 1048576) returned HWP_OK"),
        "memory::fill_to_total": ("FAIL", "were all granted on a device that advertises "
                                          "1048576"),
        "memory::oom_cycles_no_drift": ("FAIL", "were all granted on a device that advertises"),
    },
    "oom_drift": {
        "memory::fill_to_total": ("FAIL", "bytes_in_use is 149809 after filling the device"),
        "memory::oom_cycles_no_drift": ("FAIL", "drift: bytes_in_use is 149809 after round 1"),
    },
    # Its bug is in the "add" kernel, which the direct suites never launch.
    "overrun": {},
}


@pytest.fixture(scope="module")
def good() -> dict[str, str]:
    return statuses(run_direct(zoo_target("good")))


def test_the_new_cases_pass_on_good_under_its_memory_cap(good):
    results = run_direct(zoo_target("good"), ("memory",))
    for case in ("peak_after_free", "stats_after_refused_allocation", "beyond_total_refused",
                 "fill_to_total", "oom_cycles_no_drift", "deallocate_null"):
        assert good[f"memory::{case}"] == "PASS", case
    # the test runtime's limit variable follows the convention and is found by it
    for case in ("beyond_total_refused", "fill_to_total", "oom_cycles_no_drift"):
        details = results[f"memory::{case}"].details
        assert details["limit_env"] == "HWPORT_TEST_GOOD_MEMORY_LIMIT", details
    cycles = results["memory::oom_cycles_no_drift"].details
    assert cycles["pieces_per_round"] == [6] * 5  # 1 MiB / (1 MiB / 7 + 13): refused at the 7th


@pytest.mark.parametrize("variant", sorted(ACCOUNTING_FAILURES))
def test_accounting_bug_fails_exactly_the_affected_cases(variant, good):
    failures = ACCOUNTING_FAILURES[variant]
    results = run_direct(zoo_target(variant))
    want = dict(good)
    want.update({cid: status for cid, (status, _) in failures.items()})
    assert statuses(results) == want
    for cid, (_, needle) in failures.items():
        assert needle in results[cid].message, (cid, results[cid].message)


def test_uncapped_plugin_that_advertises_too_much_to_fill_is_not_supported(monkeypatch):
    """Without a limit variable that takes effect, a device advertising 4 GiB is not filled."""
    from hwport.conformance.suites import memory

    monkeypatch.setattr(memory, "_limit_env_candidates", lambda device_type: [])
    results = run_direct(zoo_target("good"), ("memory",))
    for case in ("fill_to_total", "oom_cycles_no_drift"):
        r = results[f"memory::{case}"]
        assert str(r.status) == "NOT_SUPPORTED", (case, r.message)
        assert "no memory-limit variable took effect" in r.message
        assert f"more than hwcheck fills without a cap ({memory.FILL_LIMIT})" in r.message
    assert str(results["memory::beyond_total_refused"].status) == "PASS"


def test_the_limit_variable_can_be_named_for_any_plugin(monkeypatch):
    """HWCHECK_MEMORY_LIMIT_ENV names a plugin's variable (tried first); a variable that does
    not take effect is skipped."""
    monkeypatch.setenv("HWCHECK_MEMORY_LIMIT_ENV", "HWPORT_NOT_READ_BY_ANY_PLUGIN")
    results = run_direct(zoo_target("good"), ("memory",))
    details = results["memory::fill_to_total"].details
    assert details["limit_env"] == "HWPORT_TEST_GOOD_MEMORY_LIMIT"
    from hwport.conformance.suites import memory

    assert memory._limit_env_candidates("test_good") == [
        "HWPORT_NOT_READ_BY_ANY_PLUGIN", "HWPORT_TEST_GOOD_MEMORY_LIMIT"]


def test_overrun_passes_the_kernels_suite_and_fails_the_guards_suite(tmp_path):
    """The add kernel's last vector store writes up to 7 floats past its output: the host
    allocator's rounding hides that from every kernels case; every guards case of add catches
    it (past the end), on good they all pass."""
    args = ["run", "--suite", "kernels,guards", "-k", "add/float32", "--jobs", "2",
            "--json", "run.json", "--plugin", str(zoo_plugin_path("overrun")),
            "--plugin", str(zoo_plugin_path("good"))]
    proc = hwcheck(*args, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    by_plugin: dict[str, dict[str, dict]] = {}
    for r in json.loads((tmp_path / "run.json").read_text())["results"]:
        by_plugin.setdefault(r["plugin"], {})[r["id"]] = r
    good, overrun = by_plugin["test_good"], by_plugin["test_overrun"]
    assert set(good) == set(overrun)
    guards = {cid for cid in good if cid.startswith("guards::add/float32/")}
    assert len(guards) == 2
    assert {good[c]["status"] for c in good} == {"PASS"}
    for cid, r in overrun.items():
        if cid in guards:
            assert r["status"] == "FAIL", (cid, r)
            assert "guard byte(s) past its end changed" in r["message"], r["message"]
            assert all(d["side"] == "after" and d["nearest"] == 1
                       for d in r["details"]["damage"]), r["details"]
        else:
            assert r["status"] == "PASS", (cid, r)
