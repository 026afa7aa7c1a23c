"""The dist layer, simulated in one process over numpy: an op on distributed tensors runs its
derived SPMD rule, reshards each input to the layout the rule requires (the reshard planner's
steps on simulated ranks; inputs on another mesh cross over first), runs the numpy reference on
every rank's local values, and returns the outputs with the rule's placements. It is the
executable specification the pipeline's C++ dist layer is to match."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dist_attr import TensorDistAttr
from .process_mesh import ProcessMesh
from .reshard_plan import plan_reshard
from .reshard_sim import run_plan
from .simulate import assemble, coords, local_shape, split
from .spmd_rules import DistMeta, infer_spmd, local_attrs


@dataclass
class SimTensor:
    """A distributed tensor on simulated ranks: rank -> local value."""
    mesh: ProcessMesh
    attr: TensorDistAttr
    shape: tuple[int, ...]
    locals: dict[int, np.ndarray]

    @property
    def dtype(self) -> np.dtype:
        return next(iter(self.locals.values())).dtype

    def value(self) -> np.ndarray:
        """The global value (partials reduced, shards joined; replicas must agree)."""
        per_coord = {c: self.locals[self.mesh.process_id_at(c)] for c in coords(self.mesh.shape)}
        return assemble(per_coord, self.attr, self.mesh.shape, self.shape)


def sim_shard(value: np.ndarray, mesh: ProcessMesh, attr: TensorDistAttr,
              rng: np.random.Generator | None = None) -> SimTensor:
    g = np.asarray(value)
    per_coord = split(g, attr, mesh.shape, rng)
    return SimTensor(mesh, attr, g.shape, {mesh.process_id_at(c): v for c, v in per_coord.items()})


def sim_reshard(t: SimTensor, mesh: ProcessMesh, attr: TensorDistAttr) -> SimTensor:
    plan = plan_reshard(t.mesh, t.attr, mesh, attr, t.shape, t.dtype.itemsize)
    return SimTensor(mesh, attr, t.shape, run_plan(plan, t.locals, t.shape))


def sim_call(op: str, inputs: Sequence[SimTensor | Sequence[SimTensor] | None],
             attrs: Mapping[str, Any] | None = None, mesh: ProcessMesh | None = None
             ) -> list[SimTensor]:
    """One op on distributed tensors (every output as a SimTensor; a variadic output's
    tensors in order). `mesh`: where it runs (the first input's by default)."""
    from phi_ops.promotion import dtype_name as dname
    from phi_ops.reference import reference

    flat = [t for i in inputs if i is not None for t in (i if isinstance(i, list | tuple)
                                                          else [i])]
    mesh = mesh or flat[0].mesh

    def here(t: SimTensor) -> SimTensor:  # an input on another mesh crosses over as it is
        return t if t.mesh == mesh else sim_reshard(t, mesh, t.attr)

    ins: list[Any] = [None if i is None else [here(t) for t in i]
                      if isinstance(i, list | tuple) else here(i) for i in inputs]

    def meta(t: SimTensor) -> DistMeta:
        return DistMeta(t.shape, t.attr, dname(t.dtype))

    res = infer_spmd(op, [None if i is None else [meta(t) for t in i] if isinstance(i, list)
                          else meta(i) for i in ins], attrs or {}, mesh.shape)
    ins += [None] * (len(res.inputs) - len(ins))  # trailing optional inputs left out
    ready: list[Any] = []
    for i, req in zip(ins, res.inputs, strict=True):
        if i is None:
            ready.append(None)
        elif isinstance(i, list):
            ready.append([sim_reshard(t, mesh, a) for t, a in zip(i, req, strict=True)])
        else:
            ready.append(sim_reshard(i, mesh, req))
    out_attrs = [a for o in res.outputs for a in (o if isinstance(o, list) else [o])]
    per_rank: dict[int, list[np.ndarray]] = {}
    out_shapes: list[tuple[int, ...]] | None = None
    for c in coords(mesh.shape):
        r = mesh.process_id_at(c)
        local_in = [None if t is None else [x.locals[r] for x in t] if isinstance(t, list)
                    else t.locals[r] for t in ready]
        if out_shapes is None:  # the global output shapes, from the rule's call of infer-meta
            from phi_ops.infer_meta import Meta, infer
            from phi_ops.schema import load_ops

            metas = [None if t is None else [Meta(x.shape, dname(x.dtype)) for x in t]
                     if isinstance(t, list) else Meta(t.shape, dname(t.dtype)) for t in ready]
            out_shapes = [m.shape for m in infer(load_ops()[op], metas, dict(res.attrs)).outputs]
        shapes = [local_shape(s, a, mesh.shape, c) for s, a in zip(out_shapes, out_attrs,
                                                                  strict=True)]
        got = reference(op, local_in, local_attrs(op, res.attrs, shapes))
        per_rank[r] = list(got) if isinstance(got, tuple) else [got]
    assert out_shapes is not None
    return [SimTensor(mesh, a, s, {r: v[k] for r, v in per_rank.items()})
            for k, (a, s) in enumerate(zip(out_attrs, out_shapes, strict=True))]
