"""The OpenCL plugin's matmul kernel tiled in local memory (device_plugins/opencl/kernels_matmul.c,
matmul.cl), through the public API on custom:opencl and directly through the C ABI.

Oracles: numpy (phi_ops.reference, compared with phi_ops.tolerance.assert_close: the `matmul`
profile) for every registered dtype, and PyTorch CPU for float32/float64. Shapes: 1x1, sizes
that are not multiples of the tile, a row/column vector, 1-D operands, batched with broadcast
batch dims, transpose_x/transpose_y, transposed/stepped/flipped views, K = 0 and zero-size
outputs, 512^3; integers wrap; NaN/Inf propagate; a non-default stream; unaligned byte offsets
and bad arguments through the ABI; matmul no longer falls back."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport.device import Stream, stream_guard
from phi_ops.reference import reference
from phi_ops.tolerance import assert_close
from tests.device_plugins import ocl_families as fam
from tests.device_plugins.ocl_families import P, dev, np_dtype
from tests.seeds import rng_for

LINE = fam.require_family("matmul")
REGISTERED = fam.registered(LINE, (*fam.INTS, *fam.FLOATS))


def values(name: str, shape, rng: np.random.Generator, wide: bool = False) -> np.ndarray:
    dt = np_dtype(name)
    if dt.kind in "iu":
        if wide:  # products and sums that overflow the dtype: wrap-around
            info = np.iinfo(dt)
            return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
        return rng.integers(0 if dt.kind == "u" else -4, 5, size=shape).astype(dt)
    return (rng.standard_normal(size=shape) * 2).astype(dt)


def check(name: str, a, b, ta, tb, **attrs) -> None:
    got = hwport.matmul(ta, tb, **attrs)
    assert str(got.place).startswith(P), got.place
    full = {"transpose_x": False, "transpose_y": False, **attrs}
    want = np.asarray(reference("matmul", [a, b], full))
    got_np = got.numpy()
    assert got_np.shape == want.shape and got_np.dtype == want.dtype, (got_np.shape, want.shape)
    assert_close("matmul", name, got_np, want)


def check_huge(name: str, a: np.ndarray, b: np.ndarray) -> None:
    """x @ y for x of magnitude 1e30 with NaN/Inf: non-finite results exactly as numpy; finite
    ones within the dot-product rounding bound 2·k·eps·(|x| @ |y|). A relative tolerance on the
    result alone fails whenever the sum cancels (1e31-sized terms adding up to 1e27), which
    depends only on the summation order."""
    wide = np.longdouble  # the reference's own rounding stays far below float64's bound
    got = hwport.matmul(dev(a), dev(b)).numpy().astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        want = a.astype(wide) @ b.astype(wide)
        scale = np.abs(a.astype(wide)) @ np.abs(b.astype(wide))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    bound = 2 * a.shape[-1] * np.finfo(np_dtype(name)).eps * scale[finite]
    err = np.abs(got[finite] - want[finite])
    assert (err <= bound).all(), f"matmul[{name}]: error {err.max():.3g} beyond {bound.min():.3g}"


SHAPES = [((1, 1), (1, 1)), ((7, 5), (5, 3)), ((65, 130), (130, 67)), ((257, 1), (1, 257)),
          ((1, 300), (300, 1)), ((7,), (7,)), ((7,), (7, 4)), ((4, 7), (7,)),
          ((2, 3, 17, 9), (3, 9, 33)), ((4, 1, 5, 6), (1, 3, 6, 2)), ((2, 70, 64), (64, 80))]


@pytest.mark.parametrize("name", REGISTERED)
def test_matches_numpy(name):
    rng = rng_for(name, 1)
    for xs, ys in SHAPES:
        a, b = values(name, xs, rng), values(name, ys, rng)
        check(name, a, b, dev(a), dev(b))
    a, b = values(name, (9, 6), rng), values(name, (11, 9), rng)
    check(name, a, b, dev(a), dev(b), transpose_x=True, transpose_y=True)
    a, b = values(name, (3, 6, 9), rng), values(name, (3, 11, 9), rng)
    check(name, a, b, dev(a), dev(b), transpose_y=True)


@pytest.mark.parametrize("name", REGISTERED)
def test_strided_views(name):
    rng = rng_for(name, 2)
    a, b = values(name, (40, 30), rng), values(name, (30, 50), rng)
    ta, tb = dev(a), dev(b)
    at = np.ascontiguousarray(a.T)
    check(name, at.T.copy(), b, hwport.ops.transpose(dev(at), perm=[1, 0]), tb)  # column-major x
    check(name, a[::-1, ::2], b[::2, ::-1], hwport.ops.flip(
        hwport.ops.slice(ta, axes=[1], starts=[0], ends=[30], strides=[2]), axis=[0]),
          hwport.ops.flip(hwport.ops.slice(tb, axes=[0], starts=[0], ends=[30], strides=[2]),
                          axis=[1]))
    check(name, a[3:20], b[:, 7:41], hwport.ops.slice(ta, axes=[0], starts=[3], ends=[20]),
          hwport.ops.slice(tb, axes=[1], starts=[7], ends=[41]))


@pytest.mark.parametrize("name", [n for n in REGISTERED if n in fam.INTS])
def test_integers_wrap(name):
    rng = np.random.default_rng(5)
    a, b = values(name, (33, 70), rng, wide=True), values(name, (70, 9), rng, wide=True)
    check(name, a, b, dev(a), dev(b))


@pytest.mark.parametrize("name", REGISTERED)
def test_empty(name):
    dt = np_dtype(name)
    for xs, ys in (((3, 0), (0, 4)), ((0, 5), (5, 4)), ((3, 5), (5, 0)), ((2, 0, 3), (3, 6))):
        a, b = np.zeros(xs, dt), np.zeros(ys, dt)
        check(name, a, b, dev(a), dev(b))


@pytest.mark.parametrize("name", fam.registered(LINE, ("float32", "float64")))
def test_against_torch_and_special_values(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    for xs, ys in (((512, 512), (512, 512)), ((3, 129, 65), (3, 65, 127))):
        a, b = values(name, xs, rng), values(name, ys, rng)
        got = hwport.matmul(dev(a), dev(b)).numpy()
        want = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        tol = 1e-4 if name == "float32" else 1e-11
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(xs[-1]) * 4)
    a = values(name, (5, 6), rng) * 1e30
    b = values(name, (6, 4), rng)
    a[1, 2] = np.nan
    a[3, :] = np.inf
    b[:, 1] = 0
    check_huge(name, a, b)


@pytest.mark.parametrize("name", fam.registered(LINE, ("float32", "float64")))
def test_register_blocks(name):
    """float32/float64 with unit-stride rows of y run k_matmul_rows on CPU devices (register
    blocks of whole vectors, blocks cut by N in single vectors and then column by column, rows
    cut by M, k in chunks): N, M and K around those sizes, y's rows at an offset and a row
    stride wider than N, x transposed (any strides), a broadcast batch, NaN/Inf in the vector
    part. On other devices the same shapes check the tiled kernel."""
    rng = rng_for(name, 11)
    for m, k, n in ((1, 1, 16), (5, 7, 17), (6, 129, 64), (7, 128, 65), (13, 300, 129),
                    (12, 3, 200), (25, 257, 47), (3, 0, 70)):
        a, b = values(name, (m, k), rng), values(name, (k, n), rng)
        check(name, a, b, dev(a), dev(b))
    a, b = values(name, (20, 40), rng), values(name, (40, 150), rng)
    tb = hwport.ops.slice(dev(b), axes=[1], starts=[3], ends=[134])  # rows at an offset
    check(name, a, b[:, 3:134], dev(a), tb)
    at = np.ascontiguousarray(a.T)
    check(name, a, b, hwport.ops.transpose(dev(at), perm=[1, 0]), dev(b))  # column-major x
    a3, b2 = values(name, (3, 9, 40), rng), values(name, (40, 80), rng)  # y broadcast over 3
    check(name, a3, b2, dev(a3), dev(b2))
    a, b = values(name, (7, 6), rng) * 1e30, values(name, (6, 70), rng)
    a[1, 2] = np.nan
    a[3, :] = np.inf
    b[:, 20] = 0
    check_huge(name, a, b)


def test_on_a_stream():
    rng = np.random.default_rng(3)
    a, b = values("float32", (64, 80), rng), values("float32", (80, 96), rng)
    s = Stream(P)
    with stream_guard(s):
        out = hwport.matmul(dev(a), dev(b))
    s.synchronize()
    assert_close("matmul", "float32", out.numpy(), a @ b)


def test_no_longer_falls_back():
    rng = np.random.default_rng(0)

    def run():
        for name in REGISTERED:
            a, b = values(name, (4, 5), rng), values(name, (2, 5, 3), rng)
            hwport.matmul(dev(a), dev(b)).numpy()

    fam.assert_no_fallback(("matmul",), run)


# ---- directly through the C ABI ----------------------------------------------------------------


@pytest.mark.parametrize("pad", [1, 3])
def test_direct_unaligned_strided_and_k0(pad):
    ocl = fam.direct_host()
    from hwport.conformance.direct_host import DTYPE_CODE, DeviceArray

    rng = np.random.default_rng(pad)
    for name in ("float32", "int16", "float16", "int64"):
        a, b = values(name, (2, 20, 30), rng), values(name, (2, 40, 30), rng)
        da, db = DeviceArray(ocl, a, pad=pad), DeviceArray(ocl, b, pad=pad + 1)
        xv, yv = a[:, ::-1, :], np.swapaxes(b, 1, 2)  # y transposed: a strided [2, 30, 40]
        want = np.asarray(reference("matmul", [xv, yv], {}))
        out = DeviceArray.empty(ocl, want.shape, want.dtype, pad=pad + 2)
        try:
            st = ocl.call_kernel("matmul", DTYPE_CODE[name], [da.view(xv), db.view(yv)],
                                 [out.view()])
            ocl.check(st, "matmul")
            assert_close("matmul", name, out.read(), want)
        finally:
            for d in (da, db, out):
                d.free()
    # K == 0: the kernel itself writes zeros
    x = DeviceArray(ocl, np.zeros((3, 0), np.float32))
    y = DeviceArray(ocl, np.zeros((0, 4), np.float32))
    out = DeviceArray(ocl, np.full((3, 4), 7.0, np.float32))
    try:
        ocl.check(ocl.call_kernel("matmul", DTYPE_CODE["float32"], [x.view(), y.view()],
                                  [out.view()]), "matmul")
        np.testing.assert_array_equal(out.read(), np.zeros((3, 4), np.float32))
    finally:
        for d in (x, y, out):
            d.free()


def test_direct_argument_checks():
    ocl = fam.direct_host()
    from hwport.conformance.direct_host import DTYPE_CODE, INVALID_ARGUMENT, DeviceArray

    f32 = DTYPE_CODE["float32"]
    x = DeviceArray(ocl, np.ones((3, 4), np.float32))
    y = DeviceArray(ocl, np.ones((5, 2), np.float32))
    yi = DeviceArray(ocl, np.ones((4, 2), np.int32))
    y3 = DeviceArray(ocl, np.ones((2, 4, 2), np.float32))
    out = DeviceArray.empty(ocl, (3, 2), np.dtype(np.float32))
    try:
        st = ocl.call_kernel("matmul", f32, [x.view(), y.view()], [out.view()])
        ocl.expect_error(st, INVALID_ARGUMENT, "matmul", "do not match")  # K 4 vs 5
        st = ocl.call_kernel("matmul", f32, [x.view(), yi.view()], [out.view()])
        ocl.expect_error(st, INVALID_ARGUMENT, "matmul", "dtypes")
        st = ocl.call_kernel("matmul", f32, [x.view(), y3.view()], [out.view()])
        ocl.expect_error(st, INVALID_ARGUMENT, "matmul", "rank")
        st = ocl.call_kernel("matmul", f32, [x.view()], [out.view()])
        ocl.expect_error(st, INVALID_ARGUMENT, "matmul", "inputs")
        y4 = DeviceArray(ocl, np.full((4, 2), 2.0, np.float32))
        try:  # a good call still works afterwards
            ocl.check(ocl.call_kernel("matmul", f32, [x.view(), y4.view()], [out.view()]),
                      "matmul")
            np.testing.assert_array_equal(out.read(), np.full((3, 2), 8.0, np.float32))
        finally:
            y4.free()
    finally:
        for d in (x, y, yi, y3, out):
            d.free()
