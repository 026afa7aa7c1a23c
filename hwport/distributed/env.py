"""The parallel environment: the MPI job this process belongs to, started over the MPI adapter.

``mpirun -n N python train.py`` works as is: rank and size come from MPI. ``init_parallel_env``
is collective over the job (every rank calls it): it loads the MPI adapter (which starts MPI)
and makes the world group.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hwport.runtime import _core

_RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "PADDLE_TRAINER_ID")
_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PADDLE_TRAINERS_NUM")
_LOCAL_RANK_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PADDLE_LOCAL_RANK")


class _State:
    initialized = False
    rank = 0
    world_size = 1
    place: str | None = None
    adapter_errors: dict[str, str] = {}  # noqa: RUF012 (one process-wide record)


def adapter_path(name: str) -> Path:
    """Where the CCL adapter ``name`` ('mpi', 'nccl') is built or installed."""
    return Path(_core.__file__).resolve().parent.parent / "ccl_adapters" / name / (
        f"libhwport_ccl_{name}.so"
    )


def _from_environment(names: tuple[str, ...], default: int) -> int:
    for name in names:
        value = os.environ.get(name)
        if value is not None and value.strip().lstrip("-").isdigit():
            return int(value)
    return default


def _default_place() -> str:
    """This rank's device: the current device's type, index local rank modulo its count."""
    from hwport import runtime

    current = str(_core.get_device())  # "custom:<type>:<index>"
    device_type = current.split(":")[1]
    counts = {p["device_type"]: p["device_count"] for p in runtime.plugins()}
    count = counts.get(device_type, 1)
    local_rank = _from_environment(_LOCAL_RANK_VARIABLES, 0)
    index = local_rank % max(int(count), 1)
    return f"custom:{device_type}:{index}"


def _load_optional_adapters() -> None:
    """NCCL for CUDA devices when libnccl loads; otherwise they use MPI (staged). The reason
    it did not load is kept in adapter_errors()."""
    from hwport import runtime

    if not any(p["device_type"] == "cuda" and p["device_count"] > 0 for p in runtime.plugins()):
        return
    try:
        _core.ccl_load_adapter("nccl", str(adapter_path("nccl")))
    except Exception as error:  # noqa: BLE001 (optional: recorded, MPI serves the device)
        _State.adapter_errors["nccl"] = str(error)


def adapter_errors() -> dict[str, str]:
    """Why an optional CCL adapter (nccl) was not loaded, by name."""
    return dict(_State.adapter_errors)


def init_parallel_env(nccl_config: Any = None) -> Any:
    """Starts the parallel environment (collective over the MPI job) and returns the world
    group. Calling it again returns the same group."""
    from hwport.distributed import group as _group

    if _State.initialized:
        return _group.get_group(0)
    path = adapter_path("mpi")
    try:
        _core.ccl_load_adapter("mpi", str(path))
    except Exception as error:
        raise RuntimeError(
            f"hwport.distributed.init_parallel_env: the MPI adapter ({path}) did not start: "
            f"{error}. Install Open MPI (Debian: openmpi-bin libopenmpi-dev) and rebuild hwport; "
            "launch with `mpirun -n N python script.py` or `python -m "
            "hwport.distributed.launch --nproc_per_node N script.py`."
        ) from error
    _load_optional_adapters()
    _State.rank, _State.world_size = _core.ccl_world()
    _State.place = _default_place()
    _core.set_device(_State.place)  # as Paddle does: new tensors go to this rank's device
    _State.initialized = True
    return _group._make_world_group()


def is_initialized() -> bool:
    """True after init_parallel_env."""
    return _State.initialized


def _require_initialized(what: str) -> None:
    if not _State.initialized:
        raise RuntimeError(
            f"hwport.distributed.{what}: call hwport.distributed.init_parallel_env() first "
            "(on every rank)"
        )


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the world by default; -1 when not a member). Before
    init_parallel_env: the rank the launcher gave (0 without one)."""
    if group is not None:
        return group.rank
    if _State.initialized:
        return _State.rank
    return _from_environment(_RANK_VARIABLES, 0)


def get_world_size(group: Any = None) -> int:
    """The number of ranks of ``group`` (the world by default)."""
    if group is not None:
        return group.nranks
    if _State.initialized:
        return _State.world_size
    return _from_environment(_SIZE_VARIABLES, 1)


class ParallelEnv:
    """Paddle's view of the launch: rank, world size, local rank and this rank's device."""

    @property
    def rank(self) -> int:
        return get_rank()

    @property
    def world_size(self) -> int:
        return get_world_size()

    @property
    def local_rank(self) -> int:
        return _from_environment(_LOCAL_RANK_VARIABLES, 0)

    @property
    def device_id(self) -> int:
        place = _State.place or _default_place()
        return int(place.rsplit(":", 1)[1])

    # Paddle's older names
    nranks = world_size
    dev_id = device_id
