"""The NCCL adapter: it builds everywhere (libnccl is opened at run time), fails cleanly where
libnccl is missing, and on a GPU machine runs a one-rank communicator on custom:cuda."""

from __future__ import annotations

import pytest

import hwport
import hwport.runtime as rt
from hwport.distributed.env import adapter_path
from tests.conftest import run_isolated


def test_the_adapter_is_built() -> None:
    assert adapter_path("nccl").exists()


def test_a_missing_libnccl_is_an_error_not_a_crash() -> None:
    result = run_isolated(
        "import hwport\n"
        "from hwport.runtime import _core, NotSupportedError\n"
        "from hwport.distributed.env import adapter_path\n"
        "try:\n"
        "    _core.ccl_load_adapter('nccl', str(adapter_path('nccl')))\n"
        "except NotSupportedError as e:\n"
        "    print('REFUSED', e)\n"
        "print(hwport.to_tensor([1.0, 2.0]).sum().numpy())\n",
        env={"HWPORT_NCCL_LIBRARY": "/nonexistent/libnccl.so.2"},
    )
    assert result.returncode == 0, result.stderr
    assert "REFUSED" in result.stdout and "libnccl could not be loaded" in result.stdout
    assert "3.0" in result.stdout


def _cuda_devices() -> int:
    return sum(p["device_count"] for p in rt.plugins() if p["device_type"] == "cuda")


@pytest.mark.gpu
@pytest.mark.skipif(_cuda_devices() == 0, reason="no CUDA device")
def test_one_rank_all_reduce_through_nccl_on_cuda() -> None:
    from hwport.runtime import _core

    try:
        _core.ccl_load_adapter("nccl", str(adapter_path("nccl")))
    except rt.NotSupportedError as error:
        pytest.skip(f"libnccl is not available: {error}")
    place = "custom:cuda:0"
    assert _core.ccl_backend(place) == "nccl"
    comm = _core.ccl_comm_init(place, 1, 0, _core.ccl_unique_id(place))
    x = hwport.to_tensor([1.0, 2.0, 3.0], place=place)
    out = hwport.zeros([3], place=place)
    comm.all_reduce(x, out, 0)
    assert out.numpy().tolist() == [1.0, 2.0, 3.0]
