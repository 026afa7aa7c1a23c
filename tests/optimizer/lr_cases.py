"""The learning-rate scheduler cases of tests/optimizer, over either library's `lr` module
(hwport.optimizer.lr in the tests, paddle.optimizer.lr in paddle_golden.py, which records
Paddle's sequences for them)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any


def scheduler_makers(lr: ModuleType) -> dict[str, Callable[[], Any]]:
    return {
        "linear_warmup": lambda: lr.LinearWarmup(0.5, warmup_steps=4, start_lr=0.0, end_lr=0.5),
        "linear_warmup_cosine": lambda: lr.LinearWarmup(
            lr.CosineAnnealingDecay(0.1, T_max=5, eta_min=0.01), warmup_steps=3, start_lr=0.01,
            end_lr=0.1),
        "linear_warmup_step": lambda: lr.LinearWarmup(lr.StepDecay(0.1, 3), 2, 0.0, 0.1),
        "cosine": lambda: lr.CosineAnnealingDecay(0.1, T_max=4, eta_min=0.001),
        "cosine_start5": lambda: lr.CosineAnnealingDecay(0.1, T_max=3, last_epoch=5),
        "step": lambda: lr.StepDecay(1.0, step_size=3, gamma=0.5),
        "multistep": lambda: lr.MultiStepDecay(1.0, milestones=[2, 5, 6], gamma=0.3),
        "exponential": lambda: lr.ExponentialDecay(2.0, gamma=0.7),
        "lambda": lambda: lr.LambdaDecay(0.3, lambda e: 0.9 ** e + 0.1 * (e % 2)),
    }
