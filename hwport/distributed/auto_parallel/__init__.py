"""Semi-automatic parallelism (Paddle 3.0's auto-parallel API): ProcessMesh, placements, the
SPMD rules derived from ops.yaml's `spmd` dim mappings, DistTensor (shard_tensor,
dtensor_from_local, reshard) and the reshard planner."""

from __future__ import annotations

from . import dist_dispatch as _dist_dispatch
from .dist_attr import TensorDistAttr
from .dist_model import DistModel, to_static
from .dist_ops import dist_call
from .dist_tensor import (
    DistTensor,
    dtensor_from_local,
    dtensor_to_local,
    reshard,
    shard_tensor,
)
from .placement import Partial, Placement, ReduceType, Replicate, Shard
from .process_mesh import ProcessMesh
from .shard_dataloader import ShardDataloader, shard_dataloader
from .shard_layer import shard_layer
from .shard_optimizer import ShardingStage1, shard_optimizer
from .spmd_rules import (
    DistMeta,
    SpmdError,
    SpmdResult,
    infer_spmd,
    local_attrs,
    ops_without_spmd,
    reset_spmd_stats,
    spmd_stats,
)

_dist_dispatch.install()

__all__ = [
    "DistMeta",
    "DistModel",
    "DistTensor",
    "Partial",
    "Placement",
    "ProcessMesh",
    "ReduceType",
    "Replicate",
    "Shard",
    "ShardDataloader",
    "ShardingStage1",
    "SpmdError",
    "SpmdResult",
    "TensorDistAttr",
    "dist_call",
    "dtensor_from_local",
    "dtensor_to_local",
    "infer_spmd",
    "local_attrs",
    "ops_without_spmd",
    "reset_spmd_stats",
    "reshard",
    "shard_dataloader",
    "shard_layer",
    "shard_optimizer",
    "shard_tensor",
    "spmd_stats",
    "to_static",
]
