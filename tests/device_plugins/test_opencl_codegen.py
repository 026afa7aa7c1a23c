"""The OpenCL plugin's codegen target (device_plugins/opencl/codegen.c, codegen_launch.c)
driven directly through the C ABI with cffi (hwcheck's DirectHost and codegen_host wrappers),
on whatever OpenCL device is installed (PoCL in CI): target info, compile, get_function,
launches with buffer offsets / int64 / float64 arguments (checked with numpy), compile errors
and their log, the per-process program cache, serialize/deserialize, concurrent launches."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from hwport.conformance.codegen_host import (
    FILL_NAME,
    FLOAT64,
    SERIALIZE,
    SIMT,
    BufferArg,
    Codegen,
    TargetInfo,
    broken_source,
    fill_expected,
    fill_shape,
    fill_source,
    is_sentinel,
)
from hwport.conformance.direct_host import (
    INVALID_ARGUMENT,
    NOT_FOUND,
    NOT_SUPPORTED,
    NULL,
    OK,
    DirectHost,
    ffi,
)

from .opencl_env import PLUGIN_SO, require_opencl_device

require_opencl_device()
DIALECT = "opencl-c-1.2"

# Two buffers with their offsets, a 2-D grid, every scalar kind: y[r][c] = a * x[r][c] + b + r.
AXPB = """{pragma}
__kernel void axpb(__global const float *x, ulong x_off, __global float *y, ulong y_off,
                   long cols, {real} a, {real} b) {{
  __global const float *xs = (__global const float *)((__global const char *)x + x_off);
  __global float *ys = (__global float *)((__global char *)y + y_off);
  long c = (long)get_global_id(0), r = (long)get_global_id(1);
  if (c < cols) ys[r * cols + c] = (float)(a * ({real})xs[r * cols + c] + b) + (float)r;
}}
"""


@pytest.fixture(scope="module")
def host() -> Iterator[DirectHost]:
    h = DirectHost(PLUGIN_SO)
    assert h.init_status == OK, h.init_message
    h.init_devices()
    yield h


@pytest.fixture(scope="module")
def cg(host: DirectHost) -> Codegen:
    return Codegen(host)


@pytest.fixture(scope="module")
def info(cg: Codegen) -> TargetInfo:
    status, got = cg.target_info(0)
    assert status == OK and got is not None, cg.h.last_error()
    return got


def axpb_source(info: TargetInfo) -> str:
    fp64 = bool(info.flags & FLOAT64)
    return AXPB.format(pragma="#pragma OPENCL EXTENSION cl_khr_fp64 : enable" if fp64 else "",
                       real="double" if fp64 else "float")


def compile_ok(cg: Codegen, source: str, options: str | None = "") -> object:
    status, module, log = cg.compile(0, DIALECT, source, options)
    assert status == OK, (cg.h.last_error(), log)
    assert not is_sentinel(module) and module != NULL
    return module


def function(cg: Codegen, module: object, name: str) -> object:
    status, fn = cg.get_function(module, name)
    assert status == OK, cg.h.last_error()
    return fn


def run_fill(cg: Codegen, info: TargetInfo, fn: object, n: int, pad: int, stream=NULL,
             base: int = (1 << 40) + 7, f: float = 1.5) -> np.ndarray:
    """Launches the fill kernel into a buffer at byte offset `pad`; returns the whole buffer."""
    h = cg.h
    total = pad + 8 * n + 16
    buf = h.alloc(total)
    try:
        h.h2d(buf, np.full(total, 0xAB, np.uint8))
        grid, group = fill_shape(info, n)
        status = cg.launch(0, fn, grid, group, [BufferArg(buf, pad), n, base, f], stream=stream)
        assert status == OK, h.last_error()
        if stream != NULL:
            h.sync_stream(stream)
        h.sync_device()
        return np.frombuffer(h.d2h(buf, total), np.uint8)
    finally:
        h.free(buf)


def check_fill(raw: np.ndarray, n: int, pad: int, base: int = (1 << 40) + 7,
               f: float = 1.5) -> None:
    assert np.all(raw[:pad] == 0xAB) and np.all(raw[pad + 8 * n:] == 0xAB)
    np.testing.assert_array_equal(raw[pad:pad + 8 * n].view(np.int64), fill_expected(n, base, f))


def test_target_info_describes_the_device(host: DirectHost, info: TargetInfo) -> None:
    props = host.properties(0)
    assert info.dialects == [DIALECT] and info.dialects_terminated
    assert info.flags & SIMT
    assert info.architecture and ffi.string(props.name).decode() in info.architecture
    assert info.max_group_size >= 1 and info.simd_width >= 1 and info.compute_units >= 1
    assert info.preferred_vector_width >= 1 and info.local_memory_bytes > 0
    assert info.flags & SERIALIZE  # PoCL's binaries load back


def test_fill_with_offset_int64_and_float64(cg: Codegen, info: TargetInfo) -> None:
    module = compile_ok(cg, fill_source(DIALECT, info))
    try:
        fn = function(cg, module, FILL_NAME)
        for n, pad in ((1, 8), (100, 24), (1000, 4096 + 8)):
            check_fill(run_fill(cg, info, fn, n, pad), n, pad)
        check_fill(run_fill(cg, info, fn, 77, 16, base=-5, f=-2.5), 77, 16, base=-5, f=-2.5)
    finally:
        assert cg.unload(module) == OK


def test_two_buffers_2d_grid_and_a_stream(cg: Codegen, info: TargetInfo) -> None:
    h = cg.h
    rows, cols, group = 5, 37, 16
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    y = np.zeros((rows, cols), np.float32)
    xbuf, ybuf = h.alloc(x.nbytes + 64), h.alloc(y.nbytes + 128)
    module = compile_ok(cg, axpb_source(info))
    stream = h.create_stream()
    try:
        h.h2d(xbuf, x, offset=64)
        h.h2d(ybuf, y, offset=128)
        fn = function(cg, module, "axpb")
        grid = ((cols + group - 1) // group, rows, 1)
        args = [BufferArg(xbuf, 64), BufferArg(ybuf, 128), cols, 2.0, 0.25]
        assert cg.launch(0, fn, grid, (group, 1, 1), args, stream=stream) == OK
        h.sync_stream(stream)
        got = h.read(ybuf, np.dtype(np.float32), (rows, cols), offset=128)
        want = 2.0 * x + 0.25 + np.arange(rows, dtype=np.float32)[:, None]
        np.testing.assert_allclose(got, want, rtol=1e-6)
    finally:
        h.destroy_stream(stream)
        assert cg.unload(module) == OK
        h.free(xbuf)
        h.free(ybuf)


def test_compile_error_writes_the_log_and_leaves_out_alone(cg: Codegen) -> None:
    status, module, log = cg.compile(0, DIALECT, broken_source(DIALECT))
    assert status == INVALID_ARGUMENT and is_sentinel(module)
    assert log and "hwcheck_undeclared_name" in log
    assert "hwcheck_undeclared_name" in cg.h.last_error()
    status, module, log = cg.compile(0, DIALECT, broken_source(DIALECT), log_capacity=16)
    assert status == INVALID_ARGUMENT and log is not None and len(log) == 15  # truncated
    assert cg.last_log_raw[16:] == b"\xab" * (len(cg.last_log_raw) - 16)


def test_refusals(cg: Codegen, info: TargetInfo) -> None:
    status, module, log = cg.compile(0, "c99", "void f(void) {}")
    assert status == NOT_SUPPORTED and is_sentinel(module) and log and DIALECT in log
    status, _, _ = cg.compile(7, DIALECT, fill_source(DIALECT, info))
    assert status == INVALID_ARGUMENT
    module = compile_ok(cg, fill_source(DIALECT, info))
    h = cg.h
    buf = h.alloc(64)
    try:
        status, fn = cg.get_function(module, "no_such_kernel")
        assert status == NOT_FOUND and is_sentinel(fn) and "no_such_kernel" in h.last_error()
        fn = function(cg, module, FILL_NAME)
        assert function(cg, module, FILL_NAME) == fn  # one function per name
        good = [BufferArg(buf, 0), 8, 0, 0.0]
        assert cg.launch(0, fn, (0, 1, 1), (1, 1, 1), good) == INVALID_ARGUMENT
        assert cg.launch(0, fn, (1, 1, 1), (1, 0, 1), good) == INVALID_ARGUMENT
        too_big = (info.max_group_size + 1, 1, 1)
        assert cg.launch(0, fn, (1, 1, 1), too_big, good) == INVALID_ARGUMENT
        assert cg.launch(0, fn, (1, 1, 1), (1, 1, 1), good[:3]) == INVALID_ARGUMENT
        assert "parameters" in h.last_error()
        assert cg.launch(0, fn, (1, 1, 1), (1, 1, 1), [BufferArg(buf, 65), 8, 0, 0.0]) \
            == INVALID_ARGUMENT  # an offset past the buffer's end
        assert cg.launch(0, fn, (1, 1, 1), (1, 1, 1), [], null_launch=True) == INVALID_ARGUMENT
    finally:
        h.free(buf)
        assert cg.unload(module) == OK
    assert cg.unload(module) == INVALID_ARGUMENT  # no longer live


def test_options_are_translated(cg: Codegen, info: TargetInfo) -> None:
    source = fill_source(DIALECT, info).replace("3 * i", "HWC_K * i")
    for options in ("-DHWC_K=3 -O3", "-O0  -DHWC_K=3", "-DHWC_K=3 -cl-mad-enable"):
        module = compile_ok(cg, source, options)
        try:
            check_fill(run_fill(cg, info, function(cg, module, FILL_NAME), 50, 8), 50, 8)
        finally:
            assert cg.unload(module) == OK
    status, _, log = cg.compile(0, DIALECT, source, None)  # HWC_K undefined
    assert status == INVALID_ARGUMENT and "HWC_K" in log


def test_same_source_is_built_once_per_process(host: DirectHost, cg: Codegen,
                                               info: TargetInfo) -> None:
    # a source no process built before: the on-disk binary cache misses too
    unique = f"/* {time.time_ns()} */\n" + fill_source(DIALECT, info)

    def compiled() -> int:
        return sum("opencl: compiled program" in m for _, m in host.logs)

    before = compiled()
    t0 = time.perf_counter()
    first = compile_ok(cg, unique)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    second = compile_ok(cg, unique)
    warm = time.perf_counter() - t0
    assert compiled() == before + 1  # one clBuildProgram from source
    assert warm < cold / 5, (cold, warm)
    assert cg.unload(first) == OK  # the second module's program stays alive
    check_fill(run_fill(cg, info, function(cg, second, FILL_NAME), 40, 8), 40, 8)
    assert cg.unload(second) == OK
    third = compile_ok(cg, unique)  # still cached after every module is gone
    assert compiled() == before + 1
    assert cg.unload(third) == OK


def test_serialize_round_trip(cg: Codegen, info: TargetInfo) -> None:
    module = compile_ok(cg, fill_source(DIALECT, info))
    try:
        status, data = cg.serialize(module)
        assert status == OK and data[:8] == b"HWPOCG01"
        assert cg.serialize_into(module, len(data) - 1) == INVALID_ARGUMENT
    finally:
        assert cg.unload(module) == OK
    status, back = cg.deserialize(0, DIALECT, data)
    assert status == OK, cg.h.last_error()
    try:
        check_fill(run_fill(cg, info, function(cg, back, FILL_NAME), 64, 32), 64, 32)
        status, again = cg.serialize(back)  # a deserialized module serializes too
        assert status == OK and len(again) > 32
    finally:
        assert cg.unload(back) == OK
    corrupt = bytearray(data)
    corrupt[len(corrupt) // 2] ^= 0xFF
    for bad in (bytes(corrupt), data[:-1], data[:16], b"x" * 100):
        status, module = cg.deserialize(0, DIALECT, bad)
        assert status == INVALID_ARGUMENT and is_sentinel(module)
    assert cg.deserialize(0, "cuda-c++17", data)[0] == NOT_SUPPORTED


def test_concurrent_launches_of_one_function(cg: Codegen, info: TargetInfo) -> None:
    h = cg.h
    module = compile_ok(cg, fill_source(DIALECT, info))
    fn = function(cg, module, FILL_NAME)
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            stream = h.create_stream()
            try:
                for i in range(10):
                    n, base = 64 + k, 1000 * k + i
                    check_fill(run_fill(cg, info, fn, n, 8 * (k + 1), stream, base=base),
                               n, 8 * (k + 1), base=base)
            finally:
                h.destroy_stream(stream)
        except BaseException as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cg.unload(module) == OK
    assert not errors, errors[0]
