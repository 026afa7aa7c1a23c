"""The OpenCL plugin's reduction kernels sum, prod, max and min
(device_plugins/opencl/kernels_reduce.c), through the public API on custom:opencl.

numpy is the oracle (phi_ops.reference, compared with phi_ops.tolerance.assert_close) for every
registered (op, dtype): several axis sets (all, single, adjacent and non-adjacent), keepdim,
odd sizes (the chunked two-pass path included), strided views (transposed, stepped, flipped),
empty reductions for sum/prod, NaN propagation, 1M-element inputs (float32 sums within rtol 1e-5
of numpy's float64 sum) and a non-default stream; the ops no longer go through the CPU fallback.
Skipped when the plugin is not built, sees no OpenCL device, or was built without the reduction
kernels (no "reduction kernels" registration line in its log)."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
import hwport.runtime as rt
from phi_ops.reference import reference
from phi_ops.tolerance import assert_close
from tests.conftest import INSTALL_ROOT
from tests.device_plugins.ocl_families import check_on_stream, strided_views
from tests.seeds import rng_for

PLUGIN_SO = INSTALL_ROOT / "device_plugins" / "opencl" / "libhwport_opencl.so"
P = "custom:opencl"

if not PLUGIN_SO.exists():
    pytest.skip(f"the OpenCL plugin is not built ({PLUGIN_SO} missing)", allow_module_level=True)
_found = [p for p in rt.plugins() if p["device_type"] == "opencl"]
if not _found:
    pytest.skip(f"the OpenCL plugin did not load: {rt.plugin_errors()}", allow_module_level=True)
if _found[0]["device_count"] == 0:
    pytest.skip("the OpenCL plugin sees no device", allow_module_level=True)


def _registration_line() -> str | None:
    for (_t, _lvl, m) in rt._core.plugin_log():
        if str(m).startswith("opencl: registered") and "reduction kernels" in str(m):
            return str(m)
    return None


_LINE = _registration_line()
if _LINE is None:
    pytest.skip("the OpenCL plugin registers no reduction kernels", allow_module_level=True)

FP64 = "float64: yes" in _LINE
OPS = ("sum", "prod", "max", "min")
DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")
REGISTERED = [d for d in DTYPES if FP64 or d != "float64"]
OP_DTYPES = [(op, d) for op in OPS for d in REGISTERED]
# mean, the composite the plugin reduces natively: the float dtypes (ops.yaml)
OP_DTYPES += [("mean", d) for d in REGISTERED if d.startswith(("float", "bfloat"))]


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(np.bool_ if name == "bool" else name)


def values(op: str, name: str, shape, rng: np.random.Generator) -> np.ndarray:
    dt = np_dtype(name)
    if name == "bool":
        p = 0.9 if op == "min" else 0.1 if op == "max" else 0.5  # any/all both ways
        return rng.random(size=shape) < p
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if op == "prod" and dt.itemsize < 8:
            lo = -3 if dt.kind == "i" else 0
            return rng.integers(lo, 4, size=shape).astype(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    if op == "prod":
        v = rng.uniform(0.6, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    else:
        v = rng.standard_normal(size=shape) * 4
    return v.astype(dt)


def dev(a: np.ndarray):
    return hwport.to_tensor(a, place=P)


def run(op: str, t, axis, keepdim: bool):
    return getattr(hwport, op)(t, axis=axis, keepdim=keepdim)


def check(op: str, name: str, a: np.ndarray, t, axis, keepdim: bool = False) -> None:
    got = run(op, t, axis, keepdim)
    assert str(got.place).startswith(P), got.place
    attrs = {"axis": [] if axis is None else list(axis), "keepdim": keepdim}
    want = np.asarray(reference(op, [a], attrs))
    got_np = got.numpy()
    assert got_np.shape == want.shape, (op, name, axis, got_np.shape, want.shape)
    assert got_np.dtype == want.dtype, (op, name, got_np.dtype, want.dtype)
    assert_close(op, name, got_np, want)


AXIS_SETS = {
    (7,): [None, [0]],
    (3, 5): [None, [0], [1], [0, 1]],
    (4, 1, 6): [[0], [1], [2], [0, 2], [1, 2], [0, 1, 2]],
    (2, 3, 5, 7): [[0], [3], [1, 2], [0, 2], [1, 3], [0, 1, 3], None],
}


def test_registered_set():
    entry = _found[0]
    assert entry["num_kernels"] > 0
    assert f"registered {len(OP_DTYPES)} reduction kernels" in _LINE, _LINE


@pytest.mark.parametrize("op,name", OP_DTYPES, ids=[f"{o}-{d}" for o, d in OP_DTYPES])
def test_matches_numpy(op, name):
    rng = rng_for(op, name, 1)
    for shape, axes in AXIS_SETS.items():
        a = values(op, name, shape, rng)
        t = dev(a)
        for axis in axes:
            for keepdim in (False, True):
                check(op, name, a, t, axis, keepdim)
    # odd sizes: tiny rows, rows longer than a work-group, the chunked path
    for shape, axis in (((1, 1), [1]), ((257, 3), [0]), ((3, 1023), [1]), ((5, 4099), [1]),
                        ((2, 50001), [1]), ((100003,), [0]), ((37, 41, 3), [0, 2])):
        a = values(op, name, shape, rng)
        check(op, name, a, dev(a), axis)
    # 0-d
    a = values(op, name, (), rng)
    check(op, name, a, dev(a), None)


@pytest.mark.parametrize("op,name", OP_DTYPES, ids=[f"{o}-{d}" for o, d in OP_DTYPES])
def test_strided_views(op, name):
    rng = rng_for(op, name, 2)
    a = values(op, name, (6, 9, 5), rng)
    t = dev(a)
    for a_c, t_view in strided_views(a, t):
        for axis in ([0], [1], [2], [0, 2], [0, 1, 2]):
            check(op, name, a_c, t_view, axis)


@pytest.mark.parametrize("op", ["sum", "prod"])
@pytest.mark.parametrize("name", REGISTERED)
def test_empty_reduction_is_the_identity(op, name):
    a = np.zeros((3, 0, 2), dtype=np_dtype(name))
    check(op, name, a, dev(a), [1])
    check(op, name, a, dev(a), [1], keepdim=True)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("name", [d for d in REGISTERED if d.startswith(("float", "bfloat"))])
def test_nan_propagates(op, name):
    rng = np.random.default_rng(7)
    a = values(op, name, (4, 300), rng)
    a[1, 17] = np.nan
    a[3, 299] = np.nan
    a[3, 0] = np.nan
    for axis in ([1], [0], None):
        check(op, name, a, dev(a), axis)
    got = run(op, dev(a), [1], False).numpy().astype(np.float64)
    assert np.isnan(got[1]) and np.isnan(got[3]) and not np.isnan(got[0]), got


def test_large_inputs_and_float32_accuracy():
    rng = np.random.default_rng(11)
    n = 1 << 20
    x = (rng.standard_normal(n) * 3 + 0.5).astype(np.float32)
    t = dev(x)
    got = float(hwport.sum(t).numpy())
    want = float(x.astype(np.float64).sum())
    assert abs(got - want) <= 1e-5 * abs(want) + 1e-6, (got, want)
    m = x.reshape(1024, 1024)
    tm = dev(m)
    for axis in ([0], [1]):
        g = hwport.sum(tm, axis=axis).numpy().astype(np.float64)
        w = m.astype(np.float64).sum(axis=tuple(axis))
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * np.abs(m).sum() / 1024)
    for op in OPS:
        check(op, "float32", x, t, None)
        check(op, "float32", m, tm, [0])
    for name in ("int32", "int64", "bool"):
        a = values("sum", name, (n,), rng)
        ta = dev(a)
        for op in OPS:
            check(op, name, a, ta, None)


@pytest.mark.parametrize("shape", [(3, 64), (5, 1000), (7, 4099), (2, 3, 257), (1 << 21,),
                                   (3, 200003)])
def test_contiguous_float32_rows(shape):
    # The float32 fast path (k_<op>_c: contiguous rows, float8 loads, blocks of 64, a span per
    # work-item; long rows of few outputs split and finished by k_<op>_fin): row lengths off
    # the 8 / 64 / group multiples, a 4-byte-aligned offset view, NaN and +-inf in a row.
    rng = rng_for(f"opencl-reduce-c-{shape}")
    x = (rng.standard_normal(shape) * 4 + 1).astype(np.float32)
    t = dev(x)
    axis = [len(shape) - 1]
    for op in ("sum", "mean", "max", "min"):
        check(op, "float32", x, t, axis)
        if len(shape) > 1:
            check(op, "float32", x, t, None)
    view = t[..., 1:]  # the rows start 4 bytes into each row: aligned, not at 0
    for op in ("sum", "max"):
        check(op, "float32", x[..., 1:], view, axis)
    check_specials(x, rtol=1e-5, atol=1e-5)


def check_specials(x: np.ndarray, **tol: float) -> None:
    """Rows of `x` with NaN and +-inf put in: sum, max and min keep them as numpy does (in
    float64), the finite results within `tol`."""
    y = x.copy().reshape(-1, x.shape[-1])
    y[0, x.shape[-1] // 2] = np.nan
    if y.shape[0] > 1:
        y[1, 3] = np.inf
    if y.shape[0] > 2:
        y[2, 0], y[2, -1] = np.inf, -np.inf
    ty = dev(y)
    for op in ("sum", "max", "min"):
        got = run(op, ty, [1], False).numpy().astype(np.float64)
        want = getattr(np, op)(y.astype(np.float64), axis=1)
        np.testing.assert_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_equal(np.isinf(got), np.isinf(want))
        fin = np.isfinite(want)
        np.testing.assert_allclose(got[fin], want[fin], **tol)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(3, 64), (7, 999), (5, 1000), (2, 3, 257), (1 << 20,)])
def test_contiguous_half_rows(name, shape):
    # The half types through k_<op>_c too (8-element loads widened to float, float lanes
    # compensated): odd row lengths put rows at 2 mod 4 bytes (PoCL's vload_half8 crashed
    # there; the kernel widens ushort8 by bits), an element offset view, NaN and +-inf.
    rng = rng_for(f"opencl-reduce-h-{name}-{shape}")
    x = (rng.standard_normal(shape) * 4 + 1).astype(np_dtype(name))
    t = dev(x)
    axis = [len(shape) - 1]
    for op in ("sum", "mean", "max", "min"):
        check(op, name, x, t, axis)
        if len(shape) > 1:
            check(op, name, x, t, None)
    for op in ("sum", "max"):
        check(op, name, x[..., 1:], t[..., 1:], axis)
    check_specials(x, rtol=1e-2, atol=1e-2)  # results rounded to the half type



def test_contiguous_float16_rows_widen_every_value_exactly():
    # Every float16 bit pattern through the row loader: rows of 65 (misaligned starts), the
    # value among -inf (max) or zeros (sum) gives it back bit for bit (NaN as NaN).
    h = np.arange(65536, dtype=np.uint16).view(np.float16)
    for op, fill in (("max", -np.inf), ("sum", 0.0)):
        rows = np.full((65536, 65), fill, np.float16)
        rows[:, 3] = h
        got = run(op, dev(rows), [1], False).numpy()
        same = (got.view(np.uint16) == h.view(np.uint16)) | (np.isnan(got) & np.isnan(h))
        if op == "sum":
            same |= (got == 0) & (h == 0)  # -0.0 + 0.0 = +0.0
        assert same.all(), (op, np.nonzero(~same)[0][:5])


def check_kept_dims(x: np.ndarray, axis: list[int], **tol: float) -> None:
    """sum/mean/max/min of x over `axis` against numpy in float64: NaN and inf where numpy
    has them, the finite results within `tol`."""
    t = dev(x)
    for op in ("sum", "mean", "max", "min"):
        got = run(op, t, axis, False).numpy()
        want = getattr(np, op)(x.astype(np.float64), axis=tuple(axis))
        np.testing.assert_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_equal(np.isinf(got), np.isinf(want))
        fin = np.isfinite(want)
        np.testing.assert_allclose(got[fin], want[fin], **tol)


@pytest.mark.parametrize(("shape", "axis"), [((300, 1000), [0]), ((5, 7, 300), [0, 1]),
                                           ((20, 259), [0]), ((3, 4, 17, 400), [0, 2])])
def test_contiguous_float32_kept_dims(shape, axis):
    # The float32 path for reductions over outer dims whose kept dims are one contiguous dim
    # (k_<op>_k: cw outputs per work-item with float16 loads, the last ones one by one),
    # with NaN and inf in some columns, and a transposed view (the generic path) beside it.
    rng = rng_for(f"opencl-reduce-k-{shape}")
    x = (rng.standard_normal(shape) * 4 + 1).astype(np.float32)
    x.flat[5] = np.nan
    x.flat[2 * shape[-1] + 9] = np.inf
    check_kept_dims(x, axis, rtol=1e-5, atol=1e-5)
    y = x.reshape(shape[0], -1)
    check("sum", "float32", y, dev(y), [0])
    check("max", "float32", y.T.copy(), dev(y).T, [1])


def test_on_a_stream():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 4097)).astype(np.float32)
    check_on_stream([(op, lambda t, op=op: run(op, t, [1], False), a, {"axis": [1]})
                     for op in OPS])


def test_ops_no_longer_fall_back():
    rng = np.random.default_rng(0)
    rt.reset_fallback_stats()
    for op, name in OP_DTYPES:
        a = values(op, name, (4, 5), rng)
        run(op, dev(a), [1], False).numpy()
        run(op, dev(a), None, True).numpy()
    stats = rt.fallback_stats()
    leaked = {k: v for k, v in stats.items() if k[1] == "opencl" and k[0] in OPS}
    assert not leaked, leaked
