"""jit.to_static: capture of every op (the program's run equals eager), guards and recapture,
symbolic dims, cond / while_loop both ways, graph breaks and their errors, layers."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import hwport
import hwport.nn as nn
from hwport.jit import StaticCaptureError, to_static
from hwport.phi_ops import sample_inputs as si
from hwport.phi_ops.api_args import public_call
from hwport.static import InputSpec
from hwport.static import nn as snn
from tests.pir.executor_cases import representative_cases

F = hwport.nn.functional
PLACES = ["custom:cpu", "custom:opencl"]
CASES = representative_cases()


def _flat(inputs):
    return [t for v in inputs if v is not None for t in (v if isinstance(v, list) else [v])]


def _rebuild(template, flat):
    it = iter(flat)
    return [None if v is None else [next(it) for _ in v] if isinstance(v, list) else next(it)
            for v in template]


def _arrays(r):
    return [np.asarray(t.numpy()) for t in (r if isinstance(r, list | tuple) else [r])]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_op_captured_runs_as_eager(case, place):
    """The op's call inside a to_static function: the second call runs the program, which
    must give eager's result (bit for bit where no fusion pass applies: one op)."""
    template = si.device_inputs(case, place)
    op = si.OPS[case.op]
    fn = getattr(hwport.ops, case.op)

    def call(*tensors):
        args, kwargs = public_call(op, _rebuild(template, list(tensors)), dict(case.attrs))
        if not op.inputs:
            kwargs["place"] = place
        return fn(*args, **kwargs)

    static = to_static(call)
    tensors = _flat(template)
    want = _arrays(call(*tensors))
    first = _arrays(static(*tensors))   # the capture's own (eager) run
    second = _arrays(static(*tensors))  # the program
    assert static.num_captures == 1, case.id
    entry = next(iter(static._cache.values()))
    assert entry.eager_reason is None and entry.executor is not None, case.id
    for w, a, b in zip(want, first, second, strict=True):
        assert (b.shape, b.dtype) == (w.shape, w.dtype), case.id
        assert a.tobytes() == w.tobytes(), case.id
        assert b.tobytes() == w.tobytes(), f"{case.id}: program {b} vs eager {w}"


def _mlp(seed=0):
    rng = np.random.default_rng(seed)
    w1 = hwport.to_tensor(rng.standard_normal((8, 16)).astype(np.float32))
    w2 = hwport.to_tensor(rng.standard_normal((16, 8)).astype(np.float32))

    def f(x):
        h = F.gelu(hwport.matmul(x, w1) + 0.5)
        return F.layer_norm(hwport.matmul(h, w2) + x, [8])
    return f


def _x(*shape, dtype=np.float32, seed=1):
    return hwport.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def test_guards_recapture_on_dtype_and_static_dim_and_reuse_otherwise(caplog):
    f = _mlp()
    s = to_static(f)
    x = _x(4, 8)
    with caplog.at_level(logging.DEBUG, logger="hwport.jit"):
        np.testing.assert_allclose(s(x).numpy(), f(x).numpy(), rtol=1e-6, atol=1e-6)
        s(_x(4, 8, seed=2))
        assert s.num_captures == 1  # same guard: the program runs
        s(_x(5, 8))  # a static dim changed
        assert s.num_captures == 2
        y = _x(4, 8, dtype=np.float64)
        w = hwport.to_tensor(np.ones((8, 8), np.float64))
        g = to_static(lambda x, w: hwport.matmul(x, w) * 1.0)
        g(y, w)
        g(y.astype("float32"), w.astype("float32"))
        assert g.num_captures == 2
    assert sum("capture" in r.message for r in caplog.records) >= 3


def test_python_constants_and_training_flag_are_guarded():
    s = to_static(lambda x, k: x * k)
    x = _x(3)
    np.testing.assert_allclose(s(x, 2.0).numpy(), x.numpy() * 2, rtol=1e-6)
    np.testing.assert_allclose(s(x, 3.0).numpy(), x.numpy() * 3, rtol=1e-6)
    assert s.num_captures == 2
    layer = nn.Dropout(0.5)
    layer = to_static(layer)
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), x.numpy())
    layer.train()  # a new guard: a program whose dropout draws afresh each run
    hwport.seed(5)
    got = [layer(x).numpy() for _ in range(3)]
    hwport.seed(5)
    want = [layer.forward.dygraph_function(layer, x).numpy() for _ in range(3)]
    assert layer.forward.num_captures == 2
    np.testing.assert_array_equal(np.array(got), np.array(want))
    assert not np.array_equal(got[1], got[2])  # a new mask every run


