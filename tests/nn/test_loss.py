"""Losses against numpy formulas and torch CPU (skipped without torch). cross_entropy is
hwport.nn.loss's (what nn.CrossEntropyLoss runs), which wraps the op."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
import hwport.nn as nn
import hwport.nn.functional as F
from hwport.nn.loss import cross_entropy


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _t(a: np.ndarray) -> hwport.Tensor:
    return hwport.to_tensor(a)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_l1_against_numpy(reduction: str) -> None:
    x, y = _rand(4, 5), _rand(4, 5, seed=1)
    red = {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction]
    np.testing.assert_allclose(F.mse_loss(_t(x), _t(y), reduction).numpy(), red((x - y) ** 2),
                               rtol=1e-5)
    np.testing.assert_allclose(F.l1_loss(_t(x), _t(y), reduction).numpy(), red(np.abs(x - y)),
                               rtol=1e-5)
    np.testing.assert_allclose(nn.MSELoss(reduction)(_t(x), _t(y)).numpy(), red((x - y) ** 2),
                               rtol=1e-5)
    np.testing.assert_allclose(nn.L1Loss(reduction)(_t(x), _t(y)).numpy(), red(np.abs(x - y)),
                               rtol=1e-5)


def test_bce_with_logits_against_torch() -> None:
    torch = pytest.importorskip("torch")
    x, y = _rand(6, 4) * 5, np.random.default_rng(2).random((6, 4)).astype(np.float32)
    w, pw = np.abs(_rand(6, 4, seed=3)), np.abs(_rand(4, seed=4)) + 0.5
    tb = torch.nn.functional.binary_cross_entropy_with_logits
    for reduction in ("mean", "sum", "none"):
        want = tb(torch.from_numpy(x), torch.from_numpy(y), weight=torch.from_numpy(w),
                  pos_weight=torch.from_numpy(pw), reduction=reduction).numpy()
        got = F.binary_cross_entropy_with_logits(_t(x), _t(y), _t(w), reduction, _t(pw))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    want = tb(torch.from_numpy(x), torch.from_numpy(y)).numpy()
    np.testing.assert_allclose(nn.BCEWithLogitsLoss()(_t(x), _t(y)).numpy(), want, rtol=1e-5)
    big = np.array([100.0, -100.0], np.float32)  # stable at large |logit|
    np.testing.assert_allclose(
        F.binary_cross_entropy_with_logits(_t(big), _t(np.array([0.0, 1.0], np.float32)),
                                           reduction="none").numpy(), [100.0, 100.0])


def test_cross_entropy_hard_labels_against_torch() -> None:
    torch = pytest.importorskip("torch")
    x = _rand(8, 5)
    lab = np.array([0, 1, 2, 3, 4, -100, 2, 1], np.int64)
    w = np.abs(_rand(5, seed=5)) + 0.1
    tce = torch.nn.functional.cross_entropy
    tx, tl, tw = torch.from_numpy(x), torch.from_numpy(lab), torch.from_numpy(w)
    for reduction in ("mean", "sum", "none"):
        for kwargs, tkw in (({}, {}), ({"weight": _t(w)}, {"weight": tw}),
                            ({"label_smoothing": 0.1}, {"label_smoothing": 0.1})):
            if "label_smoothing" in kwargs:  # Paddle cannot smooth with ignored labels
                lab_s = np.where(lab < 0, 0, lab)
                got = cross_entropy(_t(x), _t(lab_s), reduction=reduction, **kwargs)
                want = tce(tx, torch.from_numpy(lab_s), reduction=reduction, **tkw)
            elif reduction == "mean" and not kwargs:  # Paddle's: over every row (-100 < 0)
                got = cross_entropy(_t(x), _t(lab), reduction=reduction)
                want = tce(tx, tl, reduction="sum") / len(lab)
            else:
                got = cross_entropy(_t(x), _t(lab), reduction=reduction, **kwargs)
                want = tce(tx, tl, reduction=reduction, **tkw)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{reduction} {list(kwargs)}")
    # [B, T, C] logits with [B, T] and [B, T, 1] labels (Paddle keeps the label's shape)
    x3, l3 = _rand(2, 3, 5, seed=6), np.random.default_rng(7).integers(0, 5, (2, 3))
    want = tce(torch.from_numpy(x3).reshape(6, 5), torch.from_numpy(l3).reshape(6),
               reduction="none").numpy()
    got = cross_entropy(_t(x3), _t(l3), reduction="none")
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got.numpy().ravel(), want, rtol=1e-5)
    got = cross_entropy(_t(x3), _t(l3[..., None]), reduction="none")
    assert got.shape == (2, 3, 1)
    np.testing.assert_allclose(nn.CrossEntropyLoss()(_t(x3), _t(l3)).numpy(), want.mean(),
                               rtol=1e-5)


def test_cross_entropy_soft_labels_and_probabilities() -> None:
    x = _rand(4, 5)
    soft = np.exp(_log_softmax(_rand(4, 5, seed=1))).astype(np.float32)
    lsm = _log_softmax(x)
    per_row = -(soft * lsm).sum(-1)
    got = cross_entropy(_t(x), _t(soft), soft_label=True, reduction="none")
    assert got.shape == (4, 1)  # Paddle 3.3.1: [N, 1]
    np.testing.assert_allclose(got.numpy().ravel(), per_row, rtol=1e-5)
    np.testing.assert_allclose(cross_entropy(_t(x), _t(soft), soft_label=True).numpy(),
                               per_row.mean(), rtol=1e-5)
    smooth = soft * 0.9 + 0.1 / 5
    np.testing.assert_allclose(
        cross_entropy(_t(x), _t(soft), soft_label=True, label_smoothing=0.1).numpy(),
        (-(smooth * lsm).sum(-1)).mean(), rtol=1e-5)
    probs = np.exp(lsm).astype(np.float32)
    lab = np.array([0, 1, 2, 3])
    np.testing.assert_allclose(
        cross_entropy(_t(probs), _t(lab), use_softmax=False).numpy(),
        -lsm[np.arange(4), lab].mean(), rtol=1e-5)


def test_cross_entropy_paddle_recorded_value() -> None:
    # Paddle 3.3.1's weighted mean divides by the summed weights of the rows not ignored
    # (checked there: its 3.2985618 for paddle.seed(1) logits equals this formula on them).
    x = _rand(4, 5, seed=9)
    lab = np.array([0, 1, 2, -100])
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    lsm = _log_softmax(x)
    rows = [(-lsm[i, lab[i]] * w[lab[i]], w[lab[i]]) for i in range(3)]
    want = sum(a for a, _ in rows) / sum(b for _, b in rows)
    got = cross_entropy(_t(x), _t(lab), weight=_t(w))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


# Paddle 3.3.1's F.cross_entropy on these logits (recorded there): the loss and the first row
# of d loss / d logits, per (ignore_index, labels, extra argument)
_Z = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0], [0.0, 0.1, 0.2], [1.5, 0.5, -0.5]],
              np.float32)
PADDLE_MEANS = [
    (-100, [0, -100, 2, 1], {}, 0.9684793949127197, [-0.19219, 0.15713, 0.03506]),
    (-100, [-100] * 4, {}, 0.0, [0.0, 0.0, 0.0]),
    (1, [0, 1, 2, 1], {}, 1.2331558465957642, [-0.38439, 0.31427, 0.07012]),
    (1, [1] * 4, {}, 0.0, [0.0, 0.0, 0.0]),
    (-1, [0, -1, 2, -1], {}, 0.6165779232978821, [-0.19219, 0.15713, 0.03506]),
    (-100, [0, -100, 2, 1], {"weight": [0.5, 2.0, 1.5]}, 1.262578, None),
    (-100, [-100] * 4, {"weight": [0.5, 2.0, 1.5]}, 0.0, None),
    (1, [0, 1, 2, 1], {"weight": [0.5, 2.0, 1.5]}, 1.117549, None),
    (1, [1] * 4, {"weight": [0.5, 2.0, 1.5]}, 0.0, None),
    (-100, [0, -100, 2, 1], {"use_softmax": False}, 1.194881, None),
    (-100, [-100] * 4, {"use_softmax": False}, 0.0, None),
    (1, [0, 1, 2, 1], {"use_softmax": False}, 1.585043, None),
]


@pytest.mark.parametrize("ignore_index,labels,extra,loss,grad_row0", PADDLE_MEANS)
def test_cross_entropy_mean_is_paddles(ignore_index, labels, extra, loss, grad_row0) -> None:
    """The mean of hard labels as Paddle 3.x takes it: a negative ignore_index divides by every
    row, ignore_index >= 0 by the rows not ignored (weights: their summed weights), and a
    zero denominator counts as 1, so all-ignored rows give 0 (torch: NaN)."""
    kw = dict(extra)
    z = np.abs(_Z) / 5 + 0.1 if kw.get("use_softmax", True) is False else _Z
    if "weight" in kw:
        kw["weight"] = _t(np.array(kw["weight"], np.float32))
    x = _t(z)
    x.stop_gradient = False
    out = cross_entropy(x, _t(np.array(labels, np.int64)), ignore_index=ignore_index, **kw)
    np.testing.assert_allclose(out.numpy(), loss, rtol=1e-5, atol=1e-7)
    out.backward()
    assert np.isfinite(x.grad.numpy()).all()
    if grad_row0 is not None:
        np.testing.assert_allclose(x.grad.numpy()[0], grad_row0, atol=2e-5)


def test_loss_errors() -> None:
    x = _t(_rand(4, 5))
    lab = _t(np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="mse_loss: reduction must be"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="CrossEntropyLoss: reduction must be"):
        nn.CrossEntropyLoss(reduction="avg")
    with pytest.raises(ValueError, match=r"cross_entropy: label must have shape \[4\]"):
        cross_entropy(x, _t(np.array([0, 1])))
    with pytest.raises(TypeError, match="label must be an integer tensor for hard labels"):
        cross_entropy(x, _t(np.zeros(4, np.float32)))
    with pytest.raises(NotImplementedError, match="axis must be the last"):
        cross_entropy(x, lab, axis=0)
    with pytest.raises(NotImplementedError, match="weight with soft_label"):
        cross_entropy(x, x, soft_label=True, weight=_t(np.ones(5, np.float32)))
    with pytest.raises(ValueError, match=r"weight must have shape \[5\]"):
        cross_entropy(x, lab, weight=_t(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="soft labels must have the input's shape"):
        cross_entropy(x, _t(np.ones((4, 3), np.float32)), soft_label=True)
    with pytest.raises(ValueError, match="logit and label must have the same shape"):
        F.binary_cross_entropy_with_logits(x, _t(np.ones((4, 3), np.float32)))
    with pytest.raises(TypeError, match=r"l1_loss: input must be a hwport\.Tensor"):
        F.l1_loss(np.ones(3), x)
    with pytest.raises(TypeError, match="mse_loss: label must be a float tensor"):
        F.mse_loss(x, lab)


def test_plain_hard_labels_run_the_op_and_agree() -> None:
    x, lab = _t(_rand(6, 5)), _t(np.array([0, 4, -100, 2, 1, 3]))
    for reduction in ("mean", "sum", "none"):
        np.testing.assert_array_equal(cross_entropy(x, lab, reduction=reduction).numpy(),
                                      F.cross_entropy(x, lab, reduction=reduction).numpy())
