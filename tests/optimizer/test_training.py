"""Optimizers in a real training loop: gradients from hwport's autograd (loss.backward()),
step() under no_grad writing the parameters in place, clear_grad(); the same loop in PyTorch
with the same initial weights and batches gives the same losses and weights. float64, so that
Adam's normalisation does not amplify the float32 rounding differences of the two backward
passes; hyperparameters that Paddle rounds to float32 attributes (momentum, AdamW's
weight_decay) are exact in float32 (0.875, 0.0625), as torch keeps them in float64."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport import optimizer as o
from hwport.nn import clip
from tests.optimizer.standin import make_param

torch = pytest.importorskip("torch")

D, H, B, STEPS = 6, 16, 8, 8


def _data():
    rng = np.random.default_rng(21)
    w = [rng.standard_normal((D, H)).astype(np.float64) * 0.5, np.zeros(H),
         rng.standard_normal((H, 1)).astype(np.float64) * 0.5, np.zeros(1)]
    xs = [rng.standard_normal((B, D)).astype(np.float64) for _ in range(STEPS)]
    ys = [np.sin(x.sum(axis=1, keepdims=True)).astype(np.float64) for x in xs]
    return w, xs, ys


def _ours(make):
    w, xs, ys = _data()
    names = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    ps = [make_param(a, name=n) for a, n in zip(w, names, strict=True)]
    opt, sched = make(ps)
    losses = []
    for x, y in zip(xs, ys, strict=True):
        xt, yt = hwport.to_tensor(x), hwport.to_tensor(y)
        h = hwport.tanh(hwport.matmul(xt, ps[0]) + ps[1])
        loss = ((hwport.matmul(h, ps[2]) + ps[3] - yt) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        if sched is not None:
            sched.step()
        losses.append(float(loss))
        assert all(p.is_leaf and not p.stop_gradient for p in ps)  # step recorded nothing
    return losses, ps


def _theirs(make):
    w, xs, ys = _data()
    ps = [torch.nn.Parameter(torch.tensor(a)) for a in w]
    opt, sched, clip_norm = make(ps)
    losses = []
    for x, y in zip(xs, ys, strict=True):
        h = torch.tanh(torch.tensor(x) @ ps[0] + ps[1])
        loss = ((h @ ps[2] + ps[3] - torch.tensor(y)) ** 2).mean()
        loss.backward()
        if clip_norm:  # Paddle's global-norm clip (torch's clip_grad_norm_ adds 1e-6 to the norm)
            norm = torch.sqrt(sum((p.grad ** 2).sum() for p in ps))
            for p in ps:
                p.grad.mul_(clip_norm / torch.clamp(norm, min=clip_norm))
        opt.step()
        opt.zero_grad()
        if sched is not None:
            sched.step()
        losses.append(float(loss.detach()))
    return losses, ps


def _warmup_cosine(opt):
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, end_factor=1.0,
                                             total_iters=3)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    return torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[3])


CASES = {
    "adamw_warmup_cosine_clip": (
        lambda ps: (lambda s: (o.AdamW(s, parameters=ps, weight_decay=0.0625,
                                       grad_clip=clip.ClipGradByGlobalNorm(0.5)), s))(
            o.lr.LinearWarmup(o.lr.CosineAnnealingDecay(0.05, T_max=5), 3, 0.0125, 0.05)),
        lambda ps: (lambda opt: (opt, _warmup_cosine(opt), 0.5))(
            torch.optim.AdamW(ps, lr=0.05, weight_decay=0.0625))),
    "momentum_nesterov": (
        lambda ps: (o.Momentum(0.05, 0.875, parameters=ps, use_nesterov=True,
                               weight_decay=0.0625), None),
        lambda ps: (torch.optim.SGD(ps, lr=0.05, momentum=0.875, nesterov=True,
                                    weight_decay=0.0625), None, None)),
    "adam": (lambda ps: (o.Adam(0.02, parameters=ps), None),
             lambda ps: (torch.optim.Adam(ps, lr=0.02), None, None)),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_training_loop_matches_torch(key):
    ours, theirs = CASES[key]
    l1, p1 = _ours(ours)
    l2, p2 = _theirs(theirs)
    np.testing.assert_allclose(l1, l2, rtol=1e-7, atol=1e-9)
    assert l1[-1] < l1[0]
    for a, b in zip(p1, p2, strict=True):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-7, atol=1e-9)
