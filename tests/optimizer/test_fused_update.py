"""The fused Adam(W) update (ops.yaml's adam_update): the CPU and OpenCL plugins' kernels, out of
place and in place, give the decomposition's bytes on their device; the optimizers' in-place
path gives what the functional op and the decomposition give, and leaves state_dict()
snapshots and the tensors given to set_state_dict() alone; overlapping operands are refused by
name."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport import optimizer as o
from hwport.optimizer import _fused
from hwport.runtime import _core
from phi_ops import decompositions, dispatch
from tests.optimizer.standin import make_param, set_grad

ATTRS = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8 * 0.05, "lr": 1e-3 * 1.3,
         "decay": 0.995}
SHAPES = [[300, 200], [200], [7, 5], [5], [40000]]  # a bucket of small ones, two alone


def _operands(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(n).astype(dtype) for _ in range(3)]
    return arrays + [rng.uniform(0.0, 2.0, n).astype(dtype)]


def _bytes(t) -> bytes:
    return t.numpy().tobytes()


def _place(place: str) -> str:
    if place.split(":")[1] not in hwport.device.get_all_custom_device_type():
        pytest.skip(f"{place} is not available")
    return place


PLACES = ["custom:cpu", "custom:opencl"]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 37, 70001])
@pytest.mark.parametrize("decay", [1.0, 0.995])
def test_kernel_gives_the_decompositions_bytes(place, dtype, n, decay):
    place = _place(place)
    arrays = _operands(dtype, n)
    attrs = dict(ATTRS, decay=decay)
    ts = [hwport.to_tensor(a, place=place) for a in arrays]
    assert _core.has_kernel("adam_update", ts[0].place, ts[0].dtype)
    fresh = hwport.adam_update(*ts, **attrs)
    reference = decompositions.adam_update(*ts, **attrs)
    own = [hwport.to_tensor(a.copy(), place=place) for a in arrays]
    _core.launch("adam_update", str(own[0].dtype), own, [own[0], own[2], own[3]], attrs)
    for f, r, i in zip(fresh, reference, (own[0], own[2], own[3]), strict=True):
        assert _bytes(f) == _bytes(r)
        assert _bytes(i) == _bytes(r)
    for t, a in zip(ts, arrays, strict=True):  # the out-of-place call left its inputs alone
        assert _bytes(t) == a.tobytes()
    # and the numbers are Adam's (numpy, float64)
    p, g, m, v = (a.astype(np.float64) for a in arrays)
    m = m * 0.9 + g * 0.1
    v = v * 0.999 + g * g * (1 - 0.999)
    want = p * decay - m / (np.sqrt(v) + attrs["epsilon"]) * attrs["lr"]
    np.testing.assert_allclose(fresh[0].numpy(), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("place", PLACES)
def test_kernel_refuses_overlapping_outputs(place):
    place = _place(place)
    ts = [hwport.to_tensor(a, place=place) for a in _operands(np.float32, 64)]
    with pytest.raises(RuntimeError, match="adam_update: moment1_out overlaps moment2_out"):
        _core.launch("adam_update", "float32", ts, [ts[0], ts[2], ts[2]], ATTRS)
    half = hwport.zeros([128], dtype="float32", place=place)
    outs = [hwport.zeros([64], dtype="float32", place=place), half[0:64], half[32:96]]
    with pytest.raises(RuntimeError, match="adam_update: moment1_out overlaps moment2_out"):
        _core.launch("adam_update", "float32", ts, outs, ATTRS)
    fresh = [hwport.zeros([64], dtype="float32", place=place) for _ in range(2)]
    with pytest.raises(RuntimeError, match="adam_update: 1 of the 3 outputs are their own"):
        _core.launch("adam_update", "float32", ts, [ts[0], *fresh], ATTRS)
    assert _bytes(ts[0]) == _operands(np.float32, 64)[0].tobytes()  # refused: nothing written


def test_op_checks_its_operands():
    ts = [hwport.to_tensor(a) for a in _operands(np.float32, 6)]
    with pytest.raises(ValueError, match="adam_update: moment1 has shape"):
        hwport.adam_update(ts[0], ts[1], ts[2].reshape([2, 3]), ts[3], **ATTRS)
    with pytest.raises(TypeError, match="adam_update: grad has dtype float64"):
        hwport.adam_update(ts[0], ts[1].astype("float64"), ts[2], ts[3], **ATTRS)


def _train(steps=4, amsgrad=False):
    rng = np.random.default_rng(3)
    ps = [make_param(rng.standard_normal(s).astype(np.float32), name=f"p{i}")
          for i, s in enumerate(SHAPES)]
    opt = o.AdamW(learning_rate=0.01, parameters=ps, weight_decay=0.05, amsgrad=amsgrad)
    for _ in range(steps):
        for p in ps:
            set_grad(p, rng.standard_normal(p.shape).astype(np.float32))
        opt.step()
    return [p.numpy().tobytes() for p in ps], opt


def test_in_place_path_equals_the_functional_op_and_the_decomposition(monkeypatch):
    fused, _ = _train()
    with monkeypatch.context() as mp:  # the functional op: the kernel into fresh outputs
        mp.setattr(_fused, "in_place", lambda *a, **k: False)
        functional, _ = _train()
        real = dispatch._fused_kernel_fits
        mp.setattr(dispatch, "_fused_kernel_fits",  # and no kernel at all: the decomposition
                   lambda op, *a: op.name != "adam_update" and real(op, *a))
        decomposed, _ = _train()
    assert fused == functional == decomposed


def test_in_place_updates_leave_snapshots_and_loaded_tensors_alone():
    _, opt = _train(steps=2)
    snap = opt.state_dict()
    frozen = {k: v.numpy().copy() for k, v in snap.items() if isinstance(v, hwport.Tensor)}
    params = [p for g in opt._param_groups for p in g["params"]]
    for p in params:
        set_grad(p, np.ones(p.shape, np.float32))
    opt.step()
    for k, v in frozen.items():
        np.testing.assert_array_equal(snap[k].numpy(), v, err_msg=k)
    assert not np.array_equal(opt.state_dict()["p0_moment1_0"].numpy(), frozen["p0_moment1_0"])
    other = o.AdamW(learning_rate=0.01, parameters=params, weight_decay=0.05)
    other.set_state_dict(snap)
    other.step()
    for k, v in frozen.items():
        np.testing.assert_array_equal(snap[k].numpy(), v, err_msg=k)


def test_a_profiled_step_shows_the_op():
    rng = np.random.default_rng(5)
    ps = [make_param(rng.standard_normal([6]).astype(np.float32), name="w")]
    opt = o.AdamW(learning_rate=0.01, parameters=ps)
    set_grad(ps[0], np.ones([6], np.float32))
    with hwport.profiler.Profiler() as prof:
        opt.step()
    assert [e.path for e in prof.events if e.name == "adam_update"] == ["native"]
