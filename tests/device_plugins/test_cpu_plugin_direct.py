"""The reference CPU plugin (device_plugins/cpu), driven directly through its C ABI with cffi:
init and configuration, memory, copies, every kernel x dtype against numpy, streams and events."""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import subprocess
import threading

import numpy as np
import pytest
from plugin_build import build_cpu_plugin

from hwport.conformance.direct_host import (
    DEVICE_ERROR,
    DTYPE_CODE,
    DTYPE_NAMES,
    INVALID_ARGUMENT,
    NOT_READY,
    NULL,
    OK,
    OUT_OF_MEMORY,
    VERSION_MISMATCH,
    DeviceArray,
    View,
    ffi,
    np_dtype,
)

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "uint8", "int16", "int32", "int64")
BIG = 1 << 22  # elements of a "large" kernel: milliseconds of work, never run inline

assert DEVICE_ERROR == 6  # (imported for completeness of the status table)


def dtype_or_skip(name: str) -> np.dtype:
    if name == "bfloat16":
        pytest.importorskip("ml_dtypes")
    return np_dtype(name)


def random_values(name: str, shape, rng: np.random.Generator) -> np.ndarray:
    dt = dtype_or_skip(name)
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if name in INTS:
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    v = rng.standard_normal(size=shape) * 8
    return v.astype(dt)


def assert_same(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
    else:  # floats (bfloat16 through float32, exactly); NaN == NaN
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(actual.astype(np.float64), expected.astype(np.float64))


def f64_to_bf16_exact(x: np.ndarray) -> np.ndarray:
    """float64 -> bfloat16 rounded once (to nearest even). ml_dtypes goes through float32 and
    rounds twice; round-to-odd into float32 first makes the second rounding exact."""
    import ml_dtypes

    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        inexact = (f.astype(np.float64) != x) & np.isfinite(x)
        too_far = inexact & (np.abs(f.astype(np.float64)) > np.abs(x))
        f = np.where(too_far, np.nextafter(f, np.float32(0)), f)
        bits = f.view(np.uint32) | np.where(inexact, np.uint32(1), np.uint32(0))
    return bits.view(np.float32).astype(ml_dtypes.bfloat16)


def run_kernel(h, op, dtype_name, inputs, out_shape, out_dtype, attrs=None, stream=NULL,
               device=0, pad=0):
    """Runs `op` on (DeviceArray, numpy view) inputs into a fresh output; returns the output."""
    out = DeviceArray.empty(h, out_shape, out_dtype, device=device, pad=pad)
    views = [d.view(v) for d, v in inputs]
    st = h.call_kernel(op, DTYPE_CODE[dtype_name], views, [out.view()], attrs=attrs,
                       stream=stream, device=device)
    h.check(st, op)
    if stream != NULL:
        h.sync_stream(stream, device)
    result = out.read()
    out.free()
    return result


# ---- build -----------------------------------------------------------------------------------

# -O2 adds little to -O0 and -O3 (the warnings that need the optimizer show at -O3)
@pytest.mark.parametrize("opt", ["-O0", pytest.param("-O2", marks=pytest.mark.slow), "-O3"])
def test_plugin_compiles_warning_free(tmp_path, opt):
    if not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    build_cpu_plugin(tmp_path, ("-Werror", opt))


def test_exports_only_the_init_symbol(cpu_plugin_so):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    out = subprocess.run([nm, "-D", "--defined-only", str(cpu_plugin_so)], check=True,
                         capture_output=True, text=True).stdout
    symbols = {line.split()[-1] for line in out.splitlines() if line.split()[1:2] == ["T"]}
    assert symbols == {"hwport_plugin_init"}


# ---- init and configuration ----------------------------------------------------------------

def test_init_returns_the_api(cpu):
    api = cpu.api
    assert api.struct_size == ffi.sizeof("HWP_PluginApi")
    assert (api.abi_major, api.abi_minor) == (1, 2)
    assert ffi.string(api.device_type) == b"cpu"
    assert ffi.string(api.plugin_version) == b"0.1.0"
    assert api.device != NULL and api.memory != NULL and api.stream != NULL
    assert api.get_last_error != NULL and api.shutdown != NULL
    assert api.ccl == NULL
    # the c99 codegen target (ABI 1.2): every function through unload, and serialization
    cg = api.codegen
    assert cg != NULL and cg.struct_size == ffi.sizeof("HWP_CodegenTable")
    assert NULL not in (cg.get_target_info, cg.compile, cg.get_function, cg.launch, cg.unload,
                        cg.serialize, cg.deserialize)
    assert api.profiler.struct_size == ffi.sizeof("HWP_ProfilerTable")
    assert api.profiler.start != NULL and api.profiler.stop != NULL
    assert api.device.struct_size == ffi.sizeof("HWP_DeviceTable")
    assert api.memory.struct_size == ffi.sizeof("HWP_MemoryTable")
    assert api.stream.struct_size == ffi.sizeof("HWP_StreamTable")
    # A host-memory device exchanges through host_address as kDLCPU, and its streams are worker
    # threads with no handle a foreign framework could use: the 1.1 DLPack functions are absent.
    absent = {"device_address", "wrap_device_memory", "release_device_buffer", "native_stream",
              "native_stream_wait"}
    for table, ctype in ((api.device, "HWP_DeviceTable"), (api.memory, "HWP_MemoryTable"),
                         (api.stream, "HWP_StreamTable")):
        for name, _ in ffi.typeof(ctype).fields[1:]:
            assert (getattr(table, name) == NULL) == (name in absent), f"{ctype}.{name}"


def test_registers_every_primitive_for_every_listed_dtype(cpu):
    """The reference plugin runs every primitive of ops.yaml natively, for exactly the dtypes
    the op lists; anything else it registers is a fused kernel for a composite."""
    from phi_ops.schema import load_ops

    ops = load_ops()
    codes = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16",
             "float32", "float64"]
    expected = {(name, codes.index(d)) for name, op in ops.items() if op.is_primitive
                for d in op.kernel_dtypes}
    registered = set(cpu.registrations)
    assert expected - registered == set(), "primitives without a CPU kernel"
    for op_name, dtype in registered - expected:
        assert op_name in ops and not ops[op_name].is_primitive, (op_name, dtype)
        assert codes[dtype] in ops[op_name].dtypes, (op_name, codes[dtype])
    for (op_name, _), reg in cpu.registrations.items():  # HWP_KERNEL_ACCEPTS_STRIDED, but the
        # fused kernels that take contiguous operands (the host copies views for them)
        assert reg.flags == (0 if op_name in ("linear", "adam_update") else 1), op_name


