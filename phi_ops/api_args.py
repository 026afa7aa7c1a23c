"""Paddle's public parameters that are not an op's attribute as they are (ops.yaml `api`:
`convert` names a function here, `unsupported` values refused with `unsupported`). The generated
phi_ops/functional.py calls these; each error names the public op, the argument and the
expectation."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .schema import OpDef


_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
_DEFAULT = {"float": "float32"}  # set_default_dtype's state


def get_default_dtype() -> str:
    """The default float dtype ('float32' unless set_default_dtype changed it): what Python
    floats become in to_tensor and what creation ops give when dtype is None (as in Paddle)."""
    return _DEFAULT["float"]


def set_default_dtype(d: Any) -> None:
    """Sets the default float dtype: float16, bfloat16, float32 or float64 (a name, a hwport
    dtype or a numpy dtype); anything else is a TypeError, as in Paddle."""
    from hwport.runtime import _core
    try:
        name = _core.parse_dtype(d, "set_default_dtype", "d").name
    except (TypeError, ValueError):
        name = None
    if name not in _FLOAT_DTYPES:
        raise TypeError(f"set_default_dtype: d expected one of {', '.join(_FLOAT_DTYPES)}, "
                        f"got {d!r}")
    _DEFAULT["float"] = name


def dtype(op: str, value: Any, x: Any, fill_value: Any = None, start: Any = None,
          end: Any = None, step: Any = None) -> Any:
    """Creation ops' dtype=None, as Paddle has it: the default float dtype (full: bool for a
    bool fill_value; arange: int64 when start, end and step are all ints, the op's own rule)."""
    if value is not None:
        return value
    if op == "full" and isinstance(fill_value, bool):
        return "bool"
    if op == "arange" and all(isinstance(v, int) or v is None for v in (start, end, step)):
        return None
    return _DEFAULT["float"]


def approximate(op: str, value: Any, x: Any) -> Any:
    """gelu's approximate: Paddle takes a bool or 'tanh' / 'none'."""
    if isinstance(value, str):
        if value in ("tanh", "none"):
            return value == "tanh"
        raise ValueError(f"{op}: approximate expected True, False, 'tanh' or 'none', got "
                         f"{value!r}")
    return value


def varargs(op: str, param: str, first: Any, rest: tuple[Any, ...]) -> Any:
    """Paddle's `reshape(x, 2, 3)` form: `first` and the extra positional ints as one list."""
    dims = [first, *rest]
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"{op}: {param} given as separate arguments must be ints, got "
                        f"{tuple(dims)!r}")
    return dims


def differs(given: Any, only: Any) -> bool:
    """Whether `given` is not the only accepted value `only` (dtypes compare by name)."""
    if given is only:
        return False
    name = getattr(given, "name", None)
    if isinstance(only, str) and isinstance(name, str) and not isinstance(given, str):
        return name != only
    if isinstance(only, str) and not isinstance(given, str) and hasattr(given, "__name__"):
        return getattr(given, "__name__", None) != only  # numpy scalar types (np.int64)
    return bool(given != only)


def unsupported(op: str, param: str, only: Any, given: Any) -> NotImplementedError:
    shown = type(given).__name__ if only is None else repr(given)
    return NotImplementedError(f"{op}: {param}={shown} is not supported (expected {only!r}, "
                               "the default)")


def normalized_shape(op: str, value: Any, x: Any) -> int:
    """layer_norm / rms_norm: the trailing dims normalized over; they must equal x's last
    len(normalized_shape) dims. Returns that count (the op's normalized_ndim)."""
    if isinstance(value, bool) or not isinstance(value, int | Sequence) or isinstance(value, str):
        raise TypeError(f"{op}: normalized_shape expected an int or a list of ints, got "
                        f"{type(value).__name__}")
    dims = [value] if isinstance(value, int) else list(value)
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"{op}: normalized_shape expected a non-empty list of ints, got {value!r}")
    if not hasattr(x, "shape"):
        return len(dims)  # not a tensor: the op's own check names x
    shape = list(x.shape)
    if len(dims) > len(shape) or shape[len(shape) - len(dims):] != dims:
        raise ValueError(f"{op}: normalized_shape {dims} must equal the last {len(dims)} dims of "
                         f"x (x has shape {shape})")
    return len(dims)


