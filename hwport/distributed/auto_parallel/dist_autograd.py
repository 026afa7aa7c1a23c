"""Autograd through DistTensors: local ops record ordinary autograd on the local shards; what
crosses ranks is a PyLayer (one node of the C++ engine) whose backward is the transposed
collective.

The gradient convention. A DistTensor's local gradient on a rank is the derivative of the loss
with respect to that rank's local value, so the gradient of a tensor lies in the *dual*
placement of the tensor: Shard(t) -> Shard(t), Replicate -> Replicate (the whole gradient on
every rank), Partial(sum) -> Replicate (every summand gets the whole gradient), Partial(avg) ->
Replicate divided by the mesh dim's size. Every node keeps that invariant:

- a reshard (ReshardFn) takes the gradient back with the reshard dual(dst) -> dual(src) (so
  all_gather <-> slice, all_reduce (Partial -> Replicate) <-> identity, Partial -> Shard
  (reduce_scatter) <-> all_gather, Replicate -> Partial <-> identity, all_to_all <->
  all_to_all, send <-> recv across meshes), scaled where Partial(avg) is made or resolved;
- a local op is exact on its own, except that an input Replicate over a mesh dim on which an
  output is split (Shard or Partial) only sees its rank's part of the work there: its local
  gradient is a partial sum over that dim. dist_call wraps such an input in AllReduceGrad
  (identity forward, all_reduce(sum) of the gradient over that mesh dim's group: Megatron's
  f), which makes it whole again. The data-parallel gradient sync of a replicated weight is
  this f over the batch's mesh dim.

Ranks outside a mesh hold no local value. Where a reshard moves a tensor to a rank that held
nothing (or away from a rank that keeps nothing), that side of the node has a 0-d placeholder
input or output, so the node still exists on both sides and its backward does the matching
recv or send. The placeholders a rank's forward left behind are extra roots of the next
`DistTensor.backward()` (backward_roots), so a rank that does not hold the loss (the first
stage of a pipeline) still runs its part of the backward.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dist_attr import TensorDistAttr
from .placement import ReduceType
from .process_mesh import ProcessMesh, current_rank

_PENDING: list[Any] = []  # placeholders a forward left on this rank (see backward_roots)


def grad_wanted(*tensors: Any) -> bool:
    """Grad mode is on and some DistTensor among `tensors` needs a gradient (known on every
    rank, whether or not it holds a local value)."""
    from hwport.runtime import _core

    return _core.is_grad_enabled() and any(
        t is not None and not getattr(t, "stop_gradient", True) for t in tensors)


def dual(attr: TensorDistAttr) -> TensorDistAttr:
    """The placement of the gradient of a tensor placed as `attr`."""
    for d, rt in attr.partial.items():
        if rt not in (ReduceType.kRedSum, ReduceType.kRedAvg):
            raise NotImplementedError(
                f"autograd through a Partial({rt.name}) tensor (mesh dim {d}): only sum and avg "
                "partials are differentiable; reshard it to Replicate first")
    return TensorDistAttr(attr.dims_mapping)


def grad_attr(attr: TensorDistAttr) -> TensorDistAttr:
    """How a tensor's local gradients assemble into the global gradient: dual(attr), with
    Partial(avg) dims read as Partial(sum) (each rank's gradient is 1/n of the whole)."""
    dual(attr)
    return TensorDistAttr(attr.dims_mapping, {d: ReduceType.kRedSum for d, rt in
                                              attr.partial.items() if rt == ReduceType.kRedAvg})


def avg_scale(attr: TensorDistAttr, mesh: ProcessMesh) -> float:
    """The product of 1/n over the mesh dims where `attr` is Partial(avg)."""
    s = 1.0
    for d, rt in attr.partial.items():
        if rt == ReduceType.kRedAvg:
            s /= mesh.shape[d]
    return s


def _placeholder() -> Any:
    import hwport

    return hwport.zeros([], dtype="float32")


def _scaled(t: Any, factor: float) -> Any:
    return t if factor == 1.0 or t is None else t * factor


def _reshard_local(local: Any, src_mesh: ProcessMesh, src: TensorDistAttr,
                   dst_mesh: ProcessMesh, dst: TensorDistAttr, shape: list[int],
                   dtype: Any) -> Any:
    """This rank's local value after the planned reshard (None outside the destination)."""
    from .reshard_exec import execute
    from .reshard_plan import plan_reshard

    itemsize = local.element_size() if local is not None and hasattr(local, "element_size") \
        else np.dtype(str(dtype).rsplit(".", 1)[-1] if dtype is not None else "float32").itemsize
    plan = plan_reshard(src_mesh, src, dst_mesh, dst, shape, itemsize)
    if not plan.steps:
        return local
    return execute(plan, local, shape, dtype)


class _Layers:
    """The two PyLayers of the dist layer, made once (hwport.py_layer is imported lazily).
    Their parameters travel in the ctx, never in closures: a class made per call is cyclic
    garbage, and one whose closure holds tensors keeps a whole graph (and its device memory)
    alive until the cycle collector runs."""

    def __init__(self) -> None:
        from hwport.py_layer import PyLayer

        class ReshardFn(PyLayer):
            @staticmethod
            def forward(ctx: Any, x: Any, real: bool, spec: tuple) -> Any:
                ctx.spec = spec
                src_mesh, src, dst_mesh, dst, shape, dtype = spec[:6]
                out = _reshard_local(x if real else None, src_mesh, src, dst_mesh, dst, shape,
                                     dtype)
                return out if out is not None else _placeholder()

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                src_mesh, _, dst_mesh, _, shape, dtype, in_dst, scale, g_src, g_dst = ctx.spec
                g = grad if in_dst else None
                back = _reshard_local(g, dst_mesh, g_dst, src_mesh, g_src, shape, dtype)
                if back is None:
                    return _placeholder()
                return _scaled(back, 1.0 / scale if scale != 1.0 else 1.0)

        class AllReduceGrad(PyLayer):
            @staticmethod
            def forward(ctx: Any, x: Any, spec: tuple) -> Any:
                ctx.spec = spec
                return x.clone() if hasattr(x, "clone") else x * 1

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                import hwport.distributed as dist

                from .reshard_exec import group_along

                mesh, dims, me = ctx.spec
                g = grad.clone()
                for d in dims:
                    dist.all_reduce(g, group=group_along(mesh, d, me))
                return g

        self.reshard = ReshardFn
        self.allreduce_grad = AllReduceGrad


_LAYERS: list[_Layers] = []


def _layers() -> _Layers:
    if not _LAYERS:
        _LAYERS.append(_Layers())
    return _LAYERS[0]


def reshard_with_grad(local: Any, src_mesh: ProcessMesh, src: TensorDistAttr,
                      dst_mesh: ProcessMesh, dst: TensorDistAttr, shape: list[int],
                      dtype: Any) -> Any:
    """The reshard as one autograd node (every rank of the job calls it). Returns this rank's
    local value after it (None outside the destination mesh)."""
    me = current_rank()
    in_src, in_dst = src_mesh.contains(me), dst_mesh.contains(me)
    if not in_src and not in_dst:
        _reshard_local(None, src_mesh, src, dst_mesh, dst, shape, dtype)
        return None
    scale = avg_scale(dst, dst_mesh) / avg_scale(src, src_mesh)  # gradient: times 1/scale
    spec = (src_mesh, src, dst_mesh, dst, shape, dtype, in_dst, scale, dual(src), dual(dst))
    x = local
    if x is None:  # this rank receives a tensor it held no piece of: a placeholder input
        import hwport

        x = hwport.zeros([], dtype="float32")
        x.stop_gradient = False
    out = _layers().reshard.apply(x, local is not None, spec)
    if not in_dst:
        _PENDING.append(out)
        return None
    return out


def allreduce_grad(local: Any, mesh: ProcessMesh, mesh_dims: list[int]) -> Any:
    """Identity forward; the gradient all-reduced (sum) over each of `mesh_dims` (Megatron's
    f). Groups come from ensure_groups (made in the forward on every rank)."""
    dims = [d for d in mesh_dims if mesh.shape[d] > 1]
    if not dims or local is None:
        return local
    return _layers().allreduce_grad.apply(local, (mesh, dims, current_rank()))


def split_dims(in_attr: TensorDistAttr, out_attrs: list[TensorDistAttr], ndim: int) -> list[int]:
    """The mesh dims on which an input placed as `in_attr` is Replicate while some output is
    split (Shard or Partial): its local gradient is partial there."""
    dims = []
    for d in range(ndim):
        if d in in_attr.dims_mapping or d in in_attr.partial:
            continue
        if any(d in o.dims_mapping or d in o.partial for o in out_attrs):
            dims.append(d)
    return dims


def backward_roots() -> list[Any]:
    """The placeholders this rank's forward left (taken: a backward consumes them)."""
    roots = list(_PENDING)
    _PENDING.clear()
    return roots


def seed_for(attr: TensorDistAttr, mesh: ProcessMesh, local: Any) -> Any:
    """The gradient of a loss placed as `attr` with respect to this rank's local value: ones,
    divided by n over its Partial(avg) dims."""
    import hwport

    dual(attr)  # refuses max/min partials
    return hwport.full(list(local.shape), avg_scale(attr, mesh), dtype=local.dtype)
