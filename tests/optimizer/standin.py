"""The tests' parameters. Until hwport.nn.Parameter and autograd are in main, a stand-in with
the interface the optimizers use (grad, stop_gradient, name, set_value, clear_gradient; the
rest of the Tensor API through its current value). set_value swaps the held tensor, so the
update math is checked on real hwport tensors with given gradients."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import hwport

DATA = Path(__file__).resolve().parent / "data"


def golden() -> dict[str, Any]:
    return json.loads((DATA / "paddle_golden.json").read_text())


def signatures() -> dict[str, Any]:
    return json.loads((DATA / "paddle_signatures.json").read_text())


def make_param(array: Any, name: str | None = None, dtype: Any = None,
               stop_gradient: bool = False, place: Any = None) -> Any:
    """A trainable parameter holding `array` (the stand-in until nn.Parameter lands)."""
    return Param(array, name=name, dtype=dtype, stop_gradient=stop_gradient, place=place)


def set_grad(p: Any, array: Any) -> None:
    """Gives `p` the gradient `array` (in p's dtype, on p's place)."""
    p.grad = hwport.to_tensor(np.asarray(array), dtype=p.dtype, place=p.place)


class Param:
    def __init__(self, array: Any, name: str | None = None, dtype: Any = None,
                 stop_gradient: bool = False, place: Any = None) -> None:
        self.value = hwport.to_tensor(np.asarray(array), dtype=dtype, place=place)
        self.grad: hwport.Tensor | None = None
        self.stop_gradient = stop_gradient
        self.writes = 0
        if name is not None:
            self.name = name

    def set_value(self, value: hwport.Tensor) -> None:
        assert list(value.shape) == list(self.value.shape), (value.shape, self.value.shape)
        assert value.dtype == self.value.dtype, (value.dtype, self.value.dtype)
        self.value = value
        self.writes += 1

    def clear_gradient(self, set_to_zero: bool = True) -> None:
        if self.grad is not None:
            self.grad = hwport.zeros(list(self.grad.shape), dtype=self.grad.dtype,
                                      place=self.grad.place) \
                if set_to_zero else None

    def numpy(self) -> np.ndarray:
        return self.value.numpy()

    def __getattr__(self, key: str) -> Any:
        if key == "value":
            raise AttributeError(key)
        return getattr(self.value, key)
