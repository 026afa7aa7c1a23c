"""Losses with Paddle's signatures: the functional forms (mse_loss, l1_loss,
binary_cross_entropy_with_logits, cross_entropy) and the layers (MSELoss, L1Loss,
BCEWithLogitsLoss, CrossEntropyLoss). All are compositions of ops of the op library, so they
run (and differentiate) on every device.

cross_entropy: hard labels without weight / label_smoothing / use_softmax=False run the
`cross_entropy` op on [-1, C] rows; the other cases compose log_softmax, take_along_axis and
sums. Supported: class axis last (axis=-1), labels shaped like input without the class axis
(optionally with a trailing 1, kept in the 'none' output), soft_label=True, weight (hard
labels), ignore_index (hard labels), label_smoothing (without weight), use_softmax=False.
Not supported (NotImplementedError): axis other than the last, weight with soft_label or with
label_smoothing.

The mean of hard labels is Paddle 3.x's (not torch's): with a negative ignore_index (the
default -100) and no weight it divides by every row, ignored ones included (their loss is 0);
with ignore_index >= 0 by the rows not ignored, with a weight by their summed weights; a zero
denominator counts as 1 (all rows ignored: 0, not NaN). label_smoothing follows the smoothed
one-hot formula (Paddle 3.3.1's smoothing path divides by N * C instead, and refuses ignored
labels)."""

from __future__ import annotations

import math
from typing import Any

from hwport.nn.layer import Layer
from hwport.phi_ops import functional as F
from hwport.runtime._core import Tensor

__all__ = [
    "BCEWithLogitsLoss", "CrossEntropyLoss", "L1Loss", "MSELoss",
    "binary_cross_entropy_with_logits", "cross_entropy", "l1_loss", "mse_loss",
]

_FLOAT = ("float16", "bfloat16", "float32", "float64")
_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(fn: str, reduction: Any) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{fn}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return reduction


def _check_tensor(fn: str, arg: str, t: Any, floating: bool = True) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}: {arg} must be a hwport.Tensor, got {type(t).__name__}")
    if floating and str(t.dtype) not in _FLOAT:
        raise TypeError(f"{fn}: {arg} must be a float tensor, got dtype {t.dtype}")
    return t


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return F.mean(loss)
    if reduction == "sum":
        return F.sum(loss)
    return loss


def mse_loss(input: Tensor, label: Tensor, reduction: str = "mean",
             name: str | None = None) -> Tensor:
    """(input - label)**2, reduced (mean | sum | none)."""
    _check_reduction("mse_loss", reduction)
    _check_tensor("mse_loss", "input", input)
    _check_tensor("mse_loss", "label", label)
    return _reduce(F.square(F.subtract(input, label)), reduction)


def l1_loss(input: Tensor, label: Tensor, reduction: str = "mean",
            name: str | None = None) -> Tensor:
    """|input - label|, reduced (mean | sum | none)."""
    _check_reduction("l1_loss", reduction)
    _check_tensor("l1_loss", "input", input)
    _check_tensor("l1_loss", "label", label)
    return _reduce(F.abs(F.subtract(input, label)), reduction)


def binary_cross_entropy_with_logits(logit: Tensor, label: Tensor, weight: Tensor | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None,
                                     name: str | None = None) -> Tensor:
    """-[pos_weight * label * log(sigmoid(logit)) + (1 - label) * log(1 - sigmoid(logit))]
    * weight, computed stably as (1 - label) * logit + (1 + (pos_weight - 1) * label)
    * (log1p(exp(-|logit|)) + max(-logit, 0))."""
    fn = "binary_cross_entropy_with_logits"
    _check_reduction(fn, reduction)
    _check_tensor(fn, "logit", logit)
    _check_tensor(fn, "label", label)
    if list(logit.shape) != list(label.shape):
        raise ValueError(f"{fn}: logit and label must have the same shape, got "
                         f"{list(logit.shape)} and {list(label.shape)}")
    softplus_neg = F.add(F.log1p(F.exp(F.neg(F.abs(logit)))), F.maximum(F.neg(logit), 0.0))
    if pos_weight is not None:
        _check_tensor(fn, "pos_weight", pos_weight)
        coef = F.add(F.multiply(F.subtract(pos_weight, 1.0), label), 1.0)
        softplus_neg = F.multiply(coef, softplus_neg)
    loss = F.add(F.multiply(F.subtract(1.0, label), logit), softplus_neg)
    if weight is not None:
        _check_tensor(fn, "weight", weight)
        loss = F.multiply(loss, weight)
    return _reduce(loss, reduction)