def renamed(exc: BaseException, names: dict[str, str]) -> BaseException:
    """`exc` (raised by the dispatcher, which names the op's own inputs and attrs) with the
    renamed parameters called by their public names (split's sections -> num_or_sections), of
    the same type; `exc` itself when no name occurs or the type cannot be rebuilt."""
    msg = str(exc)
    new = re.sub(r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")(?![\w(])",
                 lambda m: names[m.group(1)], msg)
    if new == msg:
        return exc
    try:
        out = type(exc)(new)
    except TypeError:
        return exc
    out.__cause__ = exc.__cause__
    return out.with_traceback(exc.__traceback__)


def public_names(op: OpDef) -> dict[str, str]:
    """The op's inputs and attrs -> the public parameter each is passed as (itself when the
    public signature keeps its name)."""
    out = {i.name: i.name for i in op.inputs} | {a.name: a.name for a in op.attrs}
    if op.api is not None:
        for p in op.api.params:
            target = op.api.internal(p)
            if target is not None:
                out[target] = p
    return out


def public_call(op: OpDef, inputs: Sequence[Any], attrs: dict[str, Any]) -> tuple[list, dict]:
    """A call given as the op's inputs (ops.yaml order) and attrs (by the op's names) as the
    public function takes it: (positional args, keyword args). Tests call ops this way."""
    if op.api is None:
        return list(inputs), dict(attrs)
    names = public_names(op)
    by_name = {i.name: v for i, v in zip(op.inputs, inputs, strict=True)}
    args: list[Any] = []
    leading = True
    kwargs: dict[str, Any] = {}
    for p in op.api.params:  # inputs stay positional while they lead in the op's order
        target = op.api.internal(p)
        if leading and target in by_name and len(args) < len(op.inputs) and \
                op.inputs[len(args)].name == target:
            args.append(by_name.pop(target))
            continue
        leading = False
        if target in by_name:
            kwargs[p] = by_name.pop(target)
        elif p in op.api.convert:  # required publicly: from the attr or its default
            value = attrs[target] if target in attrs else op.attr_map[target].default
            kwargs[p] = _INVERSE[p](value, inputs[0] if inputs else None, attrs)
        elif target in attrs:
            kwargs[p] = attrs[target]
    kwargs.update({names[k]: v for k, v in by_name.items()})
    kwargs.update({names[k]: v for k, v in attrs.items() if names[k] not in kwargs})
    return args, kwargs


def _normalized_shape_inverse(ndim: Any, x: Any, attrs: dict[str, Any]) -> Any:
    """normalized_ndim -> the normalized_shape that gives it (a bad count -> a normalized_shape
    the public function refuses for the same reason)."""
    shape = list(getattr(x, "shape", ()))
    if isinstance(ndim, bool) or not isinstance(ndim, int):
        return ndim
    if ndim <= 0:
        return []
    if ndim > len(shape):
        return shape + [1]  # more dims than x has
    return shape[len(shape) - ndim:]


def _dtype_inverse(dtype: Any, x: Any, attrs: dict[str, Any]) -> Any:
    """The op's dtype=None (full: from the fill value, int64 for an int) as the explicit dtype
    the public function needs to give the same (its None is Paddle's default float dtype)."""
    value = attrs.get("fill_value")
    if dtype is None and isinstance(value, int) and not isinstance(value, bool):
        return "int64"
    return dtype


_INVERSE = {"normalized_shape": _normalized_shape_inverse, "dtype": _dtype_inverse,
            "approximate": lambda v, x, attrs: v}
