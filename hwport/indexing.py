"""Tensor indexing with ints, slices, None and Ellipsis: always a view of the same storage.

While a pipeline layer is active (the profiler; later autograd and tracing) the view is made by
op calls -- slice, then squeeze for the int-indexed dims and unsqueeze for the None ones -- so
the layers see indexing as they see every op."""

from __future__ import annotations

from typing import Any

import numpy as np

from hwport.runtime import _core
from hwport.runtime._core import Tensor


def getitem(t: Tensor, key: Any) -> Tensor:
    items = list(key) if isinstance(key, tuple) else [key]
    ellipses = sum(1 for k in items if k is Ellipsis)
    if ellipses > 1:
        raise IndexError("Tensor index: at most one Ellipsis (...) is allowed")
    consumed = sum(1 for k in items if k is not None and k is not Ellipsis)
    if consumed > t.ndim:
        raise IndexError(f"Tensor index: too many indices for a tensor of {t.ndim} dims "
                         f"({consumed} given)")
    if ellipses:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (t.ndim - consumed)
    else:
        items += [slice(None)] * (t.ndim - consumed)
    if _core.layers_active():
        return _by_ops(t, items)
    shape, strides, offset, dim = [], [], t._offset, 0
    new = []  # the output dims None made
    for k in items:
        if k is None:
            new.append(len(shape))
            shape.append(1)
            strides.append(0)
            continue
        size, stride = t.shape[dim], t.strides[dim]
        if isinstance(k, slice):
            start, stop, step = _slice_of(k, size, dim)
            n = len(range(start, stop, step))
            if abs(step) > max(size, 1):  # one element at most: keep the stride small
                step = max(size, 1) * (1 if step > 0 else -1)
            if n:
                offset += start * stride
            shape.append(n)
            strides.append(stride * step)
        else:
            offset += _int_of(k, size, dim) * stride
        dim += 1
    # a new dim's stride is unsqueeze's (as _by_ops has it): the next kept dim's stride times
    # its size, 1 after the last
    inner = 1
    for j in range(len(shape) - 1, -1, -1):
        if j in new:
            strides[j] = inner
        else:
            inner = strides[j] * shape[j]
    return t._view(shape, strides, offset)


def _slice_of(k: slice, size: int, dim: int) -> tuple[int, int, int]:
    if k.step is not None and k.step == 0:
        raise ValueError(f"Tensor index: slice step must not be 0 (dimension {dim})")
    return k.indices(size)


def _int_of(k: Any, size: int, dim: int) -> int:
    """An int index into a dim of `size`, in [0, size)."""
    if isinstance(k, (bool, np.bool_)):
        raise TypeError(f"Tensor index: a bool ({k!r}) is not an index; use ints, slices, "
                        "None or Ellipsis")
    if not (isinstance(k, int) or hasattr(k, "__index__")):
        raise TypeError(f"Tensor index: unsupported index type {type(k).__name__}; "
                        "use ints, slices, None or Ellipsis (or hwport.gather for tensors)")
    i = k.__index__()
    if not -size <= i < size:
        raise IndexError(f"Tensor index: index {i} is out of bounds for dimension "
                         f"{dim} of size {size}")
    return i % size


def _by_ops(t: Tensor, items: list[Any]) -> Tensor:
    """getitem's view as op calls (items: one per dim, None for a new one, Ellipsis expanded)."""
    from hwport.phi_ops import functional as F

    axes: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    steps: list[int] = []
    dropped: list[int] = []
    added: list[int] = []
    dim = out_dim = 0
    for k in items:
        if k is None:
            added.append(out_dim)
            out_dim += 1
            continue
        size = t.shape[dim]
        if isinstance(k, slice):
            start, stop, step = _slice_of(k, size, dim)
            if abs(step) > max(size, 1):  # one element at most: the direct view's small stride
                step = max(size, 1) * (1 if step > 0 else -1)
            if not len(range(start, stop, step)):  # empty: bounds the slice op reads as empty
                start = stop = 0
            if (start, stop, step) != (0, size, 1):
                if step < 0 and stop < 0:
                    stop = -size - 1  # through index 0: Python's slice end before the start
                axes.append(dim)
                starts.append(start)
                ends.append(stop)
                steps.append(step)
            out_dim += 1
        else:
            i = _int_of(k, size, dim)
            axes.append(dim)
            starts.append(i)
            ends.append(i + 1)
            steps.append(1)
            dropped.append(dim)
        dim += 1
    out = (F.slice(t, axes, starts, ends, steps) if axes
           else t._view(list(t.shape), list(t.strides), t._offset))
    if dropped:
        out = F.squeeze(out, dropped)
    if added:
        out = F.unsqueeze(out, added)
    return out
