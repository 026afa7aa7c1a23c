"""hwport.optimizer.lr against Paddle 3.x's recorded sequences (data/paddle_golden.json) and
torch.optim.lr_scheduler where the two agree."""

from __future__ import annotations

import math

import pytest

from hwport.optimizer import lr
from tests.optimizer.lr_cases import scheduler_makers
from tests.optimizer.standin import golden

MAKE = scheduler_makers(lr)


@pytest.mark.parametrize("key", sorted(MAKE))
def test_matches_paddle(key):
    want = golden()["lr"][key]
    s = MAKE[key]()
    seq, last = [s()], [s.last_epoch]
    for _ in range(14):
        s.step()
        seq.append(s())
        last.append(s.last_epoch)
    assert last == want["last_epoch"]
    assert seq == pytest.approx(want["seq"], rel=1e-12, abs=1e-15)
    assert _approx_state(s.state_dict(), want["state_dict"])
    s2 = MAKE[key]()
    closed = []
    for e in want["epochs"]:
        s2.step(e)
        closed.append(s2())
    assert closed == pytest.approx(want["closed"], rel=1e-12, abs=1e-15)


def _approx_state(got, want):
    assert set(got) == set(want)
    for k, v in want.items():
        if isinstance(v, dict):
            _approx_state(got[k], v)
        else:
            assert got[k] == pytest.approx(v, rel=1e-12)
    return True


def test_state_dict_round_trip():
    a = MAKE["linear_warmup_cosine"]()
    for _ in range(6):
        a.step()
    b = MAKE["linear_warmup_cosine"]()
    b.set_state_dict(a.state_dict())
    for _ in range(5):
        a.step()
        b.step()
        assert a() == b()
    with pytest.raises(RuntimeError, match="last_lr"):
        b.set_state_dict({"last_epoch": 3})


torch = pytest.importorskip("torch")


def _torch_seq(sched_fn, base_lr, n=15):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=base_lr)
    s = sched_fn(opt)
    out = [opt.param_groups[0]["lr"]]
    for _ in range(n - 1):
        opt.step()
        s.step()
        out.append(opt.param_groups[0]["lr"])
    return out


@pytest.mark.parametrize("ours,theirs,base", [
    (lambda: lr.CosineAnnealingDecay(0.1, T_max=4, eta_min=0.001),
     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4, eta_min=0.001), 0.1),
    (lambda: lr.StepDecay(1.0, 3, 0.5),
     lambda o: torch.optim.lr_scheduler.StepLR(o, 3, 0.5), 1.0),
    (lambda: lr.MultiStepDecay(1.0, [2, 5, 6], 0.3),
     lambda o: torch.optim.lr_scheduler.MultiStepLR(o, [2, 5, 6], 0.3), 1.0),
    (lambda: lr.ExponentialDecay(2.0, 0.7),
     lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.7), 2.0),
    (lambda: lr.LambdaDecay(0.3, lambda e: 1 / (e + 1)),
     lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)), 0.3),
])
def test_matches_torch(ours, theirs, base):
    s = ours()
    seq = [s()]
    for _ in range(14):
        s.step()
        seq.append(s())
    assert seq == pytest.approx(_torch_seq(theirs, base), rel=1e-9, abs=1e-12)


def test_bad_arguments():
    with pytest.raises(TypeError, match="StepDecay: step_size must be an int"):
        lr.StepDecay(0.1, 2.5)
    with pytest.raises(ValueError, match=r"StepDecay: gamma must be < 1\.0"):
        lr.StepDecay(0.1, 2, gamma=1.5)
    with pytest.raises(ValueError, match="LinearWarmup: end_lr"):
        lr.LinearWarmup(0.1, 3, start_lr=0.5, end_lr=0.1)
    with pytest.raises(ValueError, match="CosineAnnealingDecay: T_max must be a positive"):
        lr.CosineAnnealingDecay(0.1, 0)
    with pytest.raises(TypeError, match="LambdaDecay: lr_lambda must be a function"):
        lr.LambdaDecay(0.1, 3)
    with pytest.raises(ValueError, match="MultiStepDecay: milestones must be increasing"):
        lr.MultiStepDecay(0.1, [3, 2])
    with pytest.raises(TypeError, match="learning_rate must be a float"):
        lr.ExponentialDecay("0.1", 0.5)
    with pytest.raises(NotImplementedError, match="get_lr"):
        lr.LRScheduler(0.1)


def test_custom_scheduler_subclass():
    class Half(lr.LRScheduler):
        def get_lr(self):
            return self.base_lr * 0.5 ** self.last_epoch

    s = Half(1.0)
    s.step()
    s.step()
    assert s() == 0.25 and s.last_epoch == 2
    assert math.isclose(s.state_dict()["last_lr"], 0.25)
