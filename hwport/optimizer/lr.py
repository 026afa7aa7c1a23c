"""Learning-rate schedulers with Paddle 3.x's semantics (paddle.optimizer.lr).

A scheduler is a Python-float state machine: construction calls step() once (last_epoch -1 ->
0), `scheduler()` is the current rate, `scheduler.step()` advances one epoch and
`scheduler.step(epoch)` jumps there (through the closed form where the scheduler has one, as
Paddle does). Passing a scheduler as an optimizer's `learning_rate` makes the optimizer read
`scheduler()` at every step; the optimizer never steps it (the user does)."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "CosineAnnealingDecay", "ExponentialDecay", "LRScheduler", "LambdaDecay", "LinearWarmup",
    "MultiStepDecay", "StepDecay",
]


def _number(value: Any, api: str, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{api}: {arg} must be a float or int, got {type(value).__name__}")
    return float(value)


def _positive_int(value: Any, api: str, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{api}: {arg} must be an int, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{api}: {arg} must be a positive integer, got {value}")
    return value


class LRScheduler:
    """Base class: subclasses define get_lr() over self.base_lr, self.last_epoch (and
    self.last_lr for recursive forms); optionally _get_closed_form_lr() for step(epoch)."""

    def __init__(self, learning_rate: float = 0.1, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        name = type(self).__name__
        lr = _number(learning_rate, name, "learning_rate")
        if lr < 0:
            raise ValueError(f"{name}: learning_rate must be >= 0, got {lr}")
        if isinstance(last_epoch, bool) or not isinstance(last_epoch, int):
            raise TypeError(f"{name}: last_epoch must be an int, got {type(last_epoch).__name__}")
        self.base_lr = lr
        self.last_lr = lr
        self.last_epoch = last_epoch
        self.verbose = bool(verbose)
        self.step()

    def __call__(self) -> float:
        """The current learning rate."""
        return self.last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advances one epoch, or jumps to `epoch` (closed form where there is one)."""
        if epoch is None:
            self.last_epoch += 1
            self.last_lr = self.get_lr()
        else:
            if isinstance(epoch, bool) or not isinstance(epoch, int):
                raise TypeError(f"{type(self).__name__}.step: epoch must be an int or None, "
                                f"got {type(epoch).__name__}")
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            self.last_lr = closed() if closed is not None else self.get_lr()
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to "
                  f"{self.last_lr}.")

    def get_lr(self) -> float:
        raise NotImplementedError(f"{type(self).__name__}.get_lr: subclasses of LRScheduler "
                                  "must define get_lr()")

    def state_keys(self) -> None:
        """Names of the attributes state_dict() saves (Paddle: last_epoch, last_lr)."""
        self.keys = ["last_epoch", "last_lr"]

    def state_dict(self) -> dict[str, Any]:
        self.state_keys()
        return {k: self.__dict__[k] for k in self.keys if k in self.__dict__}

    def set_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.state_keys()
        for key in self.keys:
            if key not in state_dict:
                raise RuntimeError(f"{type(self).__name__}.set_state_dict: state_dict has no "
                                   f"'{key}'")
            self.__dict__[key] = state_dict[key]
        if len(state_dict) > len(self.keys) + ("LinearWarmup_LR" in state_dict):
            warnings.warn(f"{type(self).__name__}.set_state_dict: state_dict has unused keys",
                          stacklevel=2)

    set_dict = set_state_dict