def test_fresh_thread_has_empty_last_error(cpu):
    seen = []
    t = threading.Thread(target=lambda: seen.append(cpu.last_error()))
    cpu.dev.get_device_count(NULL)  # an error on this thread only
    assert "get_device_count" in cpu.last_error()
    t.start()
    t.join()
    assert seen == [""]


def test_wrong_abi_major_is_rejected(load_cpu):
    h = load_cpu(abi_major=2)
    assert h.init_status == VERSION_MISMATCH
    assert h.api is None and not h.registrations


@pytest.mark.parametrize("value, expected, warns", [
    (None, 1, False), ("3", 3, False), ("1", 1, False), ("0", 0, False),
    ("abc", 1, True), ("-2", 1, True), ("1000", 1, True), ("2x", 1, True),
])
def test_device_count_honours_env(load_cpu, value, expected, warns):
    h = load_cpu(HWPORT_CPU_DEVICES=value)
    assert h.device_count() == expected
    warnings = [m for lvl, m in h.logs if lvl == 2 and "HWPORT_CPU_DEVICES" in m]
    assert bool(warnings) == warns
    # every device works, the one past the end does not
    for d in range(expected):
        h.free(h.alloc(10, device=d), device=d)
    out = ffi.new("HWP_Buffer *")
    h.expect_error(h.mem.allocate(expected, 10, out), INVALID_ARGUMENT, "allocate", "device")


def test_properties(cpu):
    p = cpu.properties(1)
    assert ffi.string(p.name) == b"hwport virtual CPU 1"
    assert ffi.string(p.vendor) != b""
    assert ffi.string(p.driver_version) == b"hwport-cpu 0.1.0"
    assert p.total_memory == cpu.stats(1)["bytes_limit"] > 0
    assert p.memory_alignment == 64
    assert p.compute_units == os.sysconf("SC_NPROCESSORS_ONLN")
    assert p.max_work_group_size == 1
    assert p.flags == 1  # HWP_DEVICE_HOST_MEMORY


def test_properties_honour_struct_size(cpu):
    props = ffi.new("HWP_DeviceProperties *")
    ffi.memmove(props, b"\xab" * ffi.sizeof(props[0]), ffi.sizeof(props[0]))
    props.struct_size = ffi.offsetof("HWP_DeviceProperties", "vendor")  # an older host: name only
    cpu.check(cpu.dev.get_properties(0, props), "get_properties")
    assert ffi.string(props.name) == b"hwport virtual CPU 0"
    assert bytes(ffi.buffer(props.vendor)) == b"\xab" * 128
    assert props.flags == 0xABABABAB
    # A 1.0 host: the 1.1 fields past its struct are never written.
    ffi.memmove(props, b"\xab" * ffi.sizeof(props[0]), ffi.sizeof(props[0]))
    props.struct_size = ffi.offsetof("HWP_DeviceProperties", "max_allocation")
    cpu.check(cpu.dev.get_properties(0, props), "get_properties")
    assert props.flags == 1 and props.max_work_group_size == 1
    assert props.max_allocation == 0xABABABABABABABAB and props.dlpack_device_id == -0x54545455


