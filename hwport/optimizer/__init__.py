"""hwport.optimizer: Paddle's optimizers (SGD, Momentum, Adam, AdamW) and lr schedulers.

Updates run as a decomposition into the op library's elementwise ops over flat buckets of
parameters (optimizer/_buckets.py), so every plugin runs them in a few launches per step."""

from __future__ import annotations

from hwport.optimizer import lr
from hwport.optimizer.adam import Adam
from hwport.optimizer.adamw import AdamW
from hwport.optimizer.momentum import Momentum
from hwport.optimizer.optimizer import Optimizer
from hwport.optimizer.sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Momentum", "Optimizer", "lr"]
