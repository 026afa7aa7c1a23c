"""The template plugin's compiled matmul (cinn_backends/gemm_cpu.py: packed panels, register
tiles, k blocks) and argsort/topk (sort_kernel.py) against numpy, at shapes that hit every edge
of the schedule: m, n, k not multiples of the tiles or blocks, 1, 0, several k blocks, batched,
transposed and strided operands, float64, float16/bfloat16 (float32 sums), integers (wrapping);
rows with NaN, ties, -0.0 and infinities. Every call runs compiled: no CPU fallback."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.cinn.test_eager_jit import PRELUDE, run_json

MATMUL = PRELUDE + """
import ml_dtypes
rt.reset_fallback_stats()
bad = {}
def check(name, a, b, dtype="float32", tol=1e-4, **kw):
    x, y = a.astype(dtype), b.astype(dtype)
    got = hwport.matmul(t(x), t(y), **kw).numpy()
    xa, ya = x.astype("float64"), y.astype("float64")
    if kw.get("transpose_x"):
        xa = np.swapaxes(xa, -1, -2)
    if kw.get("transpose_y"):
        ya = np.swapaxes(ya, -1, -2)
    want = xa @ ya
    if dtype in ("int32", "int64"):
        ok = np.array_equal(got, np.matmul(x, y))
    else:
        scale = np.sqrt(max(1, xa.shape[-1])) * max(1.0, np.abs(want).max(initial=0))
        ok = got.shape == want.shape and np.allclose(got.astype("float64"), want, rtol=tol,
                                                     atol=tol * scale)
    if not ok:
        bad[name] = [list(got.shape), float(np.abs(got.astype("float64") - want).max())]
def f(*shape):
    return rng.standard_normal(shape)
# m, k, n around the tile and block sizes (12 or 8 rows, 8 or 48 columns, k blocks of 256)
for m, k, n in [(1, 1, 1), (1, 300, 1), (13, 7, 9), (12, 256, 8), (25, 257, 17), (97, 513, 50),
                (2, 1000, 3), (150, 64, 300), (145, 33, 257), (7, 16, 200), (300, 2, 5)]:
    check(f"f32 {m}x{k}x{n}", f(m, k), f(k, n))
check("k = 0", f(4, 0), f(0, 5))
check("batched", f(8, 37, 64), f(8, 64, 45))
check("batched 4d", f(2, 3, 13, 9), f(2, 3, 9, 11))
check("broadcast batch", f(3, 20, 30), f(30, 7))
check("transpose_x", f(40, 30), f(40, 20), transpose_x=True)
check("transpose_y", f(30, 40), f(20, 40), transpose_y=True)
a, b = f(30, 80), f(40, 26)
x = t(a.astype("float32"))[:, ::2]  # a strided view
got = hwport.matmul(x, t(b.astype("float32"))).numpy()
if not np.allclose(got, a[:, ::2] @ b, rtol=1e-4, atol=1e-3):
    bad["strided"] = float(np.abs(got - a[:, ::2] @ b).max())
check("f64", f(67, 300), f(300, 29), "float64", 1e-12)
check("f64 batched", f(3, 9, 130), f(3, 130, 10), "float64", 1e-12)
check("f16", f(50, 600) * 0.1, f(600, 33), "float16", 2e-3)
check("f16 one k block", f(5, 70), f(70, 3), "float16", 2e-3)
check("bf16", f(13, 300), f(300, 100), ml_dtypes.bfloat16, 1e-2)
ia, ib = rng.integers(-1000, 1000, (17, 300)), rng.integers(-1000, 1000, (300, 23))
check("int32 wraps", ia * 70000, ib, "int32")
check("int64", ia, ib, "int64")
inf = np.array([[np.inf, 1.0], [2.0, 3.0]])
got = hwport.matmul(t(inf.astype("float32")), t(np.eye(2, dtype="float32"))).numpy()
if not (np.isinf(got[0, 0]) and np.isnan(got[0, 1]) == np.isnan((inf @ np.eye(2))[0, 1])):
    bad["inf"] = got.tolist()
print(json.dumps({"bad": bad, **stats()}))
"""


def test_matmul_against_numpy(mydev: Path) -> None:
    doc = run_json(MATMUL, mydev)
    assert doc["bad"] == {}
    assert doc["cpu"] == [] and "matmul" in doc["compiled"], doc


SORTS = PRELUDE + """
import ml_dtypes
rt.reset_fallback_stats()
bad = {}
# numpy's stable sort on (NaN last, value) ascending, (NaN first, value down) descending
def want_order(key, desc, axis):
    k = np.moveaxis(key, axis, -1)
    out = np.empty(k.shape, "int64")
    for idx in np.ndindex(k.shape[:-1]):
        nan = np.isnan(k[idx])
        v = np.where(nan, 0, k[idx])
        out[idx] = np.lexsort((-v, ~nan)) if desc else np.lexsort((v, nan))
    return np.moveaxis(out, -1, axis)
