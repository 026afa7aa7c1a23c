"""reshard through the real collectives: mpi_reshard_check.py under mpirun -n 4."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("mpi_reshard_check.py")


def _collectives() -> bool:
    try:
        import hwport.distributed as dist
    except ImportError:
        return False
    return all(hasattr(dist, n) for n in ("init_parallel_env", "all_gather", "alltoall",
                                          "reduce_scatter", "isend", "irecv", "new_group"))


@pytest.mark.skipif(shutil.which("mpirun") is None or not _collectives(),
                    reason="needs mpirun and hwport.distributed's collectives")
def test_reshard_under_mpirun() -> None:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    root = Path(__file__).resolve().parents[3]
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    proc = subprocess.run(["mpirun", "--oversubscribe", "-n", "4", sys.executable, str(SCRIPT)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=root)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ok = [line for line in proc.stdout.splitlines() if line.startswith("reshard ok")]
    assert len(ok) == 4, proc.stdout
    assert all(int(line.split()[-1]) > 0 for line in ok)
