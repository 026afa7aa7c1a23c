"""PyLayer (Paddle's paddle.autograd.PyLayer): Python forward/backward as one node of the C++
engine, checked against closed-form gradients and torch."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport.autograd import PyLayer, PyLayerContext


class Cube(PyLayer):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensor()
        return grad * 3.0 * x * x


class ScaleAndShift(PyLayer):
    """Two tensor inputs (one may need no gradient), a Python scalar, two outputs."""

    @staticmethod
    def forward(ctx, x, y, factor):
        ctx.factor = factor
        return x * factor, x + y

    @staticmethod
    def backward(ctx, g_scaled, g_sum):
        return g_scaled * ctx.factor + g_sum, g_sum


class Identity(PyLayer):
    """Returns its input object: the output still gets its own node (Megatron's f)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2.0


def _leaf(values) -> hwport.Tensor:
    t = hwport.to_tensor(np.asarray(values, np.float32))
    t.stop_gradient = False
    return t


def test_custom_gradient_is_used() -> None:
    x = _leaf([1.0, -2.0, 3.0])
    Cube.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([1.0, 4.0, 9.0]), rtol=1e-6)


def test_the_node_sits_inside_a_graph_of_ordinary_ops() -> None:
    torch = pytest.importorskip("torch")
    data = np.array([0.5, -1.5, 2.0], np.float32)
    x = _leaf(data)
    y = hwport.exp(Cube.apply(x * 2.0)).mean()
    y.backward()
    tx = torch.tensor(data, requires_grad=True)
    torch.exp((tx * 2) ** 3).mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)


def test_several_inputs_and_outputs() -> None:
    x = _leaf([1.0, 2.0])
    y = _leaf([10.0, 20.0])
    a, b = ScaleAndShift.apply(x, y, 4.0)
    (a.sum() + (b * b).sum()).backward()
    # da/dx = 4, d(b^2)/dx = 2b, d(b^2)/dy = 2b
    b_np = np.array([11.0, 22.0])
    np.testing.assert_allclose(x.grad.numpy(), 4.0 + 2 * b_np)
    np.testing.assert_allclose(y.grad.numpy(), 2 * b_np)


def test_an_input_without_gradient_and_an_unused_output() -> None:
    x = _leaf([1.0, 2.0])
    y = hwport.to_tensor(np.array([5.0, 6.0], np.float32))  # stop_gradient=True
    a, _ = ScaleAndShift.apply(x, y, 3.0)
    a.sum().backward()  # b unused: its gradient arrives as zeros
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert y.grad is None


def test_identity_forward_gets_its_own_node() -> None:
    x = _leaf([1.0, 2.0])
    out = Identity.apply(x)
    assert out is not x and not out.stop_gradient
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_no_node_without_a_gradient_to_compute() -> None:
    x = hwport.to_tensor(np.array([1.0], np.float32))
    assert Cube.apply(x).stop_gradient
    x2 = _leaf([1.0])
    with hwport.no_grad():
        assert Cube.apply(x2).stop_gradient


def test_non_differentiable_outputs() -> None:
    class ArgMaxAndValue(PyLayer):
        @staticmethod
        def forward(ctx, x):
            idx = hwport.argmax(x)
            ctx.mark_non_differentiable(idx)
            return x.max(), idx

        @staticmethod
        def backward(ctx, g_value, g_idx):
            assert g_idx is None  # the non-differentiable output gets no gradient
            return hwport.to_tensor(np.array([0.0, 1.0, 0.0], np.float32)) * g_value

    x = _leaf([1.0, 5.0, 2.0])
    value, idx = ArgMaxAndValue.apply(x)
    assert idx.stop_gradient and not value.stop_gradient
    (value * 2.0).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 2.0, 0.0])


def test_a_gradient_of_the_wrong_shape_is_a_clear_error() -> None:
    class WrongShape(PyLayer):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, grad):
            return grad  # [] for a [3] input

    x = _leaf([1.0, 5.0, 2.0])
    with pytest.raises(ValueError, match="backward of PyLayer 'WrongShape' gave its tensor "
                                         r"input 0 a gradient of shape \[\]"):
        WrongShape.apply(x).backward()


def test_wrong_number_of_gradients_is_a_clear_error() -> None:
    class Bad(PyLayer):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, grad):
            return grad

    x, y = _leaf([1.0]), _leaf([2.0])
    with pytest.raises(ValueError, match=r"Bad\.backward returned 1 gradients; forward had 2"):
        Bad.apply(x, y).backward()


def test_second_backward_needs_retain_graph() -> None:
    x = _leaf([2.0])
    y = Cube.apply(x)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [24.0])


def test_context_api_is_paddles() -> None:
    for name in ("save_for_backward", "saved_tensor", "mark_not_inplace",
                 "mark_non_differentiable", "set_materialize_grads"):
        assert callable(getattr(PyLayerContext, name))
    assert hwport.autograd.PyLayer is PyLayer
