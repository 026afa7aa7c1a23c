"""Whole groups lowered, scheduled, rendered and run: the normalizations as one kernel, an MLP
epilogue, broadcasts, transposes, reductions over any axes. Each result is checked against
numpy on the interpreter (CPU and SIMT schedules), the compiled c99 and the OpenCL source."""

from __future__ import annotations

import numpy as np
import pytest

from tests.cinn.helpers import (
    CPU,
    assert_all_close,
    lower,
    program,
    run_everywhere,
)

RNG = np.random.default_rng(17)


def _x(*shape: int, dtype: str = "float32") -> np.ndarray:
    a = RNG.standard_normal(shape)
    if dtype == "bfloat16":
        import ml_dtypes

        return a.astype(ml_dtypes.bfloat16)
    return a.astype(dtype)


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float64)


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    x, w = _f64(x), _f64(w)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = _f64(x)
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    x = _f64(x)
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * _f64(w) + _f64(b)


TOL = {"float32": (2e-5, 2e-6), "float64": (1e-11, 1e-12), "float16": (1e-2, 1e-3),
       "bfloat16": (5e-2, 1e-2)}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_rms_norm_is_one_kernel(dtype):
    p = program([([16, 100], dtype), ([100], dtype)],
                lambda o, x, w: o.rms_norm(x, w, epsilon=1e-6))
    lowered = lower(p, CPU)
    assert len(lowered.kernel_names) == 1 and len(lowered.launches({0: (16, 100),
                                                                      1: (100,)})) == 1
    x, w = _x(16, 100, dtype=dtype), _x(100, dtype=dtype)
    got = run_everywhere(p, [x, w])
    assert_all_close(got, [_rms(x, w, 1e-6)], *TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_softmax_is_one_kernel(dtype):
    p = program([([24, 77], dtype)], lambda o, x: o.softmax(x, axis=-1))
    assert len(lower(p).kernel_names) == 1
    x = _x(24, 77, dtype=dtype) * 4
    x[3, 5] = -np.inf  # a masked element
    got = run_everywhere(p, [x])
    assert_all_close(got, [_softmax(x)], *TOL[dtype])


def test_layer_norm_is_one_kernel():
    p = program([([12, 96], "float32"), ([96], "float32"), ([96], "float32")],
                lambda o, x, w, b: o.layer_norm(x, w, b, epsilon=1e-5))
    assert len(lower(p).kernel_names) == 1
    x, w, b = _x(12, 96) * 3 + 1, _x(96), _x(96)
    got = run_everywhere(p, [x, w, b])
    assert_all_close(got, [_layer_norm(x, w, b, 1e-5)], 3e-5, 3e-6)


@pytest.mark.parametrize("decompose", [True, False])
def test_bias_gelu_residual(decompose):
    p = program([([8, 64], "float32"), ([64], "float32"), ([8, 64], "float32")],
                lambda o, x, b, r: o.add(o.gelu(o.add(x, b)), r), decompose=decompose)
    x, b, r = _x(8, 64) * 2, _x(64), _x(8, 64)
    from math import erf

    h = _f64(x) + _f64(b)
    want = h * 0.5 * (1 + np.vectorize(erf)(h / np.sqrt(2))) + _f64(r)
    got = run_everywhere(p, [x, b, r])
    assert_all_close(got, [want], 2e-6, 2e-6)


def test_broadcasts_are_recomputed_not_materialized():
    p = program([([4, 1, 6], "float32"), ([5, 1], "float32"), ([], "float32")],
                lambda o, x, y, s: o.multiply(o.add(x, y), s))
    lowered = lower(p)
    assert len(lowered.spec.buffers) == 4  # three inputs, one output: no temporaries
    x, y, s = _x(4, 1, 6), _x(5, 1), _x()
    got = run_everywhere(p, [x, y, s])
    assert_all_close(got, [(_f64(x) + _f64(y)) * _f64(s)], 1e-6, 1e-7)


def test_expand_reshape_squeeze_unsqueeze():
    def body(o, x, y):
        e = o.expand(o.unsqueeze(x, axis=[0]), shape=[3, 4, 5])
        return o.add(o.reshape(e, shape=[12, 5]), o.squeeze(y, axis=[1]))

    p = program([([4, 5], "float32"), ([12, 1, 5], "float32")], body, decompose=False)
    x, y = _x(4, 5), _x(12, 1, 5)
    want = np.broadcast_to(x, (3, 4, 5)).reshape(12, 5) + y[:, 0, :]
    assert_all_close(run_everywhere(p, [x, y]), [want], 1e-7, 0)


def test_transposes():
    p = program([([6, 10], "float32"), ([10, 6], "float32")],
                lambda o, x, y: o.exp(o.add(o.transpose(x, perm=[1, 0]), y)), decompose=False)
    x, y = _x(6, 10), _x(10, 6)
    assert_all_close(run_everywhere(p, [x, y]), [np.exp(_f64(x).T + _f64(y))], 2e-6, 1e-7)


def test_transpose_3d_into_a_reduction():
    p = program([([3, 4, 5], "float32")],
                lambda o, x: o.sum(o.transpose(x, perm=[2, 0, 1]), axis=[2]), decompose=False)
    x = _x(3, 4, 5)
    assert_all_close(run_everywhere(p, [x]), [_f64(x).transpose(2, 0, 1).sum(2)], 1e-6, 1e-6)


@pytest.mark.parametrize(("op", "axis", "keepdim"), [
    ("sum", [1], False), ("sum", [0, 2], True), ("max", [1], True), ("min", [0], False),
    ("prod", [2], False), ("mean", [], False), ("mean", [0, 1], True), ("max", [], True)])
def test_reductions_over_any_axes(op, axis, keepdim):
    p = program([([4, 6, 5], "float32")],
                lambda o, x: getattr(o, op)(x, axis=axis, keepdim=keepdim), decompose=False)
    x = _x(4, 6, 5)
    x[1, 2, 3] = np.nan if op in ("max", "min") else x[1, 2, 3]
    ref = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod, "mean": np.mean}[op]
    want = ref(_f64(x), axis=tuple(axis) if axis else None, keepdims=keepdim)
    assert_all_close(run_everywhere(p, [x]), [np.asarray(want)], 1e-5, 1e-6)


