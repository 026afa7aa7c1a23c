"""The zoo plugins of tests/plugins/zoo_kernels.c, each wrong only past a size threshold, are
caught by exactly the intended thresholds/transfers cases, while the old small cases (the
kernels suite's, the memory suite's large copies and memsets at offset 0) pass them.

The kernel variants run end to end through the hwcheck CLI (their kernels must be loaded by
the runtime, in the workers); the copy and memset variants run the direct suites in this
process, as a worker does (direct_run.py)."""

from __future__ import annotations

import json

import pytest

from hwport.conformance.suites import ladder
from tests.conftest import zoo_plugin_path

from .conftest import hwcheck
from .direct_run import run_direct, statuses, zoo_target

# test_runtime.h's devices: max_work_group_size 1, simd_width 1, 4 GiB.
ZOO_PROPS = {"max_work_group_size": 1, "simd_width": 1, "total_memory": 1 << 32}
KERNEL_VARIANTS = ("ktail_matmul", "tail_add", "multipass_sum", "f16acc_sum")
PATTERNS = ("matmul/float32", "add/float32", "sum/float32", "sum/float16")


def _sizes(case_id: str) -> list[int]:
    """The resolved sizes of a thresholds case id ("thresholds::matmul/float32/mnk-3x5x65")."""
    specs = case_id.rsplit("/", 1)[1].split("-", 1)[1]
    return [ladder.resolve(s, ZOO_PROPS, minimum=1) for s in specs.split("x")]


@pytest.fixture(scope="module")
def kernel_runs(tmp_path_factory) -> dict[str, dict[str, dict]]:
    """The kernels and thresholds suites' matmul/add/sum float32 and sum float16 cases on every
    kernel variant, in one CLI run: {variant: {case id: result}}."""
    tmp = tmp_path_factory.mktemp("zoo_sizes")
    args = ["run", "--suite", "kernels,thresholds", "--jobs", "2", "--json", "run.json"]
    for p in PATTERNS:
        args += ["-k", p]
    for v in KERNEL_VARIANTS:
        args += ["--plugin", str(zoo_plugin_path(v))]
    proc = hwcheck(*args, cwd=tmp)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out: dict[str, dict[str, dict]] = {}
    for r in json.loads((tmp / "run.json").read_text())["results"]:
        out.setdefault(r["plugin"].removeprefix("test_"),
                       {})[r["id"]] = r
    return out


def _failures(results: dict[str, dict]) -> dict[str, str]:
    bad = {cid: r["message"] for cid, r in results.items() if r["status"] != "PASS"}
    assert all(results[cid]["status"] == "FAIL" for cid in bad), bad
    return bad


def test_the_old_kernels_cases_pass_every_threshold_variant(kernel_runs):
    assert set(kernel_runs) == set(KERNEL_VARIANTS)
    for variant, results in kernel_runs.items():
        old = {cid: r["status"] for cid, r in results.items() if cid.startswith("kernels::")}
        assert old and set(old.values()) == {"PASS"}, (variant, old)


def test_matmul_k_tail_is_caught_exactly_past_one_k_block(kernel_runs):
    got = _failures(kernel_runs["ktail_matmul"])
    cases = [cid for cid in kernel_runs["ktail_matmul"] if cid.startswith("thresholds::matmul")]
    assert set(got) == {cid for cid in cases if _sizes(cid)[2] > 64}
    assert "thresholds::matmul/float32/mnk-3x5x64" not in got  # one full block is right
    assert "mnk 3x5x65: matmul[float32]: 15 of 15 elements differ" in \
        got["thresholds::matmul/float32/mnk-3x5x65"]


def test_add_scalar_tail_is_caught_on_the_vector_path_only(kernel_runs):
    got = _failures(kernel_runs["tail_add"])
    cases = [cid for cid in kernel_runs["tail_add"] if cid.startswith("thresholds::add")]
    want = {cid for cid in cases if _sizes(cid)[0] >= 4096 and _sizes(cid)[0] % 8}
    assert set(got) == want == {f"thresholds::add/float32/n-{n}" for n in (4097, 65535, 65537)}
    assert "n 4097: add[float32]: 1 of 4097 elements differ" in got[
        "thresholds::add/float32/n-4097"]
    assert "worst at index (4096,)" in got["thresholds::add/float32/n-4097"]


