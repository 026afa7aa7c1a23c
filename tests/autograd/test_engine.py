"""The autograd engine's semantics (Paddle's): stop_gradient, backward, accumulation, retain_graph,
hwport.grad, no_grad, hooks, retain_grads, saved-tensor versions, graph release, double
backward; and gradients of a small network against PyTorch's autograd on every place."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import hwport
from hwport.runtime import _core

RNG = np.random.default_rng(0)


def leaf(a, place: str = "custom:cpu"):
    t = hwport.to_tensor(np.asarray(a, dtype=np.float32), place=place)
    t.stop_gradient = False
    return t


def test_stop_gradient_defaults_and_propagation():
    x = hwport.to_tensor(np.ones(3, np.float32))
    assert x.stop_gradient and x.is_leaf and x.grad is None
    w = leaf(np.ones(3))
    assert not w.stop_gradient
    y = x * w
    assert not y.stop_gradient and not y.is_leaf and y._grad_fn_name == "multiply"
    assert (x * x).stop_gradient  # nothing needing a gradient went in
    assert hwport.argmax(y).stop_gradient  # integer outputs never need one
    assert hwport.less_than(y, x).stop_gradient


def test_backward_accumulates_and_broadcasts():
    x = leaf(RNG.standard_normal((2, 3)))
    b = leaf(RNG.standard_normal(3))
    (x * b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(b.numpy(), (2, 3)), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), x.numpy().sum(0), rtol=1e-6)
    (x * b).sum().backward()  # a new graph: .grad accumulates, as in Paddle
    np.testing.assert_allclose(b.grad.numpy(), 2 * x.numpy().sum(0), rtol=1e-6)
    x.clear_grad()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3), np.float32))
    x.clear_gradient(set_to_zero=False)
    assert x.grad is None


def test_zeroed_grads_hold_no_memory_until_read():
    """clear_grad() (set_to_zero) gives zeros as Paddle does, but holds no memory for them until
    .grad is read, and the next backward's gradient takes their place instead of being added."""
    place = "custom:cpu"
    x = leaf(RNG.standard_normal((64, 64)))
    w = leaf(RNG.standard_normal((64, 64)))
    (x * w).sum().backward()
    gc.collect()
    with_grads = hwport.device.memory_stats(place)["requested_bytes"]
    x.clear_grad()
    w.clear_gradient(set_to_zero=True)
    gc.collect()
    freed = with_grads - hwport.device.memory_stats(place)["requested_bytes"]
    assert freed >= 2 * 64 * 64 * 4  # both gradients' storage went back
    (x * w).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), w.numpy())  # w's value, not w + stale
    np.testing.assert_array_equal(w.grad.numpy(), x.numpy())
    x.clear_grad()
    zeros = x.grad  # read: made now, and kept
    assert zeros.shape == [64, 64] and zeros.dtype == hwport.float32
    np.testing.assert_array_equal(zeros.numpy(), np.zeros((64, 64), np.float32))
    assert x.grad is zeros
    (x * w).sum().backward()  # accumulates onto the zeros it made
    (x * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * w.numpy(), rtol=1e-6)
    x.clear_grad()
    x.clear_gradient(set_to_zero=False)  # zeros pending, then none at all
    assert x.grad is None
    x.clear_grad()  # no gradient: stays None (Paddle's clear_grad needs one to zero)
    assert x.grad is None


def test_backward_twice_needs_retain_graph():
    x = leaf([1.0, 2.0])
    y = (hwport.exp(x) * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1, 2]) * (1 + np.array([1, 2])),
                               rtol=1e-5)
    with pytest.raises(RuntimeError, match=r"freed by an earlier backward.*retain_graph=True"):
        y.backward()


def test_non_scalar_needs_grad_tensor():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2.0
    with pytest.raises(RuntimeError, match=r"shape \[3\].*grad_tensor"):
        y.backward()
    y.backward(hwport.to_tensor(np.array([1.0, 0.0, -1.0], np.float32)))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, -2.0])
    with pytest.raises(ValueError, match="grad_tensor 0 has shape"):
        (x * 2.0).backward(hwport.to_tensor(np.ones(2, np.float32)))


