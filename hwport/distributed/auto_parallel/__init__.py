"""Semi-automatic parallelism (Paddle 3.0's auto-parallel API): ProcessMesh, placements, the
SPMD rules derived from ops.yaml's `spmd` dim mappings."""

from __future__ import annotations

from .dist_attr import TensorDistAttr
from .placement import Partial, Placement, ReduceType, Replicate, Shard
from .process_mesh import ProcessMesh
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

__all__ = [
    "DistMeta",
    "Partial",
    "Placement",
    "ProcessMesh",
    "ReduceType",
    "Replicate",
    "Shard",
    "SpmdError",
    "SpmdResult",
    "TensorDistAttr",
    "infer_spmd",
    "local_attrs",
    "ops_without_spmd",
    "reset_spmd_stats",
    "spmd_stats",
]
