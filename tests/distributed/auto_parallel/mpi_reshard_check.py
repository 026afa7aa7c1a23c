"""Run under mpirun with 4 ranks: reshard through hwport.distributed's collectives for
same-mesh and cross-mesh transitions; every rank checks its local shard against the
simulation's split of the global value, and the bytes the CCL adapter counted (converted to
bytes received, the plan's convention) against the plan's count for this rank. Prints
"reshard ok <rank> <checks>" when all pass."""

from __future__ import annotations

import sys
from typing import Any

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
from hwport.distributed.auto_parallel.reshard_plan import plan_reshard

P = {"R": Replicate(), "S0": Shard(0), "S1": Shard(1), "P": Partial()}


def received(traffic: dict, plan: Any) -> float:
    """Bytes this rank received, from the adapter's payload counts (all_gather, reduce_scatter
    and all_to_all count the whole buffer; a ring all-reduce receives 2(n-1)/n of it)."""
    sizes = {st.mesh.shape[st.mesh_dim] for st in plan.steps
             if st.kind in ("all_gather", "all_reduce", "reduce_scatter", "all_to_all")}
    assert len(sizes) <= 1, sizes
    n = sizes.pop() if sizes else 1
    factor = {"all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
              "all_to_all": (n - 1) / n, "all_reduce": 2 * (n - 1) / n, "recv": 1.0}
    return sum(factor.get(kind, 0.0) * e["bytes"] for kind, e in traffic.items())


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
            dist.barrier()
            dist.reset_traffic()
            y = reshard(x, dst_mesh, dst_pl)
            plan = plan_reshard(src_mesh, TensorDistAttr.from_placements(src_pl, 2), dst_mesh,
                                TensorDistAttr.from_placements(dst_pl, 2), shape, 4)
            planned = sum(st.bytes_per_rank.get(rank, 0) for st in plan.steps)
            counted = received(dist.traffic(), plan)
            if abs(counted - planned) > 4 * len(plan.steps):
                print(f"rank {rank}: case {k} {src_pl}->{dst_pl} {shape}: the adapter moved "
                      f"{counted} bytes, the plan says {planned}: {plan.steps}",
                      file=sys.stderr)
                return 1
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
