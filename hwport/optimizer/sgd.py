"""SGD with Paddle's semantics: p = p - lr * g (g after grad_clip and L2 weight decay)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hwport.optimizer._buckets import Bucket
from hwport.optimizer.lr import LRScheduler
from hwport.optimizer.optimizer import Optimizer, StepScalars
from hwport.runtime import Tensor

__all__ = ["SGD"]


class SGD(Optimizer):
    """paddle.optimizer.SGD. multi_precision keeps float32 master weights for float16 and
    bfloat16 parameters (the parameter gets the rounded master after each step)."""

    def __init__(self, learning_rate: float | LRScheduler = 0.001,
                 parameters: Sequence[Any] | None = None, weight_decay: Any = None,
                 grad_clip: Any = None, multi_precision: bool = False,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._multi_precision = bool(multi_precision)

    def _host_scalars(self, b: Bucket, group: dict[str, Any], lr: float) -> dict[str, float]:
        return {"lr": lr}

    def _apply(self, b: Bucket, p: Tensor, g: Tensor, group: dict[str, Any],
               values: dict[str, float], scalars: StepScalars) -> Tensor:
        return p - g * scalars()["lr"]
