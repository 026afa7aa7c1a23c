"""Launching a check script under mpirun for the auto-parallel tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[2]


def have_collectives() -> bool:
    """mpirun on PATH and hwport.distributed's collectives importable."""
    if shutil.which("mpirun") is None:
        return False
    try:
        import hwport.distributed as dist
    except ImportError:
        return False
    return all(hasattr(dist, n) for n in ("init_parallel_env", "all_gather", "alltoall",
                                          "reduce_scatter", "isend", "irecv", "new_group",
                                          "traffic"))


def run(script: str, n: int, timeout: int = 300, args: list[str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """`mpirun --oversubscribe -n n python script` (a hung collective times out: the CCL
    watchdog after HWPORT_CCL_TIMEOUT, the run after `timeout` seconds)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", HWPORT_CCL_TIMEOUT="120")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(["mpirun", "--oversubscribe", "-n", str(n), sys.executable,
                           str(HERE / script), *(args or [])], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)