def cross_entropy(input: Tensor, label: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: str = "mean", soft_label: bool = False,
                  axis: int = -1, use_softmax: bool = True, label_smoothing: float = 0.0,
                  name: str | None = None) -> Tensor:
    """Softmax cross entropy over the last axis of input (see the module docstring for the
    supported cases)."""
    fn = "cross_entropy"
    _check_reduction(fn, reduction)
    _check_tensor(fn, "input", input)
    if not isinstance(label, Tensor):
        raise TypeError(f"{fn}: label must be a hwport.Tensor, got {type(label).__name__}")
    nd = input.ndim
    if nd == 0:
        raise ValueError(f"{fn}: input must have a class axis, got a 0-d tensor")
    if isinstance(axis, bool) or not isinstance(axis, int) or axis not in (-1, nd - 1):
        raise NotImplementedError(f"{fn}: axis must be the last axis (-1), got {axis!r}")
    smoothing = float(label_smoothing)
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"{fn}: label_smoothing must be in [0, 1], got {label_smoothing!r}")
    if weight is not None:
        _check_tensor(fn, "weight", weight)
        if soft_label or smoothing > 0:
            raise NotImplementedError(f"{fn}: weight with soft_label or label_smoothing is not "
                                      "supported")
    classes = input.shape[-1]
    if weight is not None and list(weight.shape) != [classes]:
        raise ValueError(f"{fn}: weight must have shape [{classes}] (one per class), got "
                         f"{list(weight.shape)}")
    # the row count spelled out: [-1, 0] cannot be resolved for an input without classes
    rows = F.reshape(input, [math.prod(input.shape[:-1]), classes])
    if soft_label:
        return _soft(fn, rows, input, label, reduction, use_softmax, smoothing)
    if str(label.dtype) not in ("int8", "uint8", "int16", "int32", "int64"):
        raise TypeError(f"{fn}: label must be an integer tensor for hard labels, got dtype "
                        f"{label.dtype} (soft labels need soft_label=True)")
    batch = list(input.shape[:-1])
    out_shape = list(label.shape)
    if list(label.shape) == batch + [1]:
        pass
    elif list(label.shape) != batch:
        raise ValueError(f"{fn}: label must have shape {batch} or {batch + [1]} for input of "
                         f"shape {list(input.shape)}, got {list(label.shape)}")
    flat = F.reshape(label, [-1])
    if weight is None and smoothing == 0 and use_softmax:
        if reduction != "mean":
            loss = F.cross_entropy(rows, flat, ignore_index=ignore_index, reduction=reduction)
            return F.reshape(loss, out_shape) if reduction == "none" else loss
        total = F.cross_entropy(rows, flat, ignore_index=ignore_index, reduction="sum")
        if ignore_index < 0:
            return _paddle_mean(total, rows.shape[0])
        return _paddle_mean(total, F.sum(F.cast(F.not_equal(flat, ignore_index),
                                                dtype=total.dtype)))
    logp = F.log_softmax(rows, axis=-1) if use_softmax else F.log(rows)
    valid = F.not_equal(flat, ignore_index)
    safe = F.where(valid, flat, F.zeros_like(flat))
    picked = F.squeeze(F.take_along_axis(logp, F.unsqueeze(safe, axis=[-1]), axis=-1), [-1])
    loss = F.neg(picked)
    if smoothing > 0:
        uniform = F.neg(F.mean(logp, axis=[-1]))
        loss = F.add(F.multiply(loss, 1.0 - smoothing), F.multiply(uniform, smoothing))
    zero = F.zeros_like(loss)
    if weight is not None:
        w = F.gather(F.cast(weight, dtype=loss.dtype), safe, axis=0)
        loss = F.multiply(loss, w)
        denom = F.sum(F.where(valid, w, zero))
    elif ignore_index < 0:
        denom = rows.shape[0]
    else:
        denom = F.sum(F.cast(valid, dtype=loss.dtype))
    loss = F.where(valid, loss, zero)
    if reduction == "none":
        return F.reshape(loss, out_shape)
    total = F.sum(loss)
    return total if reduction == "sum" else _paddle_mean(total, denom)


