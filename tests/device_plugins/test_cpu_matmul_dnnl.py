"""Large float32/bfloat16 products on custom:cpu through oneDNN (device_plugins/cpu/
matmul_dnnl.c): split into row or column bands over the pool, operands taken with their strides
(transposed and sliced views), primitives cached per shape. Against numpy in float64 over the
operands as the dtype holds them; oneDNN's own verbose log shows which products it ran."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import hwport

PLACE = "custom:cpu"


@pytest.fixture
def needs_dnnl(cpu_plugin_path: Path) -> None:
    if b"libdnnl.so" not in cpu_plugin_path.read_bytes():
        pytest.skip("the CPU plugin was built without oneDNN (libdnnl-dev)")


def _t(a: np.ndarray, dtype: str) -> hwport.Tensor:
    return hwport.cast(hwport.to_tensor(a.astype(np.float32), place=PLACE), dtype)


def _check(x: hwport.Tensor, y: hwport.Tensor, dtype: str) -> None:
    xs = hwport.cast(x, "float32").numpy().astype(np.float64)
    ys = hwport.cast(y, "float32").numpy().astype(np.float64)
    got = hwport.cast(x @ y, "float32").numpy().astype(np.float64)
    ref = xs @ ys
    scale = np.abs(xs) @ np.abs(ys)  # the size of the sum's terms
    out_round = 2.0 ** -8 if dtype == "bfloat16" else 0.0  # the result rounded to bfloat16
    tol = out_round * np.abs(ref) + 1e-5 * scale + 1e-30
    err = np.abs(got - ref)
    assert got.shape == ref.shape
    assert (err <= tol).all(), f"max excess {(err - tol).max()} at {np.argmax(err - tol)}"


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("m, k, n", [
    (300, 129, 257),   # M >= N: row bands, a remainder band
    (130, 40, 700),    # N > M: column bands
    (1000, 70, 33),    # thin N
    (64, 512, 64),     # one band per side
])
def test_products_match_numpy_with_views(dtype: str, m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(m * 7 + n)
    x = _t(rng.standard_normal((m, k)), dtype)
    y = _t(rng.standard_normal((k, n)), dtype)
    _check(x, y, dtype)
    _check(hwport.transpose(_t(rng.standard_normal((k, m)), dtype), [1, 0]), y, dtype)
    _check(x, hwport.transpose(_t(rng.standard_normal((n, k)), dtype), [1, 0]), dtype)
    wide = _t(rng.standard_normal((m, k + 9)), dtype)
    _check(wide[:, 3:k + 3], y, dtype)  # a row stride wider than the row, an offset start


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_batched_and_repeated_shapes(dtype: str) -> None:
    rng = np.random.default_rng(3)
    x = _t(rng.standard_normal((3, 160, 200)), dtype)
    y = _t(rng.standard_normal((3, 200, 150)), dtype)
    for _ in range(3):  # the cached primitive, run again on the same and on new data
        _check(x, y, dtype)
        x = _t(rng.standard_normal((3, 160, 200)), dtype)


_PROBE = textwrap.dedent("""
    import numpy as np, hwport
    rng = np.random.default_rng(0)
    for dtype, (m, k, n) in [("float32", (256, 256, 256)), ("bfloat16", (256, 256, 256)),
                             ("float32", (32, 32, 32)), ("float32", (1, 4096, 4096))]:
        x = hwport.cast(hwport.to_tensor(rng.standard_normal((m, k)).astype("float32"),
                                         place="custom:cpu"), dtype)
        y = hwport.cast(hwport.to_tensor(rng.standard_normal((k, n)).astype("float32"),
                                         place="custom:cpu"), dtype)
        ref = x.numpy().astype("float64") @ y.numpy().astype("float64") if dtype == "float32" \\
            else None
        out = (x @ y).numpy()
        if ref is not None:
            assert np.allclose(out, ref, rtol=1e-4, atol=1e-3), (dtype, m, k, n)
        print("DONE", dtype, m, k, n, flush=True)
""")


def _run_probe(**env: str) -> list[str]:
    full = {**os.environ, "ONEDNN_VERBOSE": "1", "DNNL_VERBOSE": "1", "HWPORT_CPU_THREADS": "2",
            **env}
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          env=full, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def _matmul_execs(lines: list[str]) -> dict[str, list[str]]:
    """oneDNN's exec lines per product (the DONE line that follows them)."""
    per: dict[str, list[str]] = {}
    pending: list[str] = []
    for line in lines:
        if "exec" in line and "matmul" in line:
            pending.append(line)
        elif line.startswith("DONE"):
            per[line[5:]] = pending
            pending = []
    return per


