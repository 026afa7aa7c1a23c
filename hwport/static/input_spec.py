"""hwport.static.InputSpec: the shape, dtype and name of a program input (Paddle's), for
jit.to_static and jit.save. A dim of None or -1 is symbolic: one captured program serves
every size of it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def _dims(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = [shape]
    if not isinstance(shape, Sequence) or isinstance(shape, str):
        raise TypeError(f"InputSpec: shape must be a list or tuple of ints (None or -1 for a "
                        f"symbolic dim), got {shape!r}")
    dims = []
    for d in shape:
        if d is None:
            dims.append(-1)
        elif isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= -1:
            dims.append(int(d))
        else:
            raise ValueError(f"InputSpec: shape dims must be ints >= 0, or None / -1 for a "
                             f"symbolic dim; got {d!r} in {list(shape)!r}")
    return tuple(dims)


class InputSpec:
    """InputSpec(shape, dtype='float32', name=None, stop_gradient=False)."""

    def __init__(self, shape: Sequence[int | None], dtype: Any = "float32",
                 name: str | None = None, stop_gradient: bool = False) -> None:
        from hwport.runtime import _core

        self.shape = _dims(shape)
        self.dtype = _core.parse_dtype(dtype)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"InputSpec: name must be a str or None, got {name!r}")
        self.name = name
        self.stop_gradient = bool(stop_gradient)

    @classmethod
    def from_tensor(cls, tensor: Any, name: str | None = None) -> InputSpec:
        return cls(list(tensor.shape), tensor.dtype, name, tensor.stop_gradient)

    @classmethod
    def from_numpy(cls, ndarray: np.ndarray, name: str | None = None) -> InputSpec:
        return cls(list(ndarray.shape), str(ndarray.dtype), name)

    def batch(self, batch_size: int | Sequence[int]) -> InputSpec:
        """A leading batch dim (Paddle's InputSpec.batch)."""
        if isinstance(batch_size, Sequence):
            if len(batch_size) != 1:
                raise ValueError(f"InputSpec.batch: expected one batch size, got {batch_size!r}")
            batch_size = batch_size[0]
        self.shape = _dims([batch_size, *self.shape])
        return self

    def unbatch(self) -> InputSpec:
        if not self.shape:
            raise ValueError("InputSpec.unbatch: the spec has no dims")
        self.shape = self.shape[1:]
        return self

    def symbolic_dims(self) -> list[int]:
        """The positions of the symbolic (None / -1) dims."""
        return [i for i, d in enumerate(self.shape) if d == -1]

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, InputSpec) and self.shape == other.shape
                and self.dtype == other.dtype and self.name == other.name
                and self.stop_gradient == other.stop_gradient)

    def __hash__(self) -> int:
        return hash((self.shape, str(self.dtype), self.name, self.stop_gradient))

    def __repr__(self) -> str:
        return (f"InputSpec(shape={self.shape}, dtype={self.dtype!r}, name={self.name}, "
                f"stop_gradient={self.stop_gradient})")