def test_backward_of_a_tensor_without_history_is_an_error():
    with pytest.raises(RuntimeError, match="stop_gradient=True"):
        hwport.to_tensor(np.ones(1, np.float32)).backward()


def test_no_grad_context_and_decorator():
    x = leaf([1.0, 2.0])
    with hwport.no_grad():
        assert not hwport.is_grad_enabled()
        assert (x * x).stop_gradient
        with hwport.enable_grad():
            assert not (x * x).stop_gradient
    assert hwport.is_grad_enabled()

    @hwport.no_grad()
    def f(t):
        return hwport.exp(t)

    assert f(x).stop_gradient and hwport.is_grad_enabled()


def test_in_place_change_of_a_saved_tensor_is_an_error():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    y = (x * w).sum()  # multiply saves x and w
    with hwport.no_grad():
        w.set_value(hwport.to_tensor(np.array([5.0, 6.0], np.float32)))
    assert w._version() == 1
    np.testing.assert_array_equal(w.numpy(), [5.0, 6.0])
    with pytest.raises(RuntimeError, match=r"modified in place.*version 0, now 1"):
        y.backward()


def test_set_value_checks_its_argument():
    x = hwport.to_tensor(np.zeros((2, 2), np.float32))
    x.set_value(np.arange(4, dtype=np.float64).reshape(2, 2))  # cast to the tensor's dtype
    np.testing.assert_array_equal(x.numpy(), [[0, 1], [2, 3]])
    with pytest.raises(ValueError, match=r"shape \[3\] for a tensor of shape \[2, 2\]"):
        x.set_value(np.zeros(3))
    np.testing.assert_array_equal(x.numpy(), [[0, 1], [2, 3]])  # unchanged


def test_hooks_replace_the_gradient_and_remove():
    x = leaf([1.0, 2.0])
    y = x * 3.0
    seen = []
    h = y.register_hook(lambda g: (seen.append(g.numpy()), g * 2.0)[1])
    y.sum().backward()
    np.testing.assert_array_equal(seen[0], [1.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])
    assert h.remove() and not h.remove()
    x.clear_gradient(False)
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    hx = x.register_hook(lambda g: g * 0.0)  # a leaf's hook runs before accumulation
    x.clear_gradient(False)
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    hx.remove()
    with pytest.raises(RuntimeError, match="stop_gradient=True"):
        hwport.to_tensor(np.ones(1, np.float32)).register_hook(lambda g: g)


def test_retain_grads_keeps_an_intermediate_gradient():
    x = leaf([1.0, 2.0])
    y = x * x
    y.retain_grads()
    z = x * x
    (y * 2.0 + z).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 2.0])
    assert z.grad is None


def test_grad_returns_without_accumulating():
    x = leaf([1.0, 2.0])
    u = leaf([5.0])
    y = (x * x).sum()
    (gx,) = hwport.grad(y, x, retain_graph=True)
    np.testing.assert_array_equal(gx.numpy(), [2.0, 4.0])
    assert x.grad is None
    with pytest.raises(RuntimeError, match=r"inputs\[1\] was not used.*allow_unused=True"):
        hwport.grad(y, [x, u], retain_graph=True)
    gx, gu = hwport.grad(y, [x, u], allow_unused=True)
    assert gu is None
    # a non-leaf input
    x2 = leaf([3.0])
    m = x2 * 2.0
    (gm,) = hwport.grad((m * m).sum(), m)
    np.testing.assert_array_equal(gm.numpy(), [12.0])


def test_double_backward_with_create_graph():
    x = leaf([0.5, -1.0, 2.0])
    y = (hwport.sin(x) * x).sum()
    (g,) = hwport.grad(y, x, create_graph=True)
    assert not g.stop_gradient
    (gg,) = hwport.grad(g.sum(), x)
    xv = x.numpy().astype(np.float64)
    np.testing.assert_allclose(g.numpy(), np.cos(xv) * xv + np.sin(xv), rtol=1e-5)
    np.testing.assert_allclose(gg.numpy(), 2 * np.cos(xv) - xv * np.sin(xv), rtol=1e-5)


