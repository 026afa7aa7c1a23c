"""The cpu plugin's reductions (sum, prod, max, min, argmax, argmin), scans (cumsum, cumprod),
matmul and fused nn kernels (softmax, log_softmax, layer_norm, rms_norm), driven directly through
the C ABI with cffi against numpy oracles (float64 where it matters): every registered dtype,
strided / transposed / reversed / broadcast / misaligned inputs, zero-size and 0-d shapes, NaN,
integer wrap-around, and inputs large enough for the thread pool and the split paths. matmul also
runs on a build linked to OpenBLAS when pkg-config knows it."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from plugin_build import build_cpu_plugin

from hwport.conformance.direct_host import (
    DTYPE_CODE,
    INVALID_ARGUMENT,
    NULL,
    OK,
    DeviceArray,
    DirectHost,
    np_dtype,
)
from tests.seeds import rng_for

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "uint8", "int16", "int32", "int64")
NUMERIC = INTS + FLOATS
ALL = ("bool", *NUMERIC)

# phi_ops/ops.yaml tolerance profiles: (rtol, atol).
REDUCTION_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-5, 1e-5),
                 "float64": (1e-12, 1e-12)}
COMPOSITE_TOL = {"float16": (1e-2, 1e-3), "bfloat16": (5e-2, 1e-2), "float32": (1e-5, 1e-6),
                 "float64": (1e-11, 1e-12)}
MATMUL_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-4),
              "float64": (1e-11, 1e-11)}

ATTR_BOOL, ATTR_INT64, ATTR_FLOAT64, ATTR_INT64_ARRAY = 0, 1, 2, 4


def _make_host(so) -> DirectHost:
    # Three pool threads whatever the machine: the split (chunked) paths run everywhere.
    h = DirectHost(so, env={"HWPORT_CPU_DEVICES": "1", "HWPORT_CPU_MEMORY_LIMIT": None,
                            "HWPORT_CPU_INLINE_ELEMENTS": None, "HWPORT_CPU_THREADS": "3"})
    assert h.init_status == OK
    return h


@pytest.fixture(scope="module")
def rh(cpu_plugin_so):
    return _make_host(cpu_plugin_so)


@pytest.fixture(scope="module")
def stream(rh):
    s = rh.create_stream()
    yield s
    rh.destroy_stream(s)


def _openblas_flags() -> tuple[str, ...] | None:
    pc = shutil.which("pkg-config")
    if pc is None:
        return None
    r = subprocess.run([pc, "--cflags", "--libs", "openblas"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    toks = r.stdout.split()
    incs = [t for t in toks if t.startswith("-I")]
    libdirs = [t for t in toks if t.startswith("-L")]
    # -Wl,...: ignored when compiling, passed to the link (which lists these flags first).
    link = ",".join(["-Wl", "--no-as-needed", *libdirs, "-lopenblas"])
    return ("-DHWPORT_CPU_HAVE_CBLAS", "-DHWPORT_CPU_HAVE_OPENBLAS", *incs, link)


@pytest.fixture(scope="module")
def blas_so(tmp_path_factory):
    """A second build: linked to OpenBLAS, and without the x86 ISA dispatch of kernels_nn.c (so
    its baseline row functions run too)."""
    flags = _openblas_flags()
    if flags is None:
        pytest.skip("OpenBLAS not found by pkg-config (install libopenblas-dev)")
    return build_cpu_plugin(tmp_path_factory.mktemp("cpu_openblas"),
                            ("-Werror", "-DHWPORT_CPU_NO_DISPATCH", *flags))


@pytest.fixture(scope="module")
def blas_host(blas_so):
    return _make_host(blas_so)


@pytest.fixture(scope="module", params=["default", "openblas"])
def mmh(request, rh):
    """matmul and the nn kernels run on the session's plugin and on the second build."""
    if request.param == "default":
        return rh
    return request.getfixturevalue("blas_host")


# ---- helpers ------------------------------------------------------------------------------------

def dtype_of(name: str) -> np.dtype:
    if name == "bfloat16":
        pytest.importorskip("ml_dtypes")
    return np_dtype(name)