def test_multipass_sum_dropping_the_partial_pass_is_caught_past_4096(kernel_runs):
    got = _failures(kernel_runs["multipass_sum"])
    for cid in got:  # only where a partial pass exists
        n = max(_sizes(cid))
        assert cid.startswith("thresholds::sum/float32/") and n > 4096 and n % 4096, cid
    # 4097 drops one element of at least 0.1 (the positive domain): beyond rtol 1e-5 of ~8400
    assert {f"thresholds::sum/float32/{k}-4097" for k in ("flat", "rows", "cols")} <= set(got)
    assert {f"thresholds::sum/float32/{k}-65535" for k in ("flat", "rows")} <= set(got)
    assert "thresholds::sum/float32/flat-4095" not in got


def test_float16_accumulation_is_caught_by_the_precision_case(kernel_runs):
    got = _failures(kernel_runs["f16acc_sum"])
    assert all(cid.startswith("thresholds::sum/float16/") for cid in got), got
    msg = got["thresholds::sum/float16/accumulate-16384"]
    assert "got 4096.0" in msg, msg  # the float16 running sum stops at 4096
    # (the CPU plugin, accumulating in float32, passes the same case: test_thresholds.py)


# ---- copies and memsets (direct suites) -------------------------------------------------------

SUITES = ("memory", "transfers")  # the old large copies and memsets, and the new ones


@pytest.fixture(scope="module")
def direct_base() -> dict[str, dict[str, str]]:
    return {v: statuses(run_direct(zoo_target(v), SUITES)) for v in ("good", "good_streams")}


def test_the_valid_bases_pass_every_transfer(direct_base):
    for variant, got in direct_base.items():
        transfers = {cid: s for cid, s in got.items() if cid.startswith("transfers::")}
        assert transfers and set(transfers.values()) <= {"PASS", "NOT_SUPPORTED"}, variant
    assert direct_base["good_streams"]["transfers::memset/max-1-off4095"] == "PASS"
    assert direct_base["good"]["transfers::memset/4097-off0"] == "NOT_SUPPORTED"


def test_late_last_h2d_chunk_is_caught_by_the_copies_past_one_chunk(direct_base):
    results = run_direct(zoo_target("late_h2d"), SUITES)
    got = statuses(results)
    large = ("16777219-off0", "16777219-off1", "16777219-off3", "16777219-off4095",
             "max-1-off4095")
    # h2d: the copy's own destination; d2h: its source was written by a late h2d (copy_d2h
    # does not wait for the chunk in flight); d2d and memset submit work, which finishes it.
    failing = {f"transfers::{op}/{s}" for op in ("h2d", "d2h") for s in large}
    failing.add("memory::alloc_large")  # its 32 MiB + 3 copy is past one chunk too
    want = dict(direct_base["good"], **dict.fromkeys(failing, "FAIL"))
    assert got == want
    msg = results["transfers::h2d/16777219-off3"].message
    assert "h2d of 16777219 bytes at offset 3: the destination range is wrong: 3 of " \
           "16777219 bytes differ, the first at destination byte 16777219" in msg, msg


def test_unaligned_large_memset_is_caught_only_at_unaligned_offsets(direct_base):
    results = run_direct(zoo_target("unaligned_memset"), SUITES)
    got = statuses(results)
    failing = {f"transfers::memset/{s}-off{o}" for s in ("1048577", "16777219")
               for o in (1, 3, 4095)} | {"transfers::memset/max-1-off4095"}
    # the memory suite's large memsets are at offset 0: it passes this plugin
    assert got == dict(direct_base["good_streams"], **dict.fromkeys(failing, "FAIL"))
    msg = results["transfers::memset/1048577-off3"].message
    assert "the bytes before the offset changed: 3 of 3 bytes differ" in msg, msg