def _compiler_simd_width() -> int:
    """float32 lanes of the plugin's vector target per the compiler's own predefined macros,
    with the compiler and CFLAGS the plugin is built with (no -march flags by default)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to ask for its target macros")
    proc = subprocess.run([cc, *shlex.split(os.environ.get("CFLAGS", "")), "-dM", "-E", "-x",
                           "c", os.devnull], capture_output=True, text=True, check=True)
    macros = {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("#define")}
    for macro, lanes in (("__AVX512F__", 16), ("__AVX__", 8), ("__SSE2__", 4),
                         ("__ARM_NEON", 4)):
        if macro in macros:
            return lanes
    return 1


def test_abi_1_1_properties(cpu, load_cpu):
    p = cpu.properties(0)
    assert ffi.string(p.architecture).decode() == platform.machine()
    assert (p.architecture_major, p.architecture_minor) == (0, 0)
    assert p.simd_width == _compiler_simd_width()
    assert p.max_threads_per_compute_unit == 1
    assert p.max_allocation == p.total_memory == cpu.stats(0)["bytes_limit"]
    assert p.flags == cpu.lib.HWP_DEVICE_HOST_MEMORY  # float16/bfloat16 computed in float
    assert (p.dlpack_device_type, p.dlpack_device_id) == (cpu.lib.HWP_DLPACK_NONE, 0)
    # With a memory limit, one allocation may take all of it and no more.
    h = load_cpu(HWPORT_CPU_MEMORY_LIMIT="3M")
    assert h.properties().max_allocation == 3 << 20
    out = ffi.new("HWP_Buffer *")
    h.expect_error(h.mem.allocate(0, (3 << 20) + 1, out), OUT_OF_MEMORY, "allocate")
    h.free(h.alloc(3 << 20))


@pytest.mark.parametrize("value, expected", [
    ("1048576", 1 << 20), ("64M", 64 << 20), ("2G", 2 << 30), ("512k", 512 << 10),
    ("8MiB", 8 << 20),
])
def test_memory_limit_env(load_cpu, value, expected):
    h = load_cpu(HWPORT_CPU_MEMORY_LIMIT=value)
    assert h.properties().total_memory == expected
    assert h.stats()["bytes_limit"] == expected
    assert not h.logs


def test_invalid_memory_limit_warns_and_uses_physical_memory(load_cpu):
    h = load_cpu(HWPORT_CPU_MEMORY_LIMIT="banana")
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert h.properties().total_memory == physical
    assert any("HWPORT_CPU_MEMORY_LIMIT" in m for _, m in h.logs)


# ---- memory --------------------------------------------------------------------------------

def test_allocate_free_stats_return_to_baseline(cpu):
    base = cpu.stats(0)
    other = cpu.stats(1)
    sizes = [1, 63, 64, 65, 4096, 1 << 20, 3 * (1 << 20) + 7]
    bufs = [cpu.alloc(n) for n in sizes]
    for b in bufs:
        assert int(ffi.cast("uintptr_t", b)) % 64 == 0
    s = cpu.stats(0)
    assert s["bytes_in_use"] == base["bytes_in_use"] + sum(sizes)
    assert s["peak_bytes_in_use"] >= s["bytes_in_use"]
    assert s["num_allocs"] == base["num_allocs"] + len(sizes)
    for b in bufs:
        cpu.free(b)
    s = cpu.stats(0)
    assert s["bytes_in_use"] == base["bytes_in_use"]
    assert s["num_frees"] == base["num_frees"] + len(sizes)
    assert s["peak_bytes_in_use"] >= base["bytes_in_use"] + sum(sizes)
    assert cpu.stats(1) == other  # devices account separately


def test_memory_stats_honour_struct_size(cpu):
    s = ffi.new("HWP_MemoryStats *")
    s.struct_size = ffi.offsetof("HWP_MemoryStats", "peak_bytes_in_use")
    s.peak_bytes_in_use = s.bytes_limit = s.num_allocs = s.num_frees = 12345
    s.bytes_in_use = 777
    cpu.check(cpu.mem.get_memory_stats(0, s), "get_memory_stats")
    assert s.bytes_in_use == cpu.stats(0)["bytes_in_use"]
    assert (s.peak_bytes_in_use, s.bytes_limit, s.num_allocs, s.num_frees) == (12345,) * 4


def test_out_of_memory_above_the_limit(load_cpu):
    h = load_cpu(HWPORT_CPU_MEMORY_LIMIT="1M")
    a = h.alloc(768 << 10)
    before = h.stats()
    out = ffi.new("HWP_Buffer *", ffi.cast("HWP_Buffer", 0x1234))
    msg = h.expect_error(h.mem.allocate(0, 512 << 10, out), OUT_OF_MEMORY, "allocate")
    for number in ("524288", "786432", "1048576"):  # requested, in use, limit
        assert number in msg
    assert out[0] == ffi.cast("HWP_Buffer", 0x1234)  # untouched
    assert h.stats() == before
    h.free(a)
    b = h.alloc(1 << 20)  # exactly the limit fits
    h.expect_error(h.mem.allocate(0, 1, out), OUT_OF_MEMORY)
    h.free(b)
    s = h.stats()
    assert s["bytes_in_use"] == 0 and s["peak_bytes_in_use"] == 1 << 20
    assert s["num_allocs"] == 2 and s["num_frees"] == 2
    h.expect_error(h.mem.allocate(0, 1 << 62, out), OUT_OF_MEMORY, "limit")


def test_invalid_arguments(cpu):
    sentinel = ffi.cast("HWP_Buffer", 0x1234)
    out = ffi.new("HWP_Buffer *", sentinel)
    for device in (-1, 2, 1 << 30):
        cpu.expect_error(cpu.mem.allocate(device, 16, out), INVALID_ARGUMENT, "allocate",
                         str(device))
    cpu.expect_error(cpu.mem.allocate(0, 16, NULL), INVALID_ARGUMENT, "allocate", "out")
    cpu.expect_error(cpu.mem.allocate(0, 0, out), INVALID_ARGUMENT, "allocate", "nbytes")
    assert out[0] == sentinel

    base = cpu.stats(0)
    b = cpu.alloc(100)
    cpu.expect_error(cpu.mem.deallocate(1, b), INVALID_ARGUMENT, "deallocate", "device 0")
    cpu.free(b)
    cpu.expect_error(cpu.mem.deallocate(0, b), INVALID_ARGUMENT, "deallocate")  # double free
    big = cpu.alloc(8 << 20)  # mmap-backed: a second free must not touch the unmapped header
    cpu.free(big)
    cpu.expect_error(cpu.mem.deallocate(0, big), INVALID_ARGUMENT, "deallocate")
    host = np.zeros(256, dtype=np.uint8)
    foreign = ffi.cast("HWP_Buffer", host.ctypes.data + 64)
    cpu.expect_error(cpu.mem.deallocate(0, foreign), INVALID_ARGUMENT, "deallocate")
    assert cpu.mem.deallocate(0, NULL) == OK
    assert cpu.stats(0)["bytes_in_use"] == base["bytes_in_use"]
    assert cpu.stats(0)["num_frees"] == base["num_frees"] + 2

    cpu.expect_error(cpu.dev.get_device_count(NULL), INVALID_ARGUMENT, "get_device_count")
    cpu.expect_error(cpu.dev.get_properties(0, NULL), INVALID_ARGUMENT, "get_properties")
    cpu.expect_error(cpu.dev.get_properties(5, NULL), INVALID_ARGUMENT, "get_properties")
    cpu.expect_error(cpu.dev.synchronize_device(2), INVALID_ARGUMENT, "synchronize_device")
    cpu.expect_error(cpu.mem.get_memory_stats(0, NULL), INVALID_ARGUMENT, "get_memory_stats")
    src = ffi.new("char[8]")
    cpu.expect_error(cpu.mem.copy_h2d(0, NULL, 0, src, 8), INVALID_ARGUMENT, "copy_h2d", "dst")
    cpu.expect_error(cpu.mem.copy_d2h(0, src, NULL, 0, 8), INVALID_ARGUMENT, "copy_d2h", "src")
    cpu.expect_error(cpu.mem.copy_d2d(0, NULL, 0, NULL, 0, 8), INVALID_ARGUMENT, "copy_d2d")
    cpu.expect_error(cpu.mem.memset_async(0, NULL, NULL, 0, 0, 8), INVALID_ARGUMENT,
                     "memset_async")
    cpu.expect_error(cpu.mem.host_address(0, NULL, 0, ffi.new("void **")), INVALID_ARGUMENT,
                     "host_address")
    cpu.expect_error(cpu.streams.create_stream(0, NULL), INVALID_ARGUMENT, "create_stream")
    cpu.expect_error(cpu.streams.create_event(3, ffi.new("HWP_Event *")), INVALID_ARGUMENT,
                     "create_event")
    assert cpu.streams.destroy_stream(0, NULL) == OK
    assert cpu.streams.destroy_event(0, NULL) == OK
    bogus = ffi.new("char[256]")  # zeroed memory is no stream or event
    cpu.expect_error(cpu.streams.synchronize_stream(0, ffi.cast("HWP_Stream", bogus)),
                     INVALID_ARGUMENT, "synchronize_stream")
    cpu.expect_error(cpu.streams.query_event(0, ffi.cast("HWP_Event", bogus)),
                     INVALID_ARGUMENT, "query_event")
    # zero-byte copies need no buffers
    assert cpu.mem.copy_h2d(0, NULL, 0, NULL, 0) == OK


def test_stream_and_event_device_mismatch(cpu):
    s1 = cpu.create_stream(1)
    e0 = cpu.create_event(0)
    try:
        cpu.expect_error(cpu.streams.synchronize_stream(0, s1), INVALID_ARGUMENT,
                         "synchronize_stream", "device 1")
        cpu.expect_error(cpu.streams.record_event(1, s1, e0), INVALID_ARGUMENT, "record_event")
        # waiting on another device's event is allowed
        assert cpu.streams.stream_wait_event(1, s1, e0) == OK
        cpu.sync_stream(s1, 1)
    finally:
        cpu.destroy_stream(s1, 1)
        assert cpu.streams.destroy_event(0, e0) == OK


def test_host_address_and_wrapped_host_memory(cpu):
    b = cpu.alloc(128)
    out = ffi.new("void **")
    cpu.check(cpu.mem.host_address(0, b, 40, out), "host_address")
    assert int(ffi.cast("uintptr_t", out[0])) == int(ffi.cast("uintptr_t", b)) + 40
    cpu.free(b)

    base = cpu.stats(0)
    a = np.arange(10, dtype=np.int32)
    wrapped = ffi.new("HWP_Buffer *")
    cpu.check(cpu.mem.wrap_host_memory(0, ffi.cast("void *", a.ctypes.data), a.nbytes, wrapped),
              "wrap_host_memory")
    assert int(ffi.cast("uintptr_t", wrapped[0])) == a.ctypes.data
    assert cpu.stats(0) == base
    view = View(wrapped[0], 0, DTYPE_CODE["int32"], (10,), (1,))
    out_arr = DeviceArray.empty(cpu, (10,), np.int32)
    view2 = View(wrapped[0], 0, DTYPE_CODE["int32"], (10,), (1,))
    cpu.check(cpu.call_kernel("add", DTYPE_CODE["int32"], [view, view2], [out_arr.view()]), "add")
    assert_same(out_arr.read(), a * 2)
    out_arr.free()
    cpu.expect_error(cpu.mem.deallocate(0, wrapped[0]), INVALID_ARGUMENT, "deallocate")
    assert cpu.mem.release_host_buffer(0, wrapped[0]) == OK
    assert cpu.stats(0)["num_frees"] == base["num_frees"] + 1  # only out_arr's


# ---- copies and memset ---------------------------------------------------------------------

@pytest.mark.parametrize("async_stream", [False, True])
def test_copies_with_offsets_and_odd_sizes(cpu, async_stream):
    rng = np.random.default_rng(1)
    stream = cpu.create_stream() if async_stream else NULL
    try:
        for size in (1, 3, 7, 63, 65, 1000, 65537):
            src = rng.integers(0, 256, size=size, dtype=np.uint8)
            a = cpu.alloc(size + 11)
            b = cpu.alloc(size + 5)
            cpu.check(cpu.mem.memset_async(0, stream, a, 0, 0xEE, size + 11), "memset")
            if async_stream:
                src_ptr = ffi.from_buffer(src)
                cpu.check(cpu.mem.copy_h2d_async(0, stream, a, 3, src_ptr, size), "h2d")
                cpu.check(cpu.mem.copy_d2d_async(0, stream, b, 5, a, 3, size), "d2d")
                dst = bytearray(size + 2)
                dst_ptr = ffi.from_buffer(dst)
                cpu.check(cpu.mem.copy_d2h_async(0, stream, dst_ptr, b, 5, size), "d2h")
                cpu.sync_stream(stream)
                got = bytes(dst[:size])
                assert dst[size:] == b"\0\0"
            else:
                cpu.h2d(a, src, offset=3)
                cpu.check(cpu.mem.copy_d2d(0, b, 5, a, 3, size), "copy_d2d")
                got = cpu.d2h(b, size, offset=5)
            assert got == src.tobytes()
            whole = cpu.d2h(a, size + 11)
            assert whole[:3] == b"\xee" * 3 and whole[3 + size:] == b"\xee" * 8
            cpu.free(a)
            cpu.free(b)
    finally:
        if async_stream:
            cpu.destroy_stream(stream)


def test_copy_d2d_overlapping(cpu):
    a = cpu.alloc(100)
    cpu.h2d(a, np.arange(100, dtype=np.uint8))
    cpu.check(cpu.mem.copy_d2d(0, a, 10, a, 0, 50), "copy_d2d")
    got = np.frombuffer(cpu.d2h(a, 100), dtype=np.uint8)
    expected = np.arange(100, dtype=np.uint8)
    expected[10:60] = np.arange(50)
    np.testing.assert_array_equal(got, expected)
    cpu.free(a)


@pytest.mark.parametrize("async_stream", [False, True])
def test_memset(cpu, async_stream):
    stream = cpu.create_stream() if async_stream else NULL
    a = cpu.alloc(1000)
    cpu.h2d(a, np.zeros(1000, dtype=np.uint8))
    for offset, n, value in ((0, 1, 1), (7, 13, 0xFF), (100, 899, 0x5A), (999, 1, 9)):
        cpu.check(cpu.mem.memset_async(0, stream, a, offset, value, n), "memset_async")
    expected = np.zeros(1000, dtype=np.uint8)
    for offset, n, value in ((0, 1, 1), (7, 13, 0xFF), (100, 899, 0x5A), (999, 1, 9)):
        expected[offset:offset + n] = value
    np.testing.assert_array_equal(np.frombuffer(cpu.d2h(a, 1000), dtype=np.uint8), expected)
    cpu.free(a)
    if async_stream:
        cpu.destroy_stream(stream)


# ---- kernels -------------------------------------------------------------------------------

def binary_cases(rng):
    """(name, a_base_shape, a_view(base), b_base_shape, b_view(base), out_shape)"""
    return [
        ("contiguous", (3, 5), lambda x: x, (3, 5), lambda x: x, (3, 5)),
        ("1-d long", (1000,), lambda x: x, (1000,), lambda x: x, (1000,)),
        ("row broadcast", (4, 6), lambda x: x, (6,), lambda x: np.broadcast_to(x, (4, 6)), (4, 6)),
        ("column broadcast", (4, 1), lambda x: np.broadcast_to(x, (4, 6)), (4, 6), lambda x: x,
         (4, 6)),
        ("scalar broadcast", (), lambda x: np.broadcast_to(x, (5, 3)), (5, 3), lambda x: x, (5, 3)),
        ("negative strides", (6, 8), lambda x: x[::-1, ::-2], (6, 4), lambda x: x[:, ::-1], (6, 4)),
        ("transposed", (5, 7), lambda x: x.T, (7, 5), lambda x: x, (7, 5)),
        ("0-d", (), lambda x: x, (), lambda x: x, ()),
        ("zero-size", (0, 4), lambda x: x, (0, 4), lambda x: x, (0, 4)),
        ("zero-size inner", (3, 0), lambda x: x, (3, 0), lambda x: x, (3, 0)),
        ("5-d mixed", (2, 3, 1, 4, 5), lambda x: x.transpose(0, 3, 2, 1, 4)[:, ::-1],
         (2, 4, 1, 3, 5), lambda x: x, (2, 4, 1, 3, 5)),
        ("sliced", (10, 12), lambda x: x[2:8:3, 1:11:2], (2, 5), lambda x: x, (2, 5)),
    ]


@pytest.mark.parametrize("op", ["add", "multiply"])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_binary_kernels_match_numpy(cpu, op, name):
    rng = np.random.default_rng(DTYPE_CODE[name] * 7 + len(op))
    dt = dtype_or_skip(name)
    stream = cpu.create_stream()
    try:
        for case, a_shape, a_fn, b_shape, b_fn, out_shape in binary_cases(rng):
            a_host = random_values(name, a_shape, rng)
            b_host = random_values(name, b_shape, rng)
            a_dev, b_dev = DeviceArray(cpu, a_host, pad=8), DeviceArray(cpu, b_host)
            a_view, b_view = a_fn(a_dev.host), b_fn(b_dev.host)
            with np.errstate(over="ignore", invalid="ignore"):
                if name == "bool":
                    expected = (a_view | b_view) if op == "add" else (a_view & b_view)
                else:
                    expected = (a_view + b_view) if op == "add" else (a_view * b_view)
            expected = np.asarray(expected, dtype=dt)
            for s in (NULL, stream):
                got = run_kernel(cpu, op, name, [(a_dev, a_view), (b_dev, b_view)], out_shape, dt,
                                 stream=s, pad=16)
                try:
                    assert_same(got, expected)
                except AssertionError as e:
                    raise AssertionError(f"{op} {name} case {case!r} stream={s}: {e}") from None
            a_dev.free()
            b_dev.free()
    finally:
        cpu.destroy_stream(stream)


def test_binary_input_with_size_one_dim_broadcasts(cpu):
    a = DeviceArray(cpu, np.arange(5, dtype=np.int32))
    b = DeviceArray(cpu, np.arange(15, dtype=np.int32).reshape(3, 5))
    out = DeviceArray.empty(cpu, (3, 5), np.int32)
    a_view = View(a.buffer, 0, DTYPE_CODE["int32"], (1, 5), (5, 1))  # shape 1, stride not 0
    cpu.check(cpu.call_kernel("add", DTYPE_CODE["int32"], [a_view, b.view()], [out.view()]), "add")
    assert_same(out.read(), np.arange(5, dtype=np.int32) + b.host)
    for x in (a, b, out):
        x.free()


def test_integer_overflow_wraps(cpu):
    for name in INTS:
        dt = np.dtype(name)
        info = np.iinfo(dt)
        a = np.array([info.max, info.min, info.max, -1 if info.min else 255], dtype=dt)
        b = np.array([1, -1 if info.min else 1, info.max, info.max], dtype=dt)
        da, db = DeviceArray(cpu, a), DeviceArray(cpu, b)
        with np.errstate(over="ignore"):
            for op, expected in (("add", a + b), ("multiply", a * b)):
                got = run_kernel(cpu, op, name, [(da, da.host), (db, db.host)], a.shape, dt)
                assert_same(got, expected)
        da.free()
        db.free()


def test_sixteen_dims(cpu):
    rng = np.random.default_rng(16)
    shape = (2,) * 16
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal((3,) * 16).astype(np.float32)
    da, db = DeviceArray(cpu, a), DeviceArray(cpu, b)
    bv = db.host[(slice(None, None, -2),) * 16]  # negative strides on every dim
    av = da.host.transpose(tuple(reversed(range(16))))
    got = run_kernel(cpu, "add", "float32", [(da, av), (db, bv)], shape, np.float32)
    assert_same(got, av + bv)
    da.free()
    db.free()


def fill_expected(name: str, value, shape) -> np.ndarray:
    dt = np_dtype(name)
    if name == "bool":
        return np.full(shape, value != 0, dtype=dt)
    if name in INTS:
        if isinstance(value, float):  # like cast: truncate toward zero, saturate
            info = np.iinfo(dt)
            value = 0 if value != value else min(max(int(value), int(info.min)), int(info.max))
        return np.full(shape, np.array(value, dtype=np.int64).astype(dt), dtype=dt)
    if name == "bfloat16":
        return np.full(shape, f64_to_bf16_exact(np.array(float(value))), dtype=dt)
    with np.errstate(over="ignore"):
        return np.full(shape, np.array(float(value)).astype(dt), dtype=dt)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_fill(cpu, name):
    dt = dtype_or_skip(name)
    values = [7, -3, 0, 2.5, -2.5, 1 / 3, True]
    if name == "int64":
        values += [(1 << 62) + 1, -(1 << 63), (1 << 63) - 1]
    if name in FLOATS:
        values += [1e10, -0.0, float("nan"), float("inf"), 65519.0, (1 << 63) - 1, 1e-42]
    if name in ("int8", "uint8", "int16", "int32"):
        values += [300, -129, 70000]  # wrap like numpy's astype from int64
    stream = cpu.create_stream()
    for value in values:
        for shape in ((), (0,), (1,), (7,), (3, 5), (2, 3, 4)):
            for s in (NULL, stream):
                got = run_kernel(cpu, "fill", name, [], shape, dt, attrs={"value": value},
                                 stream=s, pad=8)
                assert_same(got, fill_expected(name, value, shape))
    cpu.destroy_stream(stream)


def test_fill_float_value_into_integers_saturates(cpu):
    for value, expected in ((1e30, 127), (-1e30, -128), (float("nan"), 0), (-0.9, 0)):
        got = run_kernel(cpu, "fill", "int8", [], (3,), np.int8, attrs={"value": value})
        assert_same(got, np.full(3, expected, dtype=np.int8))


def test_fill_without_value_fails(cpu):
    out = DeviceArray.empty(cpu, (4,), np.float32)
    cpu.expect_error(cpu.call_kernel("fill", DTYPE_CODE["float32"], [], [out.view()], attrs={}),
                     INVALID_ARGUMENT, "fill", "value")
    cpu.expect_error(cpu.call_kernel("fill", DTYPE_CODE["int32"], [], [out.view()],
                                     attrs={"value": "seven"}), INVALID_ARGUMENT, "fill")
    out.free()


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_copy(cpu, name):
    rng = np.random.default_rng(DTYPE_CODE[name])
    dt = dtype_or_skip(name)
    stream = cpu.create_stream()
    for _case, a_shape, a_fn, _, _, out_shape in binary_cases(rng):
        host = random_values(name, a_shape, rng)
        d = DeviceArray(cpu, host, pad=24)
        v = a_fn(d.host)
        for s in (NULL, stream):
            got = run_kernel(cpu, "copy", name, [(d, v)], out_shape, dt, stream=s)
            assert_same(got, v.copy(order="C"))
        d.free()
    cpu.destroy_stream(stream)


def cast_source_values(src: str, dst: str, rng) -> np.ndarray:
    """Values whose cast is fully defined by numpy (and ml_dtypes) for this pair."""
    sdt = np_dtype(src)
    n = 257
    if src == "bool":
        return rng.integers(0, 2, n).astype(np.bool_)
    if src in INTS:
        info = np.iinfo(sdt)
        lo, hi = int(info.min), int(info.max)
        if dst == "bfloat16":  # ml_dtypes rounds twice (through float32) above 2**24
            lo, hi = max(lo, -(1 << 24)), min(hi, 1 << 24)
        v = rng.integers(lo, hi, n, endpoint=True, dtype=np.int64)
        v[:4] = [lo, hi, 0, 1 if lo == 0 else -1]
        return v.astype(sdt)
    # floating-point sources
    if dst in INTS:
        info = np.iinfo(np.dtype(dst))
        limit = {"float16": 60000.0, "bfloat16": 1e9, "float32": 1e15, "float64": 1e15}[src]
        lo, hi = max(float(info.min) + 1, -limit), min(float(info.max) - 1, limit)
        if dst == "int8":
            lo, hi = -120.0, 120.0
        if dst == "uint8":
            lo, hi = 0.0, 250.0
        v = rng.uniform(lo, hi, n)
        v[:6] = [0.0, -0.0, 0.9, lo, hi, 2.5]
        if lo < 0:
            v[6:9] = [-0.9, -2.5, -2.7]
        v = v.astype(sdt)
        wide = v.astype(np.float64)
        v[(wide > float(info.max)) | (wide < float(info.min))] = 0  # rounded out of range
        return v
    v = rng.standard_normal(n) * 100
    specials = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-8, -3e-7, 1e-40, 65519.0, 65520.0, 1e5,
                1 + 2**-8 + 2**-40, 1 + 2**-11 + 2**-30, 3.4e38, 1e39, 2.5, -1.5]
    v[: len(specials)] = specials
    with np.errstate(over="ignore"):
        return v.astype(sdt)


def cast_expected(values: np.ndarray, src: str, dst: str) -> np.ndarray:
    ddt = np_dtype(dst)
    with np.errstate(over="ignore", invalid="ignore"):
        if dst == "bfloat16" and src == "float64":
            return f64_to_bf16_exact(values)
        if dst == "bool" and src == "bfloat16":
            return values.astype(np.float32) != 0
        return values.astype(ddt)


@pytest.mark.parametrize("src", DTYPE_NAMES)
def test_cast_all_pairs(cpu, src):
    if src == "bfloat16":
        pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(DTYPE_CODE[src] + 100)
    stream = cpu.create_stream()
    for dst in DTYPE_NAMES:
        ddt = dtype_or_skip(dst)
        values = cast_source_values(src, dst, rng)
        d = DeviceArray(cpu, values, pad=2)
        for view in (d.host, d.host[::-3], np.broadcast_to(d.host[5:6].reshape(()), (2, 3)),
                     d.host[:0], d.host[7:8].reshape(())):
            expected = cast_expected(view.copy(order="C"), src, dst)
            for s in (NULL, stream):
                got = run_kernel(cpu, "cast", src, [(d, view)], view.shape, ddt, stream=s)
                try:
                    assert_same(got, expected)
                except AssertionError as e:
                    wide_got, wide_exp = got.astype(np.float64), expected.astype(np.float64)
                    bad = np.flatnonzero(wide_got.ravel() != wide_exp.ravel())
                    raise AssertionError(f"cast {src}->{dst}: at {bad[:5]} input "
                                         f"{view.copy(order='C').ravel()[bad[:5]]}: {e}") from None
        d.free()
    cpu.destroy_stream(stream)


def test_cast_float_to_int_out_of_range_is_defined(cpu):
    values = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.9, -2.9, 0.5], dtype=np.float64)
    d = DeviceArray(cpu, values)
    expected = {
        "int8": [0, 127, -128, 127, -128, 2, -2, 0],
        "uint8": [0, 255, 0, 255, 0, 2, 0, 0],
        "int32": [0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 2, -2, 0],
        "int64": [0, 2**63 - 1, -(2**63), 2**63 - 1, -(2**63), 2, -2, 0],
        "bool": [True, True, True, True, True, True, True, True],
    }
    for dst, exp in expected.items():
        dt = np_dtype(dst)
        got = run_kernel(cpu, "cast", "float64", [(d, d.host)], values.shape, dt)
        assert_same(got, np.array(exp, dtype=dt))
    d.free()


def test_half_precision_rounding_and_nan(cpu):
    """Every float16 and bfloat16 bit pattern round-trips; float32 -> both rounds to even."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    all_bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for name, ndt in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
        d = DeviceArray(cpu, all_bits.view(ndt))
        wide = run_kernel(cpu, "cast", name, [(d, d.host)], all_bits.shape, np.float32)
        assert_same(wide, d.host.astype(np.float32))
        dw = DeviceArray(cpu, wide)
        back = run_kernel(cpu, "cast", "float32", [(dw, dw.host)], all_bits.shape, np.dtype(ndt))
        finite = np.isfinite(wide)
        np.testing.assert_array_equal(back.view(np.uint16)[finite], all_bits[finite])
        assert np.isnan(back.astype(np.float32)[np.isnan(wide)]).all()
        d.free()
        dw.free()
    rng = np.random.default_rng(5)
    f32 = rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32)
    d = DeviceArray(cpu, f32)
    for ndt in (np.float16, ml_dtypes.bfloat16):
        with np.errstate(over="ignore", invalid="ignore"):
            expected = f32.astype(ndt)
        got = run_kernel(cpu, "cast", "float32", [(d, d.host)], f32.shape, np.dtype(ndt))
        assert_same(got, expected)
    d.free()


