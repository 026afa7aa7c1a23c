"""Linear, Embedding, Dropout, Identity and the activation layers, with Paddle's signatures
and parameter layouts (Linear's weight is [in_features, out_features])."""

from __future__ import annotations

from typing import Any

from hwport.nn import initializer as init
from hwport.nn.layer import Layer
from hwport.nn.parameter import ParamAttr, default_dtype
from hwport.phi_ops import functional as F
from hwport.runtime._core import Tensor

__all__ = ["GELU", "Dropout", "Embedding", "Identity", "Linear", "ReLU", "SiLU", "Sigmoid",
           "Softmax", "Tanh", "dropout"]


def _positive_int(fn: str, arg: str, value: Any) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{fn}: {arg} must be an int, got {type(value).__name__} {value!r}")
    v = int(value.__index__())
    if v <= 0:
        raise ValueError(f"{fn}: {arg} must be > 0, got {v}")
    return v


class Linear(Layer):
    """y = x @ weight + bias, weight [in_features, out_features] (XavierUniform by default),
    bias [out_features] (zeros; bias_attr=False: none)."""

    def __init__(self, in_features: int, out_features: int, weight_attr: Any = None,
                 bias_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        self.in_features = _positive_int("Linear", "in_features", in_features)
        self.out_features = _positive_int("Linear", "out_features", out_features)
        self._dtype = str(default_dtype())
        self.weight = self.create_parameter([self.in_features, self.out_features],
                                            attr=weight_attr, dtype=self._dtype)
        self.bias = self.create_parameter([self.out_features], attr=bias_attr,
                                          dtype=self._dtype, is_bias=True)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"dtype={self._dtype}")


