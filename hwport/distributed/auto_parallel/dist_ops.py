"""Ops on DistTensors, in Python: the dist layer's sequence (SPMD rule -> reshard the inputs ->
the local op -> the rule's output placements) run with real collectives, every rank of the job
calling it alike. The pipeline's C++ dist layer is to take this over; sim_layer.py is the same
sequence simulated in one process."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .dist_attr import TensorDistAttr
from .dist_tensor import DistTensor, reshard
from .process_mesh import ProcessMesh, current_rank
from .simulate import local_shape
from .spmd_rules import DistMeta, infer_spmd, local_attrs


def _dtype_name(t: DistTensor) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def _floating(dtype: Any) -> bool:
    return str(dtype).rsplit(".", 1)[-1].startswith(("float", "bfloat", "complex"))


def dist_call(op: str, inputs: Sequence[DistTensor | Sequence[DistTensor] | None],
              attrs: Mapping[str, Any] | None = None, mesh: ProcessMesh | None = None
              ) -> DistTensor | list[DistTensor]:
    """Runs `op` (an ops.yaml op) on DistTensors. `mesh`: where it runs (the first input's by
    default; inputs on another mesh cross over with their placements). Returns one DistTensor,
    or a list for several or variadic outputs."""
    from phi_ops import dispatch
    from phi_ops.infer_meta import Meta, infer
    from phi_ops.schema import load_ops

    given = dict(attrs or {})
    flat = [t for i in inputs if i is not None for t in (i if isinstance(i, list | tuple)
                                                          else [i])]
    if not flat:
        raise ValueError(f"dist_call({op}): needs at least one DistTensor input")
    mesh = mesh or flat[0].process_mesh
    from .dist_autograd import allreduce_grad, grad_wanted, split_dims
    from .reshard_exec import ensure_groups

    ensure_groups(mesh)
    wants_grad = grad_wanted(*flat)

    def here(t: DistTensor) -> DistTensor:
        return t if t.process_mesh == mesh else reshard(t, mesh, t.placements)

    ins: list[Any] = [None if i is None else [here(t) for t in i]
                      if isinstance(i, list | tuple) else here(i) for i in inputs]

    def meta(t: DistTensor) -> DistMeta:
        return DistMeta(tuple(t.shape), t.dist_attr, _dtype_name(t))

    res = infer_spmd(op, [None if i is None else [meta(t) for t in i] if isinstance(i, list)
                          else meta(i) for i in ins], given, mesh.shape)
    ins += [None] * (len(res.inputs) - len(ins))
    ready: list[Any] = []
    for i, req in zip(ins, res.inputs, strict=True):
        if i is None:
            ready.append(None)
        elif isinstance(i, list):
            ready.append([reshard(t, mesh, a.to_placements(mesh.ndim))
                          for t, a in zip(i, req, strict=True)])
        else:
            ready.append(reshard(i, mesh, req.to_placements(mesh.ndim)))
    metas = [None if t is None else [Meta(tuple(x.shape), _dtype_name(x)) for x in t]
             if isinstance(t, list) else Meta(tuple(t.shape), _dtype_name(t)) for t in ready]
    outs = infer(load_ops()[op], metas, dict(res.attrs)).outputs
    out_attrs: list[TensorDistAttr] = [a for o in res.outputs
                                       for a in (o if isinstance(o, list) else [o])]
    coord = mesh.get_rank_coord(current_rank())
    locals_: list[Any] = [None] * len(outs)
    if coord is not None:
        shapes = [local_shape(m.shape, a, mesh.shape, coord)
                  for m, a in zip(outs, out_attrs, strict=True)]
        call_attrs = dict(given)
        if op in ("reshape", "expand"):
            call_attrs["shape"] = local_attrs(op, res.attrs, shapes)["shape"]
        if op == "squeeze":
            call_attrs["axis"] = res.attrs["axis"]
        def local(x: DistTensor) -> Any:
            # an input Replicate where the op splits its work: its gradient is summed there
            v = x._local_value()
            if wants_grad and not x.stop_gradient:
                v = allreduce_grad(v, mesh, split_dims(x.dist_attr, out_attrs, mesh.ndim))
            return v

        args = [None if t is None else [local(x) for x in t] if isinstance(t, list)
                else local(t) for t in ready]
        got = dispatch.call(op, args, call_attrs)
        locals_ = list(got) if isinstance(got, list | tuple) else [got]
    result = [DistTensor(loc, mesh, a.to_placements(mesh.ndim), m.shape, dtype=m.dtype
                         if loc is None else loc.dtype,
                         stop_gradient=not wants_grad or not _floating(m.dtype))
              for loc, a, m in zip(locals_, out_attrs, outs, strict=True)]
    return result[0] if len(result) == 1 and not load_ops()[op].outputs[0].variadic else result
