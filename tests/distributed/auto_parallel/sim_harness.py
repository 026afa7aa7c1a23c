"""The simulation oracle of the SPMD rules: split global numpy inputs per the rule's required
placements, run phi_ops' numpy reference on every simulated rank's local values, assemble the
global outputs per the rule's output placements, compare with the reference on the global
inputs."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np

from hwport.distributed.auto_parallel import (
    DistMeta,
    ReduceType,
    TensorDistAttr,
    infer_spmd,
    local_attrs,
)
from hwport.distributed.auto_parallel import simulate as sim
from phi_ops.reference import reference
from phi_ops.sample_inputs import dname

FLOATS = ("float16", "bfloat16", "float32", "float64")


def random_attr(shape: Sequence[int], mesh_shape: Sequence[int], rng: np.random.Generator,
                partial_ok: bool = True) -> TensorDistAttr:
    """Random placements: per mesh dim Replicate, Shard(a free tensor dim) or Partial (sum
    mostly; max sometimes; none when `partial_ok` is false)."""
    dims = [-1] * len(shape)
    partial: dict[int, ReduceType] = {}
    for m in range(len(mesh_shape)):
        r = rng.random()
        free = [d for d in range(len(shape)) if dims[d] == -1]
        if r < 0.45 and free:
            dims[int(rng.choice(free))] = m
        elif r < 0.65 and partial_ok:
            partial[m] = ReduceType.kRedMax if rng.random() < 0.2 else ReduceType.kRedSum
    return TensorDistAttr(tuple(dims), partial)


def _meta(v: Any, attr: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, list):
        return [DistMeta(np.shape(t), a, dname(t)) for t, a in zip(v, attr, strict=True)]
    return DistMeta(np.shape(v), attr, dname(v))


def _finite(v: Any) -> bool:
    vals = v if isinstance(v, list) else [v]
    return all(np.isfinite(np.asarray(t).astype(np.float64)).all() for t in vals
               if t is not None and np.asarray(t).dtype.kind in "fV")


def random_attrs(inputs: Sequence[Any], mesh_shape: Sequence[int],
                 rng: np.random.Generator) -> list[Any]:
    """Random placements for every input. Partial only where every input is finite: a sum of
    partial values is the value only in exact arithmetic (inf - inf, 0 * inf are NaN)."""
    partial_ok = all(_finite(v) for v in inputs)
    out: list[Any] = []
    for v in inputs:
        if v is None:
            out.append(None)
        elif isinstance(v, list):
            out.append([random_attr(np.shape(t), mesh_shape, rng, partial_ok) for t in v])
        else:
            out.append(random_attr(np.shape(v), mesh_shape, rng, partial_ok))
    return out


def check_close(got: np.ndarray, want: np.ndarray, what: str, partial_scale: float = 0.0
                ) -> None:
    """float64: 1e-9 relative to the largest finite value; other floats: 2e-2 (the low
    precision dtypes' reduction tolerance), plus, for a Partial output, a few units of the
    dtype's epsilon times the summed magnitude of the ranks' partial values (each partial is
    rounded to the dtype before the sum: cancellation is the dtype's, not the rule's);
    integers and bools: exact."""
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind == "f" and want.dtype == np.float64:
        scale = 1.0 + float(np.nanmax(np.abs(np.where(np.isinf(want), 0, want)), initial=0))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * scale, equal_nan=True,
                                   err_msg=what)
    elif want.dtype.kind in "fV" or str(want.dtype) == "bfloat16":
        g, w = got.astype(np.float64), want.astype(np.float64)
        eps = float(ml_dtypes.finfo(want.dtype).eps)
        np.testing.assert_allclose(g, w, rtol=2e-2, atol=2e-2 + 4 * eps * partial_scale,
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def run_case(op: str, inputs: Sequence[Any], attrs: dict[str, Any],
             mesh_shape: Sequence[int], given: Sequence[Any],
             rng: np.random.Generator) -> Any:
    """One simulated distributed call: returns the SpmdResult after checking the outputs."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _run_case(op, inputs, attrs, mesh_shape, given, rng)


def _run_case(op: str, inputs: Sequence[Any], attrs: dict[str, Any],
              mesh_shape: Sequence[int], given: Sequence[Any],
              rng: np.random.Generator) -> Any:
    metas = [_meta(v, a) for v, a in zip(inputs, given, strict=True)]
    res = infer_spmd(op, metas, attrs, mesh_shape)
    want = reference(op, list(inputs), attrs)
    wants = list(want) if isinstance(want, tuple) else [want]
    out_attrs: list[TensorDistAttr] = []
    for a in res.outputs:
        out_attrs.extend(a if isinstance(a, list) else [a])
    assert len(out_attrs) == len(wants), f"{op}: {len(out_attrs)} output attrs"
    # each rank's local inputs, per the required placements
    per_rank: dict[tuple[int, ...], list[Any]] = {c: [] for c in sim.coords(mesh_shape)}
    for v, a in zip(inputs, res.inputs, strict=True):
        if v is None:
            for c in per_rank:
                per_rank[c].append(None)
        elif isinstance(v, list):
            splits = [sim.split(np.asarray(t), ta, mesh_shape, rng) for t, ta in
                      zip(v, a, strict=True)]
            for c in per_rank:
                per_rank[c].append([s[c] for s in splits])
        else:
            s = sim.split(np.asarray(v), a, mesh_shape, rng)
            for c in per_rank:
                per_rank[c].append(s[c])
    outs: list[dict[tuple[int, ...], np.ndarray]] = [{} for _ in wants]
    for c, local_in in per_rank.items():
        shapes = [sim.local_shape(w.shape, a, mesh_shape, c)
                  for w, a in zip(wants, out_attrs, strict=True)]
        got = reference(op, local_in, local_attrs(op, res.attrs, shapes))
        gots = list(got) if isinstance(got, tuple) else [got]
        assert len(gots) == len(wants), f"{op} rank {c}: {len(gots)} outputs"
        for k, g in enumerate(gots):
            outs[k][c] = g
    for k, (w, a) in enumerate(zip(wants, out_attrs, strict=True)):
        got = sim.assemble(outs[k], a, mesh_shape, w.shape)
        scale = 0.0
        if a.partial and w.dtype.kind in "fV":
            mags = [np.abs(v.astype(np.float64)) for v in outs[k].values()]
            scale = len(mags) * max((float(np.max(m[np.isfinite(m)], initial=0)) for m in mags),
                                    default=0.0)
        check_close(got, w, f"{op} output {k} (attrs {attrs}, mesh {list(mesh_shape)}, "
                            f"given {given}, required {res.inputs}, out {a})", scale)
    return res
