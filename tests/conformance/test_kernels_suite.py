"""The kernels and coverage suites, called in this process as the worker calls them: what they
collect for a target, and the results of real cases on the reference CPU plugin."""

from __future__ import annotations

import numpy as np
import pytest

from hwport.conformance.model import Case, CheckFailed, Status, Target
from hwport.conformance.suites import coverage, kernels
from hwport.conformance.suites.op_common import group_seed
from hwport.phi_ops import sample_inputs
from hwport.phi_ops.reference import reference
from hwport.phi_ops.tolerance import tolerance_for, ulp_distance
from hwport.runtime import _core

CPU = Target("cpu")
ALL = list(sample_inputs.ALL_DTYPES)


def _options(dtypes=ALL, **kw):
    return {"plugin": {"device_type": "cpu", "dtypes": list(dtypes)}, "seed": 0, **kw}


def test_collect_covers_every_op_dtype_and_shape_case_once():
    cases = kernels.collect(CPU, _options())
    want = [(op, d, c.name) for op, spec in sample_inputs.OPS.items() for d in spec.dtypes
            for c in sample_inputs.cases_for(op, d)]
    got = [(c.params["op"], c.params["dtype"], c.params["case"]) for c in cases]
    assert got == want
    assert len({c.id for c in cases}) == len(cases)
    assert all(c.id == f"kernels::{op}/{d}/{n}" for c, (op, d, n) in zip(cases, got,
                                                                       strict=True))
    assert {c.seed for c in cases if c.params["op"] == "exp" and c.params["dtype"] == "float32"} \
        == {group_seed(0, "exp", "float32")}


def test_collect_keeps_claimed_and_requested_dtypes_only():
    claimed = kernels.collect(CPU, _options(["float32", "int8"]))
    assert {c.params["dtype"] for c in claimed} == {"float32", "int8"}
    narrowed = kernels.collect(CPU, _options(dtypes=ALL) | {"dtypes": ["float16"]})
    assert {c.params["dtype"] for c in narrowed} == {"float16"}
    cov = coverage.collect(CPU, _options(["bool"]))
    assert {c.name for c in cov} == {n for n, op in sample_inputs.OPS.items()
                                     if "bool" in op.dtypes} | {coverage.STRIDED_CASE}
    assert all(c.params["dtypes"] == ["bool"] for c in cov)


def test_a_plugin_that_did_not_load_gets_one_failing_case():
    opts = {"plugin": {"device_type": "", "load_error": "wrong ABI"}, "seed": 0}
    for suite in (kernels, coverage):
        (case,) = suite.collect(Target(""), opts)
        with pytest.raises(CheckFailed, match=r"did not load.*wrong ABI"):
            suite.run(Target(""), case, {})


def _kernel_case(op: str, dtype: str, name: str) -> Case:
    return Case("kernels", f"{op}/{dtype}/{name}", {"op": op, "dtype": dtype, "case": name},
                group_seed(0, op, dtype))


@pytest.mark.parametrize(("op", "name"), [("exp", "odd13x17"), ("sin", "T"),
                                          ("softmax", "odd13x17")])
def test_run_records_the_error_statistics_of_a_float_op(op, name):
    case = _kernel_case(op, "float32", name)
    res = kernels.run(CPU, case, {})
    assert res.status == Status.PASS
    sc = next(c for c in sample_inputs.cases_for(op, "float32", case.seed) if c.name == name)
    want = reference(op, sc.inputs, sc.attrs)
    got = sample_inputs.to_numpy(sample_inputs.run_op(sc, "custom:cpu"))
    ulp = int(ulp_distance(got, want, "float32").max())
    d = res.details
    assert d["max_ulp"] == ulp  # the same inputs as an independent rerun
    assert d["max_abs_err"] == float(np.abs(got.astype(np.float64) - want).max())
    assert d["tolerance"] == tolerance_for(op, "float32")
    assert d["elements"] == want.size and d["mismatches"] == 0 and d["first_mismatch"] is None
    assert d["path"] == ("native" if _core.has_kernel(op, "custom:cpu", "float32")
                         else "decomposition")


def test_run_checks_integer_ops_exactly_and_reports_the_path():
    res = kernels.run(CPU, _kernel_case("argmax", "int16", "axis0"), {})
    assert res.status == Status.PASS and res.details["path"] == "native"
    assert res.details["max_ulp"] is None and res.details["tolerance"] == {}


def test_an_unknown_shape_case_is_a_harness_error():
    with pytest.raises(ValueError, match="no shape case"):
        kernels.run(CPU, _kernel_case("add", "float32", "nope"), {})


def test_coverage_on_cpu_is_native_or_decomposition():
    # square has no CPU kernel: it decomposes (into multiply), which runs natively
    assert not _core.has_kernel("square", "custom:cpu", "float32")
    case = Case("coverage", "square", {"op": "square", "dtypes": ["float32", "int32"]}, 5)
    res = coverage.run(CPU, case, {})
    assert res.status == Status.PASS
    assert res.details["paths"] == {"float32": "decomposition", "int32": "decomposition"}
    res = coverage.run(CPU, Case("coverage", "add", {"op": "add", "dtypes": ["float16"]}, 5), {})
    assert res.details["paths"] == {"float16": "native"}


def test_coverage_reports_the_cpu_fallback(tmp_path):
    """The zoo's `good` plugin has one kernel (add, float32): coverage says native for the add
    cases it runs itself, fallback for the two whose int32 input is cast (it has no cast
    kernel), and NOT_SUPPORTED with the fallback named for a primitive it lacks (multiply)."""
    from tests.conftest import zoo_plugin_path

    from .conftest import hwcheck, results_by_id

    proc = hwcheck("run", "--plugin", str(zoo_plugin_path("good")), "--suite", "coverage",
                   "-k", "coverage::add", "-k", "coverage::multiply", "--dtype", "float32",
                   "--json", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = results_by_id(tmp_path / "run.json")
    assert {cid: r["status"] for cid, r in got.items()} == {
        "coverage::add": "NOT_SUPPORTED", "coverage::multiply": "NOT_SUPPORTED"}, got
    add = got["coverage::add"]["details"]
    assert add["paths"] == {"float32": "fallback"}
    assert add["cases"] == {"float32": {"native": 9, "fallback": 2}}
    assert add["fallback_ops"] == {"float32": ["cast[int32]"]}
    mul = got["coverage::multiply"]["details"]
    assert mul["paths"] == {"float32": "fallback"}
    assert any(f.startswith("multiply[") for f in mul["fallback_ops"]["float32"]), mul
