"""Shared pieces of the nn tests: the reference network (whose names and shapes Paddle 3.3.1
gave) and the OpenCL device check."""

from __future__ import annotations

import hwport
import hwport.nn as nn


def opencl_place() -> str | None:
    """'custom:opencl:0' when the OpenCL plugin has a device (PoCL here), else None."""
    for p in hwport.runtime.plugins():
        if p["device_type"] == "opencl" and p["device_count"] > 0:
            return "custom:opencl:0"
    return None


class Block(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.ln = nn.LayerNorm(8)
        self.emb = nn.Embedding(10, 8)
        self.drop = nn.Dropout(0.1)
        self.register_buffer("mask", hwport.ones([2, 2]))
        self.register_buffer("tmp", hwport.ones([3]), persistable=False)


class Net(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.LayerList([Block(), Block()])
        self.head = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2, bias_attr=False))
        self.d = nn.LayerDict({"a": nn.Linear(2, 2)})
        self.mha = nn.MultiHeadAttention(8, 2)
        self.w = self.create_parameter([3, 3])
        self.b = self.create_parameter([3], is_bias=True)


# What Paddle 3.3.1 (paddle.nn, same class definitions) reported for Net: named_parameters,
# state_dict keys, named_sublayers, named_buffers.
PADDLE_PARAMS = [
    ("w", [3, 3]), ("b", [3]),
    ("blocks.0.qkv.weight", [8, 24]), ("blocks.0.qkv.bias", [24]),
    ("blocks.0.ln.weight", [8]), ("blocks.0.ln.bias", [8]), ("blocks.0.emb.weight", [10, 8]),
    ("blocks.1.qkv.weight", [8, 24]), ("blocks.1.qkv.bias", [24]),
    ("blocks.1.ln.weight", [8]), ("blocks.1.ln.bias", [8]), ("blocks.1.emb.weight", [10, 8]),
    ("head.0.weight", [8, 4]), ("head.0.bias", [4]), ("head.2.weight", [4, 2]),
    ("d.a.weight", [2, 2]), ("d.a.bias", [2]),
    ("mha.q_proj.weight", [8, 8]), ("mha.q_proj.bias", [8]),
    ("mha.k_proj.weight", [8, 8]), ("mha.k_proj.bias", [8]),
    ("mha.v_proj.weight", [8, 8]), ("mha.v_proj.bias", [8]),
    ("mha.out_proj.weight", [8, 8]), ("mha.out_proj.bias", [8]),
]
PADDLE_STATE_KEYS = [
    "w", "b", "blocks.0.mask", "blocks.0.qkv.weight", "blocks.0.qkv.bias", "blocks.0.ln.weight",
    "blocks.0.ln.bias", "blocks.0.emb.weight", "blocks.1.mask", "blocks.1.qkv.weight",
    "blocks.1.qkv.bias", "blocks.1.ln.weight", "blocks.1.ln.bias", "blocks.1.emb.weight",
    "head.0.weight", "head.0.bias", "head.2.weight", "d.a.weight", "d.a.bias",
    "mha.q_proj.weight", "mha.q_proj.bias", "mha.k_proj.weight", "mha.k_proj.bias",
    "mha.v_proj.weight", "mha.v_proj.bias", "mha.out_proj.weight", "mha.out_proj.bias",
]
PADDLE_SUBLAYERS = [
    "blocks", "blocks.0", "blocks.0.qkv", "blocks.0.ln", "blocks.0.emb", "blocks.0.drop",
    "blocks.1", "blocks.1.qkv", "blocks.1.ln", "blocks.1.emb", "blocks.1.drop", "head",
    "head.0", "head.1", "head.2", "d", "d.a", "mha", "mha.q_proj", "mha.k_proj", "mha.v_proj",
    "mha.out_proj",
]
PADDLE_BUFFERS = ["blocks.0.mask", "blocks.0.tmp", "blocks.1.mask", "blocks.1.tmp"]
# nn.MultiHeadAttention(8, 2, kdim=4, vdim=6).named_parameters() in Paddle 3.3.1
PADDLE_MHA_KV = [
    ("q_proj.weight", [8, 8]), ("q_proj.bias", [8]), ("k_proj.weight", [4, 8]),
    ("k_proj.bias", [8]), ("v_proj.weight", [6, 8]), ("v_proj.bias", [8]),
    ("out_proj.weight", [8, 8]), ("out_proj.bias", [8]),
]
