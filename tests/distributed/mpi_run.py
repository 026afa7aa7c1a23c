"""Running a script on N ranks with mpirun, for the distributed tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def mpi_skip_reason() -> str | None:
    """Why the multi-rank tests cannot run here (None when they can)."""
    if shutil.which("mpirun") is None:
        return "mpirun not found (Open MPI: openmpi-bin)"
    from hwport.distributed.env import adapter_path

    if not adapter_path("mpi").exists():
        return f"the MPI adapter was not built ({adapter_path('mpi')})"
    return None


needs_mpi = pytest.mark.skipif(mpi_skip_reason() is not None, reason=str(mpi_skip_reason()))


def mpi_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        # ranks outnumber the cores: let a waiting rank give its core away
        "OMPI_MCA_mpi_yield_when_idle": "1",
        "PYTHONUNBUFFERED": "1",
        # a rank that fails leaves the others waiting: they give up after this many seconds
        "HWPORT_CCL_TIMEOUT": "120",
    })
    env.update(extra or {})
    return env


def run_ranks(script: str, nranks: int, *args: str, extra_env: dict[str, str] | None = None,
              timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Runs tests/distributed/scripts/<script> on ``nranks`` ranks; stdout and stderr merged."""
    command = ["mpirun", "--oversubscribe", "-n", str(nranks), sys.executable,
               str(SCRIPTS / script), *args]
    return subprocess.run(command, env=mpi_environment(extra_env), capture_output=True,
                          text=True, timeout=timeout)
