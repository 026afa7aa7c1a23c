"""Version negotiation of the CCL table (ABI 1.2, docs/abi.md section 4, "HWP_CclTable"): a
plugin whose table predates 1.2 (struct_size only, trap pointers beyond it) and one without a
table are both served by the host's MPI adapter, and the host never calls past struct_size."""

from __future__ import annotations

import pytest

from tests.conftest import run_isolated, zoo_plugin_path
from tests.distributed.mpi_run import mpi_environment, mpi_skip_reason

pytestmark = pytest.mark.skipif(mpi_skip_reason() is not None, reason=str(mpi_skip_reason()))


@pytest.mark.parametrize("variant", ["older_minor", "codegen_11"])
def test_a_plugin_without_a_1_2_table_gets_the_mpi_adapter(variant: str) -> None:
    place = f"custom:test_{variant}"
    result = run_isolated(
        "import numpy as np\n"
        "import hwport, hwport.distributed as dist\n"
        "from hwport.runtime import _core\n"
        "assert not hwport.runtime.plugin_errors(), hwport.runtime.plugin_errors()\n"
        "dist.init_parallel_env()\n"
        f"print('BACKEND', _core.ccl_backend('{place}'))\n"
        f"x = hwport.to_tensor(np.arange(5, dtype=np.float32), place='{place}')\n"
        "dist.all_reduce(x)\n"
        "parts = []\n"
        "dist.all_gather(parts, x)\n"
        "print('RESULT', x.numpy().tolist(), parts[0].numpy().tolist())\n",
        env=mpi_environment({"HWPORT_PLUGIN_PATH": zoo_plugin_path(variant)}),
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    assert "BACKEND mpi" in result.stdout
    assert "RESULT [0.0, 1.0, 2.0, 3.0, 4.0] [0.0, 1.0, 2.0, 3.0, 4.0]" in result.stdout
    # the trap functions beyond struct_size abort the process if the host ever calls them
    assert "beyond the declared struct_size" not in out
