"""DistTensor: a tensor distributed over a ProcessMesh (this rank's local shard, the mesh, the
placements, the global shape), and Paddle's constructors `shard_tensor`, `dtensor_from_local`,
`dtensor_to_local`, and `reshard`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .dist_attr import TensorDistAttr
from .placement import Placement
from .process_mesh import ProcessMesh, current_rank
from .simulate import split


class DistTensor:
    """This rank's piece of a distributed tensor. `local` is an hwport Tensor (None on a rank
    outside the mesh); `shape` the global shape."""

    def __init__(self, local: Any, mesh: ProcessMesh, placements: Sequence[Placement],
                 shape: Sequence[int], dtype: Any = None, stop_gradient: bool = True) -> None:
        if len(placements) != mesh.ndim:
            raise ValueError(f"DistTensor: {len(placements)} placements for a mesh of "
                             f"{mesh.ndim} dims")
        self._local = local
        self._mesh = mesh
        self._shape = [int(d) for d in shape]
        self._attr = TensorDistAttr.from_placements(list(placements), len(self._shape))
        self._dtype = dtype if dtype is not None else getattr(local, "dtype", None)
        self._stop_gradient = bool(stop_gradient)
        self.name: str | None = None

    # ---- autograd (dist_autograd.py) ------------------------------------------------------
    @property
    def stop_gradient(self) -> bool:
        """Whether the tensor needs no gradient (the same on every rank)."""
        return self._stop_gradient

    @stop_gradient.setter
    def stop_gradient(self, value: bool) -> None:
        self._stop_gradient = bool(value)
        if self._local is not None and self._local.stop_gradient != bool(value):
            self._local.stop_gradient = bool(value)

    @property
    def grad(self) -> DistTensor | None:
        """The gradient, a DistTensor with this tensor's placements, except that a
        Partial(sum) dim reads Replicate (every summand's gradient is the whole gradient) and
        a Partial(avg) dim Partial(sum) (each of the n ranks holds 1/n of it); None where
        this rank holds no piece or no gradient reached it."""
        from .dist_autograd import grad_attr

        g = None if self._local is None else self._local.grad
        if g is None:
            return None
        return DistTensor(g, self._mesh, grad_attr(self._attr).to_placements(self._mesh.ndim),
                          self._shape, dtype=g.dtype)

    def clear_grad(self) -> None:
        if self._local is not None:
            self._local.grad = None

    clear_gradient = clear_grad

    def backward(self, grad_tensor: DistTensor | None = None, retain_graph: bool = False
                 ) -> None:
        """Backward from this DistTensor, on every rank of the job. A rank holding a piece
        seeds its local gradient (ones, or `grad_tensor`'s local value); every rank also runs
        the backward of the cross-mesh moves its forward sent (dist_autograd.backward_roots)."""
        from hwport.autograd import backward

        from .dist_autograd import backward_roots, seed_for

        outs, grads = [], []
        if self._local is not None:
            outs.append(self._local)
            grads.append(seed_for(self._attr, self._mesh, self._local) if grad_tensor is None
                         else grad_tensor._local_value())
        for r in backward_roots():
            outs.append(r)
            grads.append(r * 0)
        if outs:
            backward(outs, grads, retain_graph)

    # Paddle's names
    @property
    def process_mesh(self) -> ProcessMesh:
        return self._mesh

    @property
    def placements(self) -> list[Placement]:
        return self._attr.to_placements(self._mesh.ndim)

    @property
    def dist_attr(self) -> TensorDistAttr:
        return self._attr

    @property
    def shape(self) -> list[int]:
        return list(self._shape)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def dtype(self) -> Any:
        return self._dtype

    def is_dist(self) -> bool:
        return True

    def _local_value(self) -> Any:
        return self._local

    def __repr__(self) -> str:
        return (f"DistTensor(shape={self._shape}, dtype={self._dtype}, mesh={self._mesh}, "
                f"placements={self.placements})")


def _to_numpy(data: Any) -> np.ndarray:
    if hasattr(data, "numpy"):
        return np.asarray(data.numpy())
    return np.asarray(data)


def _local_tensor(value: np.ndarray, dtype: Any, place: Any, stop_gradient: bool) -> Any:
    import hwport

    return hwport.to_tensor(np.array(value, order="C"), dtype=dtype, place=place,
                            stop_gradient=stop_gradient)


def shard_tensor(data: Any, mesh: ProcessMesh, placements: Sequence[Placement],
                 dtype: Any = None, place: Any = None, stop_gradient: bool | None = None
                 ) -> DistTensor:
    """Distribute `data` (the same global value on every rank) over `mesh`: this rank keeps its
    shard; a Partial mesh dim keeps the value on coordinate 0 and the reduction's identity
    (zeros for a sum) elsewhere, as Paddle does."""
    if stop_gradient is None:
        stop_gradient = bool(getattr(data, "stop_gradient", True))
    if place is None and hasattr(data, "place"):
        place = data.place
    g = _to_numpy(data)
    if dtype is None and hasattr(data, "dtype") and not isinstance(data, np.ndarray):
        dtype = data.dtype
    attr = TensorDistAttr.from_placements(list(placements), g.ndim)
    coord = mesh.get_rank_coord(current_rank())
    local = None
    if coord is not None:
        local = _local_tensor(split(g, attr, mesh.shape)[coord], dtype, place, stop_gradient)
    if local is not None:
        dtype = local.dtype
    elif dtype is None:  # a rank outside the mesh still knows the tensor's dtype
        from phi_ops.promotion import dtype_name

        dtype = dtype_name(g.dtype)
    return DistTensor(local, mesh, attr.to_placements(mesh.ndim), g.shape, dtype=dtype,
                      stop_gradient=stop_gradient)


def dtensor_from_local(local_tensor: Any, mesh: ProcessMesh, placements: Sequence[Placement]
                       ) -> DistTensor:
    """A DistTensor from this rank's local tensor; the global shape is the local one times
    the mesh dim size along each sharded dim (even shards, as Paddle assumes)."""
    shape = list(local_tensor.shape)
    attr = TensorDistAttr.from_placements(list(placements), len(shape))
    for t, m in enumerate(attr.dims_mapping):
        if m != -1:
            shape[t] *= mesh.shape[m]
    return DistTensor(local_tensor, mesh, attr.to_placements(mesh.ndim), shape,
                      stop_gradient=bool(getattr(local_tensor, "stop_gradient", True)))


def dtensor_to_local(dist_tensor: DistTensor, mesh: ProcessMesh | None = None,
                     placements: Sequence[Placement] | None = None) -> Any:
    """This rank's local tensor."""
    return dist_tensor._local_value()


def reshard(dist_tensor: DistTensor, mesh: ProcessMesh, placements: Sequence[Placement]
            ) -> DistTensor:
    """`dist_tensor` with `placements` on `mesh` (every rank of the job calls it): the planned
    collectives (reshard_plan.py) run through hwport.distributed (reshard_exec.py)."""
    from .reshard_exec import execute
    from .reshard_plan import plan_reshard

    dst = TensorDistAttr.from_placements(list(placements), dist_tensor.ndim)
    local = dist_tensor._local_value()
    from .dist_autograd import grad_wanted, reshard_with_grad
    from .reshard_exec import ensure_groups

    ensure_groups(dist_tensor.process_mesh)
    if mesh != dist_tensor.process_mesh:
        ensure_groups(mesh)
    if grad_wanted(dist_tensor):
        out = reshard_with_grad(local, dist_tensor.process_mesh, dist_tensor.dist_attr, mesh,
                                dst, dist_tensor.shape, dist_tensor.dtype)
        return DistTensor(out, mesh, dst.to_placements(mesh.ndim), dist_tensor.shape,
                          dtype=dist_tensor.dtype, stop_gradient=False)
    itemsize = local.element_size() if local is not None and hasattr(local, "element_size") \
        else 4
    plan = plan_reshard(dist_tensor.process_mesh, dist_tensor.dist_attr, mesh, dst,
                        dist_tensor.shape, itemsize)
    if not plan.steps:  # already there: the same local tensor
        return DistTensor(local, mesh, dst.to_placements(mesh.ndim), dist_tensor.shape,
                          dtype=dist_tensor.dtype, stop_gradient=dist_tensor.stop_gradient)
    out = execute(plan, local, dist_tensor.shape, dist_tensor.dtype)
    return DistTensor(out, mesh, dst.to_placements(mesh.ndim), dist_tensor.shape,
                      dtype=dist_tensor.dtype, stop_gradient=dist_tensor.stop_gradient)
