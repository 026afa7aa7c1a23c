"""The OpenCL plugin's float32 sum/mean fast paths (device_plugins/opencl/kernels_reduce.c):
k_<op>_c sums a work-item's span of a contiguous row in superblocks of up to 1024 elements
(four streams, a float16 accumulator each, then double); k_<op>_k sums columns in fixed
groups of 128 over two row streams (float over blocks of 32 rows, then double), the last group
masked, an odd last row alone and the columns past the last multiple of 16 one by one; bool
and integer rows through k_<op>_c's int64 lanes. Sizes around every block edge, views, NaN and
+-inf in different blocks, and float32 accuracy on long inputs, against numpy in float64.
Skipped as tests/device_plugins/test_opencl_reduce.py is."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from tests.device_plugins.test_opencl_reduce import check, check_kept_dims, dev, run
from tests.seeds import rng_for

TOL = {"rtol": 1e-5, "atol": 1e-5}


@pytest.mark.parametrize("n", [1, 7, 63, 64, 65, 1023, 1024, 1025, 1087, 16 * 1024 + 13,
                               (1 << 20) + 3])
def test_full_sums_around_block_edges(n):
    rng = rng_for(f"opencl-reduce-blocks-{n}")
    x = (rng.standard_normal(n) * 3 + 0.5).astype(np.float32)
    t = dev(x)
    for op in ("sum", "mean"):
        check(op, "float32", x, t, None)
    if n > 2:  # a view starting one element in, and a stepped (non-contiguous) view
        check("sum", "float32", x[1:], t[1:], None)
        check("sum", "float32", x[::2], t[::2], None)


@pytest.mark.parametrize("shape", [(5, 1025), (3, 4097), (64, 2049), (9, 33000)])
def test_row_sums_around_block_edges(shape):
    rng = rng_for(f"opencl-reduce-rows-{shape}")
    x = (rng.standard_normal(shape) * 4 + 1).astype(np.float32)
    t = dev(x)
    for op in ("sum", "mean"):
        check(op, "float32", x, t, [1])
        check(op, "float32", x, t, None)


def test_specials_in_different_superblocks():
    # inf in one superblock and -inf in another give NaN; a lone inf stays inf; NaN anywhere
    # (first, middle, the scalar tail) gives NaN.
    n = 5000
    rows = np.ones((6, n), np.float32)
    rows[0, 10] = np.inf
    rows[0, 3000] = -np.inf
    rows[1, 2500] = np.inf
    rows[2, 0] = np.nan
    rows[3, 2048] = np.nan
    rows[4, n - 1] = np.nan
    got = run("sum", dev(rows), [1], False).numpy()
    assert np.isnan(got[0]) and got[1] == np.inf, got
    assert np.isnan(got[2:5]).all() and got[5] == n, got
    flat = rows[1].copy()
    assert float(hwport.sum(dev(flat)).numpy()) == np.inf


@pytest.mark.parametrize(("shape", "axis"), [((70, 4296), [0]), ((33, 4100), [0]),
                                           ((31, 4352), [0]), ((2, 3, 4608), [0, 1]),
                                           ((100, 257), [0])])
def test_column_sums_full_and_masked_groups(shape, axis):
    # sum, mean, max, min. 4296 columns: 256 per work-item, the last one 200 (12 vectors
    # masked, 8 one by one); 4100: the last 4 one by one; row counts off the 32-row blocks.
    rng = rng_for(f"opencl-reduce-cols-{shape}")
    x = (rng.standard_normal(shape) * 4 + 1).astype(np.float32)
    x.flat[7] = np.nan
    x.flat[shape[-1] + 4200 if shape[-1] > 4200 else shape[-1] + 5] = np.inf
    check_kept_dims(x, axis, **TOL)


def test_float32_accuracy_on_long_inputs():
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(1 << 22) * 3 + 0.25).astype(np.float32)
    got = float(hwport.sum(dev(x)).numpy())
    want = float(x.astype(np.float64).sum())
    assert abs(got - want) <= 1e-5 * abs(want) + 1e-5, (got, want)
    m = x.reshape(1 << 12, 1 << 10)
    g = hwport.sum(dev(m), axis=0).numpy().astype(np.float64)
    w = m.astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * np.abs(m).sum(axis=0).max() / 64)


INT_DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64")


@pytest.mark.parametrize("name", INT_DTYPES)
@pytest.mark.parametrize("shape", [(63,), (64,), (1000,), (3, 1025), (5, 4099), ((1 << 20) + 3,)])
def test_integer_rows_contiguous(name, shape):
    # bool and integer contiguous rows (k_<op>_c with 16-element loads widened to int64):
    # sizes off the 16 / 32 / group multiples, full ranges (int64 sums wrap as numpy's do),
    # an element-offset view and a stepped view (the generic path).
    rng = rng_for(f"opencl-reduce-int-{name}-{shape}")
    if name == "bool":
        x = rng.random(shape) < 0.5
    else:
        info = np.iinfo(name)
        x = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=name)
    t = dev(x)
    axis = [len(shape) - 1]
    for op in ("sum", "max", "min"):
        check(op, name, x, t, axis)
        check(op, name, x, t, None)
        check(op, name, x[..., 1:], t[..., 1:], axis)
    check("sum", name, x[..., ::3], t[..., ::3], axis)


def test_bool_rows_any_and_all():
    # max / min over bool are any / all: one True (or one False) anywhere in a long row,
    # including the scalar tail.
    n = 4099
    rows = np.zeros((4, n), np.bool_)
    rows[1, 17] = True
    rows[2, n - 1] = True
    rows[3, :] = True
    got = run("max", dev(rows), [1], False).numpy()
    np.testing.assert_array_equal(got, [False, True, True, True])
    neg = ~rows
    got = run("min", dev(neg), [1], False).numpy()
    np.testing.assert_array_equal(got, [True, False, False, False])
    got = run("sum", dev(rows), [1], False).numpy()
    np.testing.assert_array_equal(got, rows.sum(axis=1))