def test_large_products_run_on_onednn_jit_in_bands_and_small_ones_do_not(needs_dnnl):
    per = _matmul_execs(_run_probe())
    big32, big16 = per["float32 256 256 256"], per["bfloat16 256 256 256"]
    assert len(big32) == 2 and len(big16) == 2, per  # two row bands of 128 on two threads
    for line in big32 + big16:
        assert ",ref" not in line and "ref:" not in line, line  # a JIT kernel, not reference
    assert all("bf16" in line for line in big16) and all("f32" in line for line in big32)
    assert per["float32 32 32 32"] == []  # below 2^17 multiply-adds: OpenBLAS
    assert per["float32 1 4096 4096"] == []  # GEMV: OpenBLAS's sgemv


def test_the_switch_sends_every_product_to_openblas(needs_dnnl):
    per = _matmul_execs(_run_probe(HWPORT_CPU_DNNL="0"))
    assert len(per) == 4 and all(v == [] for v in per.values()), per


_OMP_PROBE = textwrap.dedent("""
    import ctypes, numpy as np, hwport
    gomp = ctypes.CDLL("libgomp.so.1")
    gomp.omp_set_num_threads(3)
    x = hwport.to_tensor(np.ones((64, 64), "float32"), place="custom:cpu")
    assert float((x @ x).numpy()[0, 0]) == 64.0  # 64^3: inline, on this thread, on oneDNN
    print("THREADS", gomp.omp_get_max_threads())
""")


def test_an_inline_product_leaves_the_callers_openmp_threads_as_they_were(needs_dnnl):
    env = {**os.environ, "ONEDNN_VERBOSE": "1", "DNNL_VERBOSE": "1"}
    proc = subprocess.run([sys.executable, "-c", _OMP_PROBE], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert any("exec" in ln and "matmul" in ln for ln in proc.stdout.splitlines()), proc.stdout
    assert "THREADS 3" in proc.stdout, proc.stdout


_FOLD_PROBE = textwrap.dedent("""
    import numpy as np, hwport
    rng = np.random.default_rng(0)
    x = hwport.to_tensor(rng.standard_normal((8, 32, 64)).astype("float32"), place="custom:cpu")
    for shape in [(64, 192), (1, 64, 192)]:  # the host reshapes the first, not the second
        y = hwport.to_tensor(rng.standard_normal(shape).astype("float32"), place="custom:cpu")
        out = (x @ y).numpy()
        assert np.allclose(out, x.numpy() @ y.numpy(), rtol=1e-4, atol=1e-4)
        print("DONE", len(shape), flush=True)
""")


def test_a_broadcast_weight_makes_one_product_of_all_rows(needs_dnnl):
    """8 x [32, 64] @ [64, 192] or [1, 64, 192] (a linear layer's input; the executor passes
    the batch dims as they are): one 256-row product, in two row bands on two threads, not
    eight 32-row products."""
    env = {**os.environ, "ONEDNN_VERBOSE": "1", "DNNL_VERBOSE": "1", "HWPORT_CPU_THREADS": "2"}
    proc = subprocess.run([sys.executable, "-c", _FOLD_PROBE], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    per = _matmul_execs(proc.stdout.splitlines())
    for execs in (per["2"], per["3"]):
        assert len(execs) == 2, per
        assert all("128x64:64x192:128x192" in line for line in execs), per


_CACHE_PROBE = textwrap.dedent("""
    import numpy as np, hwport
    x = hwport.to_tensor(np.ones((256, 256), "float32"), place="custom:cpu")
    w = hwport.to_tensor(np.ones((256, 192), "float32"), place="custom:cpu")
    for _ in range(3):
        assert float((x @ x).numpy()[0, 0]) == 256.0
        assert float((x @ w).numpy()[0, 0]) == 256.0
    print("DONE", flush=True)
""")


def test_a_shape_creates_its_primitive_once(needs_dnnl):
    """Both bands of a product share one primitive, made on the first call and kept: six
    products of two shapes create two primitives (oneDNN's verbose level 2 logs each)."""
    env = {**os.environ, "ONEDNN_VERBOSE": "2", "DNNL_VERBOSE": "2", "HWPORT_CPU_THREADS": "2"}
    proc = subprocess.run([sys.executable, "-c", _CACHE_PROBE], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    creates = [ln for ln in lines if ",create:" in ln and ",matmul," in ln]
    execs = [ln for ln in lines if ",exec," in ln and ",matmul," in ln]
    assert len(execs) == 12, lines  # 6 products x 2 bands
    assert len(creates) == 2, creates