def values(name: str, shape, rng, kind: str = "any") -> np.ndarray:
    dt = dtype_of(name)
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if name in INTS:
        if kind == "small":
            return rng.integers(0, 4, size=shape).astype(dt)
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    if kind == "near_one":  # products that neither overflow nor vanish
        v = rng.uniform(0.8, 1.25, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    elif kind == "small":
        v = rng.integers(-3, 4, size=shape).astype(np.float64)
    else:
        v = rng.standard_normal(size=shape) * 4
    return np.asarray(v).astype(dt)


def layout(h, base_values: np.ndarray, how: str):
    """Uploads values and returns (DeviceArray, numpy view of its host array) such that the
    view has base_values' logical shape (except 'broadcast') but the requested memory layout."""
    shape = base_values.shape
    if how == "contiguous":
        d = DeviceArray(h, base_values)
        return d, d.host
    if how == "misaligned":
        d = DeviceArray(h, base_values, pad=3)
        return d, d.host
    if how == "transposed":  # reversed dim order in memory
        d = DeviceArray(h, np.ascontiguousarray(base_values.transpose()))
        return d, d.host.transpose()
    if how == "reversed":  # negative strides on every dim
        rev = base_values[tuple(slice(None, None, -1) for _ in shape)]
        d = DeviceArray(h, np.ascontiguousarray(rev))
        return d, d.host[tuple(slice(None, None, -1) for _ in shape)]
    if how == "strided":  # every other element, starting at 1
        big = np.zeros(tuple(2 * n + 1 for n in shape), dtype=base_values.dtype)
        sl = tuple(slice(1, 1 + 2 * n, 2) for n in shape)
        big[sl] = base_values
        d = DeviceArray(h, big)
        return d, d.host[sl]
    raise AssertionError(how)


LAYOUTS = ("contiguous", "transposed", "reversed", "strided", "misaligned")


def run(h, op, key_dtype, inputs, out_shape, out_dtype, attrs=None, stream=NULL, pad=0):
    """Runs `op` on (DeviceArray, view) inputs into a fresh output; returns the output."""
    out = DeviceArray.empty(h, out_shape, out_dtype, pad=pad)
    views = [d.view(v) for d, v in inputs]
    st = h.call_kernel(op, DTYPE_CODE[key_dtype], views, [out.view()], attrs=attrs,
                       stream=stream)
    h.check(st, op)
    if stream != NULL:
        h.sync_stream(stream)
    result = out.read()
    out.free()
    for d, _ in inputs:
        d.free()
    return result


def assert_close(actual, expected, tol, what=""):
    assert actual.dtype == expected.dtype, (what, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    elif tol is None:
        np.testing.assert_array_equal(actual.astype(np.float64), expected.astype(np.float64),
                                      err_msg=what)
    else:
        rtol, atol = tol
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


# ---- registrations ------------------------------------------------------------------------------

def test_registrations(rh):
    regs = rh.registrations
    for op in ("sum", "prod", "max", "min", "argmax", "argmin", "cumsum", "cumprod"):
        for name in ALL:
            assert regs[(op, DTYPE_CODE[name])].flags == 1, op
    for name in NUMERIC:
        assert regs[("matmul", DTYPE_CODE[name])].flags == 1
    assert ("matmul", DTYPE_CODE["bool"]) not in regs
    for op in ("softmax", "log_softmax", "layer_norm", "rms_norm"):
        for name in ALL:
            assert ((op, DTYPE_CODE[name]) in regs) == (name in FLOATS), (op, name)


# ---- sum / prod / max / min ---------------------------------------------------------------------

def reduce_expected(op, x: np.ndarray, axes, out_dtype):
    ax = tuple(axes)
    if op in ("sum", "prod"):
        src = x.astype(np.int64) if x.dtype.kind in "biu" else f64(x)
    else:
        src = x if x.dtype.kind in "biu" else f64(x)
    with np.errstate(over="ignore"):  # float16 overflows to inf, as the kernel's rounding does
        return np.asarray(getattr(np, op)(src, axis=ax)).astype(out_dtype)


def reduce_out_dtype(op, name):
    if op in ("sum", "prod") and name not in FLOATS:
        return np.dtype(np.int64)
    return dtype_of(name)


# (shape, axes, layouts); axes are what the host passes (sorted, non-negative).
REDUCE_CASES = [
    ((), [], ("contiguous",)),
    ((7,), [0], LAYOUTS),
    ((5, 6), [1], LAYOUTS),
    ((5, 6), [0], LAYOUTS),
    ((5, 6), [0, 1], LAYOUTS),
    ((4, 3, 5), [0, 2], LAYOUTS),
    ((4, 3, 5), [1], ("strided", "transposed")),
    ((2, 3, 4, 5), [1, 3], ("contiguous", "reversed", "transposed")),
    ((2, 3, 4, 5), [0, 1, 2, 3], ("strided",)),
    ((6, 1, 5), [1], ("contiguous",)),
    ((37, 129), [0], ("contiguous", "reversed")),  # column tiles
    ((129, 37), [1], ("contiguous", "transposed")),
    ((3, 40, 17), [0, 2], ("contiguous", "strided")),
    ((0, 4), [1], ("contiguous",)),  # no outputs
    ((3, 0, 4), [1], ("contiguous",)),  # empty reduction (sum/prod only)
    ((2, 0), [0, 1], ("contiguous",)),
]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
def test_reduce_matches_numpy(rh, op, name):
    rng = rng_for(op, name)
    out_dt = reduce_out_dtype(op, name)
    tol = REDUCTION_TOL.get(name) if op in ("sum", "prod") else None
    for shape, axes, layouts in REDUCE_CASES:
        nred = int(np.prod([shape[a] for a in axes], dtype=np.int64)) if axes else 1
        if op in ("max", "min") and nred == 0 and 0 not in [s for i, s in enumerate(shape)
                                                             if i not in axes]:
            continue  # the host rejects empty max/min
        kind = "near_one" if op == "prod" else "any"
        base = values(name, shape, rng, kind)
        expected = reduce_expected(op, base, axes, out_dt)
        for how in layouts:
            got = run(rh, op, name, [layout(rh, base, how)], expected.shape, out_dt,
                      attrs={"axis": list(axes), "keepdim": False})
            assert_close(got, expected, tol, f"{op} {name} {shape} axis={axes} {how}")


def test_reduce_keepdim_and_all_axes_default(rh):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = run(rh, "sum", "float32", [layout(rh, x, "contiguous")], (2, 1, 4), np.float32,
              attrs={"axis": [1], "keepdim": True})
    np.testing.assert_array_equal(got, x.sum(axis=1, keepdims=True))
    got = run(rh, "max", "float32", [layout(rh, x, "contiguous")], (), np.float32, attrs={})
    assert got == 23.0  # no axis attribute: every dim
    s = np.array(2.5, dtype=np.float32)
    for axis in ([], [0]):  # a 0-d input: nothing to reduce either way
        got = run(rh, "sum", "float32", [layout(rh, s, "contiguous")], (), np.float32,
                  attrs={"axis": axis})
        assert got == 2.5


def test_reduce_empty_identities(rh):
    x = np.zeros((3, 0, 2), dtype=np.float32)
    got = run(rh, "sum", "float32", [layout(rh, x, "contiguous")], (3, 2), np.float32,
              attrs={"axis": [1]})
    np.testing.assert_array_equal(got, np.zeros((3, 2), np.float32))
    got = run(rh, "prod", "int32", [layout(rh, x.astype(np.int32), "contiguous")], (3, 2),
              np.int64, attrs={"axis": [1]})
    np.testing.assert_array_equal(got, np.ones((3, 2), np.int64))
    for op in ("max", "min"):
        d = DeviceArray(rh, x)
        out = DeviceArray.empty(rh, (3, 2), np.float32)
        st = rh.call_kernel(op, DTYPE_CODE["float32"], [d.view()], [out.view()],
                            attrs={"axis": [1]})
        rh.expect_error(st, INVALID_ARGUMENT, op, "zero elements")
        d.free()
        out.free()


@pytest.mark.parametrize("name", FLOATS)
def test_reduce_nan_propagates(rh, name):
    dt = dtype_of(name)
    for shape, axes, pos in (((40,), [0], (17,)), ((6, 50), [1], (2, 33)),
                             ((50, 24), [0], (41, 5)), ((3, 4, 5), [0, 1, 2], (2, 0, 4))):
        x = np.full(shape, 1.5).astype(dt)
        x[pos] = np.nan
        x.reshape(-1)[0] = np.inf
        for op in ("max", "min", "sum", "prod"):
            expected = reduce_expected(op, x, axes, dt)
            got = run(rh, op, name, [layout(rh, x, "contiguous")], expected.shape, dt,
                      attrs={"axis": axes})
            np.testing.assert_array_equal(np.isnan(f64(got)), np.isnan(f64(expected)),
                                          err_msg=f"{op} {name} {shape}")
            assert np.isnan(f64(got)).any()


def test_reduce_bool_any_all_and_counts(rh):
    x = np.array([[True, False, True], [False, False, False], [True, True, True]])
    for op, expected in (("max", x.any(axis=1)), ("min", x.all(axis=1)),
                         ("sum", x.sum(axis=1)), ("prod", x.all(axis=1).astype(np.int64))):
        out_dt = np.bool_ if op in ("max", "min") else np.int64
        got = run(rh, op, "bool", [layout(rh, x, "contiguous")], (3,), out_dt,
                  attrs={"axis": [1]})
        np.testing.assert_array_equal(got, np.asarray(expected).astype(out_dt), err_msg=op)


def test_reduce_integer_wraps(rh):
    x = np.full((1000,), np.iinfo(np.int64).max, dtype=np.int64)
    got = run(rh, "sum", "int64", [layout(rh, x, "contiguous")], (), np.int64, attrs={"axis": [0]})
    assert got == x.sum()  # numpy wraps the same way
    x = np.full((70,), 3, dtype=np.int32)
    got = run(rh, "prod", "int32", [layout(rh, x, "contiguous")], (), np.int64,
              attrs={"axis": [0]})
    assert got == np.prod(x.astype(np.int64))


def test_sum_output_dtype_from_the_host(rh):
    """sum's `dtype` attribute: the output view carries it and the kernel honours it."""
    x = np.arange(10, dtype=np.int32)
    got = run(rh, "sum", "int32", [layout(rh, x, "contiguous")], (), np.float64,
              attrs={"axis": [0], "dtype": "float64"})
    assert got.dtype == np.float64 and got == 45.0
    x = np.linspace(0, 1, 11).astype(np.float16)
    got = run(rh, "sum", "float16", [layout(rh, x, "contiguous")], (), np.float32,
              attrs={"axis": [0]})
    assert got.dtype == np.float32 and abs(float(got) - float(f64(x).sum())) < 1e-6


def test_sum_16m_float32_is_accurate(rh, stream):
    rng = np.random.default_rng(1)
    for x in (rng.random((4096, 4096), dtype=np.float32),
              rng.standard_normal((4096, 4096), dtype=np.float32)):
        expected = f64(x).sum()
        got = run(rh, "sum", "float32", [layout(rh, x, "contiguous")], (), np.float32,
                  attrs={"axis": [0, 1]}, stream=stream)
        np.testing.assert_allclose(float(got), expected, rtol=1e-5)


@pytest.mark.parametrize("name", ["float32", "int64", "float16", "uint8"])
def test_reduce_large_paths(rh, stream, name):
    """Inputs big enough for the pool: rows, columns, split rows, split columns."""
    rng = np.random.default_rng(7)
    for shape, axes in (((1024, 1031), [1]), ((1031, 1024), [0]), ((3, 400_000), [1]),
                        ((400_000, 3), [0]), ((200_000, 40), [0]), ((64, 64, 64), [0, 2])):
        x = values(name, shape, rng)
        for op in ("sum", "max"):
            out_dt = reduce_out_dtype(op, name)
            expected = reduce_expected(op, x, axes, out_dt)
            tol = REDUCTION_TOL.get(name) if op == "sum" else None
            if name == "float16" and op == "sum":
                tol = (1e-2, 1e-2 * float(np.abs(f64(x)).sum(axis=tuple(axes)).max()) ** 0.5)
            got = run(rh, op, name, [layout(rh, x, "contiguous")], expected.shape, out_dt,
                      attrs={"axis": axes}, stream=stream)
            assert_close(got, expected, tol, f"{op} {name} {shape} {axes}")


# ---- argmax / argmin -----------------------------------------------------------------------------

ARG_CASES = [
    ((), 0, ("contiguous",)),
    ((9,), 0, LAYOUTS),
    ((5, 40), 1, LAYOUTS),
    ((40, 5), 0, LAYOUTS),
    ((30, 20), 0, ("contiguous", "reversed", "transposed")),  # column tiles
    ((4, 3, 6), 1, ("contiguous", "strided", "reversed")),
    ((4, 3, 6), 2, ("transposed",)),
    ((0, 5), 1, ("contiguous",)),
]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin_match_numpy(rh, op, name):
    rng = rng_for(op, name)
    for shape, axis, layouts in ARG_CASES:
        for kind in ("any", "small"):  # "small": many ties, the first one wins
            base = values(name, shape, rng, kind)
            src = base if base.dtype.kind in "biu" else f64(base)
            expected = np.asarray(getattr(np, op)(src, axis=axis if shape else None))
            for how in layouts:
                got = run(rh, op, name, [layout(rh, base, how)], expected.shape, np.int64,
                          attrs={"axis": axis, "keepdim": False})
                np.testing.assert_array_equal(got, expected.astype(np.int64),
                                              err_msg=f"{op} {name} {shape} {axis} {how}")


@pytest.mark.parametrize("name", FLOATS)
def test_argmax_nan_is_the_extreme(rh, name):
    dt = dtype_of(name)
    x = np.tile(np.array([1.0, 5.0, np.nan, 7.0, np.nan, -np.inf, 9.0] * 5), (3, 1)).astype(dt)
    x[1, :] = 2.0
    x[2, 30] = np.nan
    for op in ("argmax", "argmin"):
        for how, axis in (("contiguous", 1), ("transposed", 1), ("contiguous", 0)):
            expected = getattr(np, op)(f64(x), axis=axis)
            got = run(rh, op, name, [layout(rh, x, how)], expected.shape, np.int64,
                      attrs={"axis": axis})
            np.testing.assert_array_equal(got, expected, err_msg=f"{op} {how} {axis}")


def test_argmax_long_rows_split_keep_first(rh, stream):
    n = 1 << 21
    x = np.zeros(n, dtype=np.float32)
    x[[100, 1_500_000, 1_900_000]] = 5.0
    for op, val in (("argmax", 5.0), ("argmin", -5.0)):
        y = x if op == "argmax" else -x
        got = run(rh, op, "float32", [layout(rh, y, "contiguous")], (), np.int64,
                  attrs={"axis": 0}, stream=stream)
        assert got == 100
        y = y.copy()
        y[100] = 0
        got = run(rh, op, "float32", [layout(rh, y, "contiguous")], (), np.int64,
                  attrs={"axis": 0}, stream=stream)
        assert got == 1_500_000, val
    x[[1_200_000, 1_800_000]] = np.nan
    got = run(rh, "argmax", "float32", [layout(rh, x, "contiguous")], (), np.int64,
              attrs={"axis": 0}, stream=stream)
    assert got == 1_200_000
    xi = np.random.default_rng(3).integers(-1000, 1000, size=(3, 300_000)).astype(np.int32)
    got = run(rh, "argmin", "int32", [layout(rh, xi, "reversed")], (3,), np.int64,
              attrs={"axis": 1}, stream=stream)
    np.testing.assert_array_equal(got, np.argmin(xi, axis=1))


# ---- cumsum / cumprod --------------------------------------------------------------------------

SCAN_CASES = [
    ((), 0, ("contiguous",)),
    ((11,), 0, LAYOUTS),
    ((4, 13), 1, LAYOUTS),
    ((13, 4), 0, LAYOUTS),
    ((40, 30), 0, ("contiguous", "strided")),  # column tiles
    ((3, 5, 7), 1, ("contiguous", "transposed", "reversed")),
    ((3, 5, 7), 0, ("strided",)),
    ((2, 0, 3), 1, ("contiguous",)),
]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_scan_matches_numpy(rh, op, name):
    rng = rng_for(op, name)
    out_dt = np.dtype(np.int64) if name not in FLOATS else dtype_of(name)
    tol = REDUCTION_TOL.get(name)
    for shape, axis, layouts in SCAN_CASES:
        base = values(name, shape, rng, "near_one" if op == "cumprod" else "any")
        src = base.astype(np.int64) if base.dtype.kind in "biu" else f64(base)
        expected = getattr(np, op)(src, axis=axis if shape else None).reshape(shape)
        expected = expected.astype(out_dt)
        for how in layouts:
            got = run(rh, op, name, [layout(rh, base, how)], shape, out_dt, attrs={"axis": axis})
            assert_close(got, expected, tol, f"{op} {name} {shape} {axis} {how}")


def test_scan_large_rows_and_wrap(rh, stream):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(1_000_003).astype(np.float32)
    got = run(rh, "cumsum", "float32", [layout(rh, x, "contiguous")], x.shape, np.float32,
              attrs={"axis": 0}, stream=stream)
    np.testing.assert_allclose(got, np.cumsum(f64(x)).astype(np.float32), rtol=1e-5, atol=1e-4)
    xi = rng.integers(-(2**62), 2**62, size=(2, 600_000), dtype=np.int64)
    got = run(rh, "cumsum", "int64", [layout(rh, xi, "reversed")], xi.shape, np.int64,
              attrs={"axis": 1}, stream=stream)
    np.testing.assert_array_equal(got, np.cumsum(xi, axis=1))  # wraps like numpy
    xp = rng.integers(-3, 4, size=(1, 300_000)).astype(np.int8)
    got = run(rh, "cumprod", "int8", [layout(rh, xp, "contiguous")], xp.shape, np.int64,
              attrs={"axis": 1}, stream=stream)
    np.testing.assert_array_equal(got, np.cumprod(xp.astype(np.int64), axis=1))
    xc = rng.standard_normal((500, 300)).astype(np.float64)
    got = run(rh, "cumsum", "float64", [layout(rh, xc, "transposed")], xc.shape, np.float64,
              attrs={"axis": 0}, stream=stream)
    np.testing.assert_allclose(got, np.cumsum(xc, axis=0), rtol=1e-12, atol=1e-12)


def test_scan_rejects_a_wrong_output_dtype(rh):
    d = DeviceArray(rh, np.arange(4, dtype=np.int32))
    out = DeviceArray.empty(rh, (4,), np.int32)
    st = rh.call_kernel("cumsum", DTYPE_CODE["int32"], [d.view()], [out.view()],
                        attrs={"axis": 0})
    rh.expect_error(st, INVALID_ARGUMENT, "cumsum", "int64")
    d.free()
    out.free()


# ---- matmul ------------------------------------------------------------------------------------

def matmul_expected(name, x, y):
    if name in INTS:
        return np.matmul(x.astype(np.int64), y.astype(np.int64)).astype(dtype_of(name))
    return np.matmul(f64(x), f64(y)).astype(dtype_of(name))


def _mm_operand(h, base, how):
    """how: contiguous | transposed | reversed | strided | misaligned | bcast (stride-0 batch)."""
    if how == "bcast":
        # Only the first batch entry in memory, broadcast with stride 0 over dim 0.
        d = DeviceArray(h, np.ascontiguousarray(base[:1]))
        return d, np.broadcast_to(d.host, base.shape)
    if how == "transposed":  # swap the two matrix dims in memory (BLAS transpose flags)
        perm = list(range(base.ndim - 2)) + [base.ndim - 1, base.ndim - 2]
        d = DeviceArray(h, np.ascontiguousarray(base.transpose(perm)))
        return d, d.host.transpose(perm)
    return layout(h, base, how)


MM_CASES = [  # (x shape, y shape, x layout, y layout)
    ((3, 4), (4, 5), "contiguous", "contiguous"),
    ((1, 1), (1, 1), "contiguous", "contiguous"),
    ((1, 7), (7, 1), "contiguous", "transposed"),
    ((17, 65), (65, 130), "transposed", "contiguous"),
    ((17, 65), (65, 130), "contiguous", "transposed"),
    ((9, 10), (10, 11), "reversed", "strided"),
    ((9, 10), (10, 11), "misaligned", "misaligned"),
    ((2, 3, 4, 5), (2, 3, 5, 6), "contiguous", "reversed"),
    ((4, 3, 5, 6), (4, 3, 6, 7), "bcast", "contiguous"),
    ((4, 3, 5, 6), (4, 3, 6, 7), "strided", "bcast"),
    ((3, 0), (0, 4), "contiguous", "contiguous"),  # empty sums: zeros
    ((0, 3), (3, 4), "contiguous", "contiguous"),
    ((2, 3, 0), (2, 0, 5), "contiguous", "contiguous"),
    ((130, 300), (300, 257), "contiguous", "contiguous"),  # several blocks each way
    ((64, 8, 9), (64, 9, 10), "contiguous", "transposed"),  # small batches in parallel
]


@pytest.mark.parametrize("name", NUMERIC)
def test_matmul_matches_numpy(mmh, name):
    rng = rng_for("mm", name)
    tol = MATMUL_TOL.get(name)
    for xs, ys, hx, hy in MM_CASES:
        ox = _mm_operand(mmh, values(name, xs, rng), hx)
        oy = _mm_operand(mmh, values(name, ys, rng), hy)
        expected = matmul_expected(name, np.asarray(ox[1]), np.asarray(oy[1]))
        got = run(mmh, "matmul", name, [ox, oy], expected.shape, dtype_of(name), attrs={})
        t = tol
        if t is not None:  # scale atol with the length and size of the sums
            scale = np.sqrt(max(xs[-1], 1)) * 16.0
            t = (tol[0], tol[1] * scale)
        assert_close(got, expected, t, f"matmul {name} {xs}@{ys} {hx}/{hy}")


def test_matmul_integer_wraps(mmh):
    x = np.full((2, 300), 100, dtype=np.int8)
    y = np.full((300, 3), 100, dtype=np.int8)
    got = run(mmh, "matmul", "int8", [_mm_operand(mmh, x, "contiguous"),
                                      _mm_operand(mmh, y, "contiguous")], (2, 3), np.int8)
    np.testing.assert_array_equal(got, matmul_expected("int8", x, y))
    x = np.full((1, 2), 2**62, dtype=np.int64)
    y = np.full((2, 1), 4, dtype=np.int64)
    got = run(mmh, "matmul", "int64", [_mm_operand(mmh, x, "contiguous"),
                                       _mm_operand(mmh, y, "contiguous")], (1, 1), np.int64)
    assert got[0, 0] == 0  # 2 * 2**64 wraps to 0


def test_matmul_large_float32(mmh, stream):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((513, 700)).astype(np.float32)
    y = rng.standard_normal((700, 600)).astype(np.float32)
    got = run(mmh, "matmul", "float32", [_mm_operand(mmh, x, "contiguous"),
                                         _mm_operand(mmh, y, "transposed")], (513, 600),
              np.float32, stream=stream)
    np.testing.assert_allclose(got, f64(x) @ f64(y), rtol=1e-4, atol=1e-3)


def test_matmul_shape_errors(rh):
    a = DeviceArray(rh, np.zeros((3, 4), np.float32))
    b = DeviceArray(rh, np.zeros((5, 6), np.float32))
    out = DeviceArray.empty(rh, (3, 6), np.float32)
    st = rh.call_kernel("matmul", DTYPE_CODE["float32"], [a.view(), b.view()], [out.view()])
    rh.expect_error(st, INVALID_ARGUMENT, "matmul")
    c = DeviceArray(rh, np.zeros((4, 6), np.int32))
    st = rh.call_kernel("matmul", DTYPE_CODE["float32"], [a.view(), c.view()], [out.view()])
    rh.expect_error(st, INVALID_ARGUMENT, "matmul", "dtypes")
    for d in (a, b, c, out):
        d.free()


# ---- softmax / log_softmax -----------------------------------------------------------------------

def softmax_expected(x: np.ndarray, axis: int, log: bool, dtype=np.float64) -> np.ndarray:
    x = f64(x)
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        e = np.exp(x - m)
        s = np.sum(e, axis=axis, keepdims=True)
        return np.asarray((x - m) - np.log(s) if log else e / s).astype(dtype)


SM_CASES = [
    ((), 0, ("contiguous",)),
    ((7,), 0, LAYOUTS),
    ((5, 33), 1, LAYOUTS),
    ((33, 5), 0, LAYOUTS),  # an outer axis: column tiles
    ((3, 4, 5), 1, ("contiguous", "transposed", "strided")),
    ((2, 3, 1000), 2, ("contiguous", "reversed")),
    ((0, 5), 1, ("contiguous",)),
]


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_matches_numpy(mmh, op, name):
    rng = rng_for(op, name)
    dt = dtype_of(name)
    for shape, axis, layouts in SM_CASES:
        base = values(name, shape, rng)
        expected = softmax_expected(base, axis if shape else None, op == "log_softmax", dt)
        for how in layouts:
            got = run(mmh, op, name, [layout(mmh, base, how)], shape, dt, attrs={"axis": axis})
            assert_close(got, expected, COMPOSITE_TOL[name], f"{op} {name} {shape} {how}")


@pytest.mark.parametrize("name", FLOATS)
def test_softmax_is_stable_and_handles_inf(mmh, name):
    dt = dtype_of(name)
    big = 60000.0 if name == "float16" else 1e30
    x = np.array([[big, big - 1, -big, 0.0], [-np.inf, 1.0, 2.0, -np.inf],
                  [-np.inf] * 4, [np.nan, 1.0, 2.0, 3.0]]).astype(dt)
    for op in ("softmax", "log_softmax"):
        expected = softmax_expected(x, 1, op == "log_softmax", dt)
        got = run(mmh, op, name, [layout(mmh, x, "contiguous")], x.shape, dt, attrs={"axis": 1})
        assert_close(got[:2], expected[:2], COMPOSITE_TOL[name], op)
        assert np.isnan(f64(got[2:])).all(), op  # all -inf, or a NaN: NaN rows (as numpy)
        if op == "softmax":
            assert f64(got[1, 0]) == 0.0 and f64(got[1, 3]) == 0.0


def test_softmax_large(rh, stream):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((512, 4096)).astype(np.float32) * 3
    for op in ("softmax", "log_softmax"):
        got = run(rh, op, "float32", [layout(rh, x, "contiguous")], x.shape, np.float32,
                  attrs={"axis": 1}, stream=stream)
        np.testing.assert_allclose(got, softmax_expected(x, 1, op == "log_softmax"),
                                   rtol=1e-5, atol=1e-6)


# ---- layer_norm / rms_norm -----------------------------------------------------------------------

def norm_expected(x, w, b, nd, eps, rms):
    x = f64(x)
    axes = tuple(range(x.ndim - nd, x.ndim))
    if rms:
        y = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps)
    else:
        m = x.mean(axis=axes, keepdims=True)
        v = x.var(axis=axes, keepdims=True)
        y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * f64(w)
    if b is not None:
        y = y + f64(b)
    return y


NORM_CASES = [  # (shape, normalized_ndim, x layout, weight/bias layout)
    ((7,), 1, "contiguous", "contiguous"),
    ((5, 33), 1, "contiguous", "reversed"),
    ((5, 33), 1, "transposed", "contiguous"),
    ((4, 6, 10), 2, "contiguous", "strided"),
    ((4, 6, 10), 2, "strided", "transposed"),
    ((4, 6, 10), 3, "reversed", "contiguous"),
    ((3, 1000), 1, "misaligned", "misaligned"),
    ((0, 8), 1, "contiguous", "contiguous"),
]


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_norms_match_numpy(mmh, op, name):
    rng = rng_for(op, name)
    dt = dtype_of(name)
    rms = op == "rms_norm"
    combos = [(False, False), (True, False)] if rms else \
        [(False, False), (True, False), (False, True), (True, True)]
    for shape, nd, hx, hp in NORM_CASES:
        nshape = shape[len(shape) - nd:]
        for has_w, has_b in combos:
            x = values(name, shape, rng) + np.asarray(1.5).astype(dt)
            w = values(name, nshape, rng) if has_w else None
            b = values(name, nshape, rng) if has_b else None
            eps = 1e-5
            expected = norm_expected(x, w, b, nd, eps, rms).astype(dt)
            inputs = [layout(mmh, x, hx)]
            inputs += [layout(mmh, p, hp) for p in (w, b) if p is not None]
            attrs = {"has_weight": has_w, "normalized_ndim": nd, "epsilon": eps}
            if not rms:
                attrs["has_bias"] = has_b
            got = run(mmh, op, name, inputs, shape, dt, attrs=attrs)
            assert_close(got, expected, COMPOSITE_TOL[name],
                         f"{op} {name} {shape} nd={nd} w={has_w} b={has_b} {hx}/{hp}")


def test_layer_norm_large(rh, stream):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1024, 4096)).astype(np.float32) * 2 + 1
    w = rng.standard_normal(4096).astype(np.float32)
    b = rng.standard_normal(4096).astype(np.float32)
    got = run(rh, "layer_norm", "float32", [layout(rh, p, "contiguous") for p in (x, w, b)],
              x.shape, np.float32, stream=stream,
              attrs={"has_weight": True, "has_bias": True, "normalized_ndim": 1,
                     "epsilon": 1e-5})
    np.testing.assert_allclose(got, norm_expected(x, w, b, 1, 1e-5, False), rtol=1e-5,
                               atol=2e-5)


