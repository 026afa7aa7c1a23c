"""hwport.jit: dynamic to static. `to_static` captures a function or a layer's forward into a
PIR program through the pipeline's trace layer and runs it through the C++ executor;
`save` / `load` write and read the program (text) with its parameters (safetensors)."""

from __future__ import annotations

from typing import Any

from .capture import CaptureBreak
from .serialization import TranslatedLayer, load, save
from .static_function import StaticCaptureError, StaticFunction, check_backend, enable_to_static


def to_static(function: Any = None, input_spec: Any = None, build_strategy: Any = None,
              backend: Any = None, full_graph: bool = True, **kwargs: Any) -> Any:
    """Paddle's jit.to_static, as a decorator (with or without arguments) or a call, on a
    function or an nn.Layer (its forward is replaced; the layer is returned). `input_spec`:
    a list of hwport.static.InputSpec for the tensor arguments in order (None / -1 dims are
    symbolic). full_graph=True raises where the function cannot be one program (a Python
    `if` on a tensor's value, ...); full_graph=False runs such calls eagerly (graph break).
    `backend="CINN"` compiles the program with the fusion compiler (hwport.cinn_backends:
    fused groups become generated kernels on devices with a codegen target; HWPORT_CINN=0
    turns it off); None runs it on the device's kernels. `build_strategy` is accepted for
    Paddle's signature and unused."""
    if kwargs:
        raise TypeError(f"to_static: unexpected argument(s) {sorted(kwargs)}")
    if not isinstance(full_graph, bool):
        raise TypeError(f"to_static: full_graph must be a bool, got {full_graph!r}")
    backend = check_backend(backend, "to_static")

    def decorate(fn: Any) -> Any:
        from hwport.nn import Layer

        if isinstance(fn, Layer):
            forward = type(fn).forward
            fn.__dict__["forward"] = StaticFunction(forward, input_spec, full_graph, layer=fn,
                                                     backend=backend)
            return fn
        if isinstance(fn, StaticFunction):
            return fn
        if not callable(fn):
            raise TypeError(f"to_static: expected a function or an nn.Layer, got "
                            f"{type(fn).__name__}")
        if hasattr(fn, "__self__") and isinstance(fn.__self__, Layer):  # layer.forward
            return StaticFunction(fn.__func__, input_spec, full_graph, layer=fn.__self__,
                                  backend=backend)
        return StaticFunction(fn, input_spec, full_graph, backend=backend)

    return decorate if function is None else decorate(function)




__all__ = ["CaptureBreak", "StaticCaptureError", "StaticFunction", "TranslatedLayer",
           "enable_to_static", "load", "save", "to_static"]
