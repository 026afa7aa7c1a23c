"""Adam with Paddle's formula (its CPU adam kernel), at step t (beta pows = beta ** t):

    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    v_hat = max(v_max, v)  (amsgrad; kept as moment2_max), else v
    lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow)
    p = p - lr_t * (m / (sqrt(v_hat) + epsilon * sqrt(1 - beta2_pow)))

Mathematically torch.optim.Adam's (epsilon added to sqrt(v) / sqrt(1 - beta2_pow) there);
rounding differs by an ulp or so. weight_decay is L2 (added to g), as in torch's Adam."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hwport import ops
from hwport.optimizer import _fused
from hwport.optimizer._buckets import Bucket
from hwport.optimizer.lr import LRScheduler
from hwport.optimizer.momentum import _float
from hwport.optimizer.optimizer import Optimizer, StepScalars
from hwport.runtime import DType, Tensor, _core

__all__ = ["Adam"]


class Adam(Optimizer):
    """paddle.optimizer.Adam. lazy_mode only concerns sparse gradients (hwport has none):
    accepted, no effect; use_multi_tensor is accepted (buckets always batch)."""

    _pow_accumulators = ("beta1_pow_acc", "beta2_pow_acc")

    def __init__(self, learning_rate: float | LRScheduler = 0.001, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-08,
                 parameters: Sequence[Any] | None = None, weight_decay: Any = None,
                 grad_clip: Any = None, lazy_mode: bool = False, multi_precision: bool = False,
                 use_multi_tensor: bool = False, amsgrad: bool = False,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, parameters, weight_decay, grad_clip, name)
        self._init_adam(beta1, beta2, epsilon, lazy_mode, multi_precision, amsgrad)

    def _init_adam(self, beta1: Any, beta2: Any, epsilon: Any, lazy_mode: bool,
                   multi_precision: bool, amsgrad: bool) -> None:
        api = self._api
        b1, b2 = _float(beta1, api, "beta1"), _float(beta2, api, "beta2")
        eps = _float(epsilon, api, "epsilon")
        if not 0 <= b1 < 1:
            raise ValueError(f"{api}: beta1 must be in [0, 1), got {b1}")
        if not 0 <= b2 < 1:
            raise ValueError(f"{api}: beta2 must be in [0, 1), got {b2}")
        if eps < 0:
            raise ValueError(f"{api}: epsilon must be >= 0, got {eps}")
        self._multi_precision = bool(multi_precision)
        self._amsgrad = bool(amsgrad)
        self._accumulators = ("moment1", "moment2", "moment2_max") if amsgrad \
            else ("moment1", "moment2")
        self._defaults.update(beta1=b1, beta2=b2, epsilon=eps, lazy_mode=bool(lazy_mode))

    def _betas(self, group: dict[str, Any]) -> tuple[float, float, float]:
        api = self._api
        return (_float(self._option(group, "beta1"), api, "beta1"),
                _float(self._option(group, "beta2"), api, "beta2"),
                _float(self._option(group, "epsilon"), api, "epsilon"))

    def _pow_init(self, group: dict[str, Any]) -> dict[str, float]:
        b1, b2, _ = self._betas(group)
        return {"beta1_pow_acc": b1, "beta2_pow_acc": b2}

    def _host_scalars(self, b: Bucket, group: dict[str, Any], lr: float,
                      decay: float = 1.0) -> dict[str, float]:
        """This step's scalars (decay: AdamW's decoupled p *= decay first); advances the
        bucket's beta pows."""
        b1, b2, eps = self._betas(group)
        b1p, b2p = b.pows["beta1_pow_acc"], b.pows["beta2_pow_acc"]
        if b.compute != DType.float64:  # Paddle's pow accumulators are float32 tensors here
            b1p, b2p = float(np.float32(b1p)), float(np.float32(b2p))
        c2 = math.sqrt(1.0 - b2p)
        b.pows["beta1_pow_acc"], b.pows["beta2_pow_acc"] = b1p * b1, b2p * b2
        if b.compute != DType.float64:
            b.pows["beta1_pow_acc"] = float(np.float32(b1p) * np.float32(b1))
            b.pows["beta2_pow_acc"] = float(np.float32(b2p) * np.float32(b2))
        return {"beta1": b1, "one_minus_beta1": 1.0 - b1, "beta2": b2,
                "one_minus_beta2": 1.0 - b2, "epsilon": eps * c2,
                "lr": lr * c2 / (1.0 - b1p), "decay": decay}

    def _apply(self, b: Bucket, p: Tensor, g: Tensor, group: dict[str, Any],
               values: dict[str, float], scalars: StepScalars) -> Tensor:
        """The Adam step of `p` (times `decay` first: AdamW's decoupled decay), in
        adam_update's order of operations (ops.yaml)."""
        m0, v0 = self._load(b, "moment1"), self._load(b, "moment2")
        keys = ("beta1", "beta2", "epsilon", "lr", "decay")
        attrs = {k: values[k] for k in keys}
        if not self._amsgrad and scalars.recorder is None:
            # one fused launch where the plugin has adam_update's kernel (in place into the
            # bucket's tensors), else the functional op (which decomposes without a kernel)
            if _fused.in_place("adam_update", (p, g, m0, v0), (p, m0, v0), attrs):
                m, v, out = m0, v0, p
            else:
                out, m, v = ops.adam_update(p, g, m0, v0, **attrs)
            self._save(b, "moment1", m)
            self._save(b, "moment2", v)
            return out
        if not self._amsgrad and _core.has_kernel("adam_update", p.place, p.dtype) and \
                p.dtype == g.dtype == m0.dtype == v0.dtype:
            # inside a capture, the fused kernel whose attributes the program patches before
            # each run with the replayed step's scalars
            out, m, v = ops.adam_update(p, g, m0, v0, **attrs)
            scalars.as_attrs_of_last_call(keys)
            self._save(b, "moment1", m)
            self._save(b, "moment2", v)
            return out
        # inside a capture (the scalars change every step: tensors read at run time), and
        # amsgrad: adam_update's operations on 0-d scalars
        s = scalars()
        if values["decay"] != 1.0 or scalars.recorder is not None:
            p = p * s["decay"]
        m = m0 * s["beta1"] + g * s["one_minus_beta1"]
        v = v0 * s["beta2"] + (g * g) * s["one_minus_beta2"]
        self._save(b, "moment1", m)
        self._save(b, "moment2", v)
        if self._amsgrad:
            v = ops.maximum(self._load(b, "moment2_max"), v)
            self._save(b, "moment2_max", v)
        return p - (m / (ops.sqrt(v) + s["epsilon"])) * s["lr"]