def test_norm_argument_errors(rh):
    x = DeviceArray(rh, np.ones((2, 3), np.float32))
    w = DeviceArray(rh, np.ones((4,), np.float32))
    out = DeviceArray.empty(rh, (2, 3), np.float32)
    st = rh.call_kernel("layer_norm", DTYPE_CODE["float32"], [x.view()], [out.view()],
                        attrs={"has_weight": False, "has_bias": False, "normalized_ndim": 3})
    rh.expect_error(st, INVALID_ARGUMENT, "layer_norm", "normalized_ndim")
    st = rh.call_kernel("rms_norm", DTYPE_CODE["float32"], [x.view(), w.view()], [out.view()],
                        attrs={"has_weight": True, "normalized_ndim": 1})
    rh.expect_error(st, INVALID_ARGUMENT, "rms_norm", "weight")
    st = rh.call_kernel("layer_norm", DTYPE_CODE["float32"], [x.view(), w.view()], [out.view()],
                        attrs={"has_weight": False, "has_bias": False})
    rh.expect_error(st, INVALID_ARGUMENT, "layer_norm", "input")
    st = rh.call_kernel("softmax", DTYPE_CODE["float32"], [x.view()], [out.view()], attrs={})
    rh.expect_error(st, INVALID_ARGUMENT, "softmax", "axis")
    for d in (x, w, out):
        d.free()


