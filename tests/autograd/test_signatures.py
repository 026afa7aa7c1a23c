"""The autograd API's parameters against Paddle 3.3.1's (recorded here from real Paddle with
inspect.signature; Paddle is not a dependency)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import hwport

# name -> Paddle's parameters (name, default or "<required>"), keyword-only ones after "*"
PADDLE = {
    "grad": [("outputs", "<required>"), ("inputs", "<required>"), ("grad_outputs", None),
             ("retain_graph", None), ("create_graph", False), ("only_inputs", True),
             ("allow_unused", False), ("no_grad_vars", None), "*",
             ("dump_backward_graph_path", None)],
    "autograd.backward": [("tensors", "<required>"), ("grad_tensors", None),
                          ("retain_graph", False), "*", ("dump_backward_graph_path", None)],
    "set_grad_enabled": [("mode", "<required>")],
    "is_grad_enabled": [],
    "no_grad": [],
    "enable_grad": [],
}


def _params(fn) -> list:
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and "*" not in out:
            out.append("*")
        out.append((p.name, "<required>" if p.default is p.empty else p.default))
    return out


@pytest.mark.parametrize("name", sorted(PADDLE))
def test_functions_take_paddles_parameters(name: str) -> None:
    obj = hwport
    for part in name.split("."):
        obj = getattr(obj, part)
    assert _params(obj) == PADDLE[name]


def test_tensor_methods_take_paddles_parameters() -> None:
    x = hwport.to_tensor(np.ones(2, np.float32))
    x.stop_gradient = False
    y = (x * 2.0).sum()
    y.backward(None, True, dump_backward_graph_path=None)  # Paddle's positional order
    y.backward(grad_tensor=None, retain_graph=False)
    with pytest.raises(NotImplementedError, match="dump_backward_graph_path"):
        (x * 2.0).sum().backward(dump_backward_graph_path="g.dot")
    x.clear_grad()  # Paddle: no parameters, sets zeros
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    with pytest.raises(TypeError):
        x.clear_grad(False)
    x.clear_gradient(False)
    assert x.grad is None
    h = x.register_hook(hook=lambda g: g)
    assert h.remove()