def test_random_ops_drawing_from_the_generator_draw_per_run_or_are_refused():
    u = to_static(lambda x: hwport.uniform([4]) + x)
    zero = hwport.zeros([4])
    hwport.seed(1)
    got = [u(zero).numpy() for _ in range(3)]
    hwport.seed(1)
    want = [hwport.uniform([4]).numpy() for _ in range(3)]
    np.testing.assert_array_equal(np.array(got), np.array(want))
    assert u.num_captures == 1
    fixed = to_static(lambda x: hwport.ops.uniform([4], seed=3, offset=2) + x)
    assert np.array_equal(fixed(zero).numpy(), fixed(zero).numpy())  # an explicit stream
    with pytest.raises(StaticCaptureError, match="random op normal"):
        to_static(lambda x: hwport.normal(shape=[4]) + x)(zero)


def test_symbolic_dim_serves_every_size_without_recapture():
    f = _mlp()
    s = to_static(f, input_spec=[InputSpec([None, 8], "float32", "x")])
    for n in (3, 7, 1, 12):
        x = _x(n, 8, seed=n)
        np.testing.assert_allclose(s(x).numpy(), f(x).numpy(), rtol=2e-6, atol=2e-6)
        np.testing.assert_allclose(s(x).numpy(), f(x).numpy(), rtol=2e-6, atol=2e-6)
    assert s.num_captures == 1
    entry = next(iter(s._cache.values()))
    assert "s0x8xf32" in str(entry.program)


def test_a_size_read_into_an_attribute_gets_one_program_per_size():
    """x.reshape([n, ...]) with n read from the shape: the probe run sees another attribute,
    so the symbolic dim is specialized (still right for every size)."""
    def f(x):
        return x.reshape([x.shape[0] * 2, 4]).sum(axis=1)

    s = to_static(f, input_spec=[InputSpec([-1, 8])])
    for n in (2, 3, 2):
        x = _x(n, 8, seed=n)
        np.testing.assert_allclose(s(x).numpy(), f(x).numpy(), rtol=1e-6)
    assert s.num_captures == 2


def test_input_spec_mismatch_is_a_clear_error():
    s = to_static(lambda x: x + 1, input_spec=[InputSpec([None, 8], "float32")])
    with pytest.raises(ValueError, match=r"shape \[3, 4\].*input_spec \[-1, 8\]"):
        s(_x(3, 4))
    with pytest.raises(ValueError, match="dtype float64"):
        s(_x(3, 8, dtype=np.float64))


@pytest.mark.parametrize("place", PLACES)
def test_cond_is_a_region_both_ways_and_eager(place):
    def f(x):
        return snn.cond(x.sum() > 0, lambda: F.relu(x) * 2.0, lambda: x - 1.0)

    s = to_static(f)
    pos = hwport.to_tensor(np.array([1.0, -0.5, 2.0], np.float32), place=place)
    neg = -pos * 3.0
    for x in (pos, neg, pos, neg):
        np.testing.assert_allclose(s(x).numpy(), f(x).numpy(), rtol=1e-6)
    assert s.num_captures == 1
    assert "cf.if" in str(next(iter(s._cache.values())).program)
    # eagerly, outside a capture; and a Python bool
    assert snn.cond(hwport.to_tensor(np.array(False)), lambda: 1, lambda: 2) == 2
    assert snn.cond(True, lambda: 1, lambda: 2) == 1


@pytest.mark.parametrize("place", PLACES)
def test_while_loop_is_a_region_that_runs_data_dependent_counts(place):
    def f(x, n):
        i = hwport.zeros_like(n)
        i, y = snn.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 2.0 + 1.0), [i, x])
        return y

    s = to_static(f)
    x = hwport.to_tensor(np.array([0.5, 1.0], np.float32), place=place)
    for count in (3, 0, 5, 1):
        n = hwport.to_tensor(np.array(count, np.int64), place=place)
        want = x.numpy()
        for _ in range(count):
            want = want * 2 + 1
        np.testing.assert_allclose(s(x, n).numpy(), want, rtol=1e-6)
        np.testing.assert_allclose(f(x, n).numpy(), want, rtol=1e-6)
    assert s.num_captures == 1
    assert "cf.while" in str(next(iter(s._cache.values())).program)


def test_a_python_if_on_a_tensor_names_the_line_and_the_fix():
    def f(x):
        if x.sum() > 0:  # data-dependent
            return x * 2
        return x

    with pytest.raises(StaticCaptureError) as err:
        to_static(f)(_x(3))
    msg = str(err.value)
    assert "test_to_static.py" in msg and "if x.sum() > 0" in msg
    assert "static.nn.cond" in msg and "full_graph=False" in msg
    with pytest.raises(StaticCaptureError, match=r"Tensor\.numpy"):
        to_static(lambda x: x.numpy())(_x(3))
    with pytest.raises(StaticCaptureError, match="print"):
        to_static(lambda x: print(x * 2))(_x(3))


