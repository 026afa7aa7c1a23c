"""Runs the direct suites (abi, device, memory, stream) in this process, case by case, exactly
as a worker does (worker.run_case), and returns {case id: Result}."""

from __future__ import annotations

from hwport.conformance.model import Result, Target
from hwport.conformance.suites import load_suite
from hwport.conformance.worker import run_case
from tests.conftest import zoo_plugin_path

DIRECT_SUITES = ("abi", "device", "memory", "stream")


def zoo_target(variant: str) -> Target:
    return Target("", str(zoo_plugin_path(variant)))


def run_direct(target: Target, suites=DIRECT_SUITES) -> dict[str, Result]:
    states: dict = {}
    results: dict[str, Result] = {}
    for name in suites:
        for case in load_suite(name).collect(target, {}):
            assert case.id not in results, f"{case.id} collected twice"
            results[case.id] = run_case(target, case, states)
    return results


def statuses(results: dict[str, Result]) -> dict[str, str]:
    return {cid: str(r.status) for cid, r in results.items()}
