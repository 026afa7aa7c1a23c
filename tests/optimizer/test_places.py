"""The optimizers on every other plugged-in device (custom:opencl on PoCL here; custom:cuda
where it reports devices): the decomposition runs there and gives custom:cpu's numbers."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport import optimizer as o
from hwport.nn import clip
from tests.optimizer.standin import make_param, set_grad

PLACES = [f"custom:{p['device_type']}" for p in hwport.runtime.plugins()
          if p["device_type"] != "cpu" and p["device_count"] > 0]
SHAPES = [[3, 4], [4], [4], [2, 3, 2], [40000]]


def _run(make, place, dtype=None, steps=3):
    rng = np.random.default_rng(2)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ps = [make_param(a, name=f"p{i}", dtype=dtype, place=place) for i, a in enumerate(init)]
    opt = make(ps)
    for _ in range(steps):
        for p, s in zip(ps, SHAPES, strict=True):
            set_grad(p, rng.standard_normal(s).astype(np.float32))
        opt.step()
    return ps


MAKES = [
    lambda ps: o.AdamW(0.01, parameters=ps, grad_clip=clip.ClipGradByGlobalNorm(1.0)),
    lambda ps: o.Adam(0.01, parameters=ps, amsgrad=True, weight_decay=0.1,
                      grad_clip=clip.ClipGradByNorm(0.5)),
    lambda ps: o.Momentum(0.1, parameters=ps, use_nesterov=True,
                          grad_clip=clip.ClipGradByValue(0.5)),
    lambda ps: o.AdamW(0.01, parameters=ps, multi_precision=True),
]


@pytest.mark.skipif(not PLACES, reason="no device besides custom:cpu")
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("case", range(len(MAKES)))
def test_same_as_cpu(place, case):
    dtype = "float16" if case == 3 else None
    got = _run(MAKES[case], place, dtype)
    want = _run(MAKES[case], "custom:cpu", dtype)
    for g, w in zip(got, want, strict=True):
        assert str(g.place).startswith(place)
        np.testing.assert_allclose(g.numpy().astype(np.float64), w.numpy().astype(np.float64),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not PLACES, reason="no device besides custom:cpu")
@pytest.mark.parametrize("place", PLACES)
def test_state_from_cpu_continues_on_device(place):
    """A state_dict saved on custom:cpu (with float32 master weights) loads into an optimizer
    on another device, whose next steps equal the cpu optimizer's."""
    rng = np.random.default_rng(4)
    init = [rng.standard_normal(s).astype(np.float16) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float16) for s in SHAPES] for _ in range(4)]
    cpu = [make_param(a, name=f"p{i}") for i, a in enumerate(init)]
    opt = o.Adam(0.01, parameters=cpu, multi_precision=True)
    for t, gs in enumerate(grads):
        if t == 2:
            dev = [make_param(p.numpy(), name=p.name, place=place) for p in cpu]
            opt_dev = o.Adam(0.01, parameters=dev, multi_precision=True)
            opt_dev.set_state_dict(opt.state_dict())
        for p, g in zip(cpu, gs, strict=True):
            set_grad(p, g)
        opt.step()
        if t >= 2:
            for p, g in zip(dev, gs, strict=True):
                set_grad(p, g)
            opt_dev.step()
    for a, b in zip(dev, cpu, strict=True):
        np.testing.assert_allclose(a.numpy().astype(np.float64), b.numpy().astype(np.float64),
                                   rtol=1e-3, atol=1e-3)
    master_dev = opt_dev.state_dict()["master_weights"]["p0"]
    master_cpu = opt.state_dict()["master_weights"]["p0"]
    assert str(master_dev.place).startswith(place)
    np.testing.assert_allclose(master_dev.numpy(), master_cpu.numpy(), rtol=1e-5, atol=1e-6)