def test_graph_break_runs_eagerly_and_says_so_once():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    s = to_static(f, full_graph=False)
    pos, neg = _x(3).abs() + 0.1, -(_x(3).abs() + 0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in (pos, neg, pos, neg):
            np.testing.assert_allclose(s(x).numpy(), f(x).numpy())
    breaks = [w for w in caught if "graph break" in str(w.message)]
    assert len(breaks) == 1 and "test_to_static.py" in str(breaks[0].message)


def test_in_place_write_into_an_input_is_refused():
    def f(x):
        x.set_value(x * 2)
        return x

    with pytest.raises(StaticCaptureError, match="in-place write"):
        to_static(f)(_x(3))


class _Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)
        self.norm = nn.RMSNorm(16)
        self.register_buffer("scale", hwport.to_tensor(np.full([16], 0.5, np.float32)))

    def forward(self, x):
        return self.norm(F.silu(self.fc(x))) * self.scale


class _Decorated(_Block):
    @to_static
    def forward(self, x):
        return super().forward(x)


@pytest.mark.parametrize("place", PLACES)
def test_layer_parameters_are_program_parameters_read_at_every_run(place):
    layer = _Block()
    layer.to(place)
    layer.eval()
    static = to_static(layer)
    assert static is layer
    x = _x(4, 8).to(place)
    with hwport.no_grad():
        ref = layer.forward.dygraph_function(layer, x).numpy()
        np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-6)
        np.testing.assert_allclose(layer(x).numpy(), ref, rtol=2e-6, atol=1e-6)
        program = str(next(iter(layer.forward._cache.values())).program)
        assert 'parameter_name:"fc.weight"' in program and 'parameter_name:"scale"' in program
        # a parameter changed in place: the program reads the new values
        layer.fc.weight.set_value(layer.fc.weight * 0.5)
        ref2 = layer.forward.dygraph_function(layer, x).numpy()
        np.testing.assert_allclose(layer(x).numpy(), ref2, rtol=2e-6, atol=1e-6)
    assert layer.forward.num_captures == 1


def test_a_decorated_forward_keeps_one_cache_per_instance():
    a, b = _Decorated(), _Decorated()
    x = _x(2, 8)
    with hwport.no_grad():
        ya, yb = a(x), b(x)
        a(x)
    assert a.forward.num_captures == 1 and b.forward.num_captures == 1
    assert not np.allclose(ya.numpy(), yb.numpy())  # each binds its own parameters


def test_a_call_that_needs_gradients_runs_eagerly_with_them():
    layer = to_static(_Block())
    x = _x(2, 8)
    layer(x).sum().backward()
    assert layer.fc.weight.grad is not None
    assert next(iter(layer.forward._cache.values())).eager_reason == "gradients"


def test_enable_to_static_false_runs_eagerly():
    s = to_static(lambda x: x + 1)
    hwport.jit.enable_to_static(False)
    try:
        s(_x(2))
    finally:
        hwport.jit.enable_to_static(True)
    assert s.num_captures == 0


def test_nested_structures_in_and_out():
    s = to_static(lambda d, scale: {"a": d["x"] * scale, "b": [d["y"] + 1, 7]})
    d = {"x": _x(2), "y": _x(3)}
    out1, out2 = s(d, 2.0), s(d, 2.0)
    assert out2["b"][1] == 7 and s.num_captures == 1
    np.testing.assert_allclose(out2["a"].numpy(), out1["a"].numpy())
    np.testing.assert_allclose(out2["b"][0].numpy(), d["y"].numpy() + 1, rtol=1e-6)


def test_print_ir_prints_each_stage(monkeypatch, capsys):
    monkeypatch.setenv("HWPORT_PRINT_IR", "1")
    s = to_static(lambda x: hwport.matmul(x, x) + 0.0)
    s(_x(2, 2))
    out = capsys.readouterr().out
    assert "captured" in out and "pd_op.matmul" in out and "dce" in out


def test_a_layer_whose_parameters_are_replaced_is_captured_again():
    layer = to_static(_Block())
    layer.eval()
    x = _x(2, 8)
    with hwport.no_grad():
        layer(x)
        layer(x)
        layer.fc = nn.Linear(8, 16)  # new parameter objects: the program's are stale
        want = layer.forward.dygraph_function(layer, x).numpy()
        np.testing.assert_allclose(layer(x).numpy(), want, rtol=2e-6, atol=1e-6)
        np.testing.assert_allclose(layer(x).numpy(), want, rtol=2e-6, atol=1e-6)
        layer.extra = nn.Linear(2, 2)  # a structure change that keeps fc: no new capture
        layer(x)
    assert layer.forward.num_captures == 2
