"""Runs a ReshardPlan on this rank through hwport.distributed's collectives (Paddle's
signatures): every rank of the job calls `execute` with the same plan; the groups of each
step's mesh dim are made (new_group, collectively, in plan order) on first use and cached.
Local slicing and padding happen on the host (numpy); the collectives run on the tensor's
place."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .placement import ReduceType
from .reshard_plan import ReshardPlan, ReshardStep
from .simulate import _IDENTITY, chunk_bounds, coords, local_shape


class HwportBackend:
    """The collectives of hwport.distributed over hwport Tensors on `place` (results reshaped
    to the shapes sent: a 0-d tensor may come back as [1]). Groups are made once per process
    (new_group is collective over the job) and kept: see ensure_groups."""

    _groups: ClassVar[dict[tuple[int, ...], Any]] = {}  # every backend of the process shares them

    def __init__(self, place: Any = None, dtype: Any = None) -> None:
        import hwport
        import hwport.distributed as dist

        self.hw, self.dist, self.place, self.dtype = hwport, dist, place, dtype
        self.np_dtype = np_dtype_of(dtype)

    def rank(self) -> int:
        return int(self.dist.get_rank())

    def group(self, ranks: Sequence[int]) -> Any:
        key = tuple(int(r) for r in ranks)
        if key not in self._groups:
            self._groups[key] = self.dist.new_group(list(key))
        return self._groups[key]

    def tensor(self, a: np.ndarray) -> Any:
        return self.hw.to_tensor(np.array(a, order="C"), dtype=self.dtype, place=self.place)

    def numpy(self, t: Any) -> np.ndarray:
        return np.asarray(t.numpy())

    def op(self, rt: ReduceType) -> Any:
        code = {ReduceType.kRedAny: ReduceType.kRedMax,
                ReduceType.kRedAll: ReduceType.kRedMin}.get(rt, rt)
        return int(code)  # ReduceType 0..4 are Paddle's ReduceOp codes

    def all_gather(self, a: np.ndarray, group: Any) -> list[np.ndarray]:
        out: list[Any] = []
        self.dist.all_gather(out, self.tensor(a), group=group)
        return [self.numpy(t).reshape(a.shape) for t in out]

    def all_reduce(self, a: np.ndarray, rt: ReduceType, group: Any) -> np.ndarray:
        t = self.tensor(a)
        self.dist.all_reduce(t, op=self.op(rt), group=group)
        return self.numpy(t).reshape(a.shape)

    def reduce_scatter(self, parts: list[np.ndarray], rt: ReduceType, group: Any
                       ) -> np.ndarray:
        out = self.tensor(np.zeros_like(parts[0]))
        self.dist.reduce_scatter(out, [self.tensor(p) for p in parts], op=self.op(rt),
                                 group=group)
        return self.numpy(out).reshape(parts[0].shape)

    def alltoall(self, parts: list[np.ndarray], group: Any) -> list[np.ndarray]:
        out: list[Any] = []
        self.dist.alltoall(out_tensor_list=out, in_tensor_list=[self.tensor(p) for p in parts],
                           group=group)
        return [self.numpy(t).reshape(p.shape) for t, p in zip(out, parts, strict=True)]

    def exchange(self, sends: list[tuple[int, np.ndarray]],
                 recvs: list[tuple[int, tuple[int, ...], Any]]) -> list[np.ndarray]:
        """Point to point: posts every receive, then every send, then waits (no deadlock)."""
        bufs = [self.tensor(np.zeros(shape, dtype=dt)) for _, shape, dt in recvs]
        tasks = [self.dist.irecv(b, src=s) for (s, _, _), b in zip(recvs, bufs, strict=True)]
        tasks += [self.dist.isend(self.tensor(a), dst=d) for d, a in sends]
        for t in tasks:
            t.wait()
        return [self.numpy(b).reshape(shape) for b, (_, shape, _) in zip(bufs, recvs,
                                                                          strict=True)]


def ensure_groups(mesh: Any, backend: Any = None) -> None:
    """Makes the communication groups of every dim of `mesh` (every rank of the job calls it,
    in the same order, as forward code does): so that a backward, whose collectives run only on
    the ranks that hold a piece of the graph, never has to make one."""
    import hwport.distributed as dist

    if backend is None and not dist.is_initialized():
        return
    be = backend if backend is not None else HwportBackend()
    for i, n in enumerate(mesh.shape):
        if n == 1:
            continue
        for c in coords(mesh.shape):
            if not c[i]:
                be.group([mesh.process_id_at(c[:i] + (k,) + c[i + 1:]) for k in range(n)])


def group_along(mesh: Any, mesh_dim: int, rank: int, backend: Any = None) -> Any:
    """The group of `rank` along `mesh_dim` of `mesh` (made by ensure_groups)."""
    be = backend if backend is not None else HwportBackend()
    coord = mesh.get_rank_coord(rank)
    ranks = [mesh.process_id_at(coord[:mesh_dim] + (k,) + coord[mesh_dim + 1:])
             for k in range(mesh.shape[mesh_dim])]
    return be.group(ranks)


def np_dtype_of(dtype: Any) -> np.dtype:
    """The numpy dtype of an hwport dtype (or a name); float32 when None."""
    if dtype is None:
        return np.dtype(np.float32)
    name = str(dtype).rsplit(".", 1)[-1]
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _boxed(box: Sequence[tuple[int, int]]) -> tuple[slice, ...]:
    return tuple(slice(a, b) for a, b in box)


def _take(a: np.ndarray, dim: int, start: int, stop: int) -> np.ndarray:
    idx = [slice(None)] * a.ndim
    idx[dim] = slice(start, stop)
    return np.array(a[tuple(idx)], order="C")


def _pad_to(a: np.ndarray, dim: int, size: int) -> np.ndarray:
    if a.shape[dim] == size:
        return a
    widths = [(0, 0)] * a.ndim
    widths[dim] = (0, size - a.shape[dim])
    return np.pad(a, widths)


def _my_group(step: ReshardStep, be: Any, me: int) -> tuple[Any, int, int] | None:
    """Makes every group of the step's mesh dim (all ranks, same order); returns (this rank's
    group, its index in it, the group size), or None when this rank is not in the mesh."""
    mesh, i = step.mesh, step.mesh_dim
    assert i is not None
    mine = None
    for c in coords(mesh.shape):
        if c[i]:
            continue
        ranks = [mesh.process_id_at(c[:i] + (k,) + c[i + 1:]) for k in range(mesh.shape[i])]
        g = be.group(ranks)
        if me in ranks:
            mine = (g, ranks.index(me), len(ranks))
    return mine


def run_step(step: ReshardStep, local: np.ndarray | None, shape: Sequence[int], be: Any
             ) -> np.ndarray | None:
    me = be.rank()
    if step.kind == "send_recv":
        sends, recvs, places = [], [], []
        for s, d, sbox, dbox in step.pairs:
            if s == me and d != me:
                sends.append((d, np.array(local[_boxed(sbox)], order="C")))
            elif d == me and s != me:
                recvs.append((s, tuple(b - a for a, b in sbox),
                              local.dtype if local is not None else be.np_dtype))
                places.append(dbox)
        got = be.exchange(sends, recvs)
        coord = step.mesh.get_rank_coord(me)
        if coord is None:
            return None
        dt = local.dtype if local is not None else be.np_dtype
        out = np.zeros(local_shape(shape, step.after, step.mesh.shape, coord), dtype=dt)
        for s, d, sbox, dbox in step.pairs:
            if s == me and d == me:
                out[_boxed(dbox)] = local[_boxed(sbox)]
        for dbox, piece in zip(places, got, strict=True):
            out[_boxed(dbox)] = piece
        return out
    if step.mesh.shape[step.mesh_dim] == 1:  # a group of one: every step leaves it as is
        return local if step.mesh.contains(me) else None
    mine = _my_group(step, be, me)
    if mine is None or local is None:
        return None
    group, k, n = mine
    t = step.tensor_dim
    if step.kind == "slice":
        return _take(local, t, *chunk_bounds(shape[t], n, k))
    if step.kind == "to_partial":
        if k and step.reduce_type in _IDENTITY:
            return np.full(local.shape, _IDENTITY[ReduceType(step.reduce_type)], local.dtype)
        return local
    if step.kind == "all_reduce":
        return be.all_reduce(local, ReduceType(step.reduce_type), group)
    if step.kind == "all_gather":
        c = -(-shape[t] // n)
        parts = be.all_gather(_pad_to(local, t, c), group)
        real = [chunk_bounds(shape[t], n, j) for j in range(n)]
        return np.concatenate([_take(p, t, 0, b - a) for p, (a, b) in zip(parts, real,
                                                                          strict=True)], axis=t)
    if step.kind == "reduce_scatter":
        c = -(-shape[t] // n)
        padded = _pad_to(local, t, c * n)
        parts = [_take(padded, t, j * c, (j + 1) * c) for j in range(n)]
        out = be.reduce_scatter(parts, ReduceType(step.reduce_type), group)
        a, b = chunk_bounds(shape[t], n, k)
        return _take(out, t, 0, b - a)
    if step.kind == "all_to_all":
        u = step.to_dim
        assert u is not None
        cu, ct = -(-shape[u] // n), -(-shape[t] // n)
        parts = [_pad_to(_pad_to(_take(local, u, *chunk_bounds(shape[u], n, j)), u, cu), t, ct)
                 for j in range(n)]
        got = be.alltoall(parts, group)
        a, b = chunk_bounds(shape[u], n, k)
        pieces = []
        for j, p in enumerate(got):
            ta, tb = chunk_bounds(shape[t], n, j)
            pieces.append(_take(_take(p, t, 0, tb - ta), u, 0, b - a))
        return np.concatenate(pieces, axis=t)
    raise ValueError(f"unknown reshard step {step.kind!r}")


def execute(plan: ReshardPlan, local: Any, shape: Sequence[int], dtype: Any = None,
            backend: Any = None) -> Any:
    """This rank's local value after `plan` (None when it ends outside the destination
    mesh). `local` an hwport Tensor (or None); `backend` defaults to hwport.distributed's
    collectives on the local tensor's place."""
    be = backend if backend is not None else HwportBackend(
        getattr(local, "place", None), dtype if dtype is not None else getattr(local, "dtype",
                                                                              None))
    value = None if local is None else be.numpy(local)
    for step in plan.steps:
        value = run_step(step, value, shape, be)
    return None if value is None else be.tensor(value)