def test_kernel_argument_validation(cpu):
    a = DeviceArray(cpu, np.arange(6, dtype=np.float32))
    b = DeviceArray(cpu, np.arange(6, dtype=np.int32))
    out = DeviceArray.empty(cpu, (6,), np.float32)
    f32 = DTYPE_CODE["float32"]
    cpu.expect_error(cpu.call_kernel("add", f32, [a.view()], [out.view()]), INVALID_ARGUMENT,
                     "add", "input")
    cpu.expect_error(cpu.call_kernel("add", f32, [a.view(), b.view()], [out.view()]),
                     INVALID_ARGUMENT, "add", "dtype")
    cpu.expect_error(cpu.call_kernel("copy", f32, [b.view()], [out.view()]), INVALID_ARGUMENT,
                     "copy", "dtype")
    short = View(a.buffer, 0, f32, (4,), (1,))
    cpu.expect_error(cpu.call_kernel("add", f32, [short, a.view()], [out.view()]),
                     INVALID_ARGUMENT, "add", "shape")
    nobuf = View(NULL, 0, f32, (6,), (1,))
    cpu.expect_error(cpu.call_kernel("add", f32, [nobuf, a.view()], [out.view()]),
                     INVALID_ARGUMENT, "add", "buffer")
    rank = View(a.buffer, 0, f32, (2, 3), (3, 1))
    cpu.expect_error(cpu.call_kernel("multiply", f32, [rank, rank], [out.view()]),
                     INVALID_ARGUMENT, "multiply", "ndim")
    bad_dev = cpu.call_kernel("add", f32, [a.view(), a.view()], [out.view()], device=7)
    cpu.expect_error(bad_dev, INVALID_ARGUMENT, "add", "device")
    bogus = ffi.new("char[256]")
    cpu.expect_error(cpu.call_kernel("add", f32, [a.view(), a.view()], [out.view()],
                                     stream=ffi.cast("HWP_Stream", bogus)),
                     INVALID_ARGUMENT, "add", "stream")
    for x in (a, b, out):
        x.free()