def test_integer_inputs_get_no_gradient():
    x = leaf([1.0, 2.0, 3.0])
    i = hwport.to_tensor(np.array([2, 0], np.int64))
    y = hwport.gather(x, i)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 1.0])
    assert i.grad is None
    # asked for explicitly, an integer tensor still gets none: it is no leaf of the graph,
    # and integer results need no gradient
    j = hwport.to_tensor(np.array([1, 2, 3], np.int64))
    j.stop_gradient = False
    x.clear_gradient(False)
    (x * j.astype("float32")).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])
    assert j.grad is None
    assert (j * j).stop_gradient and hwport.gather(x, i).stop_gradient is False
    (gj,) = hwport.grad((x * j.astype("float32")).sum(), [j], allow_unused=True)
    assert gj is None


def test_graph_is_released_with_its_outputs():
    gc.collect()
    before = _core._autograd_live_nodes()
    x = leaf(RNG.standard_normal(4))
    y = hwport.tanh(x * 2.0).sum()
    assert _core._autograd_live_nodes() >= before + 3
    del y
    gc.collect()
    assert _core._autograd_live_nodes() == before
    del x
    gc.collect()
    assert _core._grad_tensors_alive() == 0


def _held_bytes() -> int:
    return hwport.device.memory_stats("custom:cpu")["requested_bytes"]


def test_a_node_keeps_only_what_the_needed_gradients_read():
    """As PyTorch's saved variables: multiply(h, mask) with mask needing no gradient keeps mask,
    not h; add(h, b) reads h only for its shape (unbroadcast), so h's memory is not kept."""
    n = 1 << 18  # 1 MiB of float32
    x = leaf(RNG.standard_normal(n))
    mask = hwport.to_tensor((RNG.random(n) < 0.5).astype(np.float32))
    b = leaf(RNG.standard_normal(1))
    for combine, grad_x, grad_b in (
            (lambda h: h * mask, mask.numpy(), None),
            (lambda h: h + b, np.ones(n, np.float32), np.float32(n))):
        x.clear_grad()
        b.clear_grad()
        h = x + 1.0  # add keeps nothing of its own
        y = combine(h)
        held = _held_bytes()
        del h  # only the node could keep it now
        assert _held_bytes() == held - 4 * n
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), grad_x, rtol=1e-6)
        if grad_b is not None:
            np.testing.assert_allclose(b.grad.numpy(), [grad_b], rtol=1e-4)
    # where both need a gradient, both are kept: x * w's gradient for w reads x
    w = leaf(RNG.standard_normal(n))
    h = x + 1.0
    y = h * w
    held = _held_bytes()
    del h
    assert _held_bytes() == held
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), x.numpy() + 1.0, rtol=1e-6)


def test_a_rule_drops_its_intermediates_after_their_last_use():
    """gelu's rule makes ten elementwise intermediates of x's size; kept to the end of the rule
    they would all be live at once (11 MiB here), dropped after their last use a few are."""
    n = 1 << 18  # 1 MiB of float32
    x = leaf(RNG.standard_normal(n))
    y = hwport.nn.functional.gelu(x)
    g = hwport.ones_like(y)
    stats = lambda: hwport.device.memory_stats("custom:cpu")  # noqa: E731
    before = stats()["requested_bytes"]
    hwport.device.reset_peak_memory_stats("custom:cpu")
    y.backward(g)
    peak = stats()["peak_requested_bytes"] - before
    assert peak <= 5 * 4 * n, f"backward of gelu held {peak / 4 / n:.1f} x its input at once"
    xs = x.numpy().astype(np.float64)
    from math import erf, exp, pi, sqrt
    want = [0.5 * (1 + erf(v / sqrt(2))) + v * exp(-v * v / 2) / sqrt(2 * pi) for v in xs[:64]]
    np.testing.assert_allclose(x.grad.numpy()[:64], want, rtol=1e-5, atol=1e-6)


def test_detach_shares_data_without_history():
    x = leaf([1.0, 2.0])
    d = (x * 2.0).detach()
    assert d.stop_gradient and d.is_leaf
    np.testing.assert_array_equal(d.numpy(), [2.0, 4.0])


