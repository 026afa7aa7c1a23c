"""A second oracle for the op library, written once against an array module `xp`: with CuPy it
computes on the GPU, independently of phi_ops.reference (numpy) and of hwport, and checks
custom:cuda's results device-side (tests/device_plugins/test_cuda_cupy_oracle.py); with numpy it
checks itself against phi_ops.reference, so the table is known right before it ever meets a GPU.

Floating inputs are computed in float64 and the result cast to the op's output dtype, as the
reference does, so the oracle's own rounding stays far below the op tolerances. Only ops whose
semantics xp expresses directly are here; the rest are covered by the numpy reference alone."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from hwport.phi_ops.promotion import FLOATING, np_dtype, out_dtype
from hwport.phi_ops.sample_inputs import OPS, Case

Fn = Callable[..., Any]
ORACLE: dict[str, Fn] = {}


def _op(*names: str) -> Callable[[Fn], Fn]:
    def deco(fn: Fn) -> Fn:
        for n in names:
            ORACLE[n] = fn
        return fn
    return deco


def _erf(xp: Any, x: Any) -> Any:
    if xp is np:
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    from cupyx.scipy.special import erf  # CuPy's own device implementation

    return erf(x)


def _sigmoid(xp: Any, x: Any) -> Any:
    return 1.0 / (1.0 + xp.exp(-x))


_UNARY: dict[str, Fn] = {
    "abs": lambda xp, x: xp.abs(x), "neg": lambda xp, x: xp.negative(x),
    "exp": lambda xp, x: xp.exp(x), "expm1": lambda xp, x: xp.expm1(x),
    "log": lambda xp, x: xp.log(x), "log1p": lambda xp, x: xp.log1p(x),
    "log2": lambda xp, x: xp.log2(x), "sqrt": lambda xp, x: xp.sqrt(x),
    "rsqrt": lambda xp, x: 1.0 / xp.sqrt(x), "sin": lambda xp, x: xp.sin(x),
    "cos": lambda xp, x: xp.cos(x), "tan": lambda xp, x: xp.tan(x),
    "tanh": lambda xp, x: xp.tanh(x), "erf": _erf, "sigmoid": _sigmoid,
    "silu": lambda xp, x: x * _sigmoid(xp, x),
    "floor": lambda xp, x: xp.floor(x), "ceil": lambda xp, x: xp.ceil(x),
    "round": lambda xp, x: xp.round(x), "sign": lambda xp, x: xp.sign(x),
    "reciprocal": lambda xp, x: 1.0 / x, "square": lambda xp, x: x * x,
    "logical_not": lambda xp, x: xp.logical_not(x), "bitwise_not": lambda xp, x: xp.invert(x),
    "isnan": lambda xp, x: xp.isnan(x), "isinf": lambda xp, x: xp.isinf(x),
    "isfinite": lambda xp, x: xp.isfinite(x),
}
_BINARY: dict[str, str] = {
    "add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "true_divide",
    "maximum": "maximum", "minimum": "minimum", "equal": "equal", "not_equal": "not_equal",
    "less_than": "less", "less_equal": "less_equal", "greater_than": "greater",
    "greater_equal": "greater_equal", "logical_and": "logical_and", "logical_or": "logical_or",
    "logical_xor": "logical_xor", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
}
# Float-only here: their integer edge cases (division by zero, negative powers) are defined by
# phi_ops, not by numpy/CuPy.
_FLOAT_BINARY: dict[str, str] = {
    "floor_divide": "floor_divide", "remainder": "remainder", "pow": "power",
}

for _name, _fn in _UNARY.items():
    ORACLE[_name] = (lambda f: lambda xp, ins, a: f(xp, ins[0]))(_fn)
for _name, _ufunc in {**_BINARY, **_FLOAT_BINARY}.items():
    ORACLE[_name] = (lambda u: lambda xp, ins, a: getattr(xp, u)(ins[0], ins[1]))(_ufunc)


@_op("relu")
def _relu(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ins[0]
    return xp.where(x > 0, x, xp.zeros_like(x)) if x.dtype.kind != "f" else xp.where(
        xp.isnan(x), x, xp.maximum(x, 0))


@_op("gelu")
def _gelu(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ins[0]
    if a.get("approximate", False):
        return 0.5 * x * (1 + xp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(xp, x / math.sqrt(2)))


@_op("softplus")
def _softplus(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    x, beta, threshold = ins[0], a.get("beta", 1.0), a.get("threshold", 20.0)
    return xp.where(x * beta > threshold, x, xp.log1p(xp.exp(beta * x)) / beta)


@_op("where")
def _where(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    return xp.where(ins[0], ins[1], ins[2])


@_op("clip")
def _clip(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ins[0]
    if a.get("min") is not None:
        x = xp.where(x < a["min"], a["min"], x)
    if a.get("max") is not None:
        x = xp.where(x > a["max"], a["max"], x)
    return x


def _axes(a: dict[str, Any], ndim: int) -> tuple[int, ...] | None:
    axis = a.get("axis")
    if ndim == 0 or axis is None or (isinstance(axis, list | tuple) and len(axis) == 0):
        return None
    axes = axis if isinstance(axis, list | tuple) else [axis]
    return tuple(ax % ndim if ndim else 0 for ax in axes)


def _reduction(fn: Callable[[Any, Any, Any, bool], Any]) -> Fn:
    def run(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
        x = ins[0]
        return fn(xp, x, _axes(a, x.ndim), bool(a.get("keepdim", False)))
    return run


ORACLE.update({
    "mean": _reduction(lambda xp, x, ax, k: xp.mean(x, axis=ax, keepdims=k)),
    "prod": _reduction(lambda xp, x, ax, k: xp.prod(x, axis=ax, keepdims=k)),
    "max": _reduction(lambda xp, x, ax, k: xp.max(x, axis=ax, keepdims=k)),
    "min": _reduction(lambda xp, x, ax, k: xp.min(x, axis=ax, keepdims=k)),
    "any": _reduction(lambda xp, x, ax, k: xp.any(x, axis=ax, keepdims=k)),
    "all": _reduction(lambda xp, x, ax, k: xp.all(x, axis=ax, keepdims=k)),
})


@_op("sum")
def _sum(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ins[0]
    if a.get("dtype") is not None:
        x = x.astype(np.float64 if str(a["dtype"]) in FLOATING else np_dtype(str(a["dtype"])))
    return xp.sum(x, axis=_axes(a, x.ndim), keepdims=bool(a.get("keepdim", False)))


def _arg(name: str) -> Fn:
    def run(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
        x, axis = ins[0], a.get("axis")
        fn = getattr(xp, name)
        if axis is None:
            out = fn(x.reshape(-1))
            return out.reshape((1,) * x.ndim) if a.get("keepdim") else out
        out = fn(x, axis=axis)
        return xp.expand_dims(out, axis) if a.get("keepdim") else out
    return run


ORACLE["argmax"], ORACLE["argmin"] = _arg("argmax"), _arg("argmin")


@_op("logsumexp")
def _logsumexp(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    x = ins[0]
    ax, k = _axes(a, x.ndim), bool(a.get("keepdim", False))
    if x.size == 0:  # the reduced dims are empty: log(0) = -inf
        r = xp.full(xp.sum(x, axis=ax, keepdims=True).shape, -np.inf)
        return r if k else xp.squeeze(r, axis=ax)
    m = xp.max(x, axis=ax, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0.0)
    r = xp.log(xp.sum(xp.exp(x - m), axis=ax, keepdims=True)) + m
    return r if k else xp.squeeze(r, axis=ax)


def _moment(name: str) -> Fn:
    def run(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
        x = ins[0]
        ddof = 1 if a.get("unbiased", True) else 0
        return getattr(xp, name)(x, axis=_axes(a, x.ndim), ddof=ddof,
                                 keepdims=bool(a.get("keepdim", False)))
    return run


ORACLE["var"], ORACLE["std"] = _moment("var"), _moment("std")


def _cum(name: str) -> Fn:
    def run(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
        x, axis = ins[0], a.get("axis")
        if axis is None:
            return getattr(xp, name)(x.reshape(-1))
        return x.copy() if x.ndim == 0 else getattr(xp, name)(x, axis=axis)
    return run


ORACLE["cumsum"], ORACLE["cumprod"] = _cum("cumsum"), _cum("cumprod")


@_op("matmul")
def _matmul(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    x, y = ins
    if a.get("transpose_x") and x.ndim >= 2:
        x = xp.swapaxes(x, -1, -2)
    if a.get("transpose_y") and y.ndim >= 2:
        y = xp.swapaxes(y, -1, -2)
    return xp.matmul(x, y)


def _softmax_fn(log: bool) -> Fn:
    def run(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
        x, axis = ins[0], a.get("axis", -1)
        if x.ndim == 0:
            return xp.zeros_like(x) if log else xp.ones_like(x)
        if x.size == 0:
            return x.copy()
        m = xp.max(x, axis=axis, keepdims=True)  # a row of inf / -inf gives NaN, as specified
        e = xp.exp(x - m)
        s = xp.sum(e, axis=axis, keepdims=True)
        return (x - m) - xp.log(s) if log else e / s
    return run


ORACLE["softmax"], ORACLE["log_softmax"] = _softmax_fn(False), _softmax_fn(True)


def _normalized(a: dict[str, Any], x: Any) -> tuple[int, ...]:
    n = int(a.get("normalized_ndim", 1))
    return tuple(range(x.ndim - n, x.ndim))


@_op("layer_norm")
def _layer_norm(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    x, w, b = ins
    axes = _normalized(a, x)
    mu = xp.mean(x, axis=axes, keepdims=True)
    var = xp.mean((x - mu) ** 2, axis=axes, keepdims=True)
    y = (x - mu) / xp.sqrt(var + a.get("epsilon", 1e-5))
    if w is not None:
        y = y * w
    return y + b if b is not None else y


@_op("rms_norm")
def _rms_norm(xp: Any, ins: list[Any], a: dict[str, Any]) -> Any:
    x, w = ins
    axes = _normalized(a, x)
    y = x / xp.sqrt(xp.mean(x * x, axis=axes, keepdims=True) + a.get("epsilon", 1e-5))
    return y * w if w is not None else y


def covers(case: Case) -> bool:
    """Whether the table has this case (float-only ops on float dtypes only)."""
    if case.op not in ORACLE:
        return False
    return case.op not in _FLOAT_BINARY or case.dtype in FLOATING


def evaluate(xp: Any, case: Case) -> np.ndarray:
    """The case's result computed with `xp`, as a numpy array of the op's output dtype."""
    ins = []
    for v in case.inputs:
        if v is None:
            ins.append(None)
            continue
        arr = np.asarray(v)
        if arr.dtype.kind == "f" or arr.dtype.name == "bfloat16":
            arr = arr.astype(np.float64)
        ins.append(xp.asarray(arr))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty slices, ddof >= n: NaN, as defined
        out = ORACLE[case.op](xp, ins, case.attrs)
    host = out.get() if hasattr(out, "get") else np.asarray(out)
    want = out_dtype(OPS[case.op], case.input_dtypes(), case.attrs)[0]
    return np.asarray(host).astype(np_dtype(want))
