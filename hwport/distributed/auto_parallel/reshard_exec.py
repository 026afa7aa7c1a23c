"""Runs a ReshardPlan on this rank through hwport.distributed's collectives (Paddle's
signatures): every rank of the job calls `execute` with the same plan; the groups of each
step's mesh dim are made (new_group, collectively, in plan order) on first use and cached.

The steps are written over a backend's array operations (take, pad_to, concat, full,
assemble) and collectives: HwportBackend runs them as hwport ops and collectives on the
tensor's place (no host round trip, and a jit.to_static capture records every one of them, so
a distributed step becomes one program); NumpyArrays gives the same operations over numpy
arrays for the simulated backends of the tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .placement import ReduceType
from .reshard_plan import ReshardPlan, ReshardStep
from .simulate import _IDENTITY, chunk_bounds, coords, local_shape


class NumpyArrays:
    """The array operations of run_step over numpy arrays."""

    def take(self, a: np.ndarray, dim: int, start: int, stop: int) -> np.ndarray:
        idx = [slice(None)] * a.ndim
        idx[dim] = slice(start, stop)
        return np.array(a[tuple(idx)], order="C")

    def pad_to(self, a: np.ndarray, dim: int, size: int) -> np.ndarray:
        if a.shape[dim] == size:
            return a
        widths = [(0, 0)] * a.ndim
        widths[dim] = (0, size - a.shape[dim])
        return np.pad(a, widths)

    def concat(self, parts: list[np.ndarray], dim: int) -> np.ndarray:
        return np.concatenate(parts, axis=dim)

    def full_like(self, a: np.ndarray, value: float) -> np.ndarray:
        return np.full(a.shape, value, a.dtype)

    def assemble(self, shape: Sequence[int], dtype: Any,
                 pieces: list[tuple[Sequence[tuple[int, int]], np.ndarray]]) -> np.ndarray:
        """A zero array of `shape` with each piece written at its box."""
        out = np.zeros(tuple(shape), dtype=dtype)
        for box, piece in pieces:
            out[_boxed(box)] = piece
        return out


class HwportBackend:
    """The collectives of hwport.distributed and the array operations over hwport Tensors on
    `place` (results reshaped to the shapes sent: a 0-d tensor may come back as [1]). Groups
    are made once per process (new_group is collective over the job) and kept: see
    ensure_groups."""

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

    # -- array operations (hwport ops: recorded by a capture like any other) --
    def take(self, a: Any, dim: int, start: int, stop: int) -> Any:
        if start == 0 and stop == a.shape[dim]:
            return a
        return self.hw.slice(a, axes=[dim], starts=[start], ends=[stop]).contiguous()

    def pad_to(self, a: Any, dim: int, size: int) -> Any:
        if a.shape[dim] == size:
            return a
        pad = [0] * (2 * a.ndim)
        pad[2 * dim + 1] = size - a.shape[dim]
        import hwport.nn.functional as F

        return F.pad(a, pad)

    def concat(self, parts: list[Any], dim: int) -> Any:
        return parts[0] if len(parts) == 1 else self.hw.concat(parts, axis=dim)

    def full_like(self, a: Any, value: float) -> Any:
        return self.hw.full(list(a.shape), value, dtype=a.dtype)

    def assemble(self, shape: Sequence[int], dtype: Any,
                 pieces: list[tuple[Sequence[tuple[int, int]], Any]]) -> Any:
        """Zeros of `shape` with each piece at its box (boxes are disjoint): each piece padded
        to the whole shape, the padded pieces added (or or-ed: bool)."""
        shape = [int(d) for d in shape]
        whole = [(box, p) for box, p in pieces
                 if [b - a for a, b in box] == shape]
        if whole:
            return whole[0][1]
        import hwport.nn.functional as F

        out = None
        for box, piece in pieces:
            pad = [v for (a, b), n in zip(box, shape, strict=True) for v in (a, n - b)]
            padded = F.pad(piece, pad) if any(pad) else piece
            out = padded if out is None else (
                self.hw.logical_or(out, padded) if str(padded.dtype).endswith("bool")
                else out + padded)
        if out is None:
            return self.hw.zeros(shape, dtype=self._dtype_of(dtype))
        return out

    # -- collectives --
    def all_gather(self, a: Any, group: Any) -> list[Any]:
        out: list[Any] = []
        self.dist.all_gather(out, a, group=group)
        return [t.reshape(list(a.shape)) for t in out]

    def all_reduce(self, a: Any, rt: ReduceType, group: Any) -> Any:
        t = a.clone() if a.is_contiguous() else a.contiguous()
        self.dist.all_reduce(t, op=self.op(rt), group=group)
        return t.reshape(list(a.shape))

    def reduce_scatter(self, parts: list[Any], rt: ReduceType, group: Any) -> Any:
        out = self.hw.zeros(list(parts[0].shape), dtype=parts[0].dtype)
        self.dist.reduce_scatter(out, parts, op=self.op(rt), group=group)
        return out.reshape(list(parts[0].shape))

    def alltoall(self, parts: list[Any], group: Any) -> list[Any]:
        out: list[Any] = []
        self.dist.alltoall(out_tensor_list=out, in_tensor_list=parts, group=group)
        return [t.reshape(list(p.shape)) for t, p in zip(out, parts, strict=True)]

    def exchange(self, sends: list[tuple[int, Any]],
                 recvs: list[tuple[int, tuple[int, ...], Any]],
                 order: list[tuple[str, int]] | None = None) -> list[Any]:
        """Point to point. Eagerly: posts every receive, then every send, then waits (no
        deadlock). Inside a jit.to_static capture: blocking sends and receives in `order`
        (("send", i) / ("recv", j) in the plan's pair order, the same sequence on every rank,
        so each pair meets), which the program repeats."""
        from hwport.jit.capture import active_recorder

        bufs = [self.hw.zeros(list(shape), dtype=self._dtype_of(dt)) for _, shape, dt in recvs]
        if active_recorder() is not None and order is not None:
            for kind, i in order:
                if kind == "send":
                    self.dist.send(sends[i][1].contiguous(), dst=sends[i][0])
                else:
                    self.dist.recv(bufs[i], src=recvs[i][0])
            return bufs
        tasks = [self.dist.irecv(b, src=s) for (s, _, _), b in zip(recvs, bufs, strict=True)]
        tasks += [self.dist.isend(a.contiguous(), dst=d) for d, a in sends]
        for t in tasks:
            t.wait()
        return bufs

    def _dtype_of(self, dt: Any) -> Any:
        """An hwport dtype (recv buffers: the local tensor's dtype, else the backend's)."""
        if dt is None or isinstance(dt, np.dtype):
            return self.dtype
        return dt


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


def _box_of(be: Any, a: Any, box: Sequence[tuple[int, int]]) -> Any:
    for dim, (start, stop) in enumerate(box):
        a = be.take(a, dim, start, stop)
    return a


def run_step(step: ReshardStep, local: Any, shape: Sequence[int], be: Any) -> Any:
    """This rank's value after `step` (None outside its destination): `local` is an array of
    the backend (an hwport Tensor for HwportBackend) or None."""
    me = be.rank()
    if step.kind == "send_recv":
        sends, recvs, places, order = [], [], [], []
        for s, d, sbox, dbox in step.pairs:
            if s == me and d != me:
                order.append(("send", len(sends)))
                sends.append((d, _box_of(be, local, sbox)))
            elif d == me and s != me:
                order.append(("recv", len(recvs)))
                recvs.append((s, tuple(b - a for a, b in sbox),
                              local.dtype if local is not None else be.np_dtype))
                places.append(dbox)
        got = be.exchange(sends, recvs, order=order)
        coord = step.mesh.get_rank_coord(me)
        if coord is None:
            return None
        dt = local.dtype if local is not None else be.np_dtype
        pieces = [(dbox, _box_of(be, local, sbox)) for s, d, sbox, dbox in step.pairs
                  if s == me and d == me]
        pieces += list(zip(places, got, strict=True))
        return be.assemble(local_shape(shape, step.after, step.mesh.shape, coord), dt, pieces)
    if step.mesh.shape[step.mesh_dim] == 1:  # a group of one: every step leaves it as is
        return local if step.mesh.contains(me) else None
    mine = _my_group(step, be, me)
    if mine is None or local is None:
        return None
    group, k, n = mine
    t = step.tensor_dim
    if step.kind == "slice":
        return be.take(local, t, *chunk_bounds(shape[t], n, k))
    if step.kind == "to_partial":
        if k and step.reduce_type in _IDENTITY:
            return be.full_like(local, _IDENTITY[ReduceType(step.reduce_type)])
        return local
    if step.kind == "all_reduce":
        return be.all_reduce(local, ReduceType(step.reduce_type), group)
    if step.kind == "all_gather":
        c = -(-shape[t] // n)
        parts = be.all_gather(be.pad_to(local, t, c), group)
        real = [chunk_bounds(shape[t], n, j) for j in range(n)]
        return be.concat([be.take(p, t, 0, b - a) for p, (a, b) in zip(parts, real,
                                                                       strict=True)], t)
    if step.kind == "reduce_scatter":
        c = -(-shape[t] // n)
        padded = be.pad_to(local, t, c * n)
        parts = [be.take(padded, t, j * c, (j + 1) * c) for j in range(n)]
        out = be.reduce_scatter(parts, ReduceType(step.reduce_type), group)
        a, b = chunk_bounds(shape[t], n, k)
        return be.take(out, t, 0, b - a)
    if step.kind == "all_to_all":
        u = step.to_dim
        assert u is not None
        cu, ct = -(-shape[u] // n), -(-shape[t] // n)
        parts = [be.pad_to(be.pad_to(be.take(local, u, *chunk_bounds(shape[u], n, j)), u, cu),
                           t, ct) for j in range(n)]
        got = be.alltoall(parts, group)
        a, b = chunk_bounds(shape[u], n, k)
        pieces = []
        for j, p in enumerate(got):
            ta, tb = chunk_bounds(shape[t], n, j)
            pieces.append(be.take(be.take(p, t, 0, tb - ta), u, 0, b - a))
        return be.concat(pieces, t)
    raise ValueError(f"unknown reshard step {step.kind!r}")


def execute(plan: ReshardPlan, local: Any, shape: Sequence[int], dtype: Any = None,
            backend: Any = None) -> Any:
    """This rank's local value after `plan` (None when it ends outside the destination
    mesh). `local` an hwport Tensor (or None); `backend` defaults to hwport.distributed's
    collectives on the local tensor's place."""
    be = backend if backend is not None else HwportBackend(
        getattr(local, "place", None), dtype if dtype is not None else getattr(local, "dtype",
                                                                              None))
    value = local
    if local is not None and not isinstance(be, HwportBackend):
        value = be.numpy(local)
    for step in plan.steps:
        value = run_step(step, value, shape, be)
    if value is None:
        return None
    if not isinstance(be, HwportBackend):
        return be.tensor(value)
    if value is local:  # a fresh tensor, as every other step gives
        return value.clone()
    return value if value.is_contiguous() else value.contiguous()
