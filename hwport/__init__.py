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


def set_device(place: Any) -> Place:
    """Makes `place` ('custom:cpu:1', CustomPlace('cpu', 1), ...) this thread's current device."""
    return _core.set_device(place)


def get_device() -> str:
    """This thread's current device, e.g. 'custom:cpu:0'."""
    return str(_core.get_device())


__all__ = [*ops.__all__,
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
