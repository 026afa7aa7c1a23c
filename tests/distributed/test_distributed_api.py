"""hwport.distributed in one process: what works before init_parallel_env, argument errors,
Paddle's signatures, and the launcher's mpirun command line."""

from __future__ import annotations

import inspect
import os

import pytest

import hwport
import hwport.distributed as dist
from hwport.distributed import launch


def test_rank_and_size_before_init_come_from_the_launcher(monkeypatch) -> None:
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "8")
    assert dist.get_rank() == 3 and dist.get_world_size() == 8
    monkeypatch.delenv("OMPI_COMM_WORLD_RANK")
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE")
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    assert not dist.is_initialized()


def test_collectives_before_init_say_what_to_call() -> None:
    x = hwport.to_tensor([1.0])
    for call in (lambda: dist.all_reduce(x), lambda: dist.broadcast(x, src=0),
                 lambda: dist.new_group([0]), dist.barrier):
        with pytest.raises(RuntimeError, match="init_parallel_env"):
            call()


def test_arguments_are_checked_before_any_communication() -> None:
    with pytest.raises(TypeError, match="all_reduce: tensor must be a hwport Tensor"):
        dist.all_reduce([1.0])
    with pytest.raises(ValueError, match="all_reduce: op must be one of ReduceOp"):
        dist.all_reduce(hwport.to_tensor([1.0]), op=7)


def test_signatures_are_paddles() -> None:
    expected = {
        "all_reduce": ["tensor", "op", "group", "sync_op"],
        "all_gather": ["tensor_list", "tensor", "group", "sync_op"],
        "broadcast": ["tensor", "src", "group", "sync_op"],
        "reduce": ["tensor", "dst", "op", "group", "sync_op"],
        "reduce_scatter": ["tensor", "tensor_list", "op", "group", "sync_op"],
        "alltoall": ["out_tensor_list", "in_tensor_list", "group", "sync_op"],
        "send": ["tensor", "dst", "group", "sync_op"],
        "recv": ["tensor", "src", "group", "sync_op"],
        "isend": ["tensor", "dst", "group"],
        "irecv": ["tensor", "src", "group"],
        "scatter": ["tensor", "tensor_list", "src", "group", "sync_op"],
        "gather": ["tensor", "gather_list", "dst", "group", "sync_op"],
        "barrier": ["group"],
        "new_group": ["ranks", "backend", "timeout", "nccl_comm_init_option", "nccl_config"],
        "get_rank": ["group"],
        "get_world_size": ["group"],
        "batch_isend_irecv": ["p2p_op_list"],
    }
    for name, params in expected.items():
        assert list(inspect.signature(getattr(dist, name)).parameters) == params, name
    assert (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PROD,
            dist.ReduceOp.AVG) == (0, 1, 2, 3, 4)


def test_bad_roots_and_peers_are_value_errors_before_any_transfer() -> None:
    from tests.conftest import run_isolated
    from tests.distributed.mpi_run import mpi_environment, mpi_skip_reason

    if mpi_skip_reason():
        pytest.skip(mpi_skip_reason())
    result = run_isolated(
        "import hwport, hwport.distributed as dist\n"
        "dist.init_parallel_env()\n"
        "comm = dist.get_group(0)._comm(str(hwport.get_device()), 'test')\n"
        "x = hwport.to_tensor([1.0])\n"
        "for call in (lambda: comm.reduce(x, x, 0, 3), lambda: comm.broadcast(x, x, -1),\n"
        "             lambda: comm.send(x, 1), lambda: comm.recv(x, 5)):\n"
        "    try:\n"
        "        call()\n"
        "    except ValueError as e:\n"
        "        print('REFUSED', e)\n"
        "dist.all_reduce(x)\n"
        "print('STILL WORKS', x.numpy().tolist())\n",
        env=mpi_environment(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    refused = [line for line in result.stdout.splitlines() if line.startswith("REFUSED")]
    assert refused == [
        "REFUSED reduce: root 3 is not a rank of the communicator (0..0)",
        "REFUSED broadcast: root -1 is not a rank of the communicator (0..0)",
        "REFUSED send: peer 1 is not a rank of the communicator (0..0)",
        "REFUSED recv: peer 5 is not a rank of the communicator (0..0)",
    ]
    assert "STILL WORKS [1.0]" in result.stdout
    with pytest.raises(ValueError, match=r"op must be hwport\.distributed\.isend or irecv"):
        dist.P2POp(dist.all_reduce, hwport.to_tensor([1.0]), 0)


def test_launch_builds_the_mpirun_command(monkeypatch) -> None:
    monkeypatch.setattr(launch.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(launch.os, "cpu_count", lambda: 2)
    args, rest = launch.parse(["--nproc_per_node", "4", "train.py", "--lr", "0.1"])
    command = launch.build_command(args, rest)
    assert command[:4] == ["/usr/bin/mpirun", "-n", "4", "--oversubscribe"]
    assert command[-3:] == ["train.py", "--lr", "0.1"]
    args, rest = launch.parse(["--nproc_per_node", "2", "--hostfile", "hosts", "--nnodes", "2",
                               "t.py"])
    command = launch.build_command(args, rest)
    assert command[:5] == ["/usr/bin/mpirun", "-n", "4", "--hostfile", "hosts"]
    assert "--oversubscribe" not in command
    env = launch.launch_environment()
    assert env["OMPI_MCA_btl_vader_single_copy_mechanism"] == "none"
    if os.geteuid() == 0:
        assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"


def test_a_single_process_job_without_mpirun() -> None:
    from tests.conftest import run_isolated
    from tests.distributed.mpi_run import mpi_environment, mpi_skip_reason

    if mpi_skip_reason():
        pytest.skip(mpi_skip_reason())
    result = run_isolated(
        "import hwport, hwport.distributed as dist\n"
        "from hwport.runtime import _core\n"
        "group = dist.init_parallel_env()\n"
        "print('WORLD', group.ranks, dist.get_rank(), dist.get_world_size())\n"
        "print('BACKENDS', _core.ccl_backend('custom:cpu'), _core.ccl_backend('custom:opencl'))\n"
        "x = hwport.to_tensor([1.0, 2.0])\n"
        "dist.all_reduce(x)\n"
        "parts = []\n"
        "dist.all_gather(parts, x)\n"
        "print('RESULT', x.numpy().tolist(), len(parts), dist.init_parallel_env() is group)\n",
        env=mpi_environment(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WORLD [0] 0 1" in result.stdout
    # neither reference plugin has a CCL table of its own: the MPI adapter serves both
    assert "BACKENDS mpi mpi" in result.stdout
    assert "RESULT [1.0, 2.0] 1 True" in result.stdout
