"""nn.initializer: the numbers (against phi_ops/philox.py's reference), their statistics, the
determinism under hwport.seed, and the same numbers on custom:cpu and custom:opencl."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hwport
import hwport.nn as nn
from hwport.nn import initializer as I
from hwport.phi_ops import philox
from tests.nn.helpers import opencl_place


def _make(init: I.Initializer, shape: list[int], dtype: str = "float32",
          place: str | None = None) -> np.ndarray:
    return init.generate(shape, dtype, place).numpy()


def test_xavier_uniform_is_philox_uniform_with_paddles_limit() -> None:
    hwport.seed(5)
    got = _make(I.XavierUniform(), [30, 50])
    limit = math.sqrt(6.0 / 80)
    want = philox.uniform([30, 50], -limit, limit, 5, 0, "float32")
    np.testing.assert_array_equal(got, want)
    # the next draw continues the stream
    got2 = _make(I.XavierUniform(gain=2.0), [30, 50])
    np.testing.assert_array_equal(
        got2, philox.uniform([30, 50], -2 * limit, 2 * limit, 5, 1500, "float32"))


def test_linear_default_is_xavier_uniform_weight_and_zero_bias() -> None:
    hwport.seed(1)
    lin = nn.Linear(1000, 1000)
    w = lin.weight.numpy()
    limit = math.sqrt(6.0 / 2000)  # Paddle 3.3.1: std 0.03163, max 0.05477
    assert np.abs(w).max() <= limit
    assert abs(w.std() - limit / math.sqrt(3)) < 5e-4
    np.testing.assert_array_equal(lin.bias.numpy(), np.zeros(1000))
    emb = nn.Embedding(1000, 1000).weight.numpy()  # Paddle: the same XavierUniform
    assert abs(emb.std() - limit / math.sqrt(3)) < 5e-4


@pytest.mark.parametrize("init, shape, mean, std", [
    (I.Normal(1.0, 2.0), [200, 300], 1.0, 2.0),
    (I.Uniform(-3.0, 1.0), [200, 300], -1.0, 4.0 / math.sqrt(12)),
    (I.XavierNormal(), [200, 300], 0.0, math.sqrt(2.0 / 500)),
    (I.XavierNormal(fan_in=10, fan_out=30), [200, 300], 0.0, math.sqrt(2.0 / 40)),
    (I.KaimingNormal(), [200, 300], 0.0, math.sqrt(2.0 / 200)),
    (I.KaimingNormal(mode="fan_out", nonlinearity="tanh"), [200, 300], 0.0,
     (5.0 / 3.0) / math.sqrt(300)),
    (I.KaimingUniform(), [200, 300], 0.0, math.sqrt(2.0) * math.sqrt(3.0 / 200) / math.sqrt(3)),
    (I.KaimingUniform(negative_slope=0.2, nonlinearity="leaky_relu"), [20, 30, 3, 3], 0.0,
     math.sqrt(2.0 / 1.04) * math.sqrt(3.0 / 270) / math.sqrt(3)),
    (I.XavierUniform(), [20, 30, 3, 3], 0.0, math.sqrt(6.0 / 450) / math.sqrt(3)),
])
def test_statistics(init: I.Initializer, shape: list[int], mean: float, std: float) -> None:
    hwport.seed(2)
    v = _make(init, shape, "float64").astype(np.float64)
    n = v.size
    assert abs(v.mean() - mean) < 5 * std / math.sqrt(n) + 1e-12
    assert abs(v.std() - std) < 0.02 * std


def test_truncated_normal_bounds_and_moments() -> None:
    hwport.seed(3)
    v = _make(I.TruncatedNormal(mean=0.0, std=2.0, a=-1.0, b=3.0), [100000], "float64")
    assert v.min() >= -1.0 and v.max() <= 3.0
    # moments of the normal N(0, 4) truncated to [-1, 3]
    al, be = -0.5, 1.5
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * math.erfc(-z / math.sqrt(2))  # noqa: E731
    zmass = cdf(be) - cdf(al)
    mean = 2.0 * (phi(al) - phi(be)) / zmass
    var = 4.0 * (1 + (al * phi(al) - be * phi(be)) / zmass - ((phi(al) - phi(be)) / zmass) ** 2)
    assert abs(v.mean() - mean) < 0.01
    assert abs(v.var() - var) < 0.02
    # Paddle 3.3.1 with mean=5, std=1, a=-2, b=2: every value in [-2, 2] (absolute bounds)
    w = _make(I.TruncatedNormal(mean=5.0, std=1.0), [1000])
    assert w.min() >= -2.0 and w.max() <= 2.0


def test_seed_determinism_and_state() -> None:
    inits = [I.Normal(), I.Uniform(), I.TruncatedNormal(), I.XavierNormal(),
             I.KaimingUniform()]
    hwport.seed(42)
    first = [_make(i, [7, 9]) for i in inits]
    state = hwport.get_rng_state()
    after = [_make(i, [7, 9]) for i in inits]
    hwport.seed(42)
    again = [_make(i, [7, 9]) for i in inits]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    hwport.set_rng_state(state)
    for a, b in zip(after, [_make(i, [7, 9]) for i in inits], strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], after[0])
    # Normal consumes 2 * numel counters, Uniform numel, TruncatedNormal numel
    hwport.seed(0)
    _make(I.Normal(), [10])
    assert hwport.get_rng_state() == (0, 20)
    _make(I.Uniform(), [10])
    _make(I.TruncatedNormal(), [10])
    assert hwport.get_rng_state() == (0, 40)
    # two seeded models are equal
    hwport.seed(9)
    a = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2)).state_dict()
    hwport.seed(9)
    b = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2)).state_dict()
    for x, y in zip(a.values(), b.values(), strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    # a negative / 64-bit seed is the same key modulo 2**64
    hwport.seed(-1)
    neg = _make(I.Uniform(), [5])
    hwport.seed(2**64 - 1)
    np.testing.assert_array_equal(_make(I.Uniform(), [5]), neg)


def test_rng_state_takes_paddles_device_and_state_list() -> None:
    """get_rng_state(device=None) / set_rng_state(state_list, device=None) as Paddle spells
    them: one generator serves every device, so every valid place answers the same state and
    restoring it (for any place) replays the same draws; an unknown place is refused."""
    hwport.seed(3)
    _make(I.Uniform(), [4])
    places = [None, "custom:cpu", "cpu", *([opencl_place()] if opencl_place() else [])]
    states = [hwport.get_rng_state(device=p) for p in places]
    assert states == [(3, 4)] * len(places)
    first = _make(I.Normal(), [6])
    for p in places:
        hwport.set_rng_state(state_list=states[0], device=p)
        np.testing.assert_array_equal(_make(I.Normal(), [6]), first)
    with pytest.raises(ValueError, match=r"get_rng_state: device: invalid place 'gpu:0'"):
        hwport.get_rng_state("gpu:0")
    with pytest.raises(TypeError, match=r"set_rng_state: device: place must be a str"):
        hwport.set_rng_state(states[0], device=0)
    assert hwport.get_rng_state() == (3, 4 + 2 * 6)  # a refused call changed nothing


def test_uniform_and_normal_with_seed_0_draw_from_the_global_generator() -> None:
    """Paddle's seed=0: hwport.uniform / normal take hwport.seed's stream (successive calls
    differ, a seeded run repeats); a nonzero seed is its own Philox stream, as the raw op's."""
    hwport.seed(5)
    u1 = hwport.uniform([6], min=-1.0, max=2.0).numpy()
    n1 = hwport.normal(1.0, 0.5, [4]).numpy()
    assert hwport.get_rng_state() == (5, 6 + 2 * 4)
    u2 = hwport.uniform([6], min=-1.0, max=2.0).numpy()
    assert not np.array_equal(u1, u2)
    np.testing.assert_array_equal(u1, philox.uniform([6], -1.0, 2.0, 5, 0, "float32"))
    np.testing.assert_array_equal(n1, philox.normal([4], 1.0, 0.5, 5, 6, "float32"))
    hwport.seed(5)
    np.testing.assert_array_equal(hwport.uniform([6], min=-1.0, max=2.0).numpy(), u1)
    state = hwport.get_rng_state()
    np.testing.assert_array_equal(hwport.uniform([3], seed=11).numpy(),
                                  philox.uniform([3], 0.0, 1.0, 11, 0, "float32"))
    np.testing.assert_array_equal(hwport.ops.uniform([3], seed=0).numpy(),  # the raw op
                                  philox.uniform([3], 0.0, 1.0, 0, 0, "float32"))
    with pytest.raises(TypeError, match="uniform"):
        hwport.uniform([2], dtype="int64")
    assert hwport.get_rng_state() == state  # explicit seeds and refused calls draw nothing


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_same_numbers_on_cpu_and_opencl(dtype: str) -> None:
    place = opencl_place()
    if place is None:
        pytest.skip("no OpenCL device")
    for init in (I.XavierUniform(), I.KaimingUniform(), I.Uniform(-2, 3), I.TruncatedNormal(),
                 I.Assign(np.arange(12.0).reshape(3, 4)), I.Constant(0.5)):
        hwport.seed(123)
        cpu = _make(init, [3, 4], dtype)
        hwport.seed(123)
        cl = init.generate([3, 4], dtype, place)
        assert str(cl.place) == place
        np.testing.assert_array_equal(cl.numpy(), cpu, err_msg=repr(init))
    for init in (I.Normal(0.5, 2.0), I.XavierNormal(), I.KaimingNormal()):
        hwport.seed(123)
        cpu = _make(init, [64, 32], dtype).astype(np.float64)
        hwport.seed(123)
        cl = init.generate([64, 32], dtype, place).numpy().astype(np.float64)
        rtol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5, "float64": 1e-11}[dtype]
        np.testing.assert_allclose(cl, cpu, rtol=rtol, atol=rtol, err_msg=repr(init))