# ---- streams and events --------------------------------------------------------------------

@pytest.fixture()
def big(cpu):
    """Two large float32 inputs on device 0 and their sum."""
    rng = np.random.default_rng(42)
    x = DeviceArray(cpu, rng.random(BIG, dtype=np.float32))
    y = DeviceArray(cpu, rng.random(BIG, dtype=np.float32))
    yield x, y, x.host + y.host
    x.free()
    y.free()


def enqueue_add(cpu, x, y, out, stream):
    cpu.check(cpu.call_kernel("add", DTYPE_CODE["float32"], [x.view(), y.view()], [out.view()],
                              stream=stream), "add")


def test_cross_stream_event_ordering(cpu, big):
    x, y, expected = big
    out = DeviceArray.empty(cpu, (BIG,), np.float32)
    res = DeviceArray.empty(cpu, (BIG,), np.float32)
    tail = DeviceArray.empty(cpu, (16,), np.float32)
    a, b = cpu.create_stream(), cpu.create_stream()
    ev = cpu.create_event()
    try:
        for _ in range(8):
            cpu.check(cpu.mem.memset_async(0, a, out.buffer, 0, 0xFF, BIG * 4), "memset")  # NaNs
            enqueue_add(cpu, x, y, out, a)
            cpu.check(cpu.streams.record_event(0, a, ev), "record_event")
            cpu.check(cpu.streams.stream_wait_event(0, b, ev), "stream_wait_event")
            # a big copy and a small one (which would run inline were b idle)
            cpu.check(cpu.call_kernel("copy", DTYPE_CODE["float32"], [out.view()], [res.view()],
                                      stream=b), "copy")
            cpu.check(cpu.call_kernel("copy", DTYPE_CODE["float32"],
                                      [out.view(out.host[-16:])], [tail.view()], stream=b), "copy")
            cpu.sync_stream(b)
            assert_same(res.read(), expected)
            assert_same(tail.read(), expected[-16:])
            assert cpu.streams.query_event(0, ev) == OK
    finally:
        cpu.destroy_stream(a)
        cpu.destroy_stream(b)
        cpu.streams.destroy_event(0, ev)
        for d in (out, res, tail):
            d.free()


