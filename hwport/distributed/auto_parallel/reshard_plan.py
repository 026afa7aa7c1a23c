"""The reshard planner (pure): for a transition (src mesh, src dist attr) -> (dst mesh, dst dist
attr) of a tensor of a given global shape, the list of collective steps, mesh dimension by mesh
dimension, with the bytes each moves.

Same mesh, per mesh dim i (a tensor dim is sharded by at most one mesh dim):
  Partial -> Shard(t)        reduce_scatter over i on t        (n-1)/n of the local bytes
  Partial -> other           all_reduce over i                 2(n-1)/n of the local bytes
  Shard(t) -> Shard(u)       all_to_all over i, t -> u          (n-1)/n of the local bytes
  Shard(t) -> other          all_gather over i on t             (n-1) chunks
  Replicate -> Shard(t)      slice (local)                      0
  Replicate -> Partial       to_partial (local: the identity off coordinate 0)  0
Local slices go first (the collectives after them move less), then partials, then shards
that move (a shard moving to another mesh dim of the same size travels point to point: only
the ranks whose chunk changes receive it), then the remaining slices and new partials. Uneven
shards (size not a multiple of n) travel padded to ceil(size / n) per chunk (`padded`).
Across meshes: source partials are reduced on the source mesh (scattered into a free dim
where one is large enough), then every destination rank receives each piece of its shard from
one rank that holds it (itself when it does: meshes may share processes; else round-robin over
the holders), so each element crosses once per rank that needs it; ranks that a destination
Partial fills with its identity receive nothing.

Bytes are counted as what each rank receives (nccl-tests' bus convention: a ring all-reduce
moves 2(n-1)/n of the buffer per rank); `total_bytes` sums them over the ranks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .dist_attr import TensorDistAttr
from .placement import ReduceType
from .process_mesh import ProcessMesh
from .simulate import chunk_bounds, coords, local_shape


@dataclass(frozen=True)
class ReshardStep:
    """One step of a plan. kind: slice | all_gather | all_reduce | reduce_scatter | all_to_all
    | to_partial | send_recv. mesh: the mesh it runs on (the destination mesh for send_recv);
    mesh_dim: the mesh dim whose groups run it; tensor_dim (and to_dim for all_to_all): the
    tensor dims involved; after: the dist attr once it has run; pairs: send_recv's (source
    rank, destination rank) messages with their slices of the global tensor."""
    kind: str
    mesh: ProcessMesh
    after: TensorDistAttr
    mesh_dim: int | None = None
    tensor_dim: int | None = None
    to_dim: int | None = None
    reduce_type: ReduceType | None = None
    padded: bool = False
    bytes_per_rank: dict[int, int] = field(default_factory=dict)  # rank -> bytes received
    pairs: tuple[tuple[int, int, tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]],
                 ...] = ()
    src_attr: TensorDistAttr | None = None  # send_recv: the layout on the source ranks

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_per_rank.values())

    def __repr__(self) -> str:
        dims = "".join(f", {k}={v}" for k, v in (("mesh_dim", self.mesh_dim),
                                                  ("tensor_dim", self.tensor_dim),
                                                  ("to_dim", self.to_dim),
                                                  ("reduce_type", self.reduce_type))
                       if v is not None)
        return f"ReshardStep({self.kind}{dims}, bytes={self.total_bytes}, after={self.after})"


@dataclass
class ReshardPlan:
    steps: list[ReshardStep]

    @property
    def total_bytes(self) -> int:
        return sum(s.total_bytes for s in self.steps)

    def kinds(self) -> list[str]:
        return [s.kind for s in self.steps]


def _placement_at(attr: TensorDistAttr, mdim: int) -> tuple[str, int | ReduceType | None]:
    if mdim in attr.partial:
        return "P", attr.partial[mdim]
    if mdim in attr.dims_mapping:
        return "S", attr.dims_mapping.index(mdim)
    return "R", None


def _received(shape: Sequence[int], before: TensorDistAttr, mesh: ProcessMesh, itemsize: int,
              per_rank: Callable[[tuple[int, ...]], float]) -> dict[int, int]:
    """Bytes each rank receives: per_rank(its local shape before the step) elements."""
    out = {}
    for c in coords(mesh.shape):
        ls = local_shape(shape, before, mesh.shape, c)
        out[mesh.process_id_at(c)] = round(per_rank(ls)) * itemsize
    return out


def _without(ls: Sequence[int], *skip: int) -> int:
    return math.prod(d for k, d in enumerate(ls) if k not in skip)


def plan_same_mesh(mesh: ProcessMesh, src: TensorDistAttr, dst: TensorDistAttr,
                   shape: Sequence[int], itemsize: int = 4) -> ReshardPlan:
    """The steps from `src` to `dst` on one mesh (see the module docstring). Without partials,
    when the collectives would move more than each rank lacks (a shard cycling between mesh
    dims: [Shard(0), Shard(1)] -> [Shard(1), Shard(0)]), the pieces go point to point."""
    plan = _collective_plan(mesh, src, dst, shape, itemsize)
    if src.partial or dst.partial or not plan.steps:
        return plan
    direct = _pieces(mesh, src, mesh, dst, coords(mesh.shape), shape, itemsize)
    return ReshardPlan([direct]) if direct.total_bytes < plan.total_bytes else plan


def _collective_plan(mesh: ProcessMesh, src: TensorDistAttr, dst: TensorDistAttr,
                     shape: Sequence[int], itemsize: int) -> ReshardPlan:
    shape = tuple(int(d) for d in shape)
    if src.ndim != len(shape) or dst.ndim != len(shape):
        raise ValueError(f"reshard: dist attrs {src} -> {dst} do not fit shape {list(shape)}")
    ms = mesh.shape
    dims = list(src.dims_mapping)
    partial = dict(src.partial)
    steps: list[ReshardStep] = []

    def state() -> TensorDistAttr:
        return TensorDistAttr(tuple(dims), dict(partial))

    def step(kind: str, before: TensorDistAttr, elems: Callable[[tuple[int, ...]], float],
             **kw: Any) -> None:
        steps.append(ReshardStep(kind, mesh, state(), bytes_per_rank=_received(
            shape, before, mesh, itemsize, elems), **kw))

    def slices() -> None:  # Replicate -> Shard(t) where t is free: local, and first, so
        for i in range(len(ms)):  # the collectives after it move less
            kind, arg = _placement_at(dst, i)
            if (kind == "S" and i not in dims and i not in partial
                    and dims[int(arg)] == -1):  # type: ignore[arg-type]
                before = state()
                dims[int(arg)] = i  # type: ignore[arg-type]
                step("slice", before, lambda ls: 0, mesh_dim=i,
                     tensor_dim=int(arg))  # type: ignore[arg-type]

    # 0. local slices; 1. partials: reduce_scatter into a wanted shard of a free dim, else
    # all_reduce
    slices()
    for i in sorted(src.partial):
        rt, n = partial[i], ms[i]
        kind, arg = _placement_at(dst, i)
        if kind == "P" and arg == rt:
            continue
        before = state()
        del partial[i]
        if kind == "S" and dims[int(arg)] == -1:  # type: ignore[arg-type]
            t = int(arg)  # type: ignore[arg-type]
            dims[t] = i
            c = -(-shape[t] // n)
            step("reduce_scatter", before,
                 lambda ls, t=t, c=c, n=n: (n - 1) * c * _without(ls, t),
                 mesh_dim=i, tensor_dim=t, reduce_type=rt, padded=shape[t] % n != 0)
        else:
            step("all_reduce", before, lambda ls, n=n: 2 * (n - 1) * math.prod(ls) / n,
                 mesh_dim=i, reduce_type=rt)
    # 2. shards that move: all_to_all where the wanted dim is free, else all_gather
    while True:
        moving = [(i, dims.index(i)) for i in range(len(ms))
                  if i in dims and _placement_at(dst, i) != ("S", dims.index(i))]
        if not moving:
            break
        free = [(i, t) for i, t in moving if _placement_at(dst, i)[0] == "S"
                and dims[int(_placement_at(dst, i)[1])] == -1]  # type: ignore[arg-type]
        before = state()
        swaps = [(i, t, dst.dims_mapping[t]) for i, t in moving
                 if dst.dims_mapping[t] not in (-1, i) and dst.dims_mapping[t] not in dims
                 and dst.dims_mapping[t] not in partial and ms[dst.dims_mapping[t]] == ms[i]]
        if swaps:  # the shard moves to another mesh dim of the same size: point to point
            i, t, j = swaps[0]
            dims[t] = j
            pairs = []
            received = {}
            for c in coords(ms):
                holder = c[:i] + (c[j],) + c[i + 1:]
                r, h = mesh.process_id_at(c), mesh.process_id_at(holder)
                ls = local_shape(shape, before, ms, holder)
                whole_box = tuple((0, d) for d in ls)
                pairs.append((h, r, whole_box, whole_box))
                received[r] = 0 if h == r else math.prod(ls) * itemsize
            steps.append(ReshardStep("send_recv", mesh, state(), mesh_dim=i, tensor_dim=t,
                                     to_dim=j, bytes_per_rank=received, pairs=tuple(pairs),
                                     src_attr=before))
        elif free:
            i, t = free[0]
            u, n = int(_placement_at(dst, i)[1]), ms[i]  # type: ignore[arg-type]
            dims[t], dims[u] = -1, i
            ct, cu = -(-shape[t] // n), -(-shape[u] // n)
            step("all_to_all", before,
                 lambda ls, t=t, u=u, ct=ct, cu=cu, n=n: (n - 1) * ct * cu * _without(ls, t, u),
                 mesh_dim=i, tensor_dim=t, to_dim=u,
                 padded=shape[u] % n != 0 or shape[t] % n != 0)
        else:
            i, t = moving[0]
            n = ms[i]
            dims[t] = -1
            c = -(-shape[t] // n)
            step("all_gather", before, lambda ls, t=t, c=c, n=n: (n - 1) * c * _without(ls, t),
                 mesh_dim=i, tensor_dim=t, padded=shape[t] % n != 0)
    # 3. the remaining slices; 4. new partials: local
    slices()
    for i, rt in sorted(dst.partial.items()):
        if partial.get(i) != rt:
            before = state()
            partial[i] = rt
            step("to_partial", before, lambda ls: 0, mesh_dim=i, reduce_type=rt)
    if state() != dst:
        raise AssertionError(f"reshard plan ends at {state()}, not {dst}")
    return ReshardPlan(steps)


def plan_reshard(src_mesh: ProcessMesh, src: TensorDistAttr, dst_mesh: ProcessMesh,
                 dst: TensorDistAttr, shape: Sequence[int], itemsize: int = 4) -> ReshardPlan:
    """The steps from (src_mesh, src) to (dst_mesh, dst), on one mesh or across meshes."""
    shape = tuple(int(d) for d in shape)
    if src_mesh == dst_mesh:
        return plan_same_mesh(src_mesh, src, dst, shape, itemsize)
    steps: list[ReshardStep] = []
    if src.partial:  # reduced on the source mesh first, scattered where a dim is free
        mid = _without_partials(src, shape, src_mesh.shape)
        steps += plan_same_mesh(src_mesh, src, mid, shape, itemsize).steps
        src = mid
    whole = TensorDistAttr(dst.dims_mapping)
    # ranks off coordinate 0 of a partial dim whose identity fills them need no data
    idle = {i for i, rt in dst.partial.items() if rt in _IDENTITY_TYPES}
    needing = [c for c in coords(dst_mesh.shape) if not any(c[i] for i in idle)]
    steps.append(_pieces(src_mesh, src, dst_mesh, whole, needing, shape, itemsize))
    steps += plan_same_mesh(dst_mesh, whole, dst, shape, itemsize).steps
    return ReshardPlan(steps)


_IDENTITY_TYPES = {ReduceType.kRedSum, ReduceType.kRedProd, ReduceType.kRedAny,
                   ReduceType.kRedAll}


def _without_partials(attr: TensorDistAttr, shape: Sequence[int], mesh_shape: Sequence[int]
                      ) -> TensorDistAttr:
    """`attr` with each partial mesh dim resolved: into a shard of the largest free tensor dim
    (a reduce-scatter), else replicated (an all-reduce)."""
    dims = list(attr.dims_mapping)
    for i in sorted(attr.partial):
        free = [t for t in range(len(shape)) if dims[t] == -1 and shape[t] >= mesh_shape[i]]
        if free:
            dims[max(free, key=lambda t: shape[t])] = i
    return TensorDistAttr(tuple(dims))


def _pieces(src_mesh: ProcessMesh, src: TensorDistAttr, dst_mesh: ProcessMesh,
            dst: TensorDistAttr, needing: Sequence[tuple[int, ...]], shape: Sequence[int],
            itemsize: int) -> ReshardStep:
    """Point to point across meshes: every destination rank in `needing` receives each piece of
    its shard from one rank holding it (itself when it does; else round-robin over the
    holders), so every element crosses once per rank that needs it."""
    holders: dict[tuple[tuple[int, int], ...], list[int]] = {}
    for c in coords(src_mesh.shape):
        holders.setdefault(_box(shape, src, src_mesh.shape, c), []).append(
            src_mesh.process_id_at(c))
    pairs = []
    received = {dst_mesh.process_id_at(c): 0 for c in coords(dst_mesh.shape)}
    for k, c in enumerate(needing):
        d = dst_mesh.process_id_at(c)
        dbox = _box(shape, dst, dst_mesh.shape, c)
        for sbox, who in holders.items():
            inter = tuple((max(a0, b0), min(a1, b1)) for (a0, a1), (b0, b1) in
                          zip(sbox, dbox, strict=True))
            if any(a >= b for a, b in inter):
                continue
            s = d if d in who else who[k % len(who)]
            pairs.append((s, d, tuple((a - o, b - o) for (a, b), (o, _) in zip(inter, sbox,
                                                                                strict=True)),
                          tuple((a - o, b - o) for (a, b), (o, _) in zip(inter, dbox,
                                                                          strict=True))))
            if s != d:
                received[d] += math.prod(b - a for a, b in inter) * itemsize
    return ReshardStep("send_recv", dst_mesh, dst, bytes_per_rank=received, pairs=tuple(pairs),
                       src_attr=src)


def _box(shape: Sequence[int], attr: TensorDistAttr, mesh_shape: Sequence[int],
         coord: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    out = []
    for n, m in zip(shape, attr.dims_mapping, strict=True):
        out.append((0, n) if m == -1 else chunk_bounds(n, mesh_shape[m], coord[m]))
    return tuple(out)
