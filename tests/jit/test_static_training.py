"""A training step captured as one program: forward, loss.backward(), optimizer.step() and
clear_grad() in the program; parameters and optimizer states written back after each run, the
per-step scalars (learning rate schedule, Adam's bias corrections) recomputed on the host
before each run. Compared with the same step run eagerly, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
import hwport.nn as nn
from hwport.jit import StaticCaptureError, to_static

F = hwport.nn.functional
PLACES = ["custom:cpu", "custom:opencl"]


def _setup(place, optimizer, clip=True, multi_precision=False):
    hwport.seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 8))
    model.to(place)
    sched = hwport.optimizer.lr.LinearWarmup(
        hwport.optimizer.lr.CosineAnnealingDecay(learning_rate=1e-2, T_max=8), 2, 0.0, 1e-2)
    kwargs = {"learning_rate": sched, "parameters": model.parameters()}
    if clip:
        kwargs["grad_clip"] = nn.ClipGradByGlobalNorm(1.0)
    if optimizer == "Momentum":
        kwargs["weight_decay"] = 1e-3
    opt = getattr(hwport.optimizer, optimizer)(**kwargs)

    def step(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss
    return model, opt, sched, step


def _data(place, n=6):
    rng = np.random.default_rng(0)
    return [(hwport.to_tensor(rng.standard_normal((4, 16)).astype(np.float32), place=place),
             hwport.to_tensor(rng.standard_normal((4, 8)).astype(np.float32), place=place))
            for _ in range(n)]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("optimizer", ["SGD", "Momentum", "Adam", "AdamW"])
def test_a_training_step_as_a_program_equals_eager_bit_for_bit(place, optimizer):
    m1, o1, s1, eager = _setup(place, optimizer)
    m2, o2, s2, step = _setup(place, optimizer)
    static = to_static(step)
    for x, y in _data(place):
        a = eager(x, y).numpy()
        b = static(x, y).numpy()
        s1.step()
        s2.step()
        assert a.tobytes() == b.tobytes()
    assert static.num_captures == 1
    entry = next(iter(static._cache.values()))
    assert entry.eager_reason is None and entry.written
    assert entry.before_run or entry.run_attrs  # (Adam: the fused kernel's attributes)
    for (name, p1), p2 in zip(m1.named_parameters(), m2.parameters(), strict=True):
        assert p1.numpy().tobytes() == p2.numpy().tobytes(), name
    states = [[v.numpy() for v in o.state_dict().values() if isinstance(v, hwport.Tensor)]
              for o in (o1, o2)]  # (the keys carry each model's unique layer names)
    assert len(states[0]) == len(states[1])
    assert states[0] or optimizer == "SGD"  # (SGD keeps no state)
    for a, b in zip(*states, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("place", PLACES)
def test_adams_moments_are_updated_in_place_with_no_allocation(place):
    *_, step = _setup(place, "AdamW")
    static = to_static(step)
    data = _data(place, 4)
    static(*data[0])
    static(*data[1])
    exe = next(iter(static._cache.values())).executor
    assert exe._static.impl.num_written_in_place == 2  # moment1, moment2: no copy back
    before = hwport.device.memory_stats(place)["num_allocs"]
    for x, y in data[2:]:
        static(x, y)
    assert hwport.device.memory_stats(place)["num_allocs"] == before


def test_gradients_left_by_the_step_are_written_back():
    hwport.seed(0)
    layer = nn.Linear(4, 3)

    def forward_backward(x):
        loss = layer(x).sum()
        loss.backward()
        return loss

    static = to_static(forward_backward)
    for seed in (1, 2, 3):
        x = hwport.to_tensor(np.random.default_rng(seed).standard_normal((5, 4))
                             .astype(np.float32))
        layer.clear_gradients()
        static(x)
        want = x.numpy().sum(axis=0)[:, None] * np.ones((1, 3), np.float32)
        np.testing.assert_allclose(layer.weight.grad.numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(layer.bias.grad.numpy(), np.full(3, 5.0), rtol=1e-6)
    assert static.num_captures == 1


def test_a_forward_whose_result_the_caller_differentiates_runs_eagerly():
    layer = nn.Linear(4, 3)
    static = to_static(layer)
    x = hwport.to_tensor(np.ones((2, 4), np.float32))
    static(x).sum().backward()
    static(x).sum().backward()
    np.testing.assert_allclose(layer.bias.grad.numpy(), np.full(3, 4.0))
    assert next(iter(layer.forward._cache.values())).eager_reason == "gradients"


def test_writing_a_view_of_a_parameter_read_later_is_refused():
    w = hwport.to_tensor(np.ones((2, 2), np.float32))

    def f(x):
        flat = w.reshape([4])
        w.set_value(w * 2.0)
        return flat + x  # eager reads the new values through the view

    with pytest.raises(StaticCaptureError, match="written in place"):
        to_static(f)(hwport.to_tensor(np.zeros(4, np.float32)))


def test_a_state_write_with_symbolic_dims_gets_one_program_per_size():
    from hwport.static import InputSpec

    _, _, _, step = _setup("custom:cpu", "SGD", clip=False)
    static = to_static(step, input_spec=[InputSpec([None, 16]), InputSpec([None, 8])])
    for n in (4, 4, 3):
        rng = np.random.default_rng(n)
        static(hwport.to_tensor(rng.standard_normal((n, 16)).astype(np.float32)),
               hwport.to_tensor(rng.standard_normal((n, 8)).astype(np.float32)))
    assert static.num_captures == 2  # no probe run: it would apply the step


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("kind", ["a parameter alone in its bucket", "float16 multi_precision"])
def test_adam_programs_with_views_and_master_weights_equal_eager(place, kind):
    """A bucket of one large parameter updates a view of it (the fused kernel's outputs
    cannot all be in place: none is), and float16 parameters keep float32 master weights
    (written in place) and cast on the way back."""
    fp16 = kind.startswith("float16")

    def make():
        hwport.seed(0)
        model = nn.Sequential(nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 8))  # 65536
        if fp16:
            model = model.astype("float16")
        model.to(place)
        opt = hwport.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters(),
                                     multi_precision=fp16)

        def step(x, y):
            loss = F.mse_loss(model(x).astype("float32"), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return model, step

    rng = np.random.default_rng(0)
    data = [(hwport.to_tensor(rng.standard_normal((4, 256)).astype(
                np.float16 if fp16 else np.float32), place=place),
             hwport.to_tensor(rng.standard_normal((4, 8)).astype(np.float32), place=place))
            for _ in range(4)]
    m1, eager = make()
    m2, step = make()
    static = to_static(step)
    for x, y in data:
        assert eager(x, y).numpy().tobytes() == static(x, y).numpy().tobytes()
    for p1, p2 in zip(m1.parameters(), m2.parameters(), strict=True):
        assert p1.numpy().tobytes() == p2.numpy().tobytes()
