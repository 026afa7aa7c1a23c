"""Collectives inside jit.to_static programs (pir dialect `dist`, the executor's collective
instruction), under mpirun: every collective, a send/recv ring and a data-parallel training
step served by their programs equal numpy's result on every call
(scripts/static_collectives_check.py)."""

from __future__ import annotations

import re

import pytest

from tests.distributed.mpi_run import needs_mpi, run_ranks

pytestmark = needs_mpi


@pytest.mark.parametrize(("nranks", "place"), [(2, "custom:cpu"), (4, "custom:cpu"),
                                               (2, "custom:opencl")])
def test_programs_run_their_collectives(nranks: int, place: str) -> None:
    result = run_ranks("static_collectives_check.py", nranks, place, timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert sorted(int(r) for r in re.findall(r"OK (\d+)", result.stdout)) == \
        list(range(nranks)), out[-4000:]
