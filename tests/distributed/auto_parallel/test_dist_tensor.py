"""DistTensor, shard_tensor, dtensor_from_local in one process (rank 0 of the mesh)."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport.distributed.auto_parallel import (
    DistTensor,
    Partial,
    ProcessMesh,
    Replicate,
    Shard,
    dtensor_from_local,
    dtensor_to_local,
    shard_tensor,
)


def test_shard_tensor_keeps_this_ranks_shard() -> None:
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    g = np.arange(7 * 6, dtype=np.float32).reshape(7, 6)
    d = shard_tensor(hwport.to_tensor(g), mesh, [Shard(0), Shard(1)])
    assert isinstance(d, DistTensor) and d.is_dist()
    assert d.shape == [7, 6] and d.process_mesh == mesh
    assert d.placements == [Shard(0), Shard(1)]
    local = d._local_value()
    assert local.shape == [4, 3]  # rank 0: rows 0..3 of ceil(7/2), columns 0..2
    np.testing.assert_array_equal(local.numpy(), g[:4, :3])
    assert str(local.dtype) == "float32" and d.stop_gradient


def test_partial_and_replicate() -> None:
    mesh = ProcessMesh([0, 1])
    g = np.ones((2, 3))
    d = shard_tensor(g, mesh, [Partial()])
    np.testing.assert_array_equal(d._local_value().numpy(), g)  # coordinate 0 keeps it
    d = shard_tensor(g, mesh, [Replicate()], stop_gradient=False)
    np.testing.assert_array_equal(dtensor_to_local(d).numpy(), g)
    assert d.stop_gradient is False and d._local_value().stop_gradient is False


def test_rank_outside_the_mesh_holds_nothing() -> None:
    d = shard_tensor(np.zeros((4,), np.float32), ProcessMesh([4, 5]), [Shard(0)])
    assert d._local_value() is None and d.shape == [4] and str(d.dtype) == "float32"


def test_dtensor_from_local() -> None:
    mesh = ProcessMesh([[0, 1], [2, 3]])
    local = hwport.to_tensor(np.zeros((3, 5), dtype=np.float32))
    d = dtensor_from_local(local, mesh, [Replicate(), Shard(1)])
    assert d.shape == [3, 10] and d.placements == [Replicate(), Shard(1)]
    assert d._local_value() is local
    with pytest.raises(ValueError):
        DistTensor(local, mesh, [Replicate()], [3, 5])


def test_zero_dim_values_stay_zero_dim() -> None:
    d = shard_tensor(np.array(2.5, np.float32), ProcessMesh([0, 1]), [Partial()])
    assert d.shape == [] and d._local_value().shape == []
