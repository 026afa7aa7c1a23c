"""Run under mpirun with 4 ranks: reshard through hwport.distributed's collectives for
same-mesh and cross-mesh transitions; every rank checks its local shard against the
simulation's split of the global value. Prints "reshard ok <rank> <n>" when all pass."""

from __future__ import annotations

import sys

import numpy as np

import hwport.distributed as dist
from hwport.distributed.auto_parallel import (
    Partial,
    ProcessMesh,
    Replicate,
    Shard,
    TensorDistAttr,
    reshard,
    shard_tensor,
)
from hwport.distributed.auto_parallel import simulate as sim

P = {"R": Replicate(), "S0": Shard(0), "S1": Shard(1), "P": Partial()}


def main() -> int:
    dist.init_parallel_env()
    rank = dist.get_rank()
    m2x2 = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    ma, mb = ProcessMesh([0, 1]), ProcessMesh([2, 3])
    cases = []
    for a in P:
        for b in ("R", "S0", "S1"):
            cases.append((ma, [P[a]], ma, [P[b]]))
            cases.append((ma, [P[a]], mb, [P[b]]))
            cases.append((m2x2, [P[a], Replicate()], m2x2, [Replicate(), P[b]]))
            cases.append((m2x2, [P[a], Shard(1) if a != "S1" else Replicate()], m2x2,
                          [P[b], Replicate()]))
    cases.append((m2x2, [Shard(0), Replicate()], ProcessMesh([1, 2, 3]), [Shard(1)]))
    n = 0
    for k, (src_mesh, src_pl, dst_mesh, dst_pl) in enumerate(cases):
        for shape in ((4, 6), (5, 3)):
            g = np.random.default_rng(k).standard_normal(shape).astype(np.float32)
            x = shard_tensor(g, src_mesh, src_pl)
            y = reshard(x, dst_mesh, dst_pl)
            coord = dst_mesh.get_rank_coord(rank)
            local = y._local_value()
            if coord is None:
                assert local is None, (k, rank)
                continue
            want = sim.split(g, TensorDistAttr.from_placements(dst_pl, 2), dst_mesh.shape)[coord]
            got = local.numpy()
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                print(f"rank {rank}: case {k} {src_pl}->{dst_pl} {shape}: got {got} want {want}",
                      file=sys.stderr)
                return 1
            n += 1
    print(f"reshard ok {rank} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
