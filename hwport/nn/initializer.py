"""Paddle's nn.initializer: Constant, Normal, TruncatedNormal, Uniform, XavierNormal,
XavierUniform, KaimingNormal, KaimingUniform, Assign.

Random initializers draw from the global Philox generator (hwport.seed): Uniform and the
Xavier/Kaiming uniform forms run the `uniform` op, the normal forms the `normal` op, with the
generator's (seed, offset), so they give the same numbers on every device (uniform: the same
bytes; normal: within the op's composite tolerance, as it runs the device's log/cos).
TruncatedNormal is computed on the host (float64 inverse CDF of the op library's float64-path
Philox uniforms, phi_ops/philox.py) and copied to the device: the same bytes everywhere.

An initializer is called as Paddle's are, `init(param)` (fills param in place,
Tensor.set_value), or used through create_parameter / ParamAttr(initializer=...)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hwport.phi_ops import functional as _F
from hwport.phi_ops import philox
from hwport.runtime import _core
from hwport.runtime._core import Tensor

__all__ = [
    "Assign", "Constant", "Initializer", "KaimingNormal", "KaimingUniform", "Normal",
    "TruncatedNormal", "Uniform", "XavierNormal", "XavierUniform", "calculate_gain",
]

_FLOAT = ("float16", "bfloat16", "float32", "float64")


def _generator() -> Any:
    from hwport.random import default_generator

    return default_generator


def compute_fans(shape: Sequence[int]) -> tuple[int, int]:
    """Paddle's fans: [] -> (1, 1); [n] -> (n, n); [in, out] -> (in, out) (Linear's weight
    layout); [out_c, in_c, *k] -> (in_c * prod(k), out_c * prod(k)) (convolutions)."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """Paddle's nn.initializer.calculate_gain."""
    if not isinstance(nonlinearity, str):
        raise TypeError(f"calculate_gain: nonlinearity must be a str, got "
                        f"{type(nonlinearity).__name__}")
    ones = {"sigmoid", "linear", "conv1d", "conv2d", "conv3d", "conv1d_transpose",
            "conv2d_transpose", "conv3d_transpose"}
    if nonlinearity in ones:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3.0
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1.0 + slope * slope))
    if nonlinearity == "selu":
        return 3.0 / 4.0
    raise ValueError(f"calculate_gain: nonlinearity must be one of sigmoid, linear, conv*, "
                     f"tanh, relu, leaky_relu, selu; got {nonlinearity!r}")


class Initializer:
    """Base: `generate(shape, dtype, place)` makes the values; `__call__(param)` writes them
    into an existing tensor."""

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        raise NotImplementedError

    def __call__(self, param: Tensor, block: Any = None) -> Tensor:
        if not isinstance(param, Tensor):
            raise TypeError(f"{type(self).__name__}: param must be a hwport.Tensor, got "
                            f"{type(param).__name__}")
        from hwport.nn.parameter import set_value

        set_value(param, self.generate(list(param.shape), param.dtype, param.place))
        return param

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _float_dtype(fn: str, dtype: Any) -> str:
    name = str(_core.parse_dtype(dtype, fn, "dtype")).replace("DType.", "")
    if name not in _FLOAT:
        raise TypeError(f"{fn}: random initializers make float tensors; dtype {name} is not "
                        f"one of {', '.join(_FLOAT)}")
    return name


def _dtype_name(dtype: Any) -> str:
    return str(_core.parse_dtype(dtype, "initializer", "dtype")).replace("DType.", "")


