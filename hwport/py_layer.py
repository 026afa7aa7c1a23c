"""PyLayer: an op whose forward and backward are Python (Paddle's `paddle.autograd.PyLayer`).

    class Scale(PyLayer):
        @staticmethod
        def forward(ctx, x, factor):
            ctx.factor = factor
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor

    y = Scale.apply(x, 3.0)

The forward runs with grad mode off; when a tensor input needs a gradient, its outputs get one
node of the C++ autograd engine, whose backward calls ``backward(ctx, *grads)`` (a gradient per
tensor output of the forward) and takes one gradient per tensor input (None where none is
needed). It is how a framework layer adds an op with a hand-written gradient, e.g. a collective
whose transpose is another collective.
"""

from __future__ import annotations

from typing import Any

from hwport.runtime import _core
from hwport.runtime._core import Tensor

# fn(new, old) per output the autograd record rewrapped (jit.to_static's capture registers one:
# both wrappers are one value of its program)
output_hooks: list[Any] = []


class PyLayerContext:
    """What forward hands to backward (Paddle's PyLayerContext)."""

    def __init__(self) -> None:
        self._saved: tuple[Any, ...] = ()
        self._non_differentiable: set[int] = set()
        self._materialize_grads = True

    def save_for_backward(self, *tensors: Any) -> None:
        self._saved = tensors

    def saved_tensor(self) -> tuple[Any, ...]:
        return self._saved

    def mark_not_inplace(self, *args: Any) -> None:
        """Accepted for Paddle's code; outputs are never the inputs' objects here."""

    def mark_non_differentiable(self, *args: Any) -> None:
        """These outputs get no gradient (stop_gradient=True)."""
        self._non_differentiable.update(id(a) for a in args)

    def set_materialize_grads(self, value: bool) -> None:
        """Accepted for Paddle's code; an output no gradient reached gets zeros either way."""
        self._materialize_grads = bool(value)

    def set_grad_in_dtype_consistent(self, flag: bool) -> None:
        """Accepted for Paddle's code; gradients are always cast to their input's dtype."""


class PyLayer:
    """Subclass with static ``forward(ctx, *args, **kwargs)`` and ``backward(ctx, *grads)``;
    call ``apply``."""

    @staticmethod
    def forward(ctx: PyLayerContext, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("PyLayer subclasses define forward(ctx, ...)")

    @staticmethod
    def backward(ctx: PyLayerContext, *grads: Any) -> Any:
        raise NotImplementedError("PyLayer subclasses define backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = PyLayerContext()
        saved_mode = _core.is_grad_enabled()
        _core.set_grad_enabled(False)
        try:
            out = cls.forward(ctx, *args, **kwargs)
        finally:
            _core.set_grad_enabled(saved_mode)
        inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        if not saved_mode or not any(not t.stop_gradient for t in inputs):
            return out
        single = not isinstance(out, (tuple, list))
        outs = [out] if single else list(out)
        tensor_slots = [i for i, o in enumerate(outs) if isinstance(o, Tensor)]
        linked = [i for i in tensor_slots if id(outs[i]) not in ctx._non_differentiable]
        if not linked:
            return out
        name = cls.__name__
        n_inputs = len(inputs)

        def backward(*grads: Any) -> tuple[Any, ...]:
            by_slot = dict(zip(linked, grads, strict=True))
            full = [by_slot.get(i) for i in tensor_slots]  # None: a non-differentiable output
            result = cls.backward(ctx, *full)
            result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
            if len(result) != n_inputs:
                raise ValueError(
                    f"{name}.backward returned {len(result)} gradients; forward had "
                    f"{n_inputs} tensor inputs (return one per tensor input, None for those "
                    "that need none)"
                )
            return result

        new = _core._record_py_layer(name, backward, inputs, tuple(outs[i] for i in linked))
        for i, t in zip(linked, new, strict=True):
            for hook in output_hooks:
                hook(t, outs[i])
            outs[i] = t
        if single:
            return outs[0]
        return tuple(outs) if isinstance(out, tuple) else outs


# Paddle's older name
LegacyPyLayer = PyLayer
