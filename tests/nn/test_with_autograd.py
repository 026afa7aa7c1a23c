"""Layers with autograd (skipped until hwport.Tensor has backward): gradients of parameters
against torch, frozen parameters, in-place state loading."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
import hwport.nn as nn
import hwport.nn.functional as F
from hwport.nn.loss import cross_entropy

pytestmark = pytest.mark.skipif(not hasattr(hwport.Tensor, "backward"),
                                reason="needs autograd (Tensor.backward)")


def test_parameter_is_a_real_tensor_subclass() -> None:
    lin = nn.Linear(2, 3)
    assert type(lin.weight) is nn.Parameter and lin.weight.stop_gradient is False
    assert hwport.to_tensor([1.0]).stop_gradient is True


def test_state_loading_keeps_the_parameter_objects() -> None:
    lin = nn.Linear(2, 3)
    w = lin.weight
    lin.set_state_dict({"weight": np.ones((2, 3), np.float32)})
    assert lin.weight is w
    np.testing.assert_array_equal(w.numpy(), np.ones((2, 3)))
    nn.initializer.Constant(2.0)(w)
    np.testing.assert_array_equal(w.numpy(), np.full((2, 3), 2.0))


def test_mlp_gradients_equal_torch() -> None:
    torch = pytest.importorskip("torch")
    hwport.seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    y = np.array([0, 2, 1, 1, 0])
    loss = cross_entropy(model(hwport.to_tensor(x)), hwport.to_tensor(y))
    loss.backward()
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.LayerNorm(8),
                             torch.nn.Linear(8, 3))
    with torch.no_grad():
        for (name, p), tp in zip(model.named_parameters(), tm.parameters(), strict=True):
            v = torch.from_numpy(p.numpy())
            tp.copy_(v.T if name.endswith("weight") and p.ndim == 2 else v)
    tloss = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y))
    tloss.backward()
    np.testing.assert_allclose(float(loss.numpy()), tloss.item(), rtol=1e-5)
    for (name, p), tp in zip(model.named_parameters(), tm.parameters(), strict=True):
        want = tp.grad.numpy()
        want = want.T if name.endswith("weight") and p.ndim == 2 else want
        np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-4, atol=1e-6, err_msg=name)
    model.clear_gradients()


def test_frozen_parameter_gets_no_gradient() -> None:
    lin = nn.Linear(3, 2, weight_attr=nn.ParamAttr(trainable=False))
    loss = F.mse_loss(lin(hwport.ones([4, 3])), hwport.zeros([4, 2]))
    loss.backward()
    assert lin.weight.grad is None and lin.bias.grad is not None


def test_padding_row_gets_no_gradient_and_moved_layers_still_train() -> None:
    emb = nn.Embedding(4, 3, padding_idx=0)
    out = emb(hwport.to_tensor(np.array([[0, 1, 0, 2]])))
    out.sum().backward()
    g = emb.weight.grad.numpy()
    np.testing.assert_array_equal(g[0], np.zeros(3))
    np.testing.assert_array_equal(g[1], np.ones(3))
    lin = nn.Linear(3, 2).to(dtype="float64")
    assert lin.weight.is_leaf and lin.weight.stop_gradient is False
    lin(hwport.ones([1, 3], dtype="float64")).sum().backward()
    np.testing.assert_array_equal(lin.weight.grad.numpy(), np.ones((3, 2)))
    np.testing.assert_array_equal(lin.bias.grad.numpy(), np.ones(2))


def test_dropout_gradient_is_the_mask() -> None:
    x = hwport.to_tensor(np.ones((8, 8), np.float32))
    x.stop_gradient = False
    hwport.seed(5)
    y = nn.Dropout(0.5)(x)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.numpy())


def test_attention_and_soft_label_gradients_equal_torch() -> None:
    torch = pytest.importorskip("torch")
    from tests.nn.test_layers_forward import _torch_mha

    hwport.seed(3)
    mha = nn.MultiHeadAttention(8, 2)
    ref = _torch_mha(torch, mha)
    q = np.random.default_rng(4).standard_normal((2, 5, 8)).astype(np.float32)
    soft = np.random.default_rng(5).random((2, 5, 8)).astype(np.float32)
    soft /= soft.sum(-1, keepdims=True)
    loss = cross_entropy(mha(hwport.to_tensor(q)), hwport.to_tensor(soft), soft_label=True)
    loss.backward()
    tq = torch.from_numpy(q)
    out, _ = ref(tq, tq, tq)
    tloss = torch.nn.functional.cross_entropy(out.reshape(10, 8),
                                              torch.from_numpy(soft).reshape(10, 8))
    tloss.backward()
    np.testing.assert_allclose(float(loss.numpy()), tloss.item(), rtol=1e-5)
    gq = mha.q_proj.weight.grad.numpy()
    tg = ref.in_proj_weight.grad.numpy()[:8].T  # torch's q block, [out, in] -> [in, out]
    np.testing.assert_allclose(gq, tg, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(mha.out_proj.weight.grad.numpy(),
                               ref.out_proj.weight.grad.numpy().T, rtol=1e-4, atol=1e-6)


def test_a_plain_training_loop_lowers_the_loss() -> None:
    hwport.seed(1)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2)).astype(np.float32)
    y = (x[:, :1] * x[:, 1:]).astype(np.float32)
    losses = []
    for _ in range(60):
        loss = F.mse_loss(model(hwport.to_tensor(x)), hwport.to_tensor(y))
        loss.backward()
        with hwport.no_grad():
            for p in model.parameters():
                p.set_value(p - 0.2 * p.grad)
        model.clear_gradients()
        losses.append(float(loss.numpy()))
    assert all(p.grad is None or not np.any(p.grad.numpy()) for p in model.parameters())
    assert losses[-1] < 0.5 * losses[0], losses[::10]
