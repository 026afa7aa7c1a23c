"""The codegen table's host side on the CPU plugin's "c99" target (hwport/codegen.h, ABI 1.2):
target information, compile + launch with buffer (views at nonzero offsets), int64 and double
arguments against numpy, compile errors with the compiler's log, unknown dialects and
functions, serialize/deserialize, and no target without a C compiler."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import hwport
from hwport.runtime import CodegenCompileError, _core

pytestmark = pytest.mark.skipif(
    _core.codegen_target_info("cpu") is None, reason="no C compiler for the c99 target")

# out[i] = a * x[i] + y[i] + k for i in group gx's rows: one group per row of `cols`.
AXPY = r"""
#include <stdint.h>
void axpy_rows(int64_t gx, int64_t gy, int64_t gz, void *const *args) {
  float *out = (float *)args[0];
  const float *x = (const float *)args[1];
  const float *y = (const float *)args[2];
  const int64_t cols = *(const int64_t *)args[3];
  const double a = *(const double *)args[4];
  const int64_t k = *(const int64_t *)args[5];
  (void)gy; (void)gz;
  for (int64_t j = 0; j < cols; ++j)
    out[gx * cols + j] = (float)a * x[gx * cols + j] + y[gx * cols + j] + (float)k;
}

/* 3-D grid: out[z][y][x] = x + 10 y + 100 z */
void coords(int64_t gx, int64_t gy, int64_t gz, void *const *args) {
  double *out = (double *)args[0];
  const int64_t nx = *(const int64_t *)args[1], ny = *(const int64_t *)args[2];
  out[(gz * ny + gy) * nx + gx] = (double)gx + 10.0 * (double)gy + 100.0 * (double)gz;
}
"""


@pytest.mark.parametrize("place", ["cpu", "custom:cpu"])
def test_target_info(place):
    info = _core.codegen_target_info(place)
    assert info is not None
    assert info["dialects"] == ["c99"]
    assert info["architecture"].startswith(("x86_64-", "aarch64", "arm"))
    assert info["is_simt"] is False and info["subgroup_shuffle"] is False
    assert info["float64"] is True and info["serialize"] is True
    assert info["max_group_size"] == 1
    assert info["local_memory_bytes"] == 0
    assert info["compute_units"] >= 1
    assert info["simd_width"] in (4, 8, 16)
    assert info["preferred_vector_width"] == info["simd_width"]
    if info["architecture"] == "x86_64-avx512":
        assert info["simd_width"] == 16
    if info["architecture"] == "x86_64-avx2":
        assert info["simd_width"] == 8
    assert set(info) >= {"flags", "max_grid_size"}


def test_launch_with_views_int64_and_double():
    module = _core.codegen_compile("cpu", "c99", AXPY, "-DUNUSED=1")
    fn = module.get_function("axpy_rows")
    assert fn.name == "axpy_rows" and str(fn.place) == "custom:cpu:0"
    rows, cols = 37, 19
    rng = np.random.default_rng(0)
    big_x = rng.standard_normal((rows + 3, cols)).astype(np.float32)
    big_y = rng.standard_normal(rows * cols + 5).astype(np.float32)
    x = hwport.to_tensor(big_x)[3:]                      # a view 3 rows in
    y = hwport.to_tensor(big_y)[5:].reshape([rows, cols])  # a view 5 elements in
    out_all = hwport.zeros([rows * cols + 7], dtype="float32")
    out = out_all[7:]
    fn.launch([rows], [1], [out, x, y, cols, 1.5, -2])
    want = np.float32(1.5) * big_x[3:] + big_y[5:].reshape(rows, cols) + np.float32(-2)
    np.testing.assert_allclose(out.numpy().reshape(rows, cols), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out_all.numpy()[:7], 0)  # nothing written before the view


def test_launch_3d_grid():
    fn = _core.codegen_compile("custom:cpu", "c99", AXPY).get_function("coords")
    nx, ny, nz = 5, 4, 3
    out = hwport.zeros([nz, ny, nx], dtype="float64")
    fn.launch((nx, ny, nz), 1, [out, nx, ny])
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    np.testing.assert_array_equal(out.numpy(), x + 10.0 * y + 100.0 * z)


def test_launch_argument_checks():
    fn = _core.codegen_compile("cpu", "c99", AXPY).get_function("coords")
    out = hwport.zeros([2], dtype="float64")
    with pytest.raises(TypeError, match="argument 1"):
        fn.launch([2], [1], [out, "two", 1])
    with pytest.raises(TypeError, match="argument 2"):
        fn.launch([2], [1], [out, 2, True])
    with pytest.raises(ValueError, match="grid"):
        fn.launch([0], [1], [out, 2, 1])
    with pytest.raises(ValueError, match="1-3"):
        fn.launch([1, 1, 1, 1], [1], [out, 2, 1])
    with pytest.raises(ValueError, match="group"):  # the plugin refuses groups of c99
        fn.launch([2], [4], [out, 2, 1])


def test_compile_error_has_the_log():
    with pytest.raises(CodegenCompileError) as info:
        _core.codegen_compile("cpu", "c99", "void broken(void) { this is not C; }\n")
    err = info.value
    assert isinstance(err, RuntimeError)
    assert "broken" in err.log or "error" in err.log
    assert "error" in err.log
    assert "codegen.compile" in str(err)


def test_compile_options_reach_the_compiler():
    src = "#ifndef MUST_BE_SET\n#error MUST_BE_SET is missing\n#endif\nvoid f(void) {}\n"
    with pytest.raises(CodegenCompileError) as info:
        _core.codegen_compile("cpu", "c99", src)
    assert "MUST_BE_SET is missing" in info.value.log
    _core.codegen_compile("cpu", "c99", src, "-DMUST_BE_SET=1 -Wall").get_function("f")


def test_unknown_dialect_is_not_supported():
    with pytest.raises(NotImplementedError, match=r"dialect 'opencl-c-1\.2' is not supported"):
        _core.codegen_compile("cpu", "opencl-c-1.2", "__kernel void f() {}")


def test_missing_function():
    module = _core.codegen_compile("cpu", "c99", AXPY)
    with pytest.raises(KeyError, match="no function 'nope'"):
        module.get_function("nope")
    # what the module's dependencies define (libc) is not the module's
    with pytest.raises(KeyError, match="no function 'printf'"):
        module.get_function("printf")


def test_function_keeps_its_module_loaded():
    fn = _core.codegen_compile("cpu", "c99", AXPY).get_function("coords")  # module dropped
    out = hwport.zeros([3], dtype="float64")
    fn.launch([3], [1], [out, 3, 1])
    np.testing.assert_array_equal(out.numpy(), [0.0, 1.0, 2.0])
    assert fn.module.dialect == "c99"


def test_serialize_round_trip():
    data = _core.codegen_compile("cpu", "c99", AXPY).serialize()
    assert isinstance(data, bytes) and data[:4] == b"\x7fELF"
    module = _core.codegen_deserialize("cpu", "c99", data)
    fn = module.get_function("coords")
    out = hwport.zeros([2, 2], dtype="float64")
    fn.launch([2, 2], [1], [out, 2, 2])
    np.testing.assert_array_equal(out.numpy(), [[0.0, 1.0], [10.0, 11.0]])
    with pytest.raises(ValueError, match="not a shared object"):
        _core.codegen_deserialize("cpu", "c99", b"garbage")


def test_many_modules_load_side_by_side():
    """Each module is its own shared object (unique file names): same symbol, other code."""
    fns = [_core.codegen_compile("cpu", "c99", f"""
