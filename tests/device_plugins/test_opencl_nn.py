"""The OpenCL plugin's fused softmax, log_softmax, layer_norm and rms_norm kernels
(device_plugins/opencl/kernels_nn.c, nn.cl), through the public API on custom:opencl and directly
through the C ABI.

Oracles: numpy (phi_ops.reference, compared with phi_ops.tolerance.assert_close: the `composite`
profile) for every float dtype, and PyTorch CPU for float32/float64. Cases: every axis, 0-d,
zero-size, rows longer than a work-group, rows kept in local memory and rows too long for it,
strided views (transposed, flipped, stepped) of x and of weight/bias, with and without
weight/bias, normalized_ndim 1..3, NaN/Inf rows, large magnitudes, a non-default stream; the
composite ops run the fused kernel (no decomposition, no fallback); unaligned byte offsets and
bad arguments through the ABI."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
import hwport.nn.functional as F
import hwport.phi_ops.dispatch as dispatch
from phi_ops.reference import reference
from phi_ops.tolerance import assert_close
from tests.device_plugins import ocl_families as fam
from tests.device_plugins.ocl_families import P, dev, np_dtype
from tests.seeds import rng_for

LINE = fam.require_family("fused nn")
REGISTERED = fam.registered(LINE, fam.FLOATS)
OPS = ("softmax", "log_softmax", "layer_norm", "rms_norm")


@pytest.fixture(autouse=True)
def no_decomposition(monkeypatch):
    """The fused kernels must run: a decomposition of these ops on opencl fails the test."""
    real = dispatch._decompose

    def guard(op, inputs, plan, target):
        if op.name in OPS and str(target).startswith(P):
            raise AssertionError(f"{op.name} decomposed on {target}: no fused kernel ran")
        return real(op, inputs, plan, target)

    monkeypatch.setattr(dispatch, "_decompose", guard)


def values(name: str, shape, rng: np.random.Generator, scale: float = 3.0,
           shift: float = 0.0) -> np.ndarray:
    return (rng.standard_normal(size=shape) * scale + shift).astype(np_dtype(name))


def check_sm(op: str, name: str, a: np.ndarray, t, axis: int) -> None:
    got = getattr(F, op)(t, axis=axis)
    assert str(got.place).startswith(P), got.place
    want = np.asarray(reference(op, [a], {"axis": axis}))
    got_np = got.numpy()
    assert got_np.shape == want.shape and got_np.dtype == want.dtype
    assert_close(op, name, got_np, want)


def check_norm(op: str, name: str, a, w, b, t, tw, tb, nd: int, eps: float | None = None):
    attrs = {"normalized_ndim": nd}
    if eps is not None:
        attrs["epsilon"] = eps
    shape = list(a.shape[a.ndim - nd:])  # Paddle's normalized_shape
    if op == "layer_norm":
        got = F.layer_norm(t, shape, tw, tb, **({} if eps is None else {"epsilon": eps}))
        want = reference(op, [a, w, b], attrs)
    else:
        got = F.rms_norm(t, shape, tw, **({} if eps is None else {"eps": eps}))
        want = reference(op, [a, w], attrs)
    assert str(got.place).startswith(P), got.place
    assert_close(op, name, got.numpy(), np.asarray(want))


def test_registered_set():
    assert f"registered {len(OPS) * len(REGISTERED)} fused nn kernels" in LINE, LINE


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("name", REGISTERED)
def test_softmax_matches_numpy(op, name):
    rng = rng_for(op, name, 1)
    for shape in ((7,), (3, 5), (2, 3, 4), (4, 1, 6)):
        a = values(name, shape, rng)
        t = dev(a)
        for axis in range(-1, len(shape)):
            check_sm(op, name, a, t, axis)
    # a row of one, rows longer than a work-group, kept in local memory or too long for it
    for shape, axis in (((5, 1), 1), ((257, 3), 0), ((3, 1000), 1), ((2, 100003), 1),
                        ((3, 2049, 2), 1)):
        a = values(name, shape, rng)
        check_sm(op, name, a, dev(a), axis)
    a = values(name, (), rng)  # 0-d
    check_sm(op, name, a, dev(a), -1)
    a = np.zeros((0, 4), np_dtype(name))  # zero-size
    check_sm(op, name, a, dev(a), 1)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("name", REGISTERED)
def test_softmax_strided_and_special(op, name):
    rng = rng_for(op, name, 2)
    a = values(name, (6, 9, 5), rng)
    t = dev(a)
    for a_c, t_view in fam.strided_views(a, t):
        for axis in (0, 1, 2):
            check_sm(op, name, a_c, t_view, axis)
    big = 6e4 if name == "float16" else 1e30
    special = np.array([[1, 2, np.nan, 3], [-np.inf, 0, 1, 2], [np.inf, 0, 1, 2],
                        [-np.inf, -np.inf, -np.inf, -np.inf], [big, -big, big, 0],
                        [1e-3, 2e-3, -1e-3, 0]]).astype(np_dtype(name))
    with np.errstate(invalid="ignore"):
        check_sm(op, name, special, dev(special), 1)
    got = getattr(F, op)(dev(special), axis=1).numpy().astype(np.float64)
    assert np.isnan(got[0]).all() and not np.isnan(got[1]).any()


@pytest.mark.parametrize("name", fam.registered(LINE, ("float32", "float64")))
def test_softmax_against_torch(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    a = values(name, (8, 3000), rng, scale=10)
    for axis in (1, 0):
        got = F.softmax(dev(a), axis=axis).numpy()
        want = torch.softmax(torch.from_numpy(a), dim=axis).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        got = F.log_softmax(dev(a), axis=axis).numpy()
        want = torch.log_softmax(torch.from_numpy(a), dim=axis).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("name", REGISTERED)
def test_norms_match_numpy(op, name):
    rng = rng_for(op, name, 3)
    for shape, nd in (((7,), 1), ((3, 5), 1), ((2, 3, 4), 2), ((2, 3, 4), 3), ((4, 1, 6), 2),
                      ((257, 3), 1), ((3, 1000), 1), ((2, 100003), 1), ((5, 1), 1)):
        a = values(name, shape, rng, shift=1.5)
        norm = shape[len(shape) - nd:]
        w, b = values(name, norm, rng, scale=1.0), values(name, norm, rng, scale=1.0)
        t, tw, tb = dev(a), dev(w), dev(b)
        check_norm(op, name, a, w, b, t, tw, tb, nd)
        check_norm(op, name, a, None, None, t, None, None, nd, eps=1e-3)
        if op == "layer_norm":
            check_norm(op, name, a, None, b, t, None, tb, nd)
            check_norm(op, name, a, w, None, t, tw, None, nd)
    a = np.zeros((0, 4), np_dtype(name))  # zero-size
    check_norm(op, name, a, None, None, dev(a), None, None, 1)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("name", REGISTERED)
def test_norms_strided_and_large(op, name):
    rng = rng_for(op, name, 4)
    a = values(name, (6, 9, 5), rng)
    w = values(name, (5, 9), rng, scale=1.0)
    b = values(name, (5, 9), rng, scale=1.0)
    t, tw, tb = dev(a), dev(w), dev(b)
    # x transposed to [6, 5, 9] (the normalized dims not contiguous), weight/bias transposed
    xt = np.ascontiguousarray(np.transpose(a, (0, 2, 1)))
    check_norm(op, name, xt, w, b, hwport.ops.transpose(t, perm=[0, 2, 1]), tw, tb, 2)
    wt, bt = np.ascontiguousarray(w.T), np.ascontiguousarray(b.T)
    check_norm(op, name, a, wt, bt, t, hwport.ops.transpose(tw, perm=[1, 0]),
               hwport.ops.transpose(tb, perm=[1, 0]), 2)
    def column(tp):  # tp[:, 3]: a [5] view with stride 9
        return hwport.ops.squeeze(hwport.ops.slice(tp, axes=[1], starts=[3], ends=[4]),
                                  axis=[1])

    check_norm(op, name, np.ascontiguousarray(a[::-1, ::2]), w[:, 3].copy(), b[:, 3].copy(),
               hwport.ops.slice(hwport.ops.flip(t, axis=[0]), axes=[1], starts=[0], ends=[9],
                                strides=[2]), column(tw), column(tb), 1)
    # large magnitudes and a large mean (layer_norm subtracts it before squaring)
    scale, shift = (100.0, 1000.0) if name in ("float16", "bfloat16") else (1e3, 1e5)
    big = values(name, (4, 600), rng, scale=scale, shift=shift)
    check_norm(op, name, big, None, None, dev(big), None, None, 1)


@pytest.mark.parametrize("name", fam.registered(LINE, ("float32", "float64")))
def test_norms_against_torch_and_nan(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    a = values(name, (16, 768), rng, shift=0.5)
    w, b = values(name, (768,), rng), values(name, (768,), rng)
    got = F.layer_norm(dev(a), [768], dev(w), dev(b), epsilon=1e-5).numpy()
    want = torch.nn.functional.layer_norm(torch.from_numpy(a), (768,), torch.from_numpy(w),
                                          torch.from_numpy(b), eps=1e-5).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    got = F.rms_norm(dev(a), [768], dev(w), eps=1e-6).numpy()
    ta = torch.from_numpy(a)
    want = (ta * torch.rsqrt(ta.pow(2).mean(-1, keepdim=True) + 1e-6) * torch.from_numpy(w))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)
    a[3, 100] = np.nan
    a[5, 7] = np.inf
    with np.errstate(invalid="ignore"):
        for op in ("layer_norm", "rms_norm"):
            check_norm(op, name, a, None, None, dev(a), None, None, 1)
            got = getattr(F, op)(dev(a), [a.shape[-1]]).numpy()
            assert np.isnan(got[3]).all() and np.isnan(got[5, 7])  # NaN spreads over its row
            assert np.isfinite(np.delete(got, [3, 5], axis=0)).all()


@pytest.mark.parametrize("local", [None, "1", "4", "256"])
@pytest.mark.parametrize("name", REGISTERED)
def test_contiguous_rows(name, local, monkeypatch):
    """The contiguous-row kernels (whole vectors, then the row's tail one by one) with one
    work-item per row (PoCL's default) and with trees over 4 and 256 work-items (GPUs' kind),
    chosen through HWPORT_OPENCL_NN_LOCAL: row lengths around the vector widths, an aligned
    row offset, many short rows, NaN/Inf and large values inside the vector part of a row."""
    if local is not None:
        monkeypatch.setenv("HWPORT_OPENCL_NN_LOCAL", local)
    rng = rng_for(name, local, 7)
    for n in (1, 3, 4, 16, 21, 64, 100, 2048):
        a = values(name, (5, n), rng, shift=0.5)
        w, b = values(name, (n,), rng, scale=1.0), values(name, (n,), rng, scale=1.0)
        t = dev(a)
        for op in ("softmax", "log_softmax"):
            check_sm(op, name, a, t, 1)
            check_sm(op, name, a[2:], t[2:], 1)  # rows at an aligned byte offset
            if n > 1:  # rows of n - 1 with a row stride of n
                tv = hwport.ops.slice(t, axes=[1], starts=[1], ends=[n])
                check_sm(op, name, np.ascontiguousarray(a[:, 1:]), tv, 1)
        check_norm("layer_norm", name, a, w, b, t, dev(w), dev(b), 1)
        check_norm("layer_norm", name, a[1:], None, b, t[1:], None, dev(b), 1)
        check_norm("rms_norm", name, a, w, None, t, dev(w), None, 1)
        check_norm("rms_norm", name, a[3:], None, None, t[3:], None, None, 1, eps=1e-3)
    # many short rows: several rows per work-group on CPU devices, the last group partial
    for shape in ((300, 20), (203, 64)):
        a = values(name, shape, rng, shift=0.5)
        w, b = values(name, shape[1:], rng, scale=1.0), values(name, shape[1:], rng, scale=1.0)
        check_sm("softmax", name, a, dev(a), 1)
        check_sm("log_softmax", name, a, dev(a), 1)
        check_norm("layer_norm", name, a, w, b, dev(a), dev(w), dev(b), 1)
        check_norm("rms_norm", name, a, w, None, dev(a), dev(w), None, 1)
    big = 6e4 if name == "float16" else 1e30
    special = values(name, (5, 37), rng)
    special[0, 5] = np.nan
    special[1, :] = -np.inf
    special[2, 20] = np.inf
    special[3, 9:12] = (big, -big, big)
    with np.errstate(invalid="ignore", over="ignore"):
        for op in ("softmax", "log_softmax"):
            check_sm(op, name, special, dev(special), 1)
            got = getattr(F, op)(dev(special), axis=1).numpy().astype(np.float64)
            assert np.isnan(got[0]).all() and np.isfinite(got[4]).all()
        for op in ("layer_norm", "rms_norm"):
            got = getattr(F, op)(dev(special), [37]).numpy().astype(np.float64)
            assert np.isnan(got[0]).all() and np.isfinite(got[4]).all()
            check_norm(op, name, special[4:], None, None, dev(special[4:]), None, None, 1)


@pytest.mark.parametrize("name", REGISTERED)
def test_softmax_unit_stride_columns(name):
    """softmax/log_softmax along a non-last axis of a contiguous tensor (k_softmax_cols: vector
    lanes are neighbouring columns, the last block column by column): inner sizes around the
    vector widths, an outer dim, a column slice (axis stride wider than the inner size), NaN/Inf
    inside the vector lanes."""
    rng = rng_for(name, 8)
    for shape, axis in (((7, 16), 0), ((5, 40), 0), ((3, 9, 33), 1), ((2, 1, 70), 1),
                        ((4, 300, 17), 1)):
        a = values(name, shape, rng)
        t = dev(a)
        for op in ("softmax", "log_softmax"):
            check_sm(op, name, a, t, axis)
    a = values(name, (6, 50), rng)
    tv = hwport.ops.slice(dev(a), axes=[1], starts=[2], ends=[37])
    for op in ("softmax", "log_softmax"):
        check_sm(op, name, np.ascontiguousarray(a[:, 2:37]), tv, 0)
    big = 6e4 if name == "float16" else 1e30
    special = values(name, (5, 37), rng)
    special[2, 5] = np.nan
    special[:, 6] = -np.inf
    special[1, 20] = np.inf
    special[:, 9] = (big, -big, big, 0, 1)
    with np.errstate(invalid="ignore", over="ignore"):
        for op in ("softmax", "log_softmax"):
            check_sm(op, name, special, dev(special), 0)
            got = getattr(F, op)(dev(special), axis=0).numpy().astype(np.float64)
            assert np.isnan(got[:, 5]).all() and np.isfinite(np.delete(got, [5, 6, 9, 20], 1)).all()


def test_on_a_stream():
    rng = np.random.default_rng(3)
    a = values("float32", (64, 4097), rng)
    def call(op: str):  # the norms take Paddle's normalized_shape
        if "softmax" in op:
            return getattr(F, op)
        return lambda t, op=op: getattr(F, op)(t, [t.shape[-1]])

    fam.check_on_stream([(op, call(op), a, {"axis": -1} if "softmax" in op else {})
                         for op in OPS])


def test_no_fallback():
    rng = np.random.default_rng(0)

    def run():
        for name in REGISTERED:
            a = values(name, (4, 5), rng)
            w = values(name, (5,), rng)
            for f in (F.softmax(dev(a)), F.log_softmax(dev(a), axis=0),
                      F.layer_norm(dev(a), [5], dev(w), dev(w)), F.rms_norm(dev(a), [5], dev(w))):
                f.numpy()

    fam.assert_no_fallback(("softmax", "log_softmax", "layer_norm", "rms_norm", "max", "exp", "sum",
                        "mean"), run)


# ---- directly through the C ABI ----------------------------------------------------------------


@pytest.mark.parametrize("pad", [1, 3])
def test_direct_unaligned(pad):
    ocl = fam.direct_host()
    from hwport.conformance.direct_host import DTYPE_CODE, DeviceArray

    rng = np.random.default_rng(pad)
    for name in ("float32", "float16", "bfloat16"):
        a = values(name, (6, 300), rng)
        w = values(name, (150,), rng)
        da, dw = DeviceArray(ocl, a, pad=pad), DeviceArray(ocl, w, pad=pad + 1)
        xv = a[::-1, ::2]
        cases = [("softmax", [xv], {"axis": 1}, [da.view(xv)]),
                 ("log_softmax", [xv], {"axis": 0}, [da.view(xv)]),
                 ("layer_norm", [xv, w, w], {"has_weight": True, "has_bias": True},
                  [da.view(xv), dw.view(), dw.view()]),
                 ("rms_norm", [xv, w], {"has_weight": True, "epsilon": 1e-3},
                  [da.view(xv), dw.view()]),
                 # contiguous but unaligned rows: not the contiguous-row kernels
                 ("softmax", [a], {"axis": 1}, [da.view()]),
                 ("rms_norm", [a[:, :150], w], {"has_weight": True},
                  [da.view(a[:, :150]), dw.view()])]
        try:
            for op, arrays, attrs, views in cases:
                want = np.asarray(reference(op, arrays, {k: v for k, v in attrs.items()
                                                         if not k.startswith("has_")}))
                out = DeviceArray.empty(ocl, want.shape, want.dtype, pad=pad + 2)
                try:
                    ocl.check(ocl.call_kernel(op, DTYPE_CODE[name], views, [out.view()],
                                              attrs=attrs), op)
                    assert_close(op, name, out.read(), want)
                finally:
                    out.free()
        finally:
            da.free()
            dw.free()


def test_direct_argument_checks():
    ocl = fam.direct_host()
    from hwport.conformance.direct_host import DTYPE_CODE, INVALID_ARGUMENT, DeviceArray

    f32 = DTYPE_CODE["float32"]
    x = DeviceArray(ocl, np.ones((3, 4), np.float32))
    w3 = DeviceArray(ocl, np.ones((3,), np.float32))
    w16 = DeviceArray(ocl, np.ones((4,), np.float16))
    out = DeviceArray.empty(ocl, (3, 4), np.dtype(np.float32))
    out16 = DeviceArray.empty(ocl, (3, 4), np.dtype(np.float16))
    try:
        st = ocl.call_kernel("softmax", f32, [x.view()], [out16.view()], attrs={"axis": 1})
        ocl.expect_error(st, INVALID_ARGUMENT, "softmax", "dtype and shape")
        st = ocl.call_kernel("log_softmax", f32, [x.view()], [out.view()], attrs={"axis": 2})
        ocl.expect_error(st, INVALID_ARGUMENT, "log_softmax", "axis", "out of range")
        st = ocl.call_kernel("layer_norm", f32, [x.view()], [out.view()],
                             attrs={"normalized_ndim": 3})
        ocl.expect_error(st, INVALID_ARGUMENT, "layer_norm", "normalized_ndim")
        st = ocl.call_kernel("layer_norm", f32, [x.view(), w3.view()], [out.view()],
                             attrs={"has_weight": True, "has_bias": False})
        ocl.expect_error(st, INVALID_ARGUMENT, "layer_norm", "weight", "shape")
        st = ocl.call_kernel("rms_norm", f32, [x.view(), w16.view()], [out.view()],
                             attrs={"has_weight": True})
        ocl.expect_error(st, INVALID_ARGUMENT, "rms_norm", "weight", "dtype")
        st = ocl.call_kernel("layer_norm", f32, [x.view(), x.view()], [out.view()],
                             attrs={"has_weight": True, "has_bias": True})
        ocl.expect_error(st, INVALID_ARGUMENT, "layer_norm", "has_weight")
        # a good call still works afterwards
        ocl.check(ocl.call_kernel("softmax", f32, [x.view()], [out.view()], attrs={"axis": 1}),
                  "softmax")
        np.testing.assert_allclose(out.read(), np.full((3, 4), 0.25, np.float32), rtol=1e-6)
    finally:
        for d in (x, w3, w16, out, out16):
            d.free()