def test_work_is_asynchronous(cpu, big):
    x, y, expected = big
    out = DeviceArray.empty(cpu, (BIG,), np.float32)
    s = cpu.create_stream()
    ev = cpu.create_event()
    seen_pending = seen_event_pending = False
    for _ in range(10):
        # several adds: one ends within a millisecond with the pool, and on two cores the
        # caller can be off the CPU that long
        for _ in range(6):
            enqueue_add(cpu, x, y, out, s)
        cpu.check(cpu.streams.record_event(0, s, ev), "record_event")
        seen_pending |= cpu.streams.query_stream(0, s) == NOT_READY
        seen_event_pending |= cpu.streams.query_event(0, ev) == NOT_READY
        cpu.check(cpu.streams.synchronize_event(0, ev), "synchronize_event")
        assert cpu.streams.query_event(0, ev) == OK
        cpu.sync_stream(s)
        assert cpu.streams.query_stream(0, s) == OK
        if seen_pending and seen_event_pending:
            break
    assert seen_pending and seen_event_pending
    assert_same(out.read(), expected)
    cpu.destroy_stream(s)
    cpu.streams.destroy_event(0, ev)
    out.free()


def test_events_never_recorded_and_rerecorded(cpu, big):
    x, y, expected = big
    ev = cpu.create_event()
    assert cpu.streams.query_event(0, ev) == OK  # never recorded: complete
    cpu.check(cpu.streams.synchronize_event(0, ev), "synchronize_event")
    a, b, idle = cpu.create_stream(), cpu.create_stream(), cpu.create_stream()
    assert cpu.streams.stream_wait_event(0, b, ev) == OK
    out = DeviceArray.empty(cpu, (BIG,), np.float32)
    res = DeviceArray.empty(cpu, (BIG,), np.float32)
    enqueue_add(cpu, x, y, out, a)
    cpu.check(cpu.streams.record_event(0, a, ev), "record_event")
    cpu.check(cpu.streams.stream_wait_event(0, b, ev), "stream_wait_event")  # captures a's add
    cpu.check(cpu.streams.record_event(0, idle, ev), "record_event")  # replaces: now complete
    assert cpu.streams.query_event(0, ev) == OK
    cpu.check(cpu.call_kernel("copy", DTYPE_CODE["float32"], [out.view()], [res.view()],
                              stream=b), "copy")
    cpu.sync_stream(b)
    assert_same(res.read(), expected)  # b still waited for what was recorded at wait time
    cpu.check(cpu.streams.destroy_event(0, ev), "destroy_event")
    for s in (a, b, idle):
        cpu.destroy_stream(s)
    out.free()
    res.free()


