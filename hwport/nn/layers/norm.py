"""LayerNorm and RMSNorm over the trailing `normalized_shape` dims."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hwport.nn import initializer as init
from hwport.nn.layer import Layer
from hwport.nn.parameter import default_dtype
from hwport.phi_ops import functional as F
from hwport.runtime._core import Tensor

__all__ = ["LayerNorm", "RMSNorm"]


def _normalized_shape(fn: str, shape: Any) -> list[int]:
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = [shape]
    if not isinstance(shape, Sequence) or isinstance(shape, str) or not shape:
        raise TypeError(f"{fn}: normalized_shape must be an int or a non-empty list of ints, "
                        f"got {shape!r}")
    out = []
    for d in shape:
        if isinstance(d, bool) or not hasattr(d, "__index__") or int(d) <= 0:
            raise ValueError(f"{fn}: normalized_shape must hold positive ints, got "
                             f"{list(shape)!r}")
        out.append(int(d))
    return out


class LayerNorm(Layer):
    """(x - mean) / sqrt(var + epsilon) * weight + bias over the trailing normalized_shape
    dims; weight starts at ones, bias at zeros. weight_attr / bias_attr False (or
    elementwise_affine / bias False) leave that parameter out."""

    def __init__(self, normalized_shape: Any, epsilon: float = 1e-05, *,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None, weight_attr: Any = None, bias_attr: Any = None,
                 name: str | None = None) -> None:
        super().__init__()
        self._normalized_shape = _normalized_shape("LayerNorm", normalized_shape)
        self._epsilon = float(epsilon)
        self._dtype = str(default_dtype() if dtype is None else dtype)
        if not elementwise_affine:
            weight_attr = bias_attr = False
        if not bias:
            bias_attr = False
        self.weight = self.create_parameter(self._normalized_shape, attr=weight_attr,
                                            dtype=self._dtype,
                                            default_initializer=init.Constant(1.0),
                                            device=device)
        self.bias = self.create_parameter(self._normalized_shape, attr=bias_attr,
                                          dtype=self._dtype, is_bias=True, device=device)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self._normalized_shape, self.weight, self.bias,
                            self._epsilon)

    def extra_repr(self) -> str:
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


class RMSNorm(Layer):
    """x / sqrt(mean(x**2) + epsilon) * weight over the trailing normalized_shape dims;
    weight starts at ones (weight_attr=False or elementwise_affine=False: none). Paddle 3.3
    has no nn.RMSNorm; this one follows nn.LayerNorm's conventions and
    nn.functional.rms_norm."""

    def __init__(self, normalized_shape: Any, epsilon: float = 1e-05, *,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None,
                 weight_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        self._normalized_shape = _normalized_shape("RMSNorm", normalized_shape)
        self._epsilon = float(epsilon)
        self._dtype = str(default_dtype() if dtype is None else dtype)
        if not elementwise_affine:
            weight_attr = False
        self.weight = self.create_parameter(self._normalized_shape, attr=weight_attr,
                                            dtype=self._dtype,
                                            default_initializer=init.Constant(1.0),
                                            device=device)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self._normalized_shape, self.weight, self._epsilon)

    def extra_repr(self) -> str:
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"
