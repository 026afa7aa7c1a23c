"""Reshard and ops on DistTensors through the real collectives, under mpirun:
mpi_reshard_check.py (4 ranks: shards and the adapter's byte counts) and
mpi_pipeline_check.py (8 ranks: Paddle 3.0's two-mesh pipeline example, forward) and
mpi_gpt_check.py (4 ranks: a GPT block with data x tensor parallelism, forward)."""

from __future__ import annotations

import re

import pytest

from . import mpirun

pytestmark = pytest.mark.skipif(not mpirun.have_collectives(),
                                reason="needs mpirun and hwport.distributed's collectives")


def test_reshard_under_mpirun() -> None:
    proc = mpirun.run("mpi_reshard_check.py", 4)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # ranks' lines may interleave: "reshard ok <rank> <checks>"
    ok = dict(re.findall(r"reshard ok (\d+) (\d+)", proc.stdout))
    assert sorted(ok) == ["0", "1", "2", "3"], proc.stdout
    assert all(int(n) > 0 for n in ok.values())


def test_two_mesh_pipeline_under_mpirun() -> None:
    proc = mpirun.run("mpi_pipeline_check.py", 8)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ok = sorted(int(r) for r in re.findall(r"pipeline ok (\d)", proc.stdout))
    assert ok == list(range(8)), proc.stdout


def test_gpt_block_dp_x_tp_under_mpirun() -> None:
    proc = mpirun.run("mpi_gpt_check.py", 4)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ok = sorted(int(r) for r in re.findall(r"gpt ok (\d)", proc.stdout))
    assert ok == [0, 1, 2, 3], proc.stdout
