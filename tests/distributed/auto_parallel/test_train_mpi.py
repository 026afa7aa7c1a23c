"""Autograd and training through DistTensors under mpirun (the proofs of issue 18):
mpi_grad_check.py (4 ranks: the backward of 156 reshards, same mesh and across meshes),
mpi_gpt_train.py (4 ranks: a GPT block, dp x tp, 10 AdamW steps, states sharded and ZeRO-1,
each eagerly and through dist.to_static), mpi_pipeline_train.py (8 ranks: Paddle 3.0's
two-mesh pipeline, 10 AdamW steps, eagerly and through dist.to_static; CI sizes, the issue's
sizes in the slow variant). Each compares with single-process hwport."""

from __future__ import annotations

import re

import pytest

from . import mpirun

pytestmark = pytest.mark.skipif(not mpirun.have_collectives(),
                                reason="needs mpirun and hwport.distributed's collectives")


def _ranks(proc: object, pattern: str) -> list[int]:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return sorted(int(r) for r in re.findall(pattern, proc.stdout))


def test_reshard_gradients_under_mpirun() -> None:
    proc = mpirun.run("mpi_grad_check.py", 4)
    assert _ranks(proc, r"grad ok (\d) \d+") == [0, 1, 2, 3], proc.stdout
    assert set(re.findall(r"grad ok \d (\d+)", proc.stdout)) == {"156"}


def test_gpt_block_dp_x_tp_trains_like_one_process() -> None:
    proc = mpirun.run("mpi_gpt_train.py", 4)
    assert _ranks(proc, r"gpt-train ok (\d)") == [0, 1, 2, 3], proc.stdout


def test_two_mesh_pipeline_trains_like_one_process() -> None:
    proc = mpirun.run("mpi_pipeline_train.py", 8)
    assert _ranks(proc, r"pipeline-train ok (\d)") == list(range(8)), proc.stdout


def test_two_mesh_pipeline_trains_like_one_process_through_to_static() -> None:
    """dist.to_static: every step after the first is one run of each rank's program (the
    reshard's send/recv between the meshes inside it)."""
    proc = mpirun.run("mpi_pipeline_train.py", 8, args=["64", "256", "4", "8", "10", "static"])
    assert _ranks(proc, r"pipeline-train ok (\d)") == list(range(8)), proc.stdout


@pytest.mark.slow
def test_two_mesh_pipeline_full_size_trains_like_one_process() -> None:
    """w0 [1024, 4096], w1 [4096, 1024], x [4, 8, 1024]: ~0.2 s per step on 2 cores."""
    proc = mpirun.run("mpi_pipeline_train.py", 8, timeout=900,
                      args=["1024", "4096", "4", "8", "10"])
    assert _ranks(proc, r"pipeline-train ok (\d)") == list(range(8)), proc.stdout
