"""hwport.autograd: gradients with Paddle's API (runtime/src/autograd.h is the engine).

`loss.backward()`, `Tensor.grad`, `Tensor.stop_gradient`, `hwport.grad(...)`, `hwport.no_grad()`.
The pipeline records a node per op call that has an input needing a gradient; the VJP rules are
ops.yaml's `vjps`, generated into C++.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hwport.runtime import _core
from hwport.runtime._core import Tensor

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["PyLayer", "PyLayerContext", "backward", "enable_grad", "grad", "is_grad_enabled",
           "no_grad", "set_grad_enabled"]


class _GradMode:
    """A context manager and decorator setting grad mode on this thread (restored after)."""

    _mode = True

    def __enter__(self) -> None:
        self._saved = _core.is_grad_enabled()
        _core.set_grad_enabled(self._mode)

    def __exit__(self, *exc: object) -> None:
        _core.set_grad_enabled(self._saved)

    def __call__(self, fn: F) -> F:
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            saved = _core.is_grad_enabled()
            _core.set_grad_enabled(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _core.set_grad_enabled(saved)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):
    """No gradient is recorded inside (`with hwport.no_grad():` or `@hwport.no_grad()`)."""

    _mode = False


class enable_grad(_GradMode):
    """Gradients are recorded inside, even within no_grad."""

    _mode = True


class set_grad_enabled(_GradMode):
    """Grad mode on or off: a call (`set_grad_enabled(False)`) or a context manager."""

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._saved = _core.is_grad_enabled()
        _core.set_grad_enabled(self._mode)

    def __enter__(self) -> None:
        pass


def is_grad_enabled() -> bool:
    """Whether ops record gradients on this thread."""
    return _core.is_grad_enabled()


def _tensors(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for i, t in enumerate(items):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{what}[{i}] must be a Tensor, got {type(t).__name__}")
    return items


def _no_dump(fn: str, path: Any) -> None:
    if path is not None:
        raise NotImplementedError(f"{fn}: dump_backward_graph_path is not supported (only None)")


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool = False, *, dump_backward_graph_path: str | None = None) -> None:
    """Paddle's paddle.autograd.backward: backward from several tensors at once."""
    _no_dump("backward", dump_backward_graph_path)
    outs = _tensors(tensors, "backward: tensors")
    grads = _tensors(grad_tensors, "backward: grad_tensors")
    if grads and len(grads) != len(outs):
        raise ValueError(f"backward: {len(outs)} tensors but {len(grads)} grad_tensors")
    _core.autograd_backward(outs, grads or None, bool(retain_graph))


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool = False,
         no_grad_vars: Any = None, *,
         dump_backward_graph_path: str | None = None) -> list[Tensor | None]:
    """The gradients of `outputs` with respect to `inputs` (Paddle's paddle.grad), returned
    instead of accumulated into .grad. create_graph=True records them, for higher orders;
    retain_graph defaults to create_graph."""
    if not only_inputs:
        raise NotImplementedError("grad: only_inputs=False is not supported (Paddle ignores it)")
    if no_grad_vars is not None:
        raise NotImplementedError("grad: no_grad_vars is not supported")
    _no_dump("grad", dump_backward_graph_path)
    outs = _tensors(outputs, "grad: outputs")
    ins = _tensors(inputs, "grad: inputs")
    if not ins:
        raise ValueError("grad: inputs must name at least one tensor")
    grads = _tensors(grad_outputs, "grad: grad_outputs")
    if grads and len(grads) != len(outs):
        raise ValueError(f"grad: {len(outs)} outputs but {len(grads)} grad_outputs")
    retain = create_graph if retain_graph is None else retain_graph
    return _core.autograd_grad(outs, ins, grads or None, bool(retain), bool(create_graph),
                               bool(allow_unused))


# isort: split
from hwport.py_layer import PyLayer, PyLayerContext  # noqa: E402 (after the grad-mode helpers)
