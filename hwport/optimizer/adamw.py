"""AdamW with Paddle's formula (its adamw kernel): with lr' = lr * lr_ratio(param),

    p = p * (1 - lr' * coeff)      (decoupled decay, before the Adam step; skipped where
                                    apply_decay_param_fun(param.name) is False)
    then Adam (hwport/optimizer/adam.py) with lr'.

The same as torch.optim.AdamW for lr_ratio 1 (rounding aside, see adam.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hwport.optimizer._buckets import Bucket
from hwport.optimizer.adam import Adam
from hwport.optimizer.lr import LRScheduler
from hwport.optimizer.momentum import _attr32, _float
from hwport.optimizer.optimizer import Optimizer

__all__ = ["AdamW"]


class AdamW(Adam):
    """paddle.optimizer.AdamW. weight_decay is the decoupled coefficient (a float, int or
    1-element Tensor; also per group). lr_ratio(param) -> float scales the learning rate per
    parameter (read when the parameter first joins a bucket); use_lowprecision_moment keeps
    float16/bfloat16 moments under multi_precision."""

    _l2_mode = "param_only"  # weight_decay is decoupled; a ParamAttr regularizer is L2

    def __init__(self, learning_rate: float | LRScheduler = 0.001, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-08,
                 parameters: Sequence[Any] | None = None, weight_decay: Any = 0.01,
                 use_lowprecision_moment: bool = False,
                 lr_ratio: Callable[[Any], float] | None = None,
                 apply_decay_param_fun: Callable[[str], bool] | None = None,
                 grad_clip: Any = None, lazy_mode: bool = False, multi_precision: bool = False,
                 amsgrad: bool = False, name: str | None = None) -> None:
        coeff = _float(weight_decay, "AdamW", "weight_decay")
        for fn, arg in ((lr_ratio, "lr_ratio"), (apply_decay_param_fun, "apply_decay_param_fun")):
            if fn is not None and not callable(fn):
                raise TypeError(f"AdamW: {arg} must be callable or None, got "
                                f"{type(fn).__name__}")
        Optimizer.__init__(self, learning_rate, parameters, None, grad_clip, name)
        self._init_adam(beta1, beta2, epsilon, lazy_mode, multi_precision, amsgrad)
        self._defaults["weight_decay"] = coeff
        self._lr_ratio = lr_ratio
        self._apply_decay_param_fun = apply_decay_param_fun
        self._lowprec_moment = bool(use_lowprecision_moment)

    def _bucket_extra(self, group: dict[str, Any], p: Any) -> tuple[Any, ...]:
        decay = True
        if self._apply_decay_param_fun is not None:
            decay = bool(self._apply_decay_param_fun(self._names[id(p)]))
        ratio = 1.0 if self._lr_ratio is None else float(self._lr_ratio(p))
        return (decay, ratio)

    def _host_scalars(self, b: Bucket, group: dict[str, Any], lr: float,
                      decay: float = 1.0) -> dict[str, float]:
        decays, ratio = b.key[5]
        lr = lr * ratio
        coeff = _attr32(_float(self._option(group, "weight_decay"), "AdamW", "weight_decay"))
        keep = 1.0 - lr * coeff if decays and coeff else 1.0
        return super()._host_scalars(b, group, lr, keep)
