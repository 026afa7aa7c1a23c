"""The tests' parameters (hwport.nn.Parameter, with autograd's stop_gradient, grad and
in-place set_value) and the data recorded from Paddle."""

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
    """A trainable hwport.nn.Parameter holding `array` (stop_gradient, grad, in-place
    set_value, clear_gradient, name, optimize_attr, need_clip)."""
    t = hwport.to_tensor(np.asarray(array), dtype=dtype, place=place)
    p = hwport.nn.Parameter(t, name=name)
    p.stop_gradient = stop_gradient
    return p


def set_grad(p: Any, array: Any) -> None:
    """Gives `p` the gradient `array` (in p's dtype, on p's place)."""
    p.grad = hwport.to_tensor(np.asarray(array), dtype=p.dtype, place=p.place)
