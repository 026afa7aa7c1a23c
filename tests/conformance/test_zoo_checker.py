"""The checker-correctness zoo (tests/plugins/zoo_checker.c): each plugin is caught by exactly
the intended cases with the intended status, every other case as on `good`; and the host's
fallback for a kernel that refuses a call at run time (HWP_ERROR_NOT_SUPPORTED)."""

from __future__ import annotations

import json

import pytest

from hwport.conformance import elf_symbols
from tests.conftest import run_isolated, zoo_plugin_path

from .conftest import hwcheck
from .direct_run import run_direct, statuses, zoo_target

# variant -> {direct case id: (status, message needle)}; all others as on `good`.
DIRECT = {
    "extra_exports": {"abi::exported_symbols": ("FAIL", "besides hwport_plugin_init: "
                                                        "zc_dump_stats")},
    "underlinked": {"abi::resolves_symbols": ("FAIL", "undefined symbols: expf")},
    "abort_kernel": {},
    "runtime_not_supported": {},
    "no_copy": {},
}
RANK3 = ("kernels::add/float32/bcast", "kernels::add/float32/odd7-bcast-T")  # rank-3 outputs


@pytest.fixture(scope="module")
def good() -> dict[str, str]:
    return statuses(run_direct(zoo_target("good")))


def test_good_exports_one_symbol_and_links_completely(good):
    assert good["abi::exported_symbols"] == "PASS"
    assert good["abi::resolves_symbols"] == "PASS"
    assert elf_symbols.exported_symbols(zoo_plugin_path("good")) == ["hwport_plugin_init"]


@pytest.mark.parametrize("variant", sorted(DIRECT))
def test_direct_suites_catch_exactly_the_bug(variant, good):
    results = run_direct(zoo_target(variant))
    want = dict(good, **{cid: status for cid, (status, _) in DIRECT[variant].items()})
    assert statuses(results) == want
    for cid, (_, needle) in DIRECT[variant].items():
        assert needle in results[cid].message, (cid, results[cid].message)


def test_elf_reader_and_clean_process_binding():
    assert elf_symbols.exported_symbols(zoo_plugin_path("extra_exports")) == [
        "hwport_plugin_init", "zc_dump_stats"]
    # Python has libm loaded, so loading it here would succeed: only the clean process sees it.
    found = elf_symbols.unresolved_symbols(zoo_plugin_path("underlinked"))
    assert found["symbols"] == ["expf"], found
    assert elf_symbols.unresolved_symbols(zoo_plugin_path("good")) == {
        "symbols": [], "libraries": [], "versions": []}
    with pytest.raises(elf_symbols.NotElf):
        elf_symbols.exported_symbols(__file__)


@pytest.fixture(scope="module")
def op_runs(tmp_path_factory) -> dict[str, dict[str, dict]]:
    """kernels::add/* and coverage::add / coverage::strided-inputs on good and the op-level
    variants, through the CLI and its isolated runner: {plugin: {case id: result}}."""
    tmp = tmp_path_factory.mktemp("zoo_checker")
    args = ["run", "--suite", "kernels,coverage", "-k", "kernels::add/*", "-k",
            "coverage::add", "-k", "coverage::strided-inputs", "--jobs", "2", "--json",
            "run.json"]
    for v in ("good", "abort_kernel", "runtime_not_supported", "no_copy"):
        args += ["--plugin", str(zoo_plugin_path(v))]
    proc = hwcheck(*args, cwd=tmp)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # abort_kernel, no_copy fail
    out: dict[str, dict[str, dict]] = {}
    for r in json.loads((tmp / "run.json").read_text())["results"]:
        out.setdefault(r["plugin"], {})[r["id"]] = r
    return out


def _statuses(results: dict[str, dict]) -> dict[str, str]:
    return {cid: r["status"] for cid, r in results.items()}


