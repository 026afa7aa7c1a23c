"""Collectives inside jit.to_static programs (pir dialect `dist`, the executor's collective
instruction), under mpirun: every collective, a send/recv ring and a data-parallel training
step served by their programs equal numpy's result on every call
(scripts/static_collectives_check.py); and the dialect itself on one process
(scripts/dist_dialect_check.py)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.distributed.mpi_run import SCRIPTS, mpi_environment, needs_mpi, run_ranks

pytestmark = needs_mpi


@pytest.mark.parametrize(("nranks", "place"), [(2, "custom:cpu"), (4, "custom:cpu"),
                                               (2, "custom:opencl")])
def test_programs_run_their_collectives(nranks: int, place: str) -> None:
    result = run_ranks("static_collectives_check.py", nranks, place, timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert sorted(int(r) for r in re.findall(r"OK (\d+)", result.stdout)) == \
        list(range(nranks)), out[-4000:]


def test_the_dist_dialect_in_a_one_process_job() -> None:
    """scripts/dist_dialect_check.py (MPI's singleton start): the program's collectives, its
    text round trip, cse/dce keeping them, and the verifier's refusals."""
    result = subprocess.run([sys.executable, str(SCRIPTS / "dist_dialect_check.py")],
                            env=mpi_environment(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert result.stdout.strip().endswith("OK")