def test_indexing_and_views_carry_gradients():
    x = leaf(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = x[1:, ::2].reshape([4]) * hwport.to_tensor(np.array([1, 2, 3, 4], np.float32))
    y.sum().backward()
    want = np.zeros((3, 4), np.float32)
    want[1:, ::2] = np.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(x.grad.numpy(), want)
    x2 = leaf(np.ones((2, 3)))
    (x2.T.contiguous() * 3.0).sum().backward()
    np.testing.assert_array_equal(x2.grad.numpy(), np.full((2, 3), 3.0))


def test_gradients_flow_through_tensor_to_across_devices() -> None:
    """Tensor.to(place) is recorded (as torch's .to): the gradient comes back to the leaf's
    device; .to() of the tensor's own device is the tensor itself."""
    if "opencl" not in hwport.device.get_all_custom_device_type():
        pytest.skip("custom:opencl is not available")
    x = leaf(RNG.standard_normal((3, 4)))
    w = leaf(RNG.standard_normal((3, 4)), place="custom:opencl")
    assert x.to("custom:cpu") is x
    y = (x.to("custom:opencl") * w).to("custom:cpu")
    assert not y.stop_gradient and str(y.place) == "custom:cpu:0"
    (y * y).sum().backward()
    xv, wv = x.numpy().astype(np.float64), w.numpy().astype(np.float64)
    assert str(x.grad.place) == str(x.place) and str(w.grad.place) == str(w.place)
    np.testing.assert_allclose(x.grad.numpy(), 2 * xv * wv * wv, rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), 2 * wv * xv * xv, rtol=1e-5)
    with hwport.no_grad():
        assert x.to("custom:opencl").stop_gradient


@pytest.mark.parametrize("place", ["custom:cpu", "custom:opencl"])
def test_mlp_gradients_match_torch(place: str) -> None:
    torch = pytest.importorskip("torch")
    if place.split(":")[1] not in hwport.device.get_all_custom_device_type():
        pytest.skip(f"{place} is not available")
    d, h, b = 16, 32, 4
    arrays = {"x": RNG.standard_normal((b, d)), "w1": RNG.standard_normal((d, h)) * 0.2,
              "b1": RNG.standard_normal(h) * 0.1, "w2": RNG.standard_normal((h, d)) * 0.2,
              "g": 1 + RNG.standard_normal(d) * 0.1, "beta": RNG.standard_normal(d) * 0.1}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    ours = {k: leaf(v, place) for k, v in arrays.items()}
    theirs = {k: torch.tensor(v, requires_grad=True) for k, v in arrays.items()}

    def forward(F, t, is_torch):
        hdn = F["gelu"](F["mm"](t["x"], t["w1"]) + t["b1"])
        y = F["mm"](hdn, t["w2"]) + t["x"]
        y = F["ln"](y, t["g"], t["beta"])
        return F["mean"](y * y)

    ours_f = {"gelu": hwport.nn.functional.gelu, "mm": hwport.matmul,
              "ln": lambda y, g, b: hwport.nn.functional.layer_norm(y, [d], g, b),
              "mean": hwport.mean}
    torch_f = {"gelu": torch.nn.functional.gelu, "mm": torch.matmul,
               "ln": lambda y, g, b: torch.nn.functional.layer_norm(y, [d], g, b),
               "mean": torch.mean}
    loss = forward(ours_f, ours, False)
    loss.backward()
    ref = forward(torch_f, theirs, True)
    ref.backward()
    np.testing.assert_allclose(loss.numpy(), ref.detach().numpy(), rtol=1e-5)
    for k in arrays:
        np.testing.assert_allclose(ours[k].grad.numpy(), theirs[k].grad.numpy(), rtol=2e-4,
                                   atol=1e-5, err_msg=k)


def test_rms_norm_user_code_runs_unchanged():
    """The issue's example: x.pow(2).mean(-1, keepdim=True), rsqrt, broadcasting multiplies."""
    torch = pytest.importorskip("torch")
    xv = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    weight = leaf(np.ones(8))
    x = leaf(xv)
    var = x.pow(2).mean(-1, keepdim=True)
    out = x * hwport.rsqrt(var + 1e-6) * weight
    out.sum().backward()
    xt = torch.tensor(xv, requires_grad=True)
    wt = torch.ones(8, requires_grad=True)
    (xt * torch.rsqrt(xt.pow(2).mean(-1, keepdim=True) + 1e-6) * wt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(weight.grad.numpy(), wt.grad.numpy(), rtol=1e-4, atol=1e-4)
