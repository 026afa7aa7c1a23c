"""hwport.distributed: collectives through each device's CCL table (or the MPI adapter), process
groups, and (in ``auto_parallel``) Paddle-style semi-automatic parallelism.

Launch with ``mpirun -n N python script.py`` or ``python -m hwport.distributed.launch
--nproc_per_node N script.py``; call ``init_parallel_env()`` on every rank first.
"""

from __future__ import annotations

from hwport.distributed.collective import (
    P2POp,
    ReduceOp,
    Task,
    all_gather,
    all_reduce,
    alltoall,
    alltoall_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    gather,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter,
    scatter,
    send,
)
from hwport.distributed.env import (
    ParallelEnv,
    get_rank,
    get_world_size,
    init_parallel_env,
    is_initialized,
)
from hwport.distributed.group import Group, destroy_process_group, get_group, new_group
from hwport.distributed.stats import reset_traffic, traffic

# isort: split
# Semi-automatic parallelism (ProcessMesh, Shard/Replicate/Partial, shard_tensor, reshard, ...):
# whatever hwport.distributed.auto_parallel exports is part of this namespace, as in Paddle.
from hwport.distributed import auto_parallel
from hwport.distributed.auto_parallel import *  # noqa: F403

__all__ = [
    "Group",
    "P2POp",
    "ParallelEnv",
    "ReduceOp",
    "Task",
    "all_gather",
    "all_reduce",
    "alltoall",
    "alltoall_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "destroy_process_group",
    "gather",
    "get_group",
    "get_rank",
    "get_world_size",
    "init_parallel_env",
    "irecv",
    "is_initialized",
    "isend",
    "new_group",
    "recv",
    "reduce",
    "reduce_scatter",
    "reset_traffic",
    "scatter",
    "send",
    "traffic",
]
__all__ += auto_parallel.__all__