def test_initializer_call_and_assign_and_constant() -> None:
    p = hwport.create_parameter([2, 3], "float64", default_initializer=I.Assign([[1, 2, 3],
                                                                                   [4, 5, 6]]))
    np.testing.assert_array_equal(p.numpy(), [[1, 2, 3], [4, 5, 6]])
    assert p.dtype == hwport.float64
    with pytest.raises(ValueError, match=r"Assign: the value has shape \[2, 3\].*\[3, 3\]"):
        hwport.create_parameter([3, 3], "float32", default_initializer=I.Assign(np.ones((2, 3))))
    c = hwport.create_parameter([4], "int64", default_initializer=I.Constant(3))
    np.testing.assert_array_equal(c.numpy(), [3, 3, 3, 3])
    attr = nn.ParamAttr(initializer=I.Constant(2.0))
    np.testing.assert_array_equal(nn.Linear(2, 2, weight_attr=attr).weight.numpy(),
                                  np.full((2, 2), 2.0))
    target = hwport.create_parameter([2, 2], "float32")
    assert I.Constant(4.0)(target) is target
    np.testing.assert_array_equal(target.numpy(), np.full((2, 2), 4.0))
    assert target.stop_gradient is False


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="Uniform: low must be <= high"):
        I.Uniform(2.0, 1.0)
    with pytest.raises(ValueError, match="Normal: std must be >= 0"):
        I.Normal(0.0, -1.0)
    with pytest.raises(ValueError, match="TruncatedNormal: a must be < b"):
        I.TruncatedNormal(a=1.0, b=0.0)
    with pytest.raises(ValueError, match="KaimingNormal: mode"):
        I.KaimingNormal(mode="fan_avg")
    with pytest.raises(ValueError, match="calculate_gain: nonlinearity"):
        I.KaimingUniform(nonlinearity="swish")
    with pytest.raises(TypeError, match="Constant: value must be a number"):
        I.Constant("1")
    with pytest.raises(TypeError, match="random initializers make float tensors"):
        hwport.create_parameter([2], "int32", default_initializer=I.Normal())
    with pytest.raises(TypeError, match="seed: seed must be an int"):
        hwport.seed(1.5)
    with pytest.raises(TypeError, match="set_rng_state: state"):
        hwport.set_rng_state(3)
    with pytest.raises(TypeError, match="ParamAttr: initializer"):
        nn.ParamAttr(initializer="xavier")
