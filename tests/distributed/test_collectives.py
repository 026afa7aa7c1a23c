"""hwport.distributed's collectives on several ranks (mpirun, --oversubscribe on this machine):
every collective x dtype x size against numpy on custom:cpu and custom:opencl, groups, the
watchdog, and the launcher."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import hwport.runtime as rt
from tests.distributed.mpi_run import SCRIPTS, mpi_environment, needs_mpi, run_ranks

pytestmark = needs_mpi


def _has_device(device_type: str) -> bool:
    return any(p["device_type"] == device_type and p["device_count"] > 0 for p in rt.plugins())


def _checked(result: subprocess.CompletedProcess[str], nranks: int) -> list[int]:
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    found = sorted((int(r), int(n)) for r, n in re.findall(r"rank (\d+) CHECKED (\d+)",
                                                          result.stdout))
    assert [r for r, _ in found] == list(range(nranks)), result.stdout[-4000:]
    return [n for _, n in found]


def test_every_collective_dtype_and_small_size_on_two_ranks() -> None:
    result = run_ranks("collectives_check.py", 2, "--places", "default",
                       "--sizes", "0,1,17,4099")
    counts = _checked(result, 2)
    # 10 dtypes x 4 sizes x (5 all_reduce ops (4 for bool) + 7 others)
    assert counts == [(10 * 12 - 1) * 4] * 2


# The MPI adapter's ranks on one node wait for each other in shared memory; communicators across
# nodes (and HWPORT_CCL_MPI_SHARED_ARRIVAL=0) exchange their (sequence, collective) in an
# all-gather instead; HWPORT_CCL_TIMEOUT=0 turns the check off.
ARRIVALS = {
    "shared": {},
    "allgather": {"HWPORT_CCL_MPI_SHARED_ARRIVAL": "0"},
}


@pytest.mark.parametrize("arrival", [*ARRIVALS, "unchecked"])
def test_four_ranks_and_a_subgroup(arrival: str) -> None:
    env = ARRIVALS.get(arrival, {"HWPORT_CCL_TIMEOUT": "0"})
    result = run_ranks("collectives_check.py", 4, "--places", "default",
                       "--sizes", "3,1000", "--subgroup", extra_env=env)
    counts = _checked(result, 4)
    per_place = (10 * 12 - 1) * 2
    # ranks 1 and 3 also ran everything on the group of odd ranks; all split the world
    assert counts == [per_place + 2, 2 * per_place + 2, per_place + 2, 2 * per_place + 2]


@pytest.mark.skipif(not _has_device("opencl"), reason="no OpenCL device (PoCL) loaded")
def test_opencl_buffers_are_staged_through_the_host() -> None:
    result = run_ranks("collectives_check.py", 2, "--places", "custom:opencl",
                       "--sizes", "0,5,4099")
    assert _checked(result, 2) == [(10 * 12 - 1) * 3] * 2


@pytest.mark.parametrize("elements", [
    1 << 20,  # 4 MiB of float32
    pytest.param(1 << 24, marks=pytest.mark.slow),  # 64 MiB (all_gather / alltoall: n times)
])
def test_large_sizes(elements: int) -> None:
    result = run_ranks("collectives_check.py", 2, "--places", "default",
                       "--sizes", str(elements), "--dtypes", "float32,int8")
    assert _checked(result, 2) == [2 * 12] * 2


def _reports(folder: Path) -> list[tuple[str, str]]:
    """(rank, message) of each rank that raised (watchdog_check.py writes a file per rank)."""
    return [(f.name, f.read_text()) for f in sorted(folder.iterdir())]


@pytest.mark.parametrize("arrival", ARRIVALS)
def test_the_watchdog_names_the_rank_that_did_not_arrive(tmp_path: Path, arrival: str) -> None:
    result = run_ranks("watchdog_check.py", 4, "skip", "60", timeout=120,
                       extra_env={"HWPORT_CCL_TIMEOUT": "2",
                                  "HWPORT_TEST_REPORT_DIR": str(tmp_path), **ARRIVALS[arrival]})
    out = result.stdout + result.stderr
    reports = _reports(tmp_path)
    assert sorted(int(r) for r, _ in reports) == [0, 2, 3], out[-4000:]
    for _, message in reports:
        assert "all_reduce #2" in message, message
        assert "rank 1 (global rank 1) did not arrive" in message, message
        assert "HWPORT_CCL_TIMEOUT" in message, message
        # ranks 2 and 3 arrived: they are not named
        assert "rank 2 (" not in message and "rank 3 (" not in message, message
    assert "NO ERROR" not in out
    assert result.returncode != 0  # the job ends with a failure, not a hang


@pytest.mark.parametrize("arrival", ARRIVALS)
def test_mismatched_collectives_fail_every_rank_at_once(tmp_path: Path, arrival: str) -> None:
    # no timeout needed: the ranks compare (sequence number, collective) before moving data
    result = run_ranks("watchdog_check.py", 4, "mismatch", timeout=120,
                       extra_env={"HWPORT_TEST_REPORT_DIR": str(tmp_path), **ARRIVALS[arrival]})
    out = result.stdout + result.stderr
    reports = dict(_reports(tmp_path))
    assert sorted(reports) == ["0", "1", "2", "3"], out[-4000:]
    for rank, message in reports.items():
        if rank == "1":
            assert "broadcast #2" in message and "rank 0 (global rank 0) is in all_reduce #2" \
                in message, message
        else:
            assert "all_reduce #2" in message, message
            assert "rank 1 (global rank 1) is in broadcast #2" in message, message
    assert "NO ERROR" not in out


def test_launch_module_runs_the_script_on_n_ranks() -> None:
    command = [sys.executable, "-m", "hwport.distributed.launch", "--nproc_per_node", "3",
               str(SCRIPTS / "launch_check.py")]
    result = subprocess.run(command, env=mpi_environment(), capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = sorted(re.findall(r"LAUNCHED rank=(\d) size=(\d) sum=(\d)", result.stdout))
    assert lines == [("0", "3", "3"), ("1", "3", "3"), ("2", "3", "3")], result.stdout
