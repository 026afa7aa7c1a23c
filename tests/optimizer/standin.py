"""The tests' parameters and recorded data: real hwport tensors with autograd's interface
(stop_gradient, grad, in-place set_value, clear_gradient), named as Paddle names parameters
(a Tensor subclass until hwport.nn.Parameter is in main), and the Paddle data files."""

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


class NamedTensor(hwport.Tensor):
    """A tensor that carries a Paddle parameter name (what nn.Parameter will give)."""

    name: str


def make_param(array: Any, name: str | None = None, dtype: Any = None,
               stop_gradient: bool = False, place: Any = None) -> Any:
    """A trainable leaf tensor holding `array`: real autograd tensors (stop_gradient, grad,
    set_value in place, clear_gradient), named when `name` is given."""
    t = NamedTensor(hwport.to_tensor(np.asarray(array), dtype=dtype, place=place))
    if name is not None:
        t.name = name
    t.stop_gradient = stop_gradient
    return t


def set_grad(p: Any, array: Any) -> None:
    """Gives `p` the gradient `array` (in p's dtype, on p's place)."""
    p.grad = hwport.to_tensor(np.asarray(array), dtype=p.dtype, place=p.place)