def _number(fn: str, arg: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{fn}: {arg} must be a number, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{fn}: {arg} must be finite, got {v}")
    return v


def _uniform(shape: list[int], low: float, high: float, dtype: Any, place: Any) -> Tensor:
    dt = _float_dtype("Uniform", dtype)
    seed, offset = _generator().draw(math.prod(shape))
    return _F.uniform(shape, dtype=dt, min=low, max=high, seed=seed, offset=offset, place=place)


def _normal(shape: list[int], mean: float, std: float, dtype: Any, place: Any) -> Tensor:
    dt = _float_dtype("Normal", dtype)
    seed, offset = _generator().draw(2 * math.prod(shape))
    return _F.normal(mean=mean, std=std, shape=shape, seed=seed, offset=offset, dtype=dt,
                     place=place)


class Constant(Initializer):
    """Every element `value` (Paddle's default for biases: 0)."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = _number("Constant", "value", value)

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        return _F.full(shape, self.value, dtype=_dtype_name(dtype), place=place)


class Uniform(Initializer):
    """Uniform [low, high)."""

    def __init__(self, low: float = -1.0, high: float = 1.0, name: str | None = None) -> None:
        self.low = _number("Uniform", "low", low)
        self.high = _number("Uniform", "high", high)
        if self.low > self.high:
            raise ValueError(f"Uniform: low must be <= high, got low={self.low}, "
                             f"high={self.high}")

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        return _uniform(shape, self.low, self.high, dtype, place)


class Normal(Initializer):
    """Normal(mean, std)."""

    def __init__(self, mean: float = 0.0, std: float = 1.0, name: str | None = None) -> None:
        self.mean = _number("Normal", "mean", mean)
        self.std = _number("Normal", "std", std)
        if self.std < 0:
            raise ValueError(f"Normal: std must be >= 0, got {self.std}")

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        return _normal(shape, self.mean, self.std, dtype, place)


# Acklam's rational approximation of the standard normal inverse CDF (relative error below
# 1.2e-9 over (0, 1)).
_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
      1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)
_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
      6.680131188771972e01, -1.328068155288572e01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
      -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00,
      3.754408661907416e00)
_P_LOW = 0.02425


def _ndtri(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-300, 1.0 - 2.0**-53)
    out = np.empty_like(p)
    lo, hi = p < _P_LOW, p > 1.0 - _P_LOW
    mid = ~(lo | hi)
    q = p[mid] - 0.5
    r = q * q
    num = (((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q
    den = ((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0
    out[mid] = num / den
    for sel, sign, base in ((lo, 1.0, p), (hi, -1.0, 1.0 - p)):
        q = np.sqrt(-2.0 * np.log(base[sel]))
        num = ((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]
        den = (((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1.0
        out[sel] = sign * num / den
    return out


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


class TruncatedNormal(Initializer):
    """Normal(mean, std) restricted to [a, b] (absolute bounds, as Paddle 3 has them), by the
    inverse CDF: z = Phi^-1(Phi(alpha) + u (Phi(beta) - Phi(alpha))), u the float64-path
    Philox uniform of one counter per element, computed on the host in float64."""

    def __init__(self, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                 name: str | None = None) -> None:
        self.mean = _number("TruncatedNormal", "mean", mean)
        self.std = _number("TruncatedNormal", "std", std)
        self.a = _number("TruncatedNormal", "a", a)
        self.b = _number("TruncatedNormal", "b", b)
        if self.std <= 0:
            raise ValueError(f"TruncatedNormal: std must be > 0, got {self.std}")
        if self.a >= self.b:
            raise ValueError(f"TruncatedNormal: a must be < b, got a={self.a}, b={self.b}")

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        dt = _float_dtype("TruncatedNormal", dtype)
        n = math.prod(shape)
        seed, offset = _generator().draw(n)
        u = philox.unit(n, seed, offset, "float64")
        lo = _phi((self.a - self.mean) / self.std)
        hi = _phi((self.b - self.mean) / self.std)
        z = _ndtri(lo + u * (hi - lo))
        values = np.clip(self.mean + self.std * z, self.a, self.b)
        return _from_host(values.reshape(shape), dt, place)


def _from_host(values: np.ndarray, dtype: str, place: Any) -> Tensor:
    np_dtype = _core.parse_dtype(dtype, "initializer", "dtype").to_numpy()
    arr = values.astype(np_dtype, order="C")
    return _core.from_numpy(arr, _core.resolve_place(place))


class _Fan(Initializer):
    def _fans(self, shape: list[int]) -> tuple[float, float]:
        fan_in, fan_out = compute_fans(shape)
        fan_in = fan_in if self.fan_in is None else self.fan_in
        fan_out = fan_out if getattr(self, "fan_out", None) is None else self.fan_out
        return float(fan_in), float(fan_out)

    @staticmethod
    def _fan_arg(fn: str, arg: str, value: Any) -> float | None:
        if value is None:
            return None
        v = _number(fn, arg, value)
        if v <= 0:
            raise ValueError(f"{fn}: {arg} must be > 0, got {v}")
        return v


class XavierUniform(_Fan):
    """Uniform [-limit, limit), limit = gain * sqrt(6 / (fan_in + fan_out)) (Paddle's default
    for weights)."""

    def __init__(self, fan_in: float | None = None, fan_out: float | None = None,
                 gain: float = 1.0, name: str | None = None) -> None:
        self.fan_in = self._fan_arg("XavierUniform", "fan_in", fan_in)
        self.fan_out = self._fan_arg("XavierUniform", "fan_out", fan_out)
        self.gain = _number("XavierUniform", "gain", gain)

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        fan_in, fan_out = self._fans(shape)
        total = fan_in + fan_out
        limit = self.gain * math.sqrt(6.0 / total) if total > 0 else 0.0
        return _uniform(shape, -limit, limit, dtype, place)


class XavierNormal(_Fan):
    """Normal(0, gain * sqrt(2 / (fan_in + fan_out)))."""

    def __init__(self, fan_in: float | None = None, fan_out: float | None = None,
                 gain: float = 1.0, name: str | None = None) -> None:
        self.fan_in = self._fan_arg("XavierNormal", "fan_in", fan_in)
        self.fan_out = self._fan_arg("XavierNormal", "fan_out", fan_out)
        self.gain = _number("XavierNormal", "gain", gain)

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        fan_in, fan_out = self._fans(shape)
        total = fan_in + fan_out
        std = self.gain * math.sqrt(2.0 / total) if total > 0 else 0.0
        return _normal(shape, 0.0, std, dtype, place)


class _Kaiming(_Fan):
    def __init__(self, fan_in: float | None = None, negative_slope: float = 0.0,
                 nonlinearity: str = "relu", mode: str = "fan_in") -> None:
        fn = type(self).__name__
        self.fan_in = self._fan_arg(fn, "fan_in", fan_in)
        self.negative_slope = _number(fn, "negative_slope", negative_slope)
        if mode not in ("fan_in", "fan_out"):
            raise ValueError(f"{fn}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
        self.mode = mode
        self.nonlinearity = nonlinearity
        self._gain = calculate_gain(nonlinearity, self.negative_slope)

    def _fan(self, shape: list[int]) -> float:
        fan_in, fan_out = self._fans(shape)
        return fan_in if self.mode == "fan_in" else fan_out


class KaimingUniform(_Kaiming):
    """Uniform [-limit, limit), limit = gain * sqrt(3 / fan) (fan: fan_in or fan_out by mode;
    gain from nonlinearity and negative_slope)."""

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        fan = self._fan(shape)
        limit = self._gain * math.sqrt(3.0 / fan) if fan > 0 else 0.0
        return _uniform(shape, -limit, limit, dtype, place)


class KaimingNormal(_Kaiming):
    """Normal(0, gain / sqrt(fan))."""

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        fan = self._fan(shape)
        std = self._gain / math.sqrt(fan) if fan > 0 else 0.0
        return _normal(shape, 0.0, std, dtype, place)


class Assign(Initializer):
    """The given values (numpy array, nested list or Tensor), cast to the parameter's dtype;
    their shape must equal the parameter's."""

    def __init__(self, value: Any, name: str | None = None) -> None:
        if isinstance(value, Tensor):
            arr = value.numpy()
        else:
            try:
                arr = np.asarray(value)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"Assign: value must be a numpy array, list or Tensor: "
                                f"{exc}") from None
        if arr.dtype.kind not in "biuf" and arr.dtype.name != "bfloat16":
            raise TypeError(f"Assign: value must be numeric, got numpy dtype {arr.dtype}")
        self.value = arr

    def generate(self, shape: list[int], dtype: Any, place: Any) -> Tensor:
        if list(self.value.shape) != list(shape):
            raise ValueError(f"Assign: the value has shape {list(self.value.shape)} but the "
                             f"parameter has shape {list(shape)}")
        return _from_host(self.value, _dtype_name(dtype), place)

    def __repr__(self) -> str:
        return f"Assign(shape={list(self.value.shape)}, dtype={self.value.dtype})"