def test_a_reduction_and_its_consumers_with_two_outputs():
    def body(o, x):
        s = o.sum(x, axis=[1], keepdim=True)
        return [o.divide(x, s), s]

    p = program([([5, 9], "float32")], body, decompose=False)
    x = np.abs(_x(5, 9)) + 0.5
    s = _f64(x).sum(1, keepdims=True)
    assert_all_close(run_everywhere(p, [x]), [_f64(x) / s, s], 1e-6, 1e-6)


def test_integer_sum_accumulates_in_int64():
    p = program([([3, 300], "int8")], lambda o, x: o.sum(x, axis=[1]), decompose=False)
    x = np.full((3, 300), 100, np.int8)
    got = run_everywhere(p, [x])
    for outs in got.values():
        assert outs[0].dtype == np.int64 and (outs[0] == 30000).all()


def test_float16_sum_accumulates_in_float32():
    p = program([([2, 16384], "float16")], lambda o, x: o.sum(x, axis=[1]), decompose=False)
    x = np.ones((2, 16384), np.float16)
    got = run_everywhere(p, [x])
    for where, outs in got.items():
        assert (outs[0].astype(np.float64) == 16384).all(), where


def test_cast_where_and_constants():
    def body(o, x, y):
        c = o.greater_than(x, y)
        return o.cast(o.where(c, x, o.full(shape=[1], fill_value=2.5, dtype="float32")),
                      dtype="float64")

    p = program([([7, 3], "float32"), ([3], "float32")], body, decompose=False)
    x, y = _x(7, 3), _x(3)
    want = np.where(x > y, _f64(x), 2.5)
    assert_all_close(run_everywhere(p, [x, y]), [want], 0, 0)


def test_outputs_of_different_shapes_get_a_kernel_each():
    def body(o, x, w):
        return [o.softmax(x, axis=-1), o.multiply(w, w), o.exp(x)]

    p = program([([4, 6], "float32"), ([6], "float32")], body)
    lowered = lower(p)
    assert len(lowered.kernel_names) == 2  # softmax + exp(x) in one, w * w in another
    x, w = _x(4, 6), _x(6)
    got = run_everywhere(p, [x, w])
    assert_all_close(got, [_softmax(x), _f64(w) ** 2, np.exp(_f64(x))], 2e-6, 1e-7)


def test_elementwise_outputs_of_two_shapes():
    p = program([([3, 5], "float32"), ([5], "float32")],
                lambda o, x, y: [o.add(x, y), o.neg(y)], decompose=False)
    assert len(lower(p).kernel_names) == 2
    x, y = _x(3, 5), _x(5)
    assert_all_close(run_everywhere(p, [x, y]), [x + y, -y], 0, 0)


def test_softmax_stash_row_cache_and_its_fallback(monkeypatch):
    """The CPU schedule computes softmax's exp once per element: with one element write, the
    last phase stores it in that output and the writes rescale it in place (no row cache, any
    row length); with two element writes it keeps it in a row cache when the row fits and
    computes it twice otherwise: one kernel, both paths (a small cache here)."""
    from hwport.cinn_backends import schedule_cpu
    from hwport.cinn_backends.interpret import interpret
    from tests.cinn import runners
    from tests.cinn.helpers import out_specs

    monkeypatch.setattr(schedule_cpu, "ROW_CACHE", 32)

    def softmax(o, x):
        e = o.exp(o.subtract(x, o.max(x, axis=[1], keepdim=True)))
        s = o.sum(e, axis=[1], keepdim=True)
        return [o.divide(e, s), s]

    def two_writes(o, x):
        e = o.exp(o.subtract(x, o.max(x, axis=[1], keepdim=True)))
        s = o.sum(e, axis=[1], keepdim=True)
        return [o.divide(e, s), o.multiply(e, e)]

    for body, cached in ((softmax, False), (two_writes, True)):
        for n in (20, 50):
            p = program([([3, n], "float32")], body, decompose=False)
            lowered = lower(p)
            assert ("rowcache" in lowered.source) == cached, body.__name__
            x = _x(3, n)
            xs = _f64(x) - _f64(x).max(1, keepdims=True)
            e = np.exp(xs)
            want = [e / e.sum(1, keepdims=True),
                    e.sum(1, keepdims=True) if body is softmax else e * e]
            assert_all_close({"interp": interpret(lowered, [x], out_specs(p))}, want, 2e-6,
                             1e-7)
            if runners.have_cc():
                got = runners.run_c99(lowered, [x], out_specs(p))
                assert_all_close({"c99": got}, want, 2e-6, 1e-7)