def test_destroying_an_event_with_pending_waiters(cpu, big):
    x, y, expected = big
    a, b = cpu.create_stream(), cpu.create_stream()
    ev = cpu.create_event()
    out = DeviceArray.empty(cpu, (BIG,), np.float32)
    res = DeviceArray.empty(cpu, (BIG,), np.float32)
    enqueue_add(cpu, x, y, out, a)
    cpu.check(cpu.streams.record_event(0, a, ev), "record_event")
    cpu.check(cpu.streams.stream_wait_event(0, b, ev), "stream_wait_event")
    cpu.check(cpu.streams.destroy_event(0, ev), "destroy_event")
    cpu.check(cpu.call_kernel("copy", DTYPE_CODE["float32"], [out.view()], [res.view()],
                              stream=b), "copy")
    cpu.sync_stream(b)
    assert_same(res.read(), expected)
    cpu.destroy_stream(a)
    cpu.destroy_stream(b)
    out.free()
    res.free()


def test_sync_copies_see_completed_stream_work(cpu, big):
    x, y, expected = big
    s = cpu.create_stream()
    out = DeviceArray.empty(cpu, (BIG,), np.float32)
    for _ in range(3):
        cpu.check(cpu.mem.memset_async(0, s, out.buffer, 0, 0, BIG * 4), "memset")
        enqueue_add(cpu, x, y, out, s)
        got = np.frombuffer(cpu.d2h(out.buffer, BIG * 4), dtype=np.float32)  # no explicit sync
        assert_same(got, expected)
    cpu.destroy_stream(s)
    out.free()


