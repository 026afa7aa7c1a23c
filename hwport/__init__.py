"""hwport: run deep-learning code unchanged on any plugged-in device (place="custom:<type>")."""

from __future__ import annotations

from typing import Any

from hwport import autograd, device, nn, ops, profiler, runtime

# ---- autograd (hwport/autograd.py) ----
from hwport.autograd import enable_grad, grad, is_grad_enabled, no_grad, set_grad_enabled
from hwport.ops import *  # noqa: F403  (every op of the op library)
from hwport.runtime import (
    DType,
    FallbackError,
    NotSupportedError,
    OutOfMemoryError,
    Place,
    Tensor,
    _core,
)
from hwport.tensor import from_dlpack, to_tensor

# isort: split
# ---- optimizers and lr schedulers (hwport/optimizer; issue 15) ----
from hwport import optimizer

# ---- end optimizers ----

CustomPlace = Place

bool_ = DType.bool
int8 = DType.int8
uint8 = DType.uint8
int16 = DType.int16
int32 = DType.int32
int64 = DType.int64
float16 = DType.float16
bfloat16 = DType.bfloat16
float32 = DType.float32
float64 = DType.float64


def set_device(device: Any) -> Place:
    """Makes `device` ('custom:cpu:1', 'cpu', CustomPlace('cpu', 1), ...) this thread's current
    device (Paddle's parameter name)."""
    return _core.set_device(device)


def get_device(input: Any = None) -> str:
    """This thread's current device, e.g. 'custom:cpu:0' (with a tensor: the one it is on)."""
    if input is not None:
        return str(input.place)
    return str(_core.get_device())


# ---- Paddle-compatible helpers (docs/paddle-compat.md; owned by the compat audit) ----------
from hwport.phi_ops.api_args import get_default_dtype as get_default_dtype  # noqa: E402
from hwport.phi_ops.api_args import set_default_dtype as set_default_dtype  # noqa: E402
from hwport.tensor import Size as Size  # noqa: E402
from hwport.tensor import chunk as chunk  # noqa: E402
from hwport.tensor import clone as clone  # noqa: E402
from hwport.tensor import is_tensor as is_tensor  # noqa: E402
from hwport.tensor import numel as numel  # noqa: E402
from hwport.tensor import t as t  # noqa: E402

broadcast_to = ops.expand  # Paddle's two names of one op
mod = ops.remainder

_PADDLE_COMPAT = ["Size", "broadcast_to", "chunk", "clone", "get_default_dtype", "is_tensor", "mod",
                  "numel", "set_default_dtype", "t"]
# ---- end of the Paddle-compatible helpers ---------------------------------------------------


# ---- nn, random, save/load (issue 15: layers, initializers, losses) -------------------------
# hwport.random's uniform / normal (Paddle's seed=0: the global generator) replace the raw ops'
from hwport import random  # noqa: E402, F401
from hwport.framework_io import load, save  # noqa: E402, F401
from hwport.nn.parameter import ParamAttr, create_parameter  # noqa: E402, F401
from hwport.random import get_rng_state, normal, seed, set_rng_state, uniform  # noqa: E402, F401

_NN_EXPORTS = ["ParamAttr", "create_parameter", "get_rng_state", "load", "random", "save",
               "seed", "set_rng_state"]
# ---- end of the issue-15 nn block -------------------------------------------------------------

__all__ = [*ops.__all__, *_PADDLE_COMPAT, *_NN_EXPORTS,
    "autograd", "enable_grad", "grad", "is_grad_enabled", "no_grad", "set_grad_enabled",
    "CustomPlace",
    "DType",
    "FallbackError",
    "NotSupportedError",
    "OutOfMemoryError",
    "Place",
    "Tensor",
    "bfloat16",
    "bool_",
    "device",
    "float16",
    "float32",
    "float64",
    "from_dlpack",
    "get_device",
    "int8",
    "int16",
    "int32",
    "int64",
    "nn",
    "ops",
    "optimizer",
    "profiler",
    "runtime",
    "set_device",
    "to_tensor",
    "uint8",
]

# Dynamic to static and inference load the IR (hwport.pir) on first use, not with hwport.
_LAZY_SUBMODULES = ("inference", "jit", "static")


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"hwport.{name}")
    raise AttributeError(f"module 'hwport' has no attribute {name!r}")
