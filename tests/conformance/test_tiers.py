"""Certification tiers (conformance/tiers.py): the rules on synthetic runs, and end to end on the
zoo's `good` plugin, whose one native kernel must not make it look kernels-native."""

from __future__ import annotations

import json

from hwport.conformance import tiers
from hwport.conformance.model import Case, Result, Status
from hwport.conformance.results import PluginResult, Run, load_run
from hwport.conformance.tiers import CERTIFIED, NOT_ASSESSED, NOT_CERTIFIED, Tier
from tests.conftest import zoo_plugin_path

from .conftest import hwcheck

FULL = {"patterns": [], "dtypes": None}


def _r(suite: str, name: str, status: Status = Status.PASS, **details) -> PluginResult:
    params = {"op": name.split("/")[0]} if suite in ("kernels", "coverage") else {}
    return PluginResult("p", Result(Case(suite, name, params), status, details=details))


def _port(**overrides: Status) -> list[PluginResult]:
    """A port where everything passes; overrides: {"<suite>__<name>": status}."""
    cases = [("abi", "load"), ("device", "count"), ("memory", "stats"), ("stream", "order"),
             ("transfers", "h2d/4097-off1"), ("profiler", "spans"),
             ("kernels", "add/float32/x"),
             ("thresholds", "add/float32/n-4097"), ("guards", "add/float32/x"),
             ("coverage", "add")]
    out = []
    for suite, name in cases:
        status = overrides.get(f"{suite}__{name.replace('/', '_')}", Status.PASS)
        details = {"path": "native"} if suite == "kernels" else {}
        out.append(_r(suite, name, status, **details))
    return out


def _status(results, meta=FULL) -> dict[str, str]:
    return {name: t["status"] for name, t in tiers.assess(results, meta)["p"].items()}


def test_a_port_that_passes_everything_gets_the_assessed_tiers():
    assert _status(_port()) == {"runtime": CERTIFIED, "kernels-native": CERTIFIED,
                                "compiler": NOT_ASSESSED, "collectives": NOT_ASSESSED,
                                "training": NOT_ASSESSED}


def test_optional_tables_do_not_cost_the_runtime_tier_but_failures_do():
    assert _status(_port(stream__order=Status.NOT_SUPPORTED))["runtime"] == CERTIFIED
    for bad in (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.ERROR, Status.XFAIL):
        got = tiers.assess(_port(memory__stats=bad), FULL)["p"]["runtime"]
        assert got == {"status": NOT_CERTIFIED, "reasons": [f"memory: 1 {bad}"]}, bad
        assert _status(_port(memory__stats=bad))["kernels-native"] == CERTIFIED


def test_the_cpu_fallback_never_counts_as_native():
    # coverage NOT_SUPPORTED: some case of the op ran on the CPU fallback.
    got = tiers.assess(_port(coverage__add=Status.NOT_SUPPORTED), FULL)["p"]
    assert got["kernels-native"]["status"] == NOT_CERTIFIED
    assert got["runtime"]["status"] == CERTIFIED
    # A kernels case that passed on the fallback (coverage skips the large cases).
    results = _port() + [_r("kernels", "exp/float32/large", path="fallback")]
    got = tiers.assess(results, FULL)["p"]["kernels-native"]
    assert got["status"] == NOT_CERTIFIED
    assert "exp" in got["reasons"][0]


def test_a_partial_run_certifies_nothing():
    results = _port()
    assert _status(results, {"patterns": ["add"], "dtypes": None})["runtime"] == NOT_ASSESSED
    assert _status(results, {"patterns": [], "dtypes": ["float32"]})[
        "kernels-native"] == NOT_ASSESSED
    no_stream = [r for r in results if r.result.case.suite != "stream"]
    got = tiers.assess(no_stream, FULL)["p"]["runtime"]
    assert got == {"status": NOT_ASSESSED, "reasons": ["suite stream did not run"]}


def test_a_suite_joins_a_tier_by_one_entry(monkeypatch):
    runtime = tiers.TIERS[0]
    extended = Tier(runtime.name, runtime.promise,
                    {**runtime.suites, "newsuite": tiers.PASS_OR_OPTIONAL})
    monkeypatch.setattr(tiers, "TIERS", (extended, *tiers.TIERS[1:]))
    assert _status(_port())["runtime"] == NOT_ASSESSED  # newsuite did not run
    results = _port() + [_r("newsuite", "copy_256MiB", Status.FAIL)]
    assert tiers.assess(results, FULL)["p"]["runtime"]["reasons"] == ["newsuite: 1 FAIL"]


def test_the_json_document_carries_the_tiers_and_loads_back(tmp_path):
    doc = Run(dict(FULL), _port()).to_json()
    assert doc["schema"] == "hwcheck-run/1"
    assert doc["tiers"]["p"]["runtime"]["status"] == CERTIFIED
    (tmp_path / "run.json").write_text(json.dumps(doc))
    back = load_run(tmp_path / "run.json")
    assert "tiers" not in back.meta  # recomputed from the results, never stale
    assert back.to_json()["tiers"] == doc["tiers"]


def test_good_gets_runtime_but_not_kernels_native(tmp_path):
    """End to end: the zoo's `good` (valid runtime, one native kernel) passes every case, so the
    run is OK, but only the CPU fallback made its ops work: runtime, not kernels-native."""
    proc = hwcheck("run", "--plugin", str(zoo_plugin_path("good")), "--jobs", "2", "--json",
                   "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = json.loads((tmp_path / "run.json").read_text())["tiers"]["test_good"]
    assert got["runtime"] == {"status": CERTIFIED, "reasons": []}
    assert got["kernels-native"]["status"] == NOT_CERTIFIED
    assert got["kernels-native"]["reasons"][0].startswith("coverage: ")
    # no codegen target: the compiler suite is NOT_SUPPORTED, which its tier does not accept
    assert got["compiler"]["status"] == NOT_CERTIFIED
    assert got["compiler"]["reasons"][0].startswith("compiler: "), got["compiler"]
    assert "test_good  runtime: CERTIFIED" in proc.stdout
    assert "test_good  kernels-native: NOT CERTIFIED (coverage: " in proc.stdout
