"""Run under mpirun with 8 ranks: Paddle 3.0's two-mesh pipeline example, forward, with real
collectives. mesh0 = [[0,1],[2,3]], mesh1 = [[4,5],[6,7]] (dims x, y); w0 [1024, 4096] on mesh0
as [Replicate, Shard(1)], w1 [4096, 1024] on mesh1 as [Replicate, Shard(0)]; x [batch, seq,
1024] on mesh0 as [Shard(0), Replicate]; y = x @ w0 resharded to mesh1 as [Shard(0), Shard(2)];
z = y @ w1. Every rank checks its piece against the single-process result (float32). Prints
"pipeline ok <rank>"."""

from __future__ import annotations

import sys

import numpy as np

import hwport
import hwport.distributed as dist
from hwport.distributed.auto_parallel import (
    Partial,
    ProcessMesh,
    Replicate,
    Shard,
    dist_call,
    reshard,
    shard_tensor,
)


def close(got: np.ndarray, want: np.ndarray) -> bool:
    scale = float(np.abs(want).max()) or 1.0
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-5,
                                                        atol=1e-5 * scale))


def main() -> int:
    dist.init_parallel_env()
    rank = dist.get_rank()
    mesh0 = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    mesh1 = ProcessMesh([[4, 5], [6, 7]], dim_names=["x", "y"])
    rng = np.random.default_rng(2024)
    x = rng.standard_normal((4, 8, 1024)).astype(np.float32)
    w0 = (rng.standard_normal((1024, 4096)) / 32).astype(np.float32)
    w1 = (rng.standard_normal((4096, 1024)) / 64).astype(np.float32)
    dx = shard_tensor(x, mesh0, [Shard(0), Replicate()])
    dw0 = shard_tensor(w0, mesh0, [Replicate(), Shard(1)])
    dw1 = shard_tensor(w1, mesh1, [Replicate(), Shard(0)])
    y = dist_call("matmul", [dx, dw0])
    assert y.placements == [Shard(0), Shard(2)], y.placements
    y1 = reshard(y, mesh1, [Shard(0), Shard(2)])
    z = dist_call("matmul", [y1, dw1])
    assert z.placements == [Shard(0), Partial()], z.placements
    zr = reshard(z, mesh1, [Replicate(), Replicate()])
    want_y = hwport.matmul(hwport.to_tensor(x), hwport.to_tensor(w0))
    want_z = hwport.matmul(want_y, hwport.to_tensor(w1)).numpy()
    if mesh0.contains(rank):
        cx, cy = mesh0.get_rank_coord(rank)
        piece = want_y.numpy()[2 * cx:2 * cx + 2, :, 2048 * cy:2048 * cy + 2048]
        if not close(y._local_value().numpy(), piece):
            print(f"rank {rank}: y's shard differs", file=sys.stderr)
            return 1
        assert zr._local_value() is None
    else:
        if not close(zr._local_value().numpy(), want_z):
            err = np.abs(zr._local_value().numpy() - want_z).max()
            print(f"rank {rank}: z differs by {err}", file=sys.stderr)
            return 1
    print(f"pipeline ok {rank}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
