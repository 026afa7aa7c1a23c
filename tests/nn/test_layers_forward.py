"""Layer forwards against the torch CPU module holding the same weights (skipped without torch)
and against numpy; Dropout's masks against the op library's Philox reference."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
import hwport.nn as nn
import hwport.nn.functional as F
from hwport.phi_ops import philox
from tests.nn.helpers import opencl_place


def _torch():
    return pytest.importorskip("torch")


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_linear_equals_torch() -> None:
    torch = _torch()
    lin = nn.Linear(5, 7)
    x = _rand(3, 4, 5)
    ref = torch.nn.Linear(5, 7)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(lin.weight.numpy().T))  # Paddle [in, out]
        ref.bias.copy_(torch.from_numpy(lin.bias.numpy()))
    want = ref(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(lin(hwport.to_tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lin(hwport.to_tensor(x)).numpy(),
                               x @ lin.weight.numpy() + lin.bias.numpy(), rtol=1e-5, atol=1e-5)


def test_layernorm_and_rmsnorm_equal_torch() -> None:
    torch = _torch()
    x = _rand(2, 3, 4, 6)
    ln = nn.LayerNorm([4, 6], epsilon=1e-5)
    ln.set_state_dict({"weight": _rand(4, 6, seed=1), "bias": _rand(4, 6, seed=2)})
    want = torch.nn.functional.layer_norm(
        torch.from_numpy(x), [4, 6], torch.from_numpy(ln.weight.numpy()),
        torch.from_numpy(ln.bias.numpy()), 1e-5).numpy()
    np.testing.assert_allclose(ln(hwport.to_tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    rms = nn.RMSNorm(6, epsilon=1e-6)
    np.testing.assert_array_equal(rms.weight.numpy(), np.ones(6, np.float32))
    rms.set_state_dict({"weight": _rand(6, seed=3)})
    want = torch.nn.functional.rms_norm(torch.from_numpy(x), [6],
                                        torch.from_numpy(rms.weight.numpy()), 1e-6).numpy()
    np.testing.assert_allclose(rms(hwport.to_tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    bare = nn.LayerNorm(6, weight_attr=False, bias_attr=False)
    assert bare.weight is None and bare.bias is None and bare.parameters() == []
    want = torch.nn.functional.layer_norm(torch.from_numpy(x), [6]).numpy()
    np.testing.assert_allclose(bare(hwport.to_tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
    assert nn.RMSNorm(6, elementwise_affine=False).parameters() == []
    with pytest.raises(TypeError, match="LayerNorm: normalized_shape"):
        nn.LayerNorm("6")


def test_embedding_equals_torch_and_padding_idx() -> None:
    torch = _torch()
    emb = nn.Embedding(10, 4)
    idx = np.array([[1, 2, 9], [0, 0, 3]], np.int64)
    want = torch.nn.functional.embedding(torch.from_numpy(idx),
                                         torch.from_numpy(emb.weight.numpy())).numpy()
    np.testing.assert_array_equal(emb(hwport.to_tensor(idx)).numpy(), want)
    padded = nn.Embedding(10, 4, padding_idx=-1)
    w = padded.weight.numpy()
    np.testing.assert_array_equal(w[9], np.zeros(4))
    assert np.all(w[:9] != 0)
    out = padded(hwport.to_tensor(idx)).numpy()
    np.testing.assert_array_equal(out[0, 2], np.zeros(4))
    np.testing.assert_array_equal(out[0, 0], w[1])
    given = nn.Embedding(3, 2, _weight=hwport.to_tensor(np.arange(6.0).reshape(3, 2)))
    np.testing.assert_array_equal(given.weight.numpy(), np.arange(6.0).reshape(3, 2))
    with pytest.raises(NotImplementedError, match="max_norm"):
        nn.Embedding(3, 2, max_norm=1.0)
    with pytest.raises(ValueError, match="padding_idx must be in"):
        nn.Embedding(3, 2, padding_idx=3)
    with pytest.raises(ValueError, match="num_embeddings must be > 0"):
        nn.Embedding(0, 2)


def test_activations_equal_torch() -> None:
    torch = _torch()
    x = _rand(4, 5)
    t = torch.from_numpy(x)
    cases = [
        (nn.ReLU(), torch.relu(t)), (nn.GELU(), torch.nn.functional.gelu(t)),
        (nn.GELU(approximate=True), torch.nn.functional.gelu(t, approximate="tanh")),
        (nn.GELU("tanh"), torch.nn.functional.gelu(t, approximate="tanh")),
        (nn.SiLU(), torch.nn.functional.silu(t)), (nn.Sigmoid(), torch.sigmoid(t)),
        (nn.Tanh(), torch.tanh(t)), (nn.Softmax(axis=0), torch.softmax(t, 0)),
        (nn.Softmax(), torch.softmax(t, -1)), (nn.Identity(), t),
    ]
    for layer, want in cases:
        np.testing.assert_allclose(layer(hwport.to_tensor(x)).numpy(), want.numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=repr(layer))
    with pytest.raises(ValueError, match="GELU: approximate"):
        nn.GELU("fast")


def _torch_mha(torch, layer: nn.MultiHeadAttention):
    e = layer.embed_dim
    ref = torch.nn.MultiheadAttention(e, layer.num_heads, batch_first=True, bias=True)
    with torch.no_grad():
        ws = [getattr(layer, n).weight.numpy().T for n in ("q_proj", "k_proj", "v_proj")]
        bs = [getattr(layer, n).bias.numpy() for n in ("q_proj", "k_proj", "v_proj")]
        ref.in_proj_weight.copy_(torch.from_numpy(np.concatenate(ws, 0)))
        ref.in_proj_bias.copy_(torch.from_numpy(np.concatenate(bs, 0)))
        ref.out_proj.weight.copy_(torch.from_numpy(layer.out_proj.weight.numpy().T))
        ref.out_proj.bias.copy_(torch.from_numpy(layer.out_proj.bias.numpy()))
    return ref.eval()


def test_multihead_attention_equals_torch() -> None:
    torch = _torch()
    hwport.seed(7)
    mha = nn.MultiHeadAttention(16, 4)
    ref = _torch_mha(torch, mha)
    q, kv = _rand(2, 5, 16, seed=1), _rand(2, 7, 16, seed=2)
    want, _ = ref(torch.from_numpy(q), torch.from_numpy(q), torch.from_numpy(q))
    got = mha(hwport.to_tensor(q))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    # cross attention with a bool mask (Paddle: True keeps; torch: True masks out)
    keep = np.random.default_rng(3).random((5, 7)) > 0.3
    keep[:, 0] = True
    want, weights = ref(torch.from_numpy(q), torch.from_numpy(kv), torch.from_numpy(kv),
                        attn_mask=torch.from_numpy(~keep), average_attn_weights=False)
    got = mha(hwport.to_tensor(q), hwport.to_tensor(kv), hwport.to_tensor(kv),
              attn_mask=hwport.to_tensor(keep))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    # need_weights: the per-head attention weights
    mha.need_weights = True
    got, got_w = mha(hwport.to_tensor(q), hwport.to_tensor(kv), hwport.to_tensor(kv),
                     attn_mask=hwport.to_tensor(keep))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_w.numpy(), weights.detach().numpy(), rtol=1e-4, atol=1e-6)
    with pytest.raises(NotImplementedError, match="cache"):
        mha(hwport.to_tensor(q), cache=object())
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="3-D Tensor"):
        mha(hwport.to_tensor(q[0]))


def test_dropout_layer_follows_the_seed_and_the_philox_reference() -> None:
    x = np.ones((64, 64), np.float32)
    drop = nn.Dropout(0.25)
    hwport.seed(11)
    seed, offset = hwport.get_rng_state()
    a = drop(hwport.to_tensor(x)).numpy()
    assert hwport.get_rng_state() == (seed, offset + x.size)  # the offset advances
    b = drop(hwport.to_tensor(x)).numpy()
    assert not np.array_equal(a, b)  # fresh masks per call
    u = philox.unit(x.size, 11, 0, "float32").reshape(x.shape)
    np.testing.assert_array_equal(a, np.where(u >= 0.25, np.float32(1 / 0.75), 0))
    assert abs((a == 0).mean() - 0.25) < 0.03
    hwport.seed(11)
    np.testing.assert_array_equal(drop(hwport.to_tensor(x)).numpy(), a)  # repeatable
    drop.eval()
    np.testing.assert_array_equal(drop(hwport.to_tensor(x)).numpy(), x)
    np.testing.assert_array_equal(F.dropout(hwport.to_tensor(x), 0.5, training=False).numpy(), x)
    with pytest.raises(ValueError, match="Dropout: p must be"):
        nn.Dropout(1.5)
    with pytest.raises(NotImplementedError, match="axis"):
        nn.Dropout(0.5, axis=1)
    place = opencl_place()
    if place is None:
        pytest.skip("no OpenCL device")
    hwport.seed(11)
    drop.train()
    on_cl = drop(hwport.to_tensor(x, place=place))
    assert str(on_cl.place) == place
    np.testing.assert_array_equal(on_cl.numpy(), a)


class _TinyGPTBlock(nn.Layer):
    """Paddle-style user code: pre-norm attention + MLP, tied embedding head."""

    def __init__(self, vocab: int = 11, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiHeadAttention(d, heads, dropout=0.1)
        self.ln2 = nn.RMSNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d),
                                 nn.Dropout(0.1))

    def forward(self, idx: hwport.Tensor) -> hwport.Tensor:
        h = self.emb(idx)
        t = idx.shape[1]
        causal = hwport.tril(hwport.ones([t, t])) > 0.5
        h = h + self.attn(self.ln1(h), attn_mask=causal)
        h = h + self.mlp(self.ln2(h))
        return hwport.matmul(h, self.emb.weight, transpose_y=True)


def _seeded_loss(place: str) -> tuple[np.ndarray, float]:
    previous = hwport.get_device()
    hwport.set_device(place)
    try:
        hwport.seed(2024)
        model = _TinyGPTBlock()
        idx = hwport.to_tensor(np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]))
        logits = model(idx)
        loss = nn.CrossEntropyLoss()(logits, hwport.to_tensor(np.array([[2, 3, 4, 5, 6],
                                                                         [7, 8, 9, 10, 0]])))
        return logits.numpy(), float(loss.numpy())
    finally:
        hwport.set_device(previous)


def test_seeded_model_gives_the_same_loss_on_cpu_and_opencl() -> None:
    logits, loss = _seeded_loss("custom:cpu:0")
    again, loss_again = _seeded_loss("custom:cpu:0")
    np.testing.assert_array_equal(logits, again)
    assert loss == loss_again and np.isfinite(loss)
    place = opencl_place()
    if place is None:
        pytest.skip("no OpenCL device")
    cl_logits, cl_loss = _seeded_loss(place)
    np.testing.assert_allclose(cl_logits, logits, rtol=1e-4, atol=1e-5)
    assert abs(cl_loss - loss) <= 1e-5 * abs(loss)
