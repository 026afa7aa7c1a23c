"""Runs a ReshardPlan on simulated ranks (numpy, one process): each collective as its
definition says, chunk by chunk, padded chunks included. The planner is proven against it; the
MPI executor (reshard_exec.py) runs the same steps through hwport.distributed's collectives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .placement import ReduceType
from .reshard_plan import ReshardPlan, ReshardStep
from .simulate import _IDENTITY, _combine, chunk_bounds, coords, local_shape


def _take(a: np.ndarray, dim: int, start: int, stop: int) -> np.ndarray:
    idx = [slice(None)] * a.ndim
    idx[dim] = slice(start, stop)
    return a[tuple(idx)]


def _pad_to(a: np.ndarray, dim: int, size: int) -> np.ndarray:
    """`a` padded with zeros along dim to `size` (what travels for an uneven chunk)."""
    if a.shape[dim] == size:
        return a
    widths = [(0, 0)] * a.ndim
    widths[dim] = (0, size - a.shape[dim])
    return np.pad(a, widths)


def _box(box: Sequence[tuple[int, int]]) -> tuple[slice, ...]:
    return tuple(slice(a, b) for a, b in box)


def _groups(step: ReshardStep) -> list[list[int]]:
    """The ranks of each group along step.mesh_dim, in coordinate order."""
    mesh, i = step.mesh, step.mesh_dim
    assert i is not None
    out = []
    for c in coords(mesh.shape):
        if c[i] == 0:
            out.append([mesh.process_id_at(c[:i] + (k,) + c[i + 1:])
                        for k in range(mesh.shape[i])])
    return out


def run_step(step: ReshardStep, values: Mapping[int, np.ndarray], shape: Sequence[int]
             ) -> dict[int, np.ndarray]:
    """The ranks' local values after one step (values: rank -> local value)."""
    out = dict(values)
    if step.kind == "send_recv":
        dtype = next(iter(values.values())).dtype
        moved = {}
        for c in coords(step.mesh.shape):
            moved[step.mesh.process_id_at(c)] = np.zeros(
                local_shape(shape, step.after, step.mesh.shape, c), dtype=dtype)
        for s, d, sbox, dbox in step.pairs:
            moved[d][_box(dbox)] = values[s][_box(sbox)]
        return moved
    for group in _groups(step):
        n = len(group)
        t = step.tensor_dim
        if step.kind == "all_gather":
            c = -(-shape[t] // n)
            whole = np.concatenate([_pad_to(values[r], t, c) for r in group], axis=t)
            whole = _take(whole, t, 0, shape[t])
            for r in group:
                out[r] = np.array(whole)
        elif step.kind == "all_reduce":
            total = _combine(step.reduce_type, [values[r] for r in group])
            for r in group:
                out[r] = np.array(total)
        elif step.kind == "reduce_scatter":
            c = -(-shape[t] // n)
            total = _pad_to(_combine(step.reduce_type, [values[r] for r in group]), t, c * n)
            for k, r in enumerate(group):
                a, b = chunk_bounds(shape[t], n, k)
                out[r] = np.array(_take(total, t, k * c, k * c + (b - a)))
        elif step.kind == "all_to_all":
            u = step.to_dim
            cu, ct = -(-shape[u] // n), -(-shape[t] // n)
            sent = {r: [_pad_to(_take(values[r], u, *chunk_bounds(shape[u], n, j)), u, cu)
                        for j in range(n)] for r in group}
            for j, r in enumerate(group):
                parts = [_pad_to(sent[k_r][j], t, ct) for k_r in group]
                got = np.concatenate(parts, axis=t)
                # drop the padding: the sources' real t-lengths, then this rank's u chunk
                keep = np.concatenate([np.arange(k * ct, k * ct + values[k_r].shape[t])
                                       for k, k_r in enumerate(group)]).astype(np.intp)
                got = np.take(got, keep, axis=t)
                a, b = chunk_bounds(shape[u], n, j)
                out[r] = np.array(_take(got, u, 0, b - a))
        elif step.kind == "slice":
            for k, r in enumerate(group):
                out[r] = np.array(_take(values[r], t, *chunk_bounds(shape[t], n, k)))
        elif step.kind == "to_partial":
            rt = step.reduce_type
            for k, r in enumerate(group):
                if k and rt in _IDENTITY:
                    out[r] = np.full(values[r].shape, _IDENTITY[ReduceType(rt)],
                                     dtype=values[r].dtype)
        else:
            raise ValueError(f"unknown reshard step {step.kind!r}")
    return out


def run_plan(plan: ReshardPlan, values: Mapping[int, np.ndarray], shape: Sequence[int]
             ) -> dict[int, np.ndarray]:
    for step in plan.steps:
        values = run_step(step, values, shape)
    return dict(values)