def test_good_op_cases(op_runs):
    good = op_runs["test_good"]
    assert all(r["status"] == "PASS" for cid, r in good.items() if cid.startswith("kernels::"))
    # Its add is native except where an int32 input is cast (no cast kernel: CPU fallback).
    assert good["coverage::add"]["status"] == "NOT_SUPPORTED"
    assert good["coverage::add"]["details"]["fallback_ops"] == {"float32": ["cast[int32]"]}
    assert good["coverage::strided-inputs"]["status"] == "PASS"
    assert good["kernels::add/float32/same13x17"]["details"]["path"] == "native"
    assert good["kernels::add/float32/mixed-int32"]["details"]["path"] == "fallback"


def test_abort_in_a_kernel_is_a_crash_with_the_stderr_tail(op_runs):
    got = op_runs["test_abort_kernel"]
    want = dict(_statuses(op_runs["test_good"]), **{cid: "CRASH" for cid in RANK3})
    # Both coverage cases run the strided rank-3 case (odd7-bcast-T) too.
    want.update({"coverage::add": "CRASH", "coverage::strided-inputs": "CRASH"})
    assert _statuses(got) == want
    for cid in (*RANK3, "coverage::add", "coverage::strided-inputs"):
        msg = got[cid]["message"]
        assert "SIGABRT" in msg and "zc add: rank 3 is not implemented" in msg, msg
        assert "Fatal Python error: Aborted" in msg, msg  # faulthandler's stack, as for SIGSEGV
        assert "zc add: rank 3" in got[cid]["details"]["stderr_tail"]


def test_kernel_refusing_at_run_time_falls_back_and_coverage_says_so(op_runs):
    got = op_runs["test_runtime_not_supported"]
    assert _statuses(got) == _statuses(op_runs["test_good"])
    for cid in RANK3:
        assert got[cid]["details"]["path"] == "fallback"
        assert got[cid]["details"]["fallback_ops"] == ["add"]
    assert got["kernels::add/float32/T-step"]["details"]["path"] == "native"
    cov = got["coverage::add"]
    assert cov["details"]["fallback_ops"] == {"float32": ["add[float32]", "cast[int32]"]}
    assert set(cov["details"]["fallback_cases"]["float32"]) == {
        "bcast", "odd7-bcast-T", "mixed-int32", "mixed-int32-rev"}
    assert "through add, cast" in cov["message"]


def test_kernels_without_strided_inputs_and_no_copy_are_flagged(op_runs):
    got = op_runs["test_no_copy"]
    want = dict(_statuses(op_runs["test_good"]), **{"coverage::strided-inputs": "FAIL"})
    assert _statuses(got) == want
    msg = got["coverage::strided-inputs"]["message"]
    assert "float32: add" in msg and "HWP_KERNEL_ACCEPTS_STRIDED" in msg and "copy" in msg
    assert "copy[float32]" in got["coverage::add"]["details"]["fallback_ops"]["float32"]
    assert "copy" in got["kernels::add/float32/T-step"]["details"]["fallback_ops"]


REFUSED = """
import numpy as np, hwport
from hwport import runtime
x2 = np.arange(6, dtype=np.float32).reshape(2, 3)
x3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
place = "custom:test_runtime_not_supported"
a2 = hwport.to_tensor(x2, place=place)
a3 = hwport.to_tensor(x3, place=place)
assert np.array_equal(hwport.add(a2, a2).numpy(), x2 + x2)
before = dict(runtime.fallback_stats())
try:
    out = hwport.add(a3, a3).numpy()
except Exception as e:
    print("RAISED", type(e).__name__, e)
else:
    assert np.array_equal(out, x3 + x3)
    print("FELL", runtime.fallback_stats()[("add", "test_runtime_not_supported", "float32")]
          - before.get(("add", "test_runtime_not_supported", "float32"), 0))
"""


def test_host_falls_back_when_a_kernel_refuses_the_call():
    env = {"HWPORT_PLUGIN_PATH": str(zoo_plugin_path("runtime_not_supported"))}
    proc = run_isolated(REFUSED, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "FELL 1", proc.stdout
    proc = run_isolated(REFUSED, env=dict(env, HWPORT_FALLBACK="error"))
    assert proc.returncode == 0, proc.stderr
    assert "the kernel refused the call" in proc.stdout, proc.stdout
    assert "rank 3 is not supported" in proc.stdout, proc.stdout