def check(name, a, dtype="float32", axis=-1):
    x = a.astype(dtype)
    for desc in (False, True):
        got = hwport.argsort(t(x), axis=axis, descending=desc).numpy()
        want = want_order(x.astype("float64"), desc, axis)
        if not np.array_equal(got, want):
            bad[f"{name} desc={desc}"] = int((got != want).sum())
def f(*shape):
    return rng.standard_normal(shape)
for n in (1, 2, 3, 7, 8, 9, 16, 31, 100, 255, 256, 1000, 1024, 1025, 3000):
    check(f"row {n}", f(4, n))
check("rows of 1024", f(64, 1024))
ties = rng.integers(-3, 4, (16, 1024)).astype("float64")
ties[:, ::7] = np.nan
ties[:, 3::11] = -0.0
ties[:, 5::13] = np.inf
ties[:, 6::17] = -np.inf
check("ties nan inf", ties)
check("ties f16", ties, "float16")
check("ties bf16", ties, ml_dtypes.bfloat16)
check("f64 ties", ties, "float64")
check("int32", rng.integers(-5, 5, (9, 1024)), "int32")
check("int64", rng.integers(-2**40, 2**40, (3, 500)), "int64")
check("int8", rng.integers(-128, 128, (3, 300)), "int8")
check("axis 0", f(300, 5), axis=0)
check("axis 1 of 3", f(3, 100, 4), axis=1)
x = f(32, 1024).astype("float32")
x[:, ::5] = x[:, 1::5]  # ties
for largest in (True, False):
    v, i = hwport.topk(t(x), 8, axis=-1, largest=largest)
    order = np.argsort(-x if largest else x, axis=-1, kind="stable")[:, :8]
    if not (np.array_equal(i.numpy(), order) and
            np.array_equal(v.numpy(), np.take_along_axis(x, order, -1))):
        bad[f"topk largest={largest}"] = True
print(json.dumps({"bad": bad, **stats()}))
"""


def test_argsort_and_topk_against_numpy(mydev: Path) -> None:
    doc = run_json(SORTS, mydev)
    assert doc["bad"] == {}
    assert doc["cpu"] == [] and "argsort" in doc["compiled"], doc


@pytest.mark.parametrize("lanes", [4, 8, 16])
def test_gemm_tiling_fits_the_registers_and_the_stack(lanes: int) -> None:
    """The register tile uses at most the vector registers of the widths it is chosen for
    (16 below 16 lanes, 32 at 16), and the private arrays stay well within a thread's stack
    (8 MB by default; a float16 output adds its float32 block of sums)."""
    from hwport.cinn_backends.gemm_cpu import tiling
    from hwport.cinn_backends.target import cpu_target

    for acc in ("float32", "float64", "int64"):
        t = tiling(acc, cpu_target(vector_width=lanes))
        regs = 32 if lanes >= 16 else 16
        assert t.mr * t.w + t.w + 1 <= regs, t
        size = 4 if acc == "float32" else 8
        assert (t.mc * t.kc + t.kc * t.nc) * size <= 448 * 1024, t
        assert (t.mc * t.kc + t.kc * t.nc + t.mc * t.nc) * 4 <= 576 * 1024, t
        assert t.mc % t.mr == 0 and t.nc % t.nr == 0, t


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("lanes", [4, 8, 16])
def test_gemm_each_tiling_against_numpy(lanes: int) -> None:
    """Each register tiling (12 x 1 vectors of 4 or 8 lanes, 8 x 3 of 16) compiled with the
    host's ISA and launched with its groups on concurrent threads (tests/cinn/runners.py),
    against numpy: full and edge tiles, several k blocks, the skinny kernel, batches."""
    from hwport.cinn_backends.index_kernels import lower_index_op
    from hwport.cinn_backends.target import cpu_target
    from tests.cinn.runners import run_c99

    rng = np.random.default_rng(lanes)
    target = cpu_target(vector_width=lanes)
    for dtype, tol in (("float32", 1e-4), ("float64", 1e-12), ("float16", 3e-3)):
        for xs, ys in (((50, 300), (300, 70)), ((3, 29, 530), (3, 530, 41)),
                       ((5, 77), (77, 600)), ((150, 8), (8, 49))):
            x = rng.standard_normal(xs).astype(dtype)
            y = rng.standard_normal(ys).astype(dtype)
            out = (*xs[:-1], ys[-1])
            lowered = lower_index_op("matmul", [(xs, dtype), (ys, dtype)], [(out, dtype)], {},
                                     target)
            (got,) = run_c99(lowered, [x, y], [(out, np.dtype(dtype))])
            want = np.matmul(x.astype("float64"), y.astype("float64"))
            scale = np.sqrt(xs[-1]) * np.abs(want).max()
            assert np.allclose(got.astype("float64"), want, rtol=tol, atol=tol * scale), \
                (dtype, xs, ys)