def _paddle_mean(total: Tensor, denom: Tensor | int) -> Tensor:
    """total / denom with Paddle's guard: a zero denominator counts as 1 (0 rows: NaN, as
    Paddle's mean of nothing)."""
    if isinstance(denom, int):
        return F.divide(total, float(denom))
    return F.divide(total, F.where(F.equal(denom, 0.0), 1.0, denom))


def _soft(fn: str, rows: Tensor, input: Tensor, label: Tensor, reduction: str,
          use_softmax: bool, smoothing: float) -> Tensor:
    _check_tensor(fn, "label", label)
    if list(label.shape) != list(input.shape):
        raise ValueError(f"{fn}: soft labels must have the input's shape {list(input.shape)}, "
                         f"got {list(label.shape)}")
    target = F.reshape(label, [-1, input.shape[-1]])
    if smoothing > 0:
        target = F.add(F.multiply(target, 1.0 - smoothing), smoothing / input.shape[-1])
    logp = F.log_softmax(rows, axis=-1) if use_softmax else F.log(rows)
    loss = F.neg(F.sum(F.multiply(target, logp), axis=[-1], keepdim=True))
    if reduction == "none":
        return F.reshape(loss, list(input.shape[:-1]) + [1])
    return _reduce(loss, reduction)


class _Loss(Layer):
    def extra_repr(self) -> str:
        return f"reduction={self.reduction}"


class MSELoss(_Loss):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _check_reduction("MSELoss", reduction)

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return mse_loss(input, label, self.reduction)


class L1Loss(_Loss):
    def __init__(self, reduction: str = "mean", name: str | None = None) -> None:
        super().__init__()
        self.reduction = _check_reduction("L1Loss", reduction)

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return l1_loss(input, label, self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None, name: str | None = None) -> None:
        super().__init__()
        self.reduction = _check_reduction("BCEWithLogitsLoss", reduction)
        self.weight = weight
        self.pos_weight = pos_weight

    def forward(self, logit: Tensor, label: Tensor) -> Tensor:
        return binary_cross_entropy_with_logits(logit, label, self.weight, self.reduction,
                                                self.pos_weight)


class CrossEntropyLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", soft_label: bool = False, axis: int = -1,
                 use_softmax: bool = True, label_smoothing: float = 0.0,
                 name: str | None = None) -> None:
        super().__init__()
        self.reduction = _check_reduction("CrossEntropyLoss", reduction)
        self.weight = weight
        self.ignore_index = ignore_index
        self.soft_label = soft_label
        self.axis = axis
        self.use_softmax = use_softmax
        self.label_smoothing = label_smoothing
        if not math.isfinite(float(label_smoothing)):
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be finite, got "
                             f"{label_smoothing!r}")

    def forward(self, input: Tensor, label: Tensor) -> Tensor:
        return cross_entropy(input, label, self.weight, self.ignore_index, self.reduction,
                             self.soft_label, self.axis, self.use_softmax,
                             self.label_smoothing)
