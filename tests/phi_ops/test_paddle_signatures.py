"""The public functions take Paddle's parameters (names, order, defaults) -- ops.yaml `api`
where they differ from the op's own. The expected lists are Paddle 3's documented signatures
(checked side by side with paddlepaddle 3.3, CPU), written out here rather than derived from
ops.yaml, so a generator change that breaks them fails."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import hwport
import hwport.nn.functional as F

# name -> Paddle's leading parameters (Paddle's trailing `name` is checked separately).
PADDLE = {
    "sum": ["x", "axis", "dtype", "keepdim"],
    "mean": ["x", "axis", "keepdim"],
    "var": ["x", "axis", "unbiased", "keepdim"],
    "std": ["x", "axis", "unbiased", "keepdim"],
    "concat": ["x", "axis"],
    "stack": ["x", "axis"],
    "split": ["x", "num_or_sections", "axis"],
    "tile": ["x", "repeat_times"],
    "slice": ["input", "axes", "starts", "ends"],
    "cumsum": ["x", "axis"],
    "cumprod": ["x", "dim"],
    "take_along_axis": ["arr", "indices", "axis", "broadcast"],
    "topk": ["x", "k", "axis", "largest", "sorted"],
    "eye": ["num_rows", "num_columns", "dtype"],
    "matmul": ["x", "y", "transpose_x", "transpose_y"],
    "clip": ["x", "min", "max"],
    "reshape": ["x", "shape"],
    "transpose": ["x", "perm"],
    "where": ["condition", "x", "y"],
    "gather": ["x", "index", "axis"],
    "nn.layer_norm": ["x", "normalized_shape", "weight", "bias", "epsilon"],
    "nn.rms_norm": ["input", "normalized_shape", "weight", "eps"],
    "nn.softmax": ["x", "axis", "dtype"],
    "nn.log_softmax": ["x", "axis", "dtype"],
    "nn.gelu": ["x", "approximate"],
    "nn.softplus": ["x", "beta", "threshold"],
    "nn.embedding": ["x", "weight", "padding_idx", "max_norm", "norm_type", "sparse"],
    "nn.dropout": ["x", "p", "axis", "training"],
    "nn.cross_entropy": ["input", "label", "weight", "ignore_index", "reduction",
                         "soft_label", "axis", "use_softmax", "label_smoothing"],
    "nn.pad": ["x", "pad", "mode", "value"],
}


def _fn(key: str):
    return getattr(F, key[3:]) if key.startswith("nn.") else getattr(hwport, key)


@pytest.mark.parametrize("key", sorted(PADDLE))
def test_leading_parameters_are_paddles(key):
    params = list(inspect.signature(_fn(key)).parameters)
    assert params[:len(PADDLE[key])] == PADDLE[key], params
    assert "name" in params, f"{key} must take Paddle's name=None"


def test_defaults_are_paddles():
    sig = inspect.signature(F.rms_norm)
    assert sig.parameters["eps"].default == 1e-5
    assert inspect.signature(F.layer_norm).parameters["epsilon"].default == 1e-5
    assert inspect.signature(hwport.sum).parameters["keepdim"].default is False
    assert inspect.signature(F.cross_entropy).parameters["ignore_index"].default == -100


def _t(a):
    return hwport.to_tensor(a, place="custom:cpu")


def test_calls_in_paddles_positional_form_match_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 6)).astype(np.float32)
    w = rng.standard_normal(6).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    got = F.layer_norm(_t(x), [6], _t(w), _t(b), 1e-3).numpy()
    want = torch.nn.functional.layer_norm(torch.from_numpy(x), [6], torch.from_numpy(w),
                                          torch.from_numpy(b), eps=1e-3).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got2 = F.layer_norm(_t(x), [4, 6], epsilon=1e-5).numpy()
    want2 = torch.nn.functional.layer_norm(torch.from_numpy(x), [4, 6], eps=1e-5).numpy()
    np.testing.assert_allclose(got2, want2, rtol=1e-5, atol=1e-5)
    got3 = F.rms_norm(_t(x), 6, _t(w)).numpy()
    want3 = (x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5)) * w
    np.testing.assert_allclose(got3, want3, rtol=1e-5, atol=1e-6)

    i = rng.integers(0, 5, (3, 4)).astype(np.int32)
    s = hwport.sum(_t(i), 1, "float64", True)  # Paddle's order: axis, dtype, keepdim
    assert s.dtype == hwport.float64 and list(s.shape) == [3, 1]
    np.testing.assert_array_equal(s.numpy(), i.sum(1, keepdims=True, dtype=np.float64))
    v = hwport.var(_t(x), 1, False, True)  # axis, unbiased, keepdim
    np.testing.assert_allclose(v.numpy(), x.var(1, keepdims=True), rtol=1e-5)

    parts = hwport.split(_t(x), num_or_sections=[1, 3], axis=1)
    assert [list(p.shape) for p in parts] == [[3, 1, 6], [3, 3, 6]]
    cat = hwport.concat(x=[_t(x), _t(x)], axis=2, name="joined")
    np.testing.assert_array_equal(cat.numpy(), np.concatenate([x, x], axis=2))
    tiled = hwport.tile(_t(w), repeat_times=[2])
    np.testing.assert_array_equal(tiled.numpy(), np.tile(w, 2))
    idx = np.array([[0], [2], [1]], np.int64)
    picked = hwport.take_along_axis(arr=_t(x[:, :, 0]), indices=_t(idx), axis=1)
    np.testing.assert_array_equal(picked.numpy(), np.take_along_axis(x[:, :, 0], idx, 1))
    np.testing.assert_array_equal(hwport.cumprod(_t(w), dim=0).numpy(),
                                  np.cumprod(w, dtype=np.float32))
    np.testing.assert_array_equal(hwport.eye(num_rows=2, num_columns=3).numpy(), np.eye(2, 3))


def test_errors_name_the_public_parameters():
    x = _t(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \[5\] must equal"):
        F.layer_norm(x, [5])
    with pytest.raises(ValueError, match=r"split: num_or_sections"):
        hwport.split(x, num_or_sections=3, axis=1)
    with pytest.raises(ValueError, match=r"concat: x\[1\]"):
        hwport.concat([x, _t(np.zeros((2, 5), np.float32))])
    with pytest.raises(NotImplementedError, match=r"cross_entropy: soft_label=True"):
        hwport.cross_entropy(x, _t(np.zeros(3, np.int64)), soft_label=True)
    with pytest.raises(NotImplementedError, match=r"pad: mode='reflect'"):
        F.pad(x, [1, 1, 1, 1], mode="reflect")
    with pytest.raises(TypeError, match=r"normalized_shape"):
        F.layer_norm(x, [4.0])
