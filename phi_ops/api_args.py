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
            kwargs[p] = _INVERSE[p](value, inputs[0] if inputs else None)
        elif target in attrs:
            kwargs[p] = attrs[target]
    kwargs.update({names[k]: v for k, v in by_name.items()})
    kwargs.update({names[k]: v for k, v in attrs.items() if names[k] not in kwargs})
    return args, kwargs


def _normalized_shape_inverse(ndim: Any, x: Any) -> Any:
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


_INVERSE = {"normalized_shape": _normalized_shape_inverse}
