"""Momentum with Paddle's formula (its momentum kernel):

    g = g * rescale_grad + coeff * p          (coeff: the L2 weight_decay, inside the update)
    velocity = velocity * momentum + g
    p = p - (g + velocity * momentum) * lr    (use_nesterov)
    p = p - lr * velocity                     (otherwise)

The same as torch.optim.SGD(momentum, nesterov, weight_decay, dampening=0) when rescale_grad
is 1 (torch's first buffer is g; Paddle's velocity starts at 0, so also g)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hwport.optimizer._buckets import Bucket
from hwport.optimizer.lr import LRScheduler
from hwport.optimizer.optimizer import Optimizer, StepScalars, _coeff
from hwport.runtime import Tensor

__all__ = ["Momentum"]


def _attr32(value: float) -> float:
    """Paddle passes this hyperparameter to its kernel as a float32 attribute: the value the
    update uses (visible only in float64 updates)."""
    return float(np.float32(value))


def _float(value: Any, api: str, arg: str) -> float:
    if isinstance(value, Tensor):
        return float(value.item())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{api}: {arg} must be a float, got {type(value).__name__}")
    return float(value)


class Momentum(Optimizer):
    """paddle.optimizer.Momentum (use_multi_tensor is accepted: buckets always batch)."""

    _accumulators = ("velocity",)
    _l2_mode = "kernel"  # Paddle's momentum kernel applies the L2 decay itself

    def __init__(self, learning_rate: float | LRScheduler = 0.001, momentum: float = 0.9,
                 parameters: Sequence[Any] | None = None, use_nesterov: bool = False,
                 weight_decay: Any = None, grad_clip: Any = None,
                 multi_precision: bool = False, rescale_grad: float = 1.0,
                 use_multi_tensor: bool = False, name: str | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._multi_precision = bool(multi_precision)
        self._defaults.update(momentum=_float(momentum, "Momentum", "momentum"),
                              use_nesterov=bool(use_nesterov),
                              rescale_grad=_float(rescale_grad, "Momentum", "rescale_grad"))

    def _host_scalars(self, b: Bucket, group: dict[str, Any], lr: float) -> dict[str, float]:
        mu = _float(self._option(group, "momentum"), "Momentum", "momentum")
        rescale = _float(self._option(group, "rescale_grad"), "Momentum", "rescale_grad")
        coeff = b.reg if b.reg is not None else (
            _coeff(self._option(group, "weight_decay"), "Momentum") or 0.0)
        return {"mu": _attr32(mu), "lr": lr, "rescale": _attr32(rescale),
                "coeff": _attr32(coeff)}

    def _apply(self, b: Bucket, p: Tensor, g: Tensor, group: dict[str, Any],
               values: dict[str, float], scalars: StepScalars) -> Tensor:
        s = scalars()
        s_mu, s_lr = s["mu"], s["lr"]
        if values["rescale"] != 1.0:
            g = g * s["rescale"]
        if values["coeff"]:
            g = g + p * s["coeff"]
        v = self._load(b, "velocity") * s_mu + g
        self._save(b, "velocity", v)
        if self._option(group, "use_nesterov"):
            return p - (g + v * s_mu) * s_lr
        return p - v * s_lr