class Embedding(Layer):
    """Rows of weight [num_embeddings, embedding_dim] (XavierUniform by default) for an
    integer index tensor. padding_idx: that row starts at zero and the lookup of that index
    gives zeros (its gradient is zero). max_norm, scale_grad_by_freq and sparse are not
    supported (NotImplementedError)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, *,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None, weight_attr: Any = None, name: str | None = None) -> None:
        super().__init__()
        self._num_embeddings = _positive_int("Embedding", "num_embeddings", num_embeddings)
        self._embedding_dim = _positive_int("Embedding", "embedding_dim", embedding_dim)
        for arg, value, ok in (("max_norm", max_norm, None), ("scale_grad_by_freq",
                                                              scale_grad_by_freq, False),
                               ("sparse", sparse, False)):
            if value != ok:
                raise NotImplementedError(f"Embedding: {arg}={value!r} is not supported "
                                          f"(only {ok!r})")
        if padding_idx is not None:
            if isinstance(padding_idx, bool) or not hasattr(padding_idx, "__index__"):
                raise TypeError(f"Embedding: padding_idx must be an int or None, got "
                                f"{type(padding_idx).__name__}")
            v = int(padding_idx)
            if not -self._num_embeddings <= v < self._num_embeddings:
                raise ValueError(f"Embedding: padding_idx must be in [-{num_embeddings}, "
                                 f"{num_embeddings}), got {v}")
            padding_idx = v + self._num_embeddings if v < 0 else v
        self._padding_idx = padding_idx
        self._dtype = str(default_dtype() if dtype is None else dtype)
        shape = [self._num_embeddings, self._embedding_dim]
        if _weight is not None:
            if list(_weight.shape) != shape:
                raise ValueError(f"Embedding: _weight must have shape {shape}, got "
                                 f"{list(_weight.shape)}")
            given = ParamAttr._to_attr(weight_attr, "Embedding")
            if given is False:
                raise ValueError("Embedding: weight_attr must not be False")
            weight_attr = ParamAttr(name=given.name, initializer=init.Assign(_weight),
                                    learning_rate=given.learning_rate,
                                    regularizer=given.regularizer, trainable=given.trainable,
                                    need_clip=given.need_clip)
        self.weight = self.create_parameter(shape, attr=weight_attr, dtype=self._dtype,
                                            device=device)
        if padding_idx is not None:
            self.set_state_dict({"weight": _zero_row(self.weight, padding_idx)})
        if _freeze:
            self.weight.stop_gradient = True

    def forward(self, x: Tensor) -> Tensor:
        out = F.embedding(x, self.weight)
        if self._padding_idx is None:
            return out
        keep = F.unsqueeze(F.not_equal(x, self._padding_idx), axis=[-1])
        return F.multiply(out, F.cast(keep, dtype=out.dtype))

    def extra_repr(self) -> str:
        text = f"{self._num_embeddings}, {self._embedding_dim}"
        if self._padding_idx is not None:
            text += f", padding_idx={self._padding_idx}"
        return text + ", sparse=False, scale_grad_by_freq=False"


def _zero_row(weight: Tensor, row: int) -> Any:
    arr = weight.numpy().copy()
    arr[row] = 0
    return arr


def dropout(x: Tensor, p: float = 0.5, axis: Any = None, training: bool = True,
            inplace: bool = False, mode: str = "upscale_in_train", name: str | None = None,
            *, seed: int | None = None, offset: int | None = None) -> Tensor:
    """F.dropout drawing its Philox (seed, offset) from the global generator (hwport.seed),
    so successive calls give fresh masks and a seeded run repeats on every device.
    inplace=True is refused (as the op function refuses it: docs/paddle-compat.md).
    seed / offset (hwport's, keyword-only): the op's
    Philox stream, given explicitly (offset default 0); the generator is then left alone."""
    if not isinstance(x, Tensor):
        raise TypeError(f"dropout: x must be a hwport.Tensor, got {type(x).__name__}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"dropout: p must be a number in [0, 1], got {p!r}")
    if not isinstance(training, bool):  # a truthy 1.0 would pick the mask path by accident
        raise TypeError(f"dropout: training expected a bool, got {type(training).__name__} "
                        f"{training!r}")
    if inplace:
        return F.dropout(x, p, axis=axis, training=training, inplace=True, mode=mode)  # raises
    if seed is not None or offset is not None:
        return F.dropout(x, p, axis=axis, training=training, mode=mode,
                         seed=0 if seed is None else seed, offset=0 if offset is None else offset)
    if not training or p == 0:
        return F.dropout(x, p, axis=axis, training=False, mode=mode)
    from hwport.random import default_generator

    seed, offset = default_generator.draw(x.size)
    return F.dropout(x, p, axis=axis, training=True, mode=mode, seed=seed, offset=offset)


class Dropout(Layer):
    """Zeroes elements with probability p while training (masks from hwport.seed's
    generator), scaling the rest by 1 / (1 - p); the identity in eval mode. axis and mode
    other than None / 'upscale_in_train' are not supported."""

    def __init__(self, p: float = 0.5, inplace: bool = False, axis: Any = None,
                 mode: str = "upscale_in_train", name: str | None = None) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be a number in [0, 1], got {p!r}")
        if axis is not None:
            raise NotImplementedError("Dropout: axis is not supported (only None)")
        if mode != "upscale_in_train":
            raise NotImplementedError(f"Dropout: mode {mode!r} is not supported (only "
                                      "'upscale_in_train')")
        self.p = float(p)
        self.axis = axis
        self.mode = mode
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return dropout(input, self.p, axis=self.axis, training=self.training, mode=self.mode)

    def extra_repr(self) -> str:
        return f"p={self.p}, axis={self.axis}, mode={self.mode}, inplace={self.inplace}"


class Identity(Layer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class ReLU(Layer):
    def __init__(self, name: str | None = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class GELU(Layer):
    """approximate: False / 'none' (erf form) or True / 'tanh' (tanh form)."""

    def __init__(self, approximate: Any = False, name: str | None = None) -> None:
        super().__init__()
        if approximate in (True, "tanh"):
            self._approximate = True
        elif approximate in (False, "none"):
            self._approximate = False
        else:
            raise ValueError(f"GELU: approximate must be True, False, 'tanh' or 'none', got "
                             f"{approximate!r}")

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate=self._approximate)

    def extra_repr(self) -> str:
        return f"approximate={self._approximate}"


class SiLU(Layer):
    """x * sigmoid(x); inplace is accepted and computes out of place."""

    def __init__(self, inplace: bool = False, name: str | None = None) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x)


class Sigmoid(Layer):
    def __init__(self, name: str | None = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Layer):
    def __init__(self, name: str | None = None) -> None:
        super().__init__()

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Softmax(Layer):
    def __init__(self, axis: int = -1, name: str | None = None) -> None:
        super().__init__()
        self._axis = axis

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, axis=self._axis)

    def extra_repr(self) -> str:
        return f"axis={self._axis}"
