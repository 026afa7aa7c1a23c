"""A single-process simulation of a mesh of ranks over numpy arrays: split a global array into
each rank's local value per a TensorDistAttr, and assemble a global array back from the ranks'
values (reducing Partial mesh dims, concatenating shards, checking replicas agree). The SPMD
rules and the reshard planner are proven against it; nothing here communicates.

Sharding convention (Paddle's and torch.chunk's): a dim of size n over a mesh dim of size m is
cut into chunks of ceil(n / m); the last chunks are shorter, or empty.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from .dist_attr import TensorDistAttr
from .placement import ReduceType

Coord = tuple[int, ...]


def chunk_bounds(n: int, parts: int, index: int) -> tuple[int, int]:
    """[start, stop) of chunk `index` of a dim of size n cut into `parts` chunks."""
    size = -(-n // parts) if parts else n
    start = min(index * size, n)
    return start, min(start + size, n)


def local_shape(shape: Sequence[int], attr: TensorDistAttr, mesh_shape: Sequence[int],
                coord: Coord) -> tuple[int, ...]:
    out = []
    for n, m in zip(shape, attr.dims_mapping, strict=True):
        if m == -1:
            out.append(n)
        else:
            a, b = chunk_bounds(n, mesh_shape[m], coord[m])
            out.append(b - a)
    return tuple(out)


def shard_index(shape: Sequence[int], attr: TensorDistAttr, mesh_shape: Sequence[int],
                coord: Coord) -> tuple[slice, ...]:
    """The slices of the global array rank `coord` holds (its partial value aside)."""
    idx = []
    for n, m in zip(shape, attr.dims_mapping, strict=True):
        if m == -1:
            idx.append(slice(None))
        else:
            a, b = chunk_bounds(n, mesh_shape[m], coord[m])
            idx.append(slice(a, b))
    return tuple(idx)


def coords(mesh_shape: Sequence[int]) -> list[Coord]:
    return [tuple(c) for c in itertools.product(*(range(n) for n in mesh_shape))]


_IDENTITY = {ReduceType.kRedSum: 0, ReduceType.kRedProd: 1, ReduceType.kRedAny: False,
             ReduceType.kRedAll: True}


def split(global_value: np.ndarray, attr: TensorDistAttr, mesh_shape: Sequence[int],
          rng: np.random.Generator | None = None) -> dict[Coord, np.ndarray]:
    """Every rank's local value. Partial mesh dims: with `rng`, a float64 array and only sum
    partials, random summands over the ranks of those dims; otherwise the value where the
    partial coordinates are 0 and the reduction's identity elsewhere (max, min, avg: the value
    everywhere). Reducing the last partial mesh dim first gives the value back."""
    g = np.asarray(global_value)
    pdims = list(attr.partial)
    summands: dict[Coord, np.ndarray] = {}
    if (pdims and rng is not None and g.dtype == np.float64
            and all(rt == ReduceType.kRedSum for rt in attr.partial.values())):
        keys = list(itertools.product(*(range(mesh_shape[p]) for p in pdims)))
        scale = 1.0 + np.nan_to_num(np.abs(g), posinf=0.0, neginf=0.0)
        noise = [rng.standard_normal(g.shape) * scale for _ in keys[1:]]
        summands = dict(zip(keys, [g - sum(noise, np.zeros(g.shape)), *noise], strict=True))
    out: dict[Coord, np.ndarray] = {}
    for c in coords(mesh_shape):
        v = g
        if summands:
            v = summands[tuple(c[p] for p in pdims)]
        else:
            for p in reversed(pdims):
                rt = attr.partial[p]
                if c[p] and rt in _IDENTITY:
                    v = np.full(g.shape, _IDENTITY[rt], dtype=g.dtype)
                    break
        out[c] = np.array(v[shard_index(g.shape, attr, mesh_shape, c)], dtype=g.dtype)
    return out


def _combine(rt: ReduceType, values: Sequence[np.ndarray]) -> np.ndarray:
    vals = [np.asarray(v) for v in values]
    dtype = vals[0].dtype
    if rt == ReduceType.kRedSum:
        acc = vals[0]
        for v in vals[1:]:
            acc = np.add(acc, v, dtype=dtype) if dtype != np.bool_ else np.logical_or(acc, v)
        return acc
    if rt == ReduceType.kRedAvg:
        s = sum((v.astype(np.float64) for v in vals), np.zeros(vals[0].shape))
        return (s / len(vals)).astype(dtype)
    fn = {ReduceType.kRedMax: np.maximum, ReduceType.kRedMin: np.minimum,
          ReduceType.kRedProd: np.multiply, ReduceType.kRedAny: np.logical_or,
          ReduceType.kRedAll: np.logical_and}[rt]
    acc = vals[0]
    for v in vals[1:]:
        acc = fn(acc, v)
    return np.asarray(acc).astype(dtype)


class ReplicaMismatch(AssertionError):
    """Ranks that should hold the same values (a Replicate mesh dim) do not."""


def assemble(locals_: Mapping[Coord, np.ndarray], attr: TensorDistAttr,
             mesh_shape: Sequence[int], global_shape: Sequence[int]) -> np.ndarray:
    """The global array from every rank's local value: Partial mesh dims reduced, shards put
    in place; replicas must agree (NaN equal to NaN), else ReplicaMismatch."""
    partial = dict(attr.partial)
    some = next(iter(locals_.values()))
    out = np.zeros(tuple(global_shape), dtype=some.dtype)
    filled: dict[tuple[tuple[int | None, int | None], ...], np.ndarray] = {}
    for c in coords(mesh_shape):
        if any(c[p] for p in partial):
            continue
        v = locals_[c]
        if partial:
            vals = []
            for k in itertools.product(*(range(mesh_shape[p]) for p in partial)):
                cc = list(c)
                for p, i in zip(partial, k, strict=True):
                    cc[p] = i
                vals.append(locals_[tuple(cc)])
            v = _reduce_many(partial, mesh_shape, vals)
        want = local_shape(global_shape, attr, mesh_shape, c)
        if v.shape != want:
            raise ReplicaMismatch(f"rank {c}: local shape {v.shape}, expected {want}")
        key = shard_index(global_shape, attr, mesh_shape, c)
        key_id = tuple((s.start, s.stop) for s in key)
        if key_id in filled:
            if not _same(filled[key_id], v):
                raise ReplicaMismatch(f"rank {c} disagrees with a replica of its shard {key_id}")
            continue
        filled[key_id] = v
        out[key] = v
    return out


def _reduce_many(partial: Mapping[int, ReduceType], mesh_shape: Sequence[int],
                 vals: list[np.ndarray]) -> np.ndarray:
    """Reduce values laid out over the product of several partial mesh dims (row-major), one
    mesh dim at a time (each with its own reduce type)."""
    dims = list(partial)
    arr = vals
    shape = [mesh_shape[p] for p in dims]
    for k in range(len(dims) - 1, -1, -1):
        n = shape[k]
        arr = [_combine(partial[dims[k]], arr[i * n:(i + 1) * n])
               for i in range(len(arr) // n)]
    return arr[0]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype.kind == "V":  # bfloat16 (ml_dtypes): compared as float64, NaN equal to NaN
        return bool(np.array_equal(a.astype(np.float64), b.astype(np.float64), equal_nan=True))
    return bool(np.array_equal(a, b))


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)
