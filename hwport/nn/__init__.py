"""hwport.nn: neural-network building blocks, Paddle's API: Layer, the usual layers,
initializers, losses, and the functional forms."""

from __future__ import annotations

from hwport.nn import functional, initializer
from hwport.nn.layer import Layer
from hwport.nn.layers import (
    GELU,
    Dropout,
    Embedding,
    Identity,
    LayerDict,
    LayerList,
    LayerNorm,
    Linear,
    MultiHeadAttention,
    ReLU,
    RMSNorm,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from hwport.nn.loss import BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss
from hwport.nn.parameter import ParamAttr, Parameter

# isort: split
# ---- gradient clipping (hwport/nn/clip.py; optimizers' grad_clip=) ----
from hwport.nn.clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue

__all__ = [
    "GELU",
    "BCEWithLogitsLoss",
    "ClipGradByGlobalNorm",
    "ClipGradByNorm",
    "ClipGradByValue",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Identity",
    "L1Loss",
    "Layer",
    "LayerDict",
    "LayerList",
    "LayerNorm",
    "Linear",
    "MSELoss",
    "MultiHeadAttention",
    "ParamAttr",
    "Parameter",
    "RMSNorm",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "functional",
    "initializer",
]
