"""Control flow on tensor values that works eagerly and inside a to_static capture, where it
becomes a cf.if / cf.while region of the program (Paddle's static.nn.cond / while_loop)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def _truth(pred: Any, fn: str) -> bool:
    from hwport.runtime import Tensor
    from hwport.tensor import _to_numpy

    if isinstance(pred, Tensor):
        if pred.size != 1:
            raise ValueError(f"{fn}: pred must hold one element, got shape {list(pred.shape)}")
        if pred.dtype.name != "bool":
            raise TypeError(f"{fn}: pred must be a bool tensor, got {pred.dtype.name}")
        return bool(_to_numpy(pred).reshape(()).item())
    if isinstance(pred, bool):
        return pred
    raise TypeError(f"{fn}: pred must be a bool tensor of one element or a Python bool, got "
                    f"{type(pred).__name__}")


def cond(pred: Any, true_fn: Callable[[], Any] | None = None,
         false_fn: Callable[[], Any] | None = None, name: str | None = None,
         return_names: Any = None) -> Any:
    """true_fn() if pred else false_fn() (a missing function returns None). Inside a capture
    with a traced pred, both functions are recorded as the two regions of a cf.if."""
    from hwport.jit import capture

    for fn_name, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is not None and not callable(fn):
            raise TypeError(f"cond: {fn_name} must be callable or None, got {type(fn).__name__}")
    recorder = capture.active_recorder()
    if recorder is not None and recorder.traced_value(pred):
        return recorder.record_cond(pred, true_fn, false_fn)
    taken = true_fn if _truth(pred, "cond") else false_fn
    return None if taken is None else taken()


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Sequence[Any],
               is_test: bool = False, name: str | None = None) -> list[Any]:
    """loop_vars = body(*loop_vars) while cond(*loop_vars); returns the final loop_vars (a
    list). Inside a capture with a traced condition or loop variable, one iteration of body
    and cond is recorded as the region of a cf.while."""
    from hwport.jit import capture

    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callable")
    if not isinstance(loop_vars, list | tuple) or not loop_vars:
        raise TypeError(f"while_loop: loop_vars must be a non-empty list or tuple, got "
                        f"{loop_vars!r}")
    values = list(loop_vars)
    recorder = capture.active_recorder()
    if recorder is not None and any(recorder.traced_value(v) for v in values):
        return recorder.record_while(cond, body, values)
    while _truth(cond(*values), "while_loop"):
        out = body(*values)
        out = list(out) if isinstance(out, list | tuple) else [out]
        if len(out) != len(values):
            raise ValueError(f"while_loop: body returned {len(out)} value(s) for "
                             f"{len(values)} loop_vars")
        values = out
    return values
