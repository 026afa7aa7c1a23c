"""The OpenCL plugin's argmax/argmin and cumsum/cumprod kernels
(device_plugins/opencl/kernels_arg_scan.c, arg_scan.cl), through the public API on custom:opencl
and directly through the C ABI.

numpy is the oracle (phi_ops.reference, compared with phi_ops.tolerance.assert_close) for every
registered (op, dtype): every axis, axis=None, keepdim, 0-d, odd sizes (1, 7, 257, rows longer
than a work-group and than a scan chunk, the two-pass argmax over few long rows, ~1M elements),
zero-size inputs, strided views (transposed, flipped, stepped), NaN/Inf and ties (first index
wins; NaN counts as the extreme), +-0, integer wrap-around of int64 scans, large magnitudes, a
non-default stream, unaligned byte offsets and bad arguments; the ops no longer fall back."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from phi_ops.reference import reference
from phi_ops.tolerance import assert_close
from tests.device_plugins import ocl_families as fam
from tests.device_plugins.ocl_families import P, dev, np_dtype
from tests.seeds import rng_for

LINE = fam.require_family("argmax/argmin/cumsum/cumprod")
REGISTERED = fam.registered(LINE, fam.ALL)
OPS = ("argmax", "argmin", "cumsum", "cumprod")
OP_DTYPES = [(op, d) for op in OPS for d in REGISTERED]
IDS = [f"{o}-{d}" for o, d in OP_DTYPES]


def values(op: str, name: str, shape, rng: np.random.Generator) -> np.ndarray:
    dt = np_dtype(name)
    if name == "bool":
        return rng.random(size=shape) < 0.5
    if dt.kind in "iu":
        if op == "cumprod":
            return rng.integers(-2 if dt.kind == "i" else 0, 3, size=shape).astype(dt)
        if op.startswith("arg"):  # few distinct values: many ties
            return rng.integers(0 if dt.kind == "u" else -5, 6, size=shape).astype(dt)
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    if op == "cumprod":
        v = rng.uniform(0.97, 1.03, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    elif op.startswith("arg"):
        v = np.round(rng.standard_normal(size=shape) * 3)  # ties
    else:
        v = rng.standard_normal(size=shape) * 4
    return v.astype(dt)


def check(op: str, name: str, a: np.ndarray, t, axis, keepdim: bool = False) -> None:
    attrs = {"axis": axis}
    if op.startswith("arg"):
        attrs["keepdim"] = keepdim
        got = getattr(hwport, op)(t, axis=axis, keepdim=keepdim)
    else:
        got = getattr(hwport, op)(t, axis)  # positional: cumprod names it dim (Paddle)
    assert str(got.place).startswith(P), got.place
    want = np.asarray(reference(op, [a], attrs))
    got_np = got.numpy()
    assert got_np.shape == want.shape, (op, name, axis, got_np.shape, want.shape)
    assert got_np.dtype == want.dtype, (op, name, got_np.dtype, want.dtype)
    if op == "cumsum" and name == "float64" and a.size > 4096:
        check_long_f64_cumsum(a, axis, got_np)
    else:
        assert_close(op, name, got_np, want)


def check_long_f64_cumsum(a: np.ndarray, axis, got: np.ndarray) -> None:
    """Long float64 rows: numpy's sequential cumsum is itself off by ~sqrt(n) roundings, more
    than the 1e-12 atol of the `reduction` profile, so compare against an extended-precision
    scan within the summation error bound c * eps * cumsum(|x|) of a blocked scan."""
    x = a.reshape(-1) if axis is None else a
    ax = 0 if axis is None else axis
    exact = np.cumsum(x.astype(np.longdouble), axis=ax)
    bound = 64 * np.finfo(np.float64).eps * np.cumsum(np.abs(x), axis=ax) + 1e-300
    err = np.abs(got.astype(np.longdouble) - exact)
    assert np.all(err <= bound), float(np.max(err / bound))


def test_registered_set():
    assert f"registered {len(OP_DTYPES)} argmax/argmin/cumsum/cumprod kernels" in LINE, LINE


@pytest.mark.parametrize("op,name", OP_DTYPES, ids=IDS)
def test_matches_numpy(op, name):
    rng = rng_for(op, name, 1)
    for shape in ((7,), (3, 5), (4, 1, 6), (2, 3, 5, 7)):
        a = values(op, name, shape, rng)
        t = dev(a)
        for axis in [None, *range(-1, len(shape))]:
            check(op, name, a, t, axis)
            if op.startswith("arg") and axis is not None:
                check(op, name, a, t, axis, keepdim=True)
    # odd sizes: one element, rows longer than a work-group (256) and than a scan block
    # (256 * 8), few long rows (split into chunks: two-pass argmax, chunked scans), an outer
    # axis (strided rows)
    for shape, axis in (((1, 1), 1), ((257, 3), 0), ((3, 1023), 1), ((5, 4099), 1),
                        ((2, 50001), 1), ((3, 2049, 2), 1), ((100003,), 0), ((2, 20001, 3), 1)):
        a = values(op, name, shape, rng)
        check(op, name, a, dev(a), axis)
    a = values(op, name, (), rng)  # 0-d
    check(op, name, a, dev(a), None)
    check(op, name, a, dev(a), 0)


@pytest.mark.parametrize("op,name", OP_DTYPES, ids=IDS)
def test_strided_views(op, name):
    rng = rng_for(op, name, 2)
    a = values(op, name, (6, 9, 5), rng)
    t = dev(a)
    for a_c, t_view in fam.strided_views(a, t):
        for axis in (0, 1, 2, None):
            check(op, name, a_c, t_view, axis)


@pytest.mark.parametrize("op", OPS)
def test_zero_size(op):
    a = np.zeros((0, 4), np.float32)
    if op.startswith("arg"):
        check(op, "float32", a, dev(a), 1)  # no outputs
        with pytest.raises(ValueError, match=op):
            getattr(hwport, op)(dev(a), 0)  # over an empty axis
    else:
        for axis in (0, 1, None):
            check(op, "float32", a, dev(a), axis)


@pytest.mark.parametrize("name", fam.registered(LINE, fam.FLOATS))
def test_arg_nan_inf_ties_and_zeros(name):
    dt = np_dtype(name)
    rows = np.array([
        [1, 3, 3, -2, 3, -2],                       # ties: the first index wins
        [np.nan, 1, np.nan, -np.inf, 5, 2],         # the first NaN wins both ways
        [2, 1, np.inf, np.inf, -np.inf, -np.inf],   # infinities tie too
        [-0.0, 0.0, -0.0, 0.0, -0.0, 0.0],          # +0 and -0 are equal
        [1, 2, 3, 4, 5, np.nan],                    # a late NaN
        [65000, -65000, 1e-7, -1e-7, 0, 65000],     # large magnitudes
    ]).astype(dt)
    t = dev(rows)
    for op in ("argmax", "argmin"):
        for axis in (1, 0, None):
            check(op, name, rows, t, axis)
    got = hwport.argmax(t, axis=1).numpy()
    np.testing.assert_array_equal(got, [1, 0, 2, 0, 5, 0])
    np.testing.assert_array_equal(hwport.argmin(t, axis=1).numpy(), [3, 0, 4, 0, 5, 1])
    # the NaN in the middle of a long row (the two-pass path)
    long_row = np.zeros((1, 70001), dtype=dt)
    long_row[0, 54321] = np.nan
    long_row[0, 60000] = np.nan
    assert hwport.argmax(dev(long_row), axis=1).numpy()[0] == 54321
    assert hwport.argmin(dev(long_row), axis=1).numpy()[0] == 54321


@pytest.mark.parametrize("name", fam.registered(LINE, fam.FLOATS))
def test_scan_nan_inf(name):
    a = np.array([[1, np.nan, 2, 3], [np.inf, 1, -np.inf, 2], [np.inf, 0, 2, 3],
                  [1e4, -1e4, 3, 1]]).astype(np_dtype(name))
    for op in ("cumsum", "cumprod"):
        check(op, name, a, dev(a), 1)


def test_int_scans_wrap_and_widen():
    big = np.array([np.iinfo(np.int64).max, 1, 1, np.iinfo(np.int64).min], np.int64)
    got = hwport.cumsum(dev(big), axis=0).numpy()
    np.testing.assert_array_equal(got, np.cumsum(big))  # two's complement wrap-around
    u8 = np.full((3000,), 255, np.uint8)
    got = hwport.cumsum(dev(u8), axis=0).numpy()
    assert got.dtype == np.int64 and got[-1] == 255 * 3000
    p = np.full((70,), 3, np.int32)
    np.testing.assert_array_equal(hwport.cumprod(dev(p), dim=0).numpy(),
                                  np.cumprod(p.astype(np.int64)))


def test_large_float32_scan_and_argmax():
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(1000003) + 0.01).astype(np.float32)
    t = dev(x)
    got = hwport.cumsum(t).numpy().astype(np.float64)
    want = np.cumsum(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    for op in ("argmax", "argmin"):
        check(op, "float32", x, t, None)
    m = x[:1000000].reshape(1000, 1000)
    for op in OPS[:3]:
        check(op, "float32", m, dev(m), 0)


def test_on_a_stream():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 4097)).astype(np.float32)
    fam.check_on_stream([(op, lambda t, op=op: getattr(hwport, op)(t, 1), a, {"axis": 1})
                         for op in OPS])


def test_ops_no_longer_fall_back():
    rng = np.random.default_rng(0)

    def run():
        for op, name in OP_DTYPES:
            a = values(op, name, (4, 5), rng)
            getattr(hwport, op)(dev(a), 1).numpy()  # positional: cumprod's is dim
            getattr(hwport, op)(dev(a)).numpy()

    fam.assert_no_fallback(OPS, run)


# ---- directly through the C ABI: unaligned offsets and argument checks -----------------------


@pytest.mark.parametrize("pad", [1, 3])
def test_direct_unaligned_and_strided(pad):
    ocl = fam.direct_host()
    from hwport.conformance.direct_host import DTYPE_CODE, DeviceArray

    rng = np.random.default_rng(pad)
    for op, name in [("argmax", "float32"), ("argmin", "int16"), ("cumsum", "float16"),
                     ("cumprod", "int64"), ("cumsum", "bfloat16"), ("argmax", "int64")]:
        a = values(op, name, (6, 700), rng)
        d = DeviceArray(ocl, a, pad=pad)
        want = np.asarray(reference(op, [a[::-1, 1::2]], {"axis": 1}))
        out = DeviceArray.empty(ocl, want.shape, want.dtype, pad=pad + 2)
        try:
            st = ocl.call_kernel(op, DTYPE_CODE[name], [d.view(d.host[::-1, 1::2])],
                                 [out.view()], attrs={"axis": 1})
            ocl.check(st, op)
            assert_close(op, name, out.read(), want)
        finally:
            out.free()
            d.free()


def test_direct_argument_checks():
    ocl = fam.direct_host()
    from hwport.conformance.direct_host import DTYPE_CODE, INVALID_ARGUMENT, DeviceArray

    a = DeviceArray(ocl, np.ones((3, 4), np.float32))
    f_out = DeviceArray.empty(ocl, (3,), np.dtype(np.float32))
    i_out = DeviceArray.empty(ocl, (3,), np.dtype(np.int64))
    empty = DeviceArray(ocl, np.ones((3, 0), np.float32))
    s_out = DeviceArray.empty(ocl, (3, 4), np.dtype(np.int64))
    f32 = DTYPE_CODE["float32"]
    try:
        st = ocl.call_kernel("argmax", f32, [a.view()], [f_out.view()], attrs={"axis": 1})
        ocl.expect_error(st, INVALID_ARGUMENT, "argmax", "output dtype")
        st = ocl.call_kernel("argmin", f32, [a.view()], [i_out.view()], attrs={"axis": 2})
        ocl.expect_error(st, INVALID_ARGUMENT, "argmin", "axis", "out of range")
        st = ocl.call_kernel("argmax", f32, [a.view()], [i_out.view()], attrs={})
        ocl.expect_error(st, INVALID_ARGUMENT, "argmax", "axis", "missing")
        st = ocl.call_kernel("argmax", f32, [a.view()], [i_out.view()], attrs={"axis": 0})
        ocl.expect_error(st, INVALID_ARGUMENT, "argmax", "elements")  # 4 outputs, not 3
        st = ocl.call_kernel("argmax", f32, [empty.view()], [i_out.view()], attrs={"axis": 1})
        ocl.expect_error(st, INVALID_ARGUMENT, "argmax", "empty axis")
        st = ocl.call_kernel("cumsum", f32, [a.view()], [s_out.view()], attrs={"axis": 1})
        ocl.expect_error(st, INVALID_ARGUMENT, "cumsum", "output dtype")  # float32 -> float32
        st = ocl.call_kernel("cumsum", f32, [a.view(), a.view()], [f_out.view()],
                             attrs={"axis": 1})
        ocl.expect_error(st, INVALID_ARGUMENT, "cumsum", "inputs")
        # a good call still works afterwards
        ocl.check(ocl.call_kernel("argmax", f32, [a.view()], [i_out.view()], attrs={"axis": 1}),
                  "argmax")
        np.testing.assert_array_equal(i_out.read(), [0, 0, 0])
    finally:
        for d in (a, f_out, i_out, empty, s_out):
            d.free()