# ---- argument validation shared by the reductions ----------------------------------------------

def test_reduce_argument_errors(rh):
    x = DeviceArray(rh, np.ones((2, 3), np.float32))
    out = DeviceArray.empty(rh, (2,), np.float32)
    st = rh.call_kernel("sum", DTYPE_CODE["float32"], [x.view()], [out.view()],
                        attrs={"axis": [5]})
    rh.expect_error(st, INVALID_ARGUMENT, "sum", "axis")
    st = rh.call_kernel("sum", DTYPE_CODE["float32"], [x.view()], [out.view()],
                        attrs={"axis": [1, 1]})
    rh.expect_error(st, INVALID_ARGUMENT, "sum", "twice")
    st = rh.call_kernel("sum", DTYPE_CODE["float32"], [x.view()], [out.view()],
                        attrs={"axis": [0]})  # 3 outputs expected, 2 given
    rh.expect_error(st, INVALID_ARGUMENT, "sum", "elements")
    st = rh.call_kernel("argmax", DTYPE_CODE["float32"], [x.view()], [out.view()],
                        attrs={"axis": 1})  # output must be int64
    rh.expect_error(st, INVALID_ARGUMENT, "argmax", "int64")
    st = rh.call_kernel("max", DTYPE_CODE["float32"], [x.view(), x.view()], [out.view()],
                        attrs={"axis": [1]})
    rh.expect_error(st, INVALID_ARGUMENT, "max")
    x.free()
    out.free()


