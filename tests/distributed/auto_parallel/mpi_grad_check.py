"""Run under mpirun with 4 ranks: the backward of every reshard between ten placements of a
2 x 2 mesh (Replicate, Shard, Partial(sum), Partial(avg), mixed), and across meshes (the same
ranks in another order; a 1-D mesh of two of them, so that ranks 0 and 1 hold nothing after
the move). With loss = sum(reshard(x) * c), the gradient of x is c wherever x lives: every
rank checks its local gradient and the gradient's placements against the shard of c its
placement implies. Prints "grad ok <rank> <cases>"."""

from __future__ import annotations

import sys

import numpy as np

import hwport.distributed as dist
from hwport.distributed import Partial, ProcessMesh, Replicate, Shard, reshard, shard_tensor
from hwport.distributed.auto_parallel.dist_autograd import grad_attr
from hwport.distributed.auto_parallel.simulate import shard_index

R, S0, S1, P, PA = Replicate(), Shard(0), Shard(1), Partial(), Partial("avg")
PLACES = [[R, R], [S0, R], [R, S1], [S0, S1], [S1, S0], [P, R], [R, P], [P, S0], [S1, P],
          [PA, R]]


def check(rank: int, src_mesh: ProcessMesh, src: list, dst_mesh: ProcessMesh, dst: list,
          xg: np.ndarray, cg: np.ndarray) -> str | None:
    x = shard_tensor(xg, src_mesh, src, stop_gradient=False)
    y = reshard(x, dst_mesh, dst)
    c = shard_tensor(cg, dst_mesh, [R if p.is_partial() else p for p in dst])
    (y * c).sum().backward()
    g = x.grad
    if not src_mesh.contains(rank):
        return None if g is None else "a gradient on a rank outside the mesh"
    attr = grad_attr(x.dist_attr)
    want = cg[shard_index(cg.shape, x.dist_attr, src_mesh.shape,
                          src_mesh.get_rank_coord(rank))]
    for d, rt in x.dist_attr.partial.items():
        if rt == Partial("avg").reduce_type():
            want = want / src_mesh.shape[d]
    if g is None or g.placements != attr.to_placements(src_mesh.ndim):
        return f"gradient {g}"
    got = g._local_value().numpy()
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-6):
        return f"gradient {got} instead of {want}"
    return None


def main() -> int:
    dist.init_parallel_env()
    rank = dist.get_rank()
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    other = ProcessMesh([[3, 2], [1, 0]], dim_names=["x", "y"])
    line = ProcessMesh([2, 3], dim_names=["z"])
    rng = np.random.default_rng(3)
    xg = rng.standard_normal((4, 6)).astype(np.float32)
    cg = rng.standard_normal((4, 6)).astype(np.float32)
    cases = [(mesh, s, mesh, d) for s in PLACES for d in PLACES]
    cases += [(mesh, s, other, d) for s in PLACES for d in ([S0, S1], [R, P])]
    cases += [(mesh, s, line, d) for s in PLACES for d in ([S1], [R], [P])]
    cases += [(line, s, mesh, d) for s in ([S0], [R], [P]) for d in ([S1, S0], [R, R])]
    bad = 0
    for src_mesh, s, dst_mesh, d in cases:
        err = check(rank, src_mesh, s, dst_mesh, d, xg, cg)
        if err:
            bad += 1
            print(f"rank {rank}: {s} on {src_mesh.shape} -> {d} on {dst_mesh.process_ids}: "
                  f"{err}", file=sys.stderr)
    if bad:
        return 1
    print(f"grad ok {rank} {len(cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