def test_destroy_stream_drains_pending_work(cpu, big):
    x, y, expected = big
    out = DeviceArray.empty(cpu, (BIG,), np.float32)
    s = cpu.create_stream()
    enqueue_add(cpu, x, y, out, s)
    cpu.check(cpu.call_kernel("multiply", DTYPE_CODE["float32"], [out.view(), out.view()],
                              [out.view()], stream=s), "multiply")
    cpu.destroy_stream(s)
    assert_same(out.read(), expected * expected)
    out.free()


def test_synchronize_device_waits_for_every_stream(cpu, big):
    x, y, expected = big
    outs = [DeviceArray.empty(cpu, (BIG,), np.float32) for _ in range(2)]
    streams = [cpu.create_stream() for _ in range(2)]
    for o, s in zip(outs, streams, strict=True):
        enqueue_add(cpu, x, y, o, s)
    cpu.sync_device(0)
    for o, s in zip(outs, streams, strict=True):
        assert cpu.streams.query_stream(0, s) == OK
        assert_same(np.frombuffer(ffi.buffer(ffi.cast("char *", o.buffer), BIG * 4),
                                  dtype=np.float32), expected)  # host memory, no copy
        cpu.destroy_stream(s)
        o.free()


def test_small_work_after_big_work_keeps_order(cpu):
    """Small ops (inline-eligible) interleaved with big ones on one stream see their results."""
    s = cpu.create_stream()
    n = 1 << 20
    big_buf = DeviceArray.empty(cpu, (n,), np.float32)
    acc = DeviceArray(cpu, np.zeros(16, dtype=np.float32))
    expected = np.zeros(16, dtype=np.float32)
    last = 0.0
    for i in range(40):
        if i % 8 == 0:
            last = float(i + 1)
            cpu.check(cpu.call_kernel("fill", DTYPE_CODE["float32"], [], [big_buf.view()],
                                      attrs={"value": last}, stream=s), "fill")
        cpu.check(cpu.call_kernel("add", DTYPE_CODE["float32"],
                                  [acc.view(), big_buf.view(big_buf.host[-16:])], [acc.view()],
                                  stream=s), "add")
        expected += np.float32(last)
    cpu.sync_stream(s)
    assert_same(acc.read(), expected)
    cpu.destroy_stream(s)
    big_buf.free()
    acc.free()


@pytest.mark.parametrize("inline", ["0", "1", "100000000"])
def test_inline_threshold_settings_are_all_correct(load_cpu, inline):
    h = load_cpu(HWPORT_CPU_INLINE_ELEMENTS=inline)
    assert not h.logs
    s = h.create_stream()
    rng = np.random.default_rng(3)
    for n in (1, 10, 5000, 300000):
        a = DeviceArray(h, rng.random(n))
        b = DeviceArray(h, rng.random(n))
        got = run_kernel(h, "add", "float64", [(a, a.host), (b, b.host)], (n,), np.float64,
                         stream=s)
        assert_same(got, a.host + b.host)
        a.free()
        b.free()
    h.destroy_stream(s)
    assert h.stats()["bytes_in_use"] == 0


def test_invalid_inline_threshold_warns(load_cpu):
    h = load_cpu(HWPORT_CPU_INLINE_ELEMENTS="lots")
    assert any("HWPORT_CPU_INLINE_ELEMENTS" in m for _, m in h.logs)


def test_null_stream_is_synchronous(cpu, big):
    x, y, expected = big
    s = cpu.create_stream()
    out = DeviceArray.empty(cpu, (BIG,), np.float32)
    res = DeviceArray.empty(cpu, (BIG,), np.float32)
    enqueue_add(cpu, x, y, out, s)
    # a NULL-stream kernel first waits for the device's streams
    cpu.check(cpu.call_kernel("copy", DTYPE_CODE["float32"], [out.view()], [res.view()]), "copy")
    assert_same(np.frombuffer(ffi.buffer(ffi.cast("char *", res.buffer), BIG * 4),
                              dtype=np.float32), expected)
    cpu.check(cpu.streams.synchronize_stream(0, NULL), "synchronize_stream")
    assert cpu.streams.query_stream(0, NULL) == OK
    cpu.destroy_stream(s)
    out.free()
    res.free()


def test_concurrent_streams_from_many_threads(cpu):
    errors = []

    def worker(seed: int, device: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            s = cpu.create_stream(device)
            for i in range(15):
                n = int(rng.integers(1, 200000))
                a = DeviceArray(cpu, rng.standard_normal(n), device=device)
                b = DeviceArray(cpu, rng.standard_normal(n), device=device)
                out = DeviceArray.empty(cpu, (n,), np.float64, device=device)
                op = "add" if i % 2 else "multiply"
                cpu.check(cpu.call_kernel(op, DTYPE_CODE["float64"], [a.view(), b.view()],
                                          [out.view()], stream=s, device=device), op)
                cpu.sync_stream(s, device)
                expected = a.host + b.host if op == "add" else a.host * b.host
                assert_same(out.read(), expected)
                for d in (a, b, out):
                    d.free()
            cpu.destroy_stream(s, device)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    before = [cpu.stats(d)["bytes_in_use"] for d in (0, 1)]
    threads = [threading.Thread(target=worker, args=(i, i % 2)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert [cpu.stats(d)["bytes_in_use"] for d in (0, 1)] == before


def test_shutdown_synchronizes(cpu, big):
    x, y, _ = big
    s = cpu.create_stream()
    out = DeviceArray.empty(cpu, (BIG,), np.float32)
    enqueue_add(cpu, x, y, out, s)
    cpu.api.shutdown()
    assert cpu.streams.query_stream(0, s) == OK
    cpu.destroy_stream(s)
    out.free()