def test_plan_outlives_the_call(rh, stream):
    """Asynchronous work must not read the host's views or attributes after the call returns
    (call_kernel scrambles the shape/stride arrays right after it)."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((300, 700)).astype(np.float32)
    outs = []
    for op, shape, dt, attrs in (("sum", (700,), np.float32, {"axis": [0]}),
                                 ("argmax", (300,), np.int64, {"axis": 1}),
                                 ("cumsum", x.shape, np.float32, {"axis": 1}),
                                 ("softmax", x.shape, np.float32, {"axis": 1})):
        d = DeviceArray(rh, x)
        out = DeviceArray.empty(rh, shape, dt)
        rh.check(rh.call_kernel(op, DTYPE_CODE["float32"], [d.view(d.host.T.T)], [out.view()],
                                attrs=attrs, stream=stream), op)
        outs.append((op, d, out))
    rh.sync_stream(stream)
    for op, d, out in outs:
        got = out.read()
        if op == "sum":
            np.testing.assert_allclose(got, x.sum(axis=0, dtype=np.float64), rtol=1e-5,
                                       atol=1e-5)
        elif op == "argmax":
            np.testing.assert_array_equal(got, x.argmax(axis=1))
        elif op == "cumsum":
            np.testing.assert_allclose(got, np.cumsum(f64(x), axis=1), rtol=1e-5, atol=1e-4)
        else:
            np.testing.assert_allclose(got, softmax_expected(x, 1, False), rtol=1e-5, atol=1e-6)
        d.free()
        out.free()
