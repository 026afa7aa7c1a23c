"""Tensor indexing with ints, slices, None and Ellipsis: always a view of the same storage."""

from __future__ import annotations

from typing import Any

import numpy as np

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
    shape, strides, offset, dim = [], [], t._offset, 0
    for k in items:
        if k is None:
            shape.append(1)
            strides.append(0)
            continue
        size, stride = t.shape[dim], t.strides[dim]
        if isinstance(k, slice):
            if k.step is not None and k.step == 0:
                raise ValueError(f"Tensor index: slice step must not be 0 (dimension {dim})")
            start, stop, step = k.indices(size)
            n = len(range(start, stop, step))
            if abs(step) > max(size, 1):  # one element at most: keep the stride small
                step = max(size, 1) * (1 if step > 0 else -1)
            if n:
                offset += start * stride
            shape.append(n)
            strides.append(stride * step)
        elif isinstance(k, (bool, np.bool_)):
            raise TypeError(f"Tensor index: a bool ({k!r}) is not an index; use ints, slices, "
                            "None or Ellipsis")
        elif isinstance(k, int) or hasattr(k, "__index__"):
            i = k.__index__()
            if not -size <= i < size:
                raise IndexError(f"Tensor index: index {i} is out of bounds for dimension "
                                 f"{dim} of size {size}")
            offset += (i % size) * stride
        else:
            raise TypeError(f"Tensor index: unsupported index type {type(k).__name__}; "
                            "use ints, slices, None or Ellipsis (or hwport.gather for tensors)")
        dim += 1
    return t._view(shape, strides, offset)
