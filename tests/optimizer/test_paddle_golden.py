"""hwport's optimizers reproduce Paddle 3.x's CPU optimizers step by step: the trajectories
paddle_golden.py recorded (same initial parameters, same gradients) in data/paddle_golden.json.
float64 cases agree to rounding (1e-12); float32 ones to 1e-6 relative."""

from __future__ import annotations

import numpy as np
import pytest

from hwport import nn  # noqa: F401  (hwport.nn.clip is importable as nn's submodule)
from hwport import optimizer as o
from hwport.nn import clip
from tests.optimizer.standin import golden, make_param, set_grad

GOLD = golden()["optim"]

MAKE = {
    "sgd_wd": lambda ps: o.SGD(0.1, parameters=ps, weight_decay=0.01),
    "momentum": lambda ps: o.Momentum(0.1, 0.9, parameters=ps, weight_decay=0.01),
    "momentum_nesterov": lambda ps: o.Momentum(0.05, 0.8, parameters=ps, use_nesterov=True),
    "adam": lambda ps: o.Adam(0.01, parameters=ps),
    "adam_wd_eps": lambda ps: o.Adam(0.01, beta1=0.8, beta2=0.9, epsilon=0.5, parameters=ps,
                                     weight_decay=0.1),
    "adam_amsgrad": lambda ps: o.Adam(0.01, parameters=ps, amsgrad=True),
    "adam_f32": lambda ps: o.Adam(0.01, parameters=ps),
    "adamw": lambda ps: o.AdamW(0.05, parameters=ps, weight_decay=0.1),
    "adamw_decay_fun": lambda ps: o.AdamW(0.05, parameters=ps, weight_decay=0.2, epsilon=0.1,
                                          apply_decay_param_fun=lambda n: n == ps[0].name),
    "adamw_f32": lambda ps: o.AdamW(0.05, parameters=ps),
    "clip_global": lambda ps: o.SGD(0.1, parameters=ps,
                                    grad_clip=clip.ClipGradByGlobalNorm(1.0)),
    "clip_norm": lambda ps: o.Momentum(0.1, parameters=ps, grad_clip=clip.ClipGradByNorm(0.5)),
    "clip_value": lambda ps: o.SGD(0.1, parameters=ps,
                                   grad_clip=clip.ClipGradByValue(0.3, -0.2)),
    "adamw_clip_global_wd_f32": lambda ps: o.AdamW(
        0.01, parameters=ps, weight_decay=0.05, grad_clip=clip.ClipGradByGlobalNorm(0.7)),
    "groups_adam": lambda ps: o.Adam(0.01, parameters=[
        {"params": [ps[0]], "learning_rate": 0.5, "beta1": 0.8, "weight_decay": 0.1},
        {"params": [ps[1]]}], weight_decay=0.01),
    "groups_adamw_clip": lambda ps: o.AdamW(0.01, parameters=[
        {"params": [ps[0]], "weight_decay": 0.5, "grad_clip": clip.ClipGradByGlobalNorm(0.1)},
        {"params": [ps[1]], "learning_rate": 2.0, "epsilon": 0.01}]),
    "groups_momentum": lambda ps: o.Momentum(0.1, 0.9, parameters=[
        {"params": [ps[0]], "weight_decay": 0.1, "momentum": 0.5},
        {"params": [ps[1]], "learning_rate": 0.1}]),
    "adam_param_reg": lambda ps: o.Adam(0.01, parameters=ps, weight_decay=0.01),
    "momentum_param_reg": lambda ps: o.Momentum(0.1, parameters=ps, weight_decay=0.01),
    "adamw_param_reg": lambda ps: o.AdamW(0.05, parameters=ps, weight_decay=0.1),
}
SCHED = {
    "adamw_warmup_cosine": (
        lambda: o.lr.LinearWarmup(o.lr.CosineAnnealingDecay(0.1, T_max=4), 2, 0.0, 0.1),
        lambda s, ps: o.AdamW(s, parameters=ps)),
    "sgd_step_decay": (lambda: o.lr.StepDecay(0.5, step_size=2, gamma=0.5),
                       lambda s, ps: o.SGD(s, parameters=ps)),
}


class L2Decay:
    """What hwport reads of a regularizer (paddle.regularizer.L2Decay's coefficient)."""

    def __init__(self, coeff: float) -> None:
        self._coeff = coeff


def test_every_recorded_case_is_checked():
    assert set(GOLD) == set(MAKE) | set(SCHED)


def _run(key):
    case = GOLD[key]
    ps = [make_param(np.asarray(a, case["dtype"]), name=n)
          for a, n in zip(case["init"], case["names"], strict=True)]
    if key.endswith("_param_reg"):  # ParamAttr(regularizer=L2Decay(0.3)) on the weight
        ps[0].regularizer = L2Decay(0.3)
    sched = None
    if key in SCHED:
        sched = SCHED[key][0]()
        opt = SCHED[key][1](sched, ps)
    else:
        opt = MAKE[key](ps)
    lrs = []
    for t, grads in enumerate(case["grads"]):
        for p, g in zip(ps, grads, strict=True):
            set_grad(p, np.asarray(g, case["dtype"]))
        lrs.append(opt.get_lr())
        opt.step()
        opt.clear_grad()
        if sched is not None:
            sched.step()
        rtol = 1e-12 if case["dtype"] == "float64" else 1e-6
        for p, want in zip(ps, case["params"][t], strict=True):
            np.testing.assert_allclose(p.numpy(), np.asarray(want), rtol=rtol, atol=rtol,
                                       err_msg=f"{key} step {t} {p.name}")
    return case, opt, lrs


@pytest.mark.parametrize("key", sorted(set(MAKE) | set(SCHED)))
def test_trajectory(key):
    case, opt, lrs = _run(key)
    assert lrs == pytest.approx(case["lrs"], rel=1e-12)
    assert sorted(opt.state_dict()) == case["state_keys"]  # Paddle's names of the states
