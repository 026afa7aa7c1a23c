"""hwport.optimizer against torch.optim where Paddle's formula is torch's, against numpy
re-implementations of Paddle's formula where they differ (rescale_grad, lr_ratio,
multi_precision), and the optimizer's behaviour (state_dict, groups, skipped parameters,
errors, launches per step)."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport import optimizer as o
from hwport.nn import clip
from hwport.runtime import _core
from tests.optimizer.standin import make_param, set_grad

SHAPES = [[3, 4], [4], [4], [2, 3, 2], [4], [5]]


def _data(seed=0, steps=5, shapes=SHAPES, dtype=np.float32):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(steps)]
    return init, grads


def _run_hwport(make, init, grads, dtype=None):
    ps = [make_param(a, name=f"p{i}", dtype=dtype) for i, a in enumerate(init)]
    opt = make(ps)
    for gs in grads:
        for p, g in zip(ps, gs, strict=True):
            if g is None:
                p.grad = None
            else:
                set_grad(p, g)
        opt.step()
    return ps, opt


torch = pytest.importorskip("torch")


def _run_torch(make, init, grads):
    ts = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    opt = make(ts)
    for gs in grads:
        for t, g in zip(ts, gs, strict=True):
            t.grad = None if g is None else torch.tensor(g)
        opt.step()
    return [t.detach().numpy() for t in ts]


CASES = {
    "sgd": (lambda ps: o.SGD(0.1, parameters=ps),
            lambda ts: torch.optim.SGD(ts, lr=0.1)),
    "sgd_wd": (lambda ps: o.SGD(0.1, parameters=ps, weight_decay=0.05),
               lambda ts: torch.optim.SGD(ts, lr=0.1, weight_decay=0.05)),
    "momentum": (lambda ps: o.Momentum(0.05, 0.9, parameters=ps, weight_decay=0.01),
                 lambda ts: torch.optim.SGD(ts, lr=0.05, momentum=0.9, weight_decay=0.01)),
    "nesterov": (lambda ps: o.Momentum(0.05, 0.8, parameters=ps, use_nesterov=True),
                 lambda ts: torch.optim.SGD(ts, lr=0.05, momentum=0.8, nesterov=True)),
    "adam": (lambda ps: o.Adam(0.01, parameters=ps),
             lambda ts: torch.optim.Adam(ts, lr=0.01)),
    "adam_wd_amsgrad": (
        lambda ps: o.Adam(0.02, beta1=0.8, beta2=0.95, epsilon=1e-3, parameters=ps,
                          weight_decay=0.1, amsgrad=True),
        lambda ts: torch.optim.Adam(ts, lr=0.02, betas=(0.8, 0.95), eps=1e-3,
                                    weight_decay=0.1, amsgrad=True)),
    "adamw": (lambda ps: o.AdamW(0.01, parameters=ps, weight_decay=0.1),
              lambda ts: torch.optim.AdamW(ts, lr=0.01, weight_decay=0.1)),
    "adamw_amsgrad": (lambda ps: o.AdamW(0.01, parameters=ps, amsgrad=True),
                      lambda ts: torch.optim.AdamW(ts, lr=0.01, amsgrad=True)),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_matches_torch(key):
    init, grads = _data()
    ours, theirs = CASES[key]
    ps, _ = _run_hwport(ours, init, grads)
    want = _run_torch(theirs, init, grads)
    for p, w in zip(ps, want, strict=True):
        np.testing.assert_allclose(p.numpy(), w, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("key", ["adam", "adamw", "momentum"])
def test_missing_gradients_are_skipped_like_torch(key):
    """A parameter without a gradient in a step is left alone and its state (step count)
    does not advance; its bucket splits and goes on."""
    init, grads = _data(seed=3, steps=6)
    grads[1][2] = None
    grads[2][0] = grads[2][2] = None
    grads[4] = [None] * len(SHAPES)
    ours, theirs = CASES[key]
    ps, _ = _run_hwport(ours, init, grads)
    want = _run_torch(theirs, init, grads)
    for p, w in zip(ps, want, strict=True):
        np.testing.assert_allclose(p.numpy(), w, rtol=2e-6, atol=2e-6)


def test_large_parameters_get_their_own_bucket():
    """A parameter of ALONE_NUMEL elements or more is updated alone (no gathering copy), the
    small ones together; the result is the same as torch's."""
    from hwport.optimizer._buckets import ALONE_NUMEL

    shapes = [[ALONE_NUMEL + 3], [4], [2, ALONE_NUMEL // 2], [5]]
    init, grads = _data(seed=4, steps=3, shapes=shapes)
    ps, opt = _run_hwport(CASES["adamw"][0], init, grads)
    want = _run_torch(CASES["adamw"][1], init, grads)
    for p, w in zip(ps, want, strict=True):
        np.testing.assert_allclose(p.numpy(), w, rtol=2e-6, atol=2e-6)
    sizes = sorted(len(b.params) for bs in opt._buckets.values() for b in bs)
    assert sizes == [1, 1, 2]


def _np_adam(p, grads, lr, b1, b2, eps, coeff=0.0, ratio=1.0, decay=True):
    """Paddle's adamw kernel in float64 (coeff=0: adam)."""
    p = p.astype(np.float64)
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    b1p, b2p = b1, b2
    out = []
    for g in (x.astype(np.float64) for x in grads):
        lr_ = lr * ratio
        if decay:
            p = p * (1 - lr_ * float(np.float32(coeff)))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr_ * np.sqrt(1 - b2p) / (1 - b1p)
        p = p - lr_t * (m / (np.sqrt(v) + eps * np.sqrt(1 - b2p)))
        b1p, b2p = b1p * b1, b2p * b2
        out.append(p)
    return out


def test_adamw_lr_ratio_and_decay_fun_numpy():
    """lr_ratio (Paddle runs it on GPU/XPU only) against numpy of Paddle's adamw formula."""
    init, grads = _data(seed=5, steps=4, dtype=np.float64)
    ps, _ = _run_hwport(lambda ps: o.AdamW(
        0.03, parameters=ps, weight_decay=0.3, lr_ratio=lambda p: 0.5 if p.name == "p1" else 2.0,
        apply_decay_param_fun=lambda n: n != "p3"), init, grads)
    for i, p in enumerate(ps):
        want = _np_adam(init[i], [g[i] for g in grads], 0.03, 0.9, 0.999, 1e-8, 0.3,
                        0.5 if i == 1 else 2.0, decay=i != 3)[-1]
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-12, atol=1e-12)


def test_momentum_rescale_grad_numpy():
    init, grads = _data(seed=6, steps=3, dtype=np.float64)
    ps, _ = _run_hwport(lambda ps: o.Momentum(0.1, 0.9, parameters=ps, weight_decay=0.01,
                                              rescale_grad=0.25), init, grads)
    mu, c, r = (float(np.float32(x)) for x in (0.9, 0.01, 0.25))
    for i, p in enumerate(ps):
        w, v = init[i].copy(), np.zeros_like(init[i])
        for gs in grads:
            g = gs[i] * r + c * w
            v = v * mu + g
            w = w - 0.1 * v
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("make", [
    lambda ps, mp: o.AdamW(0.01, parameters=ps, multi_precision=mp),
    lambda ps, mp: o.SGD(0.1, parameters=ps, multi_precision=mp, weight_decay=0.1),
    lambda ps, mp: o.Momentum(0.1, parameters=ps, multi_precision=mp),
])
def test_multi_precision_master_weights(dtype, make):
    """float32 master weights: the master follows the float32 update of the (widened) low
    precision gradients exactly; the parameter is the master rounded after every step."""
    init, grads = _data(seed=8, steps=4)
    low = [hwport.to_tensor(a).astype(dtype).numpy() for a in init]
    low_grads = [[hwport.to_tensor(g).astype(dtype).numpy() for g in gs] for gs in grads]
    ps, opt = _run_hwport(lambda ps: make(ps, True), low, low_grads)
    ref, _ = _run_hwport(lambda ps: make(ps, False),
                         [a.astype(np.float32) for a in low],
                         [[g.astype(np.float32) for g in gs] for gs in low_grads])
    state = opt.state_dict()
    for p, r in zip(ps, ref, strict=True):
        assert p.dtype == getattr(hwport, dtype)
        master = state["master_weights"][p.name]
        assert master.dtype == hwport.float32
        np.testing.assert_array_equal(master.numpy(), r.numpy())
        np.testing.assert_array_equal(p.numpy(), hwport.to_tensor(r.numpy()).astype(dtype).numpy())
    for k, v in state.items():
        if k.endswith(("moment1_0", "velocity_0")):
            assert v.dtype == hwport.float32


def test_low_precision_without_master_keeps_param_dtype_states():
    init, grads = _data(seed=9, steps=2)
    ps, opt = _run_hwport(lambda ps: o.Adam(0.01, parameters=ps), init, grads, dtype="float16")
    st = opt.state_dict()
    assert "master_weights" not in st
    assert st["p0_moment1_0"].dtype == hwport.float16
    assert ps[0].dtype == hwport.float16


def _run_sched(init, grads, state=None):
    sched = o.lr.StepDecay(0.05, 2)
    ps = [make_param(a, name=f"p{i}") for i, a in enumerate(init)]
    opt = o.AdamW(sched, parameters=ps, amsgrad=True, grad_clip=clip.ClipGradByNorm(1.0))
    if state is not None:
        opt.set_state_dict(state)
    for gs in grads:
        for p, g in zip(ps, gs, strict=True):
            set_grad(p, g)
        opt.step()
        sched.step()
    return ps, opt


def test_state_dict_round_trip_continues_exactly():
    init, grads = _data(seed=10, steps=6)
    full, _ = _run_sched(init, grads)
    first, opt = _run_sched(init, grads[:3])
    saved = opt.state_dict()
    assert saved["LR_Scheduler"]["last_epoch"] == 3
    assert saved["p0_beta1_pow_acc_0"].shape == (1,)
    assert saved["p0_moment1_0"].shape == (3, 4)
    assert sorted(k for k in saved if k.startswith("p0_")) == [
        "p0_beta1_pow_acc_0", "p0_beta2_pow_acc_0", "p0_moment1_0", "p0_moment2_0",
        "p0_moment2_max_0"]
    second, opt2 = _run_sched([p.numpy() for p in first], grads[3:], state=saved)
    assert opt2.get_lr() == pytest.approx(opt.get_lr() * 0.01)  # epoch 3 -> 6: two decays
    for a, b in zip(second, full, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # without the state the continuation differs (the test can fail)
    fresh, _ = _run_sched([p.numpy() for p in first], grads[3:])
    assert not np.array_equal(fresh[0].numpy(), full[0].numpy())


def test_groups_options_and_lr_multiplier():
    init, grads = _data(seed=11, steps=3, dtype=np.float64)
    ps, _ = _run_hwport(lambda ps: o.Adam(0.01, parameters=[
        {"params": ps[:2], "learning_rate": 0.5, "beta1": 0.7, "epsilon": 1e-3},
        {"params": ps[2:]}]), init, grads)
    for i, p in enumerate(ps):
        lr, b1, eps = (0.005, 0.7, 1e-3) if i < 2 else (0.01, 0.9, 1e-8)
        want = _np_adam(init[i], [g[i] for g in grads], lr, b1, 0.999, eps, decay=False)[-1]
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-12, atol=1e-12)


def test_stop_gradient_clear_grad_and_lr():
    init, grads = _data(seed=12, steps=1)
    ps = [make_param(a, name=f"p{i}") for i, a in enumerate(init)]
    ps[1].stop_gradient = True
    for p, g in zip(ps, grads[0], strict=True):
        set_grad(p, g)
    opt = o.SGD(0.1, parameters=ps)
    assert opt.get_lr() == 0.1
    opt.set_lr(0.2)
    assert opt.get_lr() == 0.2
    opt.step()
    np.testing.assert_array_equal(ps[1].numpy(), init[1])
    np.testing.assert_allclose(ps[0].numpy(), init[0] - np.float32(0.2) * grads[0][0],
                               rtol=1e-6)
    opt.clear_grad()
    assert np.all(ps[0].grad.numpy() == 0) and ps[1].grad is not None  # frozen: untouched
    opt.clear_grad(set_to_zero=False)
    assert ps[0].grad is None
    opt.step()  # no gradients: nothing happens
    np.testing.assert_array_equal(ps[0].numpy(), init[0] - np.float32(0.2) * grads[0][0])
    set_grad(ps[0], grads[0][0])
    ops_, pg = opt.minimize(None)
    assert ops_ == [] and [p for p, _ in pg] == [ps[0]]  # (ps[1] is frozen)
    np.testing.assert_allclose(ps[0].numpy(), init[0] - np.float32(0.4) * grads[0][0],
                               rtol=1e-6)
    opt.zero_grad()
    assert ps[0].grad is None
    sched = o.lr.ExponentialDecay(0.5, 0.5)
    opt2 = o.Adam(sched, parameters=ps)
    sched.step()
    assert opt2.get_lr() == 0.25
    with pytest.raises(RuntimeError, match="set_lr"):
        opt2.set_lr(0.1)
    opt.set_lr_scheduler(sched)
    assert opt.get_lr() == 0.25


def test_bad_arguments():
    p = make_param(np.zeros(3, np.float32), name="w")
    with pytest.raises(AttributeError, match="SGD: parameters must be given"):
        o.SGD(0.1)
    with pytest.raises(TypeError, match="Adam: learning_rate must be a float or an LRScheduler"):
        o.Adam(1, parameters=[p])
    with pytest.raises(TypeError, match="AdamW: grad_clip must be"):
        o.AdamW(0.1, parameters=[p], grad_clip=1.0)
    with pytest.raises(TypeError, match="SGD: parameters must be an iterable"):
        o.SGD(0.1, parameters=hwport.to_tensor(np.zeros(3, np.float32)))
    with pytest.raises(TypeError, match="ordered collection"):
        o.SGD(0.1, parameters={p})
    with pytest.raises(ValueError, match="more than one parameter group"):
        o.SGD(0.1, parameters=[{"params": [p]}, {"params": [p]}])
    with pytest.raises(ValueError, match="Adam: beta1 must be in"):
        o.Adam(0.1, beta1=1.0, parameters=[p])
    with pytest.raises(TypeError, match="Momentum: weight_decay must be a float"):
        o.Momentum(0.1, parameters=[p], weight_decay="0.1")
    class L1Decay:
        _coeff = 0.1

    r = make_param(np.zeros(3, np.float32), name="r")
    r.regularizer = L1Decay()
    set_grad(r, np.ones(3, np.float32))
    with pytest.raises(NotImplementedError, match="parameter r has an L1Decay regularizer"):
        o.Adam(0.1, parameters=[r]).step()
    q = make_param(np.zeros(3, np.int64), name="ints")
    set_grad(q, np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="SGD: parameter ints has dtype"):
        o.SGD(0.1, parameters=[q]).step()


def _launches(fn):
    _core._launch_timer_start()
    fn()
    return _core._launch_timer_stop()[1]


@pytest.mark.parametrize("make,limit", [
    (lambda ps: o.SGD(0.1, parameters=ps), 4),
    (lambda ps: o.Momentum(0.1, parameters=ps, weight_decay=0.1), 8),
    (lambda ps: o.Adam(0.1, parameters=ps), 14),
    (lambda ps: o.AdamW(0.1, parameters=ps, grad_clip=clip.ClipGradByGlobalNorm(1.0)), 21),
])
def test_launches_per_step_do_not_grow_with_parameters(make, limit):
    """A step's launches are the bucket's update plus one copy per parameter (set_value):
    the bucket's part is the same for 3 parameters as for 15; beyond 16 only the gathering
    concats grow (16 operands a launch)."""
    counts = []
    sizes = (3, 15, 48)
    for n in sizes:
        shapes = [[4, 5], [7], [3, 3]] * (n // 3)
        init, grads = _data(seed=1, steps=1, shapes=shapes)
        ps = [make_param(a, name=f"p{i}") for i, a in enumerate(init)]
        opt = make(ps)
        for p, g in zip(ps, grads[0], strict=True):
            set_grad(p, g)
        opt.step()  # first step creates the states
        counts.append(_launches(opt.step) - n)
    assert counts[0] == counts[1] <= limit, counts
    assert counts[2] <= counts[0] + 2 * 3, counts


def test_parameter_attributes_lr_multiplier_and_need_clip():
    """Parameter.optimize_attr['learning_rate'] multiplies the learning rate (outside
    parameter groups); need_clip=False leaves a gradient out of clipping and of the norm."""
    p = make_param(np.zeros(3, np.float32), name="p")
    q = make_param(np.zeros(3, np.float32), name="q")
    p.optimize_attr = {"learning_rate": 0.5}
    q.need_clip = False
    set_grad(p, [3.0, 4.0, 0.0])
    set_grad(q, [30.0, 40.0, 0.0])
    o.SGD(1.0, parameters=[p, q], grad_clip=clip.ClipGradByGlobalNorm(1.0)).step()
    np.testing.assert_allclose(p.numpy(), [-0.3, -0.4, 0.0], rtol=1e-6)
    np.testing.assert_allclose(q.numpy(), [-30.0, -40.0, 0.0], rtol=1e-6)


@pytest.mark.parametrize("clipper", [None, clip.ClipGradByGlobalNorm(0.5), clip.ClipGradByNorm(0.5),
                                     clip.ClipGradByValue(0.01)],
                         ids=["none", "global_norm", "norm", "value"])
@pytest.mark.parametrize("make", [
    lambda ps, c: o.SGD(0.1, parameters=ps, grad_clip=c),
    lambda ps, c: o.Momentum(0.1, parameters=ps, grad_clip=c),
    lambda ps, c: o.AdamW(0.1, parameters=ps, grad_clip=c),
    lambda ps, c: o.SGD(0.1, parameters=ps, grad_clip=c, multi_precision=True),
], ids=["sgd", "momentum", "adamw", "sgd_master"])
def test_a_training_step_frees_everything_without_the_cycle_collector(make, clipper):
    """forward + backward + clipped step + clear_grad leaves no reference cycle: with the
    cycle collector off, the device memory after each step is the same (parameters, states,
    zeroed gradients that hold nothing), and a collection afterwards finds no garbage."""
    import gc

    import hwport.nn as nn

    def held() -> int:
        return hwport.device.memory_stats("custom:cpu")["requested_bytes"]

    hwport.seed(1)
    net = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
    x = hwport.to_tensor(np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32))
    opt = make(net.parameters(), clipper)

    def step() -> None:
        loss = (net(x) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()

    step()  # the first step creates the optimizer's states
    # earlier tests' garbage can come in chains (a cycle holding a C++ object that holds
    # another cycle): one pass frees one link, so collect until nothing is left
    while gc.collect():
        pass
    gc.disable()
    try:
        first = net[0].weight.numpy().copy()
        after = []
        for _ in range(3):
            step()
            after.append(held())
        found = gc.collect()
    finally:
        gc.enable()
    assert not np.array_equal(net[0].weight.numpy(), first)  # the steps did update
    assert after == [after[0]] * 3, after
    assert found == 0, f"{found} objects were only freed by the cycle collector"