class LinearWarmup(LRScheduler):
    """start_lr -> end_lr linearly over warmup_steps epochs, then `learning_rate` (a float, or
    a scheduler stepped to epoch last_epoch - warmup_steps)."""

    def __init__(self, learning_rate: float | LRScheduler, warmup_steps: int, start_lr: float,
                 end_lr: float, last_epoch: int = -1, verbose: bool = False) -> None:
        if not isinstance(learning_rate, LRScheduler):
            _number(learning_rate, "LinearWarmup", "learning_rate")
        self.learning_rate = learning_rate
        self.warmup_steps = _positive_int(warmup_steps, "LinearWarmup", "warmup_steps")
        self.start_lr = _number(start_lr, "LinearWarmup", "start_lr")
        self.end_lr = _number(end_lr, "LinearWarmup", "end_lr")
        if not end_lr > start_lr:
            raise ValueError(f"LinearWarmup: end_lr ({end_lr}) must be greater than start_lr "
                             f"({start_lr})")
        super().__init__(start_lr, last_epoch, verbose)

    def get_lr(self) -> float:
        if self.last_epoch < self.warmup_steps:
            return ((self.end_lr - self.start_lr) * float(self.last_epoch)
                    / float(self.warmup_steps) + self.start_lr)
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return float(self.learning_rate)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            state["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().set_state_dict(state_dict)
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.set_state_dict(state_dict["LinearWarmup_LR"])


class CosineAnnealingDecay(LRScheduler):
    """Cosine annealing (SGDR without restarts), Paddle's recursive form; step(epoch) uses
    eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2."""

    def __init__(self, learning_rate: float, T_max: int, eta_min: float = 0,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        self.T_max = _positive_int(T_max, "CosineAnnealingDecay", "T_max")
        self.eta_min = _number(eta_min, "CosineAnnealingDecay", "eta_min")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        if self.last_epoch == 0:
            return self.base_lr
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return (self.last_lr + (self.base_lr - self.eta_min)
                    * (1 - math.cos(math.pi / self.T_max)) / 2)
        return ((1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (self.last_lr - self.eta_min) + self.eta_min)

    def _get_closed_form_lr(self) -> float:
        return (self.eta_min + (self.base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2)


class StepDecay(LRScheduler):
    """base_lr * gamma ** (last_epoch // step_size)."""

    def __init__(self, learning_rate: float, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        self.step_size = _positive_int(step_size, "StepDecay", "step_size")
        self.gamma = _number(gamma, "StepDecay", "gamma")
        if self.gamma >= 1.0:
            raise ValueError(f"StepDecay: gamma must be < 1.0, got {gamma}")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * (self.gamma ** (self.last_epoch // self.step_size))


class MultiStepDecay(LRScheduler):
    """base_lr * gamma ** (number of milestones <= last_epoch)."""

    def __init__(self, learning_rate: float, milestones: Sequence[int], gamma: float = 0.1,
                 last_epoch: int = -1, verbose: bool = False) -> None:
        if not isinstance(milestones, (tuple, list)):
            raise TypeError("MultiStepDecay: milestones must be a list or tuple, got "
                            f"{type(milestones).__name__}")
        if any(a >= b for a, b in itertools.pairwise(milestones)):
            raise ValueError(f"MultiStepDecay: milestones must be increasing, got {milestones}")
        self.milestones = milestones
        self.gamma = _number(gamma, "MultiStepDecay", "gamma")
        if self.gamma >= 1.0:
            raise ValueError(f"MultiStepDecay: gamma must be < 1.0, got {gamma}")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        for i, m in enumerate(self.milestones):
            if self.last_epoch < m:
                return self.base_lr * (self.gamma ** i)
        return self.base_lr * (self.gamma ** len(self.milestones))


class ExponentialDecay(LRScheduler):
    """base_lr * gamma ** last_epoch."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1,
                 verbose: bool = False) -> None:
        self.gamma = _number(gamma, "ExponentialDecay", "gamma")
        if not 0.0 < self.gamma < 1.0:
            raise ValueError(f"ExponentialDecay: gamma must be in (0.0, 1.0), got {gamma}")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * (self.gamma ** self.last_epoch)


class LambdaDecay(LRScheduler):
    """base_lr * lr_lambda(last_epoch)."""

    def __init__(self, learning_rate: float, lr_lambda: Callable[[int], float],
                 last_epoch: int = -1, verbose: bool = False) -> None:
        if not callable(lr_lambda):
            raise TypeError("LambdaDecay: lr_lambda must be a function of the epoch, got "
                            f"{type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.lr_lambda(self.last_epoch)