def test_empty_and_zero_dim_tensors():
    p = program([([0, 8], "float32")], lambda o, x: o.exp(x), decompose=False)
    assert lower(p).launches({0: (0, 8)}) == []
    p = program([([4, 0], "float32")], lambda o, x: o.sum(x, axis=[1]), decompose=False)
    got = run_everywhere(p, [np.zeros((4, 0), np.float32)])
    assert_all_close(got, [np.zeros(4)], 0, 0)
    p = program([([], "float32"), ([], "float32")], lambda o, x, y: o.multiply(o.exp(x), y),
                decompose=False)
    x, y = np.array(0.5, np.float32), np.array(3.0, np.float32)
    assert_all_close(run_everywhere(p, [x, y]), [np.exp(0.5) * 3.0], 1e-6, 0)


def test_bool_and_integer_groups():
    def body(o, a, b, i):
        return [o.logical_and(a, o.logical_not(b)), o.max(a, axis=[1]), o.sum(b, axis=[0]),
                o.remainder(i, o.full(shape=[1], fill_value=3, dtype="int32"))]

    p = program([([3, 4], "bool"), ([3, 4], "bool"), ([3, 4], "int32")], body, decompose=False)
    a = RNG.random((3, 4)) > 0.5
    b = RNG.random((3, 4)) > 0.5
    i = RNG.integers(-20, 20, (3, 4)).astype(np.int32)
    got = run_everywhere(p, [a, b, i])
    for where, outs in got.items():
        np.testing.assert_array_equal(outs[0], a & ~b, err_msg=where)
        np.testing.assert_array_equal(outs[1], a.max(1), err_msg=where)
        np.testing.assert_array_equal(outs[2], b.sum(0), err_msg=where)
        np.testing.assert_array_equal(outs[3], i % 3, err_msg=where)


def test_column_reductions_in_blocks():
    """A reduction over non-innermost axes (a bias gradient, a norm over axis 0): the CPU
    schedule walks the reduced axes once per block of contiguous columns; blocks of 256, the
    last one partial here. Consumers of both the reduced domain and the rows are written."""
    def body(o, x):
        m = o.max(x, axis=[1], keepdim=True)
        s = o.sum(o.exp(o.subtract(x, m)), axis=[1], keepdim=True)
        return [o.divide(o.exp(o.subtract(x, m)), s), o.squeeze(s, axis=[1])]

    p = program([([3, 5, 300], "float32")], body, decompose=False)
    lowered = lower(p)
    assert lowered.spec.col_dims and "accs0" in lowered.source
    x = _x(3, 5, 300)
    e = np.exp(_f64(x) - _f64(x).max(1, keepdims=True))
    got = run_everywhere(p, [x])
    assert_all_close(got, [e / e.sum(1, keepdims=True), e.sum(1)], 2e-6, 1e-7)


def test_a_long_chain_with_shared_operands_lowers_in_linear_time():
    """300 ops, each reading its operand several times: the expression is a DAG whose tree
    form is exponential; every walk visits a node once and recursion has room."""
    import time

    def body(o, x):
        for i in range(300):
            x = o.add(o.multiply(x, x), x) if i % 2 else o.tanh(x)
        return x

    from hwport.cinn_backends.interpret import interpret
    from tests.cinn.helpers import out_specs

    p = program([([4, 8], "float32")], body, decompose=False)
    t0 = time.perf_counter()
    lowered = lower(p)
    assert time.perf_counter() - t0 < 10
    x = (RNG.random((4, 8)).astype(np.float32) - 0.5) * 0.1
    r = _f64(x)
    for i in range(300):
        r = r * r + r if i % 2 else np.tanh(r)
    assert_all_close({"interp": interpret(lowered, [x], out_specs(p))}, [r], 1e-4, 1e-6)


def test_int64_reductions_wrap_and_start_from_the_extremes():
    p = program([([3, 5], "int64")],
                lambda o, x: [o.max(x, axis=[1]), o.min(x, axis=[1]), o.sum(x, axis=[1])],
                decompose=False)
    x = RNG.integers(-(2**62), 2**62, (3, 5)).astype(np.int64)
    with np.errstate(over="ignore"):
        want = [x.max(1), x.min(1), x.sum(1)]
    for where, outs in run_everywhere(p, [x]).items():
        for g, w in zip(outs, want, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=where)
