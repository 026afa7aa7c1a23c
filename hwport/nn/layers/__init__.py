"""The layers of hwport.nn (re-exported there)."""

from __future__ import annotations

from hwport.nn.layers.common import (
    GELU,
    Dropout,
    Embedding,
    Identity,
    Linear,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
)
from hwport.nn.layers.container import LayerDict, LayerList, Sequential
from hwport.nn.layers.norm import LayerNorm, RMSNorm
from hwport.nn.layers.transformer import MultiHeadAttention

__all__ = [
    "GELU",
    "Dropout",
    "Embedding",
    "Identity",
    "LayerDict",
    "LayerList",
    "LayerNorm",
    "Linear",
    "MultiHeadAttention",
    "RMSNorm",
    "ReLU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Tanh",
]
