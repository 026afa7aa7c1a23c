"""dist_call in one process: calls that need no communication run rank 0's local op with the
rule's placements (the multi-rank run: test_reshard_mpi.py)."""

from __future__ import annotations

import numpy as np

from hwport.distributed.auto_parallel import (
    Partial,
    ProcessMesh,
    Replicate,
    Shard,
    dist_call,
    shard_tensor,
)


def test_column_then_row_parallel_on_rank_0() -> None:
    rng = np.random.default_rng(0)
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    x = rng.standard_normal((4, 6, 8)).astype(np.float32)
    w0 = rng.standard_normal((8, 10)).astype(np.float32)
    w1 = rng.standard_normal((10, 8)).astype(np.float32)
    dx = shard_tensor(x, mesh, [Shard(0), Replicate()])
    h = dist_call("matmul", [dx, shard_tensor(w0, mesh, [Replicate(), Shard(1)])])
    assert h.placements == [Shard(0), Shard(2)] and h.shape == [4, 6, 10]
    np.testing.assert_allclose(h._local_value().numpy(), (x @ w0)[:2, :, :5], rtol=1e-5,
                               atol=1e-5)
    z = dist_call("matmul", [h, shard_tensor(w1, mesh, [Replicate(), Shard(0)])])
    assert z.placements == [Shard(0), Partial()] and z.shape == [4, 6, 8]
    # rank 0's partial: its half of the contraction
    np.testing.assert_allclose(z._local_value().numpy(), (x @ w0)[:2, :, :5] @ w1[:5],
                               rtol=1e-5, atol=1e-5)
    parts = dist_call("split", [z], {"sections": 2, "axis": 1})
    assert isinstance(parts, list) and [p.shape for p in parts] == [[4, 3, 8], [4, 3, 8]]


def test_single_rank_mesh_runs_whole_ops() -> None:
    mesh = ProcessMesh([0])
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = shard_tensor(x, mesh, [Shard(0)])
    y = dist_call("reshape", [dist_call("softmax", [d])], {"shape": [4, 3]})
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(y._local_value().numpy(), (e / e.sum(-1, keepdims=True))
                               .reshape(4, 3), rtol=1e-6)
    assert y.placements == [Shard(0)]
    # softmax over a sharded axis gathers it first: over a mesh dim of size 1, locally
    s = dist_call("softmax", [shard_tensor(x, mesh, [Shard(1)])])
    assert s.placements == [Replicate()]
    np.testing.assert_allclose(s._local_value().numpy(), e / e.sum(-1, keepdims=True),
                               rtol=1e-6)
