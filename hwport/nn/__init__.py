"""hwport.nn: neural-network building blocks, Paddle's API: Layer, the usual layers,
initializers, losses, and the functional forms."""

from __future__ import annotations

from hwport.nn import functional, initializer, layers
from hwport.nn.layer import Layer
from hwport.nn.layers import *  # noqa: F403  (every layer: hwport.nn.layers.__all__)
from hwport.nn.loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss
from hwport.nn.parameter import ParamAttr, Parameter

# isort: split
# ---- gradient clipping (hwport/nn/clip.py; optimizers' grad_clip=) ----
from hwport.nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue

__all__ = [
    *layers.__all__,
    "BCEWithLogitsLoss",
    "ClipGradByGlobalNorm",
    "ClipGradByNorm",
    "ClipGradByValue",
    "CrossEntropyLoss",
    "L1Loss",
    "Layer",
    "MSELoss",
    "ParamAttr",
    "Parameter",
    "functional",
    "initializer",
]
