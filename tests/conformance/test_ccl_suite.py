"""hwcheck's ccl suite (conformance/suites/ccl.py), run the way a vendor runs it: `hwcheck run
--suite ccl --ranks 2`, which launches mpirun itself. It passes on the reference plugins through
the MPI adapter and on the zoo's correct own tables, and it catches the zoo's collective bugs
(tests/plugins/zoo_ccl.c: a size threshold, an unchecked root, a table ignoring its stream)
in exactly the cases they touch. CI runs small sizes and few dtypes;
the full default sweep is marked slow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwport.conformance.ccl_cases import DTYPES, OPS, sizes
from hwport.conformance.model import Case, Status
from hwport.conformance.suites import ccl
from tests.conftest import zoo_plugin_path
from tests.distributed.mpi_run import mpi_environment, mpi_skip_reason

from .conftest import hwcheck, results_by_id

needs_mpi = pytest.mark.skipif(mpi_skip_reason() is not None, reason=str(mpi_skip_reason()))
SMALL = "0,1,1023,5001"  # 5001 > the threshold bug's 4096 elements


def run_ccl(tmp_path: Path, plugin: str, *args: str, timeout: float = 600):
    doc = tmp_path / "run.json"
    out = hwcheck("run", "--plugin", plugin, "--suite", "ccl", "--ranks", "2", "--json",
                  str(doc), "--junit", str(tmp_path / "junit.xml"), *args, cwd=tmp_path,
                  env=mpi_environment(), timeout=timeout)
    results = results_by_id(doc) if doc.exists() else {}
    return out, results, (json.loads(doc.read_text()) if doc.exists() else {})


def by_status(results: dict, status: str) -> set[str]:
    return {cid for cid, r in results.items() if r["status"] == status}


# ---- without mpirun -------------------------------------------------------------------------

def test_case_list_covers_every_collective_dtype_and_size() -> None:
    cases = ccl.case_list()
    names = [c.name for c in cases]
    assert len(names) == len(set(names))
    assert names[0] == "comm_init"
    for dtype in DTYPES:
        counts = sizes(dtype, None, False)
        assert counts[:4] == [0, 1, 1023, 65537]
        assert (counts[-1] - 1) * (2 if dtype in ("float16", "bfloat16", "int16") else 1) \
            in (4 << 20, (4 << 20) // 2, (4 << 20) // 4, (4 << 20) // 8)
        for c in counts:
            for op in OPS:
                assert (f"all_reduce/{op}/{dtype}/n{c}" in names) == \
                    (not (dtype == "bool" and op == "avg"))
            for kind in ("broadcast", "all_gather", "all_to_all", "send_recv"):
                assert f"{kind}/{dtype}/n{c}" in names
            for kind in ("reduce", "reduce_scatter"):
                assert f"{kind}/sum/{dtype}/n{c}" in names
    assert {n for n in names if n.startswith(("ordering/", "error/", "busbw/"))} >= {
        "ordering/all_reduce", "error/broadcast_bad_root", "error/bad_dtype",
        "busbw/all_reduce", "busbw/all_to_all"}
    large = {c.name for c in ccl.case_list(large=True)}
    assert f"all_reduce/sum/float32/n{(64 << 20) // 4 + 1}" in large
    assert f"all_reduce/sum/float32/n{(64 << 20) // 4 + 1}" not in names
    narrow = ccl.case_list([3], dtypes=["int8"])
    assert {c.params.get("dtype") for c in narrow} <= {None, "int8", "float32"}
    assert all(c.params.get("count", 3) == 3 for c in narrow if c.params["run"] == "collective")


def test_merge_names_the_failing_rank() -> None:
    case = Case("ccl", "all_reduce/sum/int8/n5")
    ok = {"status": "PASS", "message": "", "details": {"backend": "x"}, "duration_s": 0.1}
    bad = {"status": "FAIL", "message": "element 3 wrong", "details": {"first_mismatch": 3},
           "duration_s": 0.2}
    merged = ccl._merge(case, {0: ok, 1: bad, 2: ok}, 3)
    assert merged.status == Status.FAIL
    assert merged.message == "rank 1 of 3: element 3 wrong"
    assert merged.details["ranks"] == [1] and merged.details["first_mismatch"] == 3
    assert ccl._merge(case, {0: ok, 1: ok}, 2).status == Status.PASS


def test_bad_command_lines_are_usage_errors(tmp_path: Path) -> None:
    for args in (["--ranks", "0"], ["--ccl-sizes", "1,x"], ["--ccl-sizes", "-3"]):
        out = hwcheck("run", "--plugin", "cpu", "--suite", "ccl", *args, cwd=tmp_path)
        assert out.returncode == 2, (args, out.stdout, out.stderr)


# ---- under mpirun ---------------------------------------------------------------------------

RAW_ONLY = {"ccl::error/bad_dtype"} | {f"ccl::group/send_recv/n{c}" for c in SMALL.split(",")}


@needs_mpi
@pytest.mark.parametrize("device_type", ["cpu", "opencl"])
def test_reference_plugins_pass_through_the_mpi_adapter(tmp_path: Path,
                                                        device_type: str) -> None:
    from hwport import runtime

    if not any(p["device_type"] == device_type and p["device_count"] > 0
               for p in runtime.plugins()):
        pytest.skip(f"no {device_type} device here")
    out, results, doc = run_ccl(tmp_path, device_type, "--ccl-sizes", SMALL)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert len(results) == len(ccl.case_list([0, 1, 1023, 5001]))
    assert by_status(results, "FAIL") == set()
    # what only an own table can be asked: the host's adapter is not certified here
    assert by_status(results, "NOT_SUPPORTED") == RAW_ONLY
    init = results["ccl::comm_init"]["details"]
    assert init["backend"] == "mpi" and init["own_table"] is False and init["ranks"] == 2
    busbw = doc["ccl_busbw"][device_type]
    assert {r["collective"] for r in busbw} == set(ccl.BUSBW_COLLECTIVES)
    for row in busbw:
        factor = {"all_reduce": 1.0, "broadcast": 1.0}.get(row["collective"], 0.5)  # n = 2
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * factor, rel=1e-2,
                                                  abs=1e-3)
    assert "bus bandwidth: " + device_type in out.stdout
    assert 'name="all_reduce/avg/float16/n5001"' in (tmp_path / "junit.xml").read_text()


@needs_mpi
def test_a_correct_own_table_passes_every_case(tmp_path: Path) -> None:
    out, results, _doc = run_ccl(tmp_path, str(zoo_plugin_path("ccl_good")), "--ccl-sizes",
                                SMALL, "--dtype", "float32,int8,bfloat16")
    assert out.returncode == 0, out.stdout[-4000:]
    assert results["ccl::comm_init"]["details"]["own_table"] is True
    # own table: groups and bad dtype codes are checked through the table itself
    assert {f"ccl::group/send_recv/n{c}" for c in (1, 1023, 5001)} | \
        {"ccl::error/bad_dtype", "ccl::error/send_bad_peer"} <= by_status(results, "PASS")
    # its reduce is NULL: the root check belongs to the host's fallback
    assert by_status(results, "NOT_SUPPORTED") == {"ccl::error/reduce_bad_root"}


@needs_mpi
def test_a_size_threshold_bug_fails_exactly_above_the_threshold(tmp_path: Path) -> None:
    """ccl_threshold reduces only the first 4096 elements of all_reduce: every reduction of
    5001 elements fails (and the host's reduce/reduce_scatter fallbacks built on it, in place
    too), 1023 passes, and the other collectives are untouched."""
    out, results, _ = run_ccl(tmp_path, str(zoo_plugin_path("ccl_threshold")), "--ccl-sizes",
                              "1,1023,5001", "--dtype", "float32,int32")
    assert out.returncode == 1
    failed = by_status(results, "FAIL")
    want = {f"ccl::all_reduce/{op}/{dt}/n5001" for op in OPS for dt in ("float32", "int32")}
    want |= {f"ccl::{k}/{op}/{dt}/n5001" for k in ("reduce", "reduce_scatter")
             for op in ("sum", "max") for dt in ("float32", "int32")}
    # in-place and ordering cases use the largest --ccl-sizes count (5001)
    want |= {f"ccl::inplace/{k}/max/{dt}" for k in ("all_reduce", "reduce")
             for dt in ("float32", "int32")}
    want |= {"ccl::ordering/all_reduce", "ccl::busbw/all_reduce", "ccl::busbw/reduce_scatter"}
    assert failed == want, sorted(failed ^ want)
    assert all(f"ccl::all_reduce/{op}/float32/n1023" in by_status(results, "PASS")
               for op in OPS)
    msg = results["ccl::all_reduce/sum/float32/n5001"]["message"]
    assert msg.startswith("rank 0 of 2: all_reduce/sum of 5001 float32 element(s) per rank: "
                          "element 4096 of 5001")
    assert results["ccl::all_reduce/sum/float32/n5001"]["details"]["first_mismatch"] == 4096
    assert "--suite ccl" in results["ccl::all_reduce/sum/float32/n5001"]["details"]["repro"]


@needs_mpi
def test_a_table_that_ignores_its_stream_fails_the_ordering_cases_only(tmp_path: Path) -> None:
    """ccl_streams and ccl_ignores_stream have streams whose work (their add kernel too) runs
    only when the host waits for it. The first waits for a collective's stream before using
    its buffers and passes everything; the second uses them at once: the input the kernel
    before it writes is not there yet, so exactly the ordering cases fail, while every case
    where the host synchronized first passes."""
    args = ("--ccl-sizes", SMALL, "--dtype", "float32")
    for sub in ("good", "bad"):
        (tmp_path / sub).mkdir()
    out, results, _ = run_ccl(tmp_path / "good", str(zoo_plugin_path("ccl_streams")), *args)
    assert out.returncode == 0, out.stdout[-4000:]
    ordering = {f"ccl::ordering/{k}" for k in ("all_reduce", "broadcast", "all_gather",
                                               "send_recv")}
    assert ordering <= by_status(results, "PASS")
    out, results, _ = run_ccl(tmp_path / "bad", str(zoo_plugin_path("ccl_ignores_stream")),
                              *args)
    assert out.returncode == 1
    assert by_status(results, "FAIL") == ordering
    # the collective read its input before the kernel that writes it ran: whatever the buffer
    # held (zeros when fresh, an earlier case's values when the allocator reuses it)
    assert "element 0 of 5001: got " in results["ccl::ordering/all_reduce"]["message"]
    assert "no host synchronization" in results["ccl::ordering/all_reduce"]["message"]


@needs_mpi
def test_a_bad_root_that_kills_the_job_is_a_crash_and_the_run_goes_on(tmp_path: Path) -> None:
    """ccl_bad_root passes root to MPI unchecked: MPI aborts the whole job. That case is
    CRASH; hwcheck starts mpirun again and the cases after it still run."""
    out, results, _ = run_ccl(tmp_path, str(zoo_plugin_path("ccl_bad_root")), "-k", "error/")
    assert out.returncode == 1
    crash = results["ccl::error/broadcast_bad_root"]
    assert crash["status"] == "CRASH", crash
    assert "mpirun (2 ranks)" in crash["message"]
    after = {f"ccl::error/{c}" for c in ccl.ERROR_CHECKS[2:]}
    assert after <= set(results) and not {results[c]["status"] for c in after} & {"CRASH",
                                                                                 "TIMEOUT"}
    assert results["ccl::error/all_reduce_bad_op"]["status"] == "PASS"


@needs_mpi
@pytest.mark.slow
@pytest.mark.parametrize("device_type", ["cpu", "opencl"])
def test_default_sweep_certifies_the_collectives_tier(tmp_path: Path, device_type: str) -> None:
    """Every dtype at the default sizes (to 4 MiB + 1 element per rank) with the abi suite:
    the collectives tier is certified."""
    out, _results, doc = run_ccl(tmp_path, device_type, "--suite", "abi", timeout=3000)
    assert out.returncode == 0, out.stdout[-4000:]
    assert doc["tiers"][device_type]["collectives"]["status"] == "certified", doc["tiers"]


# ---- the collectives tier (synthetic runs) --------------------------------------------------

def _ccl_port(*extra: tuple[str, Status]) -> list:
    from hwport.conformance.model import Result
    from hwport.conformance.results import PluginResult

    names = [("abi", "ccl_table", Status.NOT_SUPPORTED), ("ccl", "comm_init", Status.PASS),
             ("ccl", "all_reduce/sum/float32/n1", Status.PASS),
             ("ccl", "group/send_recv/n1", Status.NOT_SUPPORTED), *((("ccl",) + e) for e in extra)]
    return [PluginResult("p", Result(Case(s, n), st)) for s, n, st in names]


def test_collectives_tier_rules() -> None:
    from hwport.conformance import tiers

    full = {"patterns": [], "dtypes": None, "ranks": 2, "ccl_sizes": None}

    def status(results, meta=full):
        return tiers.assess(results, meta)["p"]["collectives"]

    assert status(_ccl_port())["status"] == tiers.CERTIFIED
    bad = status(_ccl_port(("all_reduce/sum/int8/n1", Status.FAIL)))
    assert bad == {"status": tiers.NOT_CERTIFIED, "reasons": ["ccl: 1 FAIL"]}
    one = status(_ccl_port(), {**full, "ranks": 1})
    assert one["status"] == tiers.NOT_CERTIFIED and "needs >= 2" in one["reasons"][0]
    unsupported = _ccl_port()
    unsupported[2].result.status = Status.NOT_SUPPORTED
    assert "all_reduce/sum/float32" in status(unsupported)["reasons"][0]
    assert status(_ccl_port(), {**full, "ccl_sizes": [1]}) == {
        "status": tiers.NOT_ASSESSED, "reasons": ["--ccl-sizes narrowed the run"]}
    assert status(_ccl_port()[1:])["status"] == tiers.NOT_ASSESSED  # abi did not run