#include <stdint.h>
void k(int64_t gx, int64_t gy, int64_t gz, void *const *args) {{
  (void)gy; (void)gz; ((int64_t *)args[0])[gx] = {v} + gx;
}}""").get_function("k") for v in (100, 200, 300)]
    outs = []
    for fn in fns:
        out = hwport.zeros([2], dtype="int64")
        fn.launch(2, 1, [out])
        outs.append(out.numpy().tolist())
    assert outs == [[100, 101], [200, 201], [300, 301]]


def _run_child(code: str, env: dict[str, str]) -> str:
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("HWPORT_")}
    child_env.update(env)
    proc = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True,
                          text=True, timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_no_compiler_means_no_target():
    code = ("from hwport.runtime import _core\n"
            "print(_core.codegen_target_info('cpu'))\n"
            "try:\n"
            "    _core.codegen_compile('cpu', 'c99', 'void f(void) {}')\n"
            "except NotImplementedError as e:\n"
            "    print('refused:', e)\n")
    out = _run_child(code, {"HWPORT_CC": "/nonexistent/bin/no-such-cc"}).splitlines()
    assert out[0] == "None"
    assert out[1].startswith("refused:") and "no C compiler" in out[1]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc on PATH")
def test_hwport_cc_names_the_compiler():
    out = _run_child("from hwport.runtime import _core\n"
                     "print(_core.codegen_target_info('cpu')['dialects'])\n",
                     {"HWPORT_CC": "gcc"})
    assert out == "['c99']"
