"""The OpenCL reference plugin's device runtime (device_plugins/opencl) on whatever OpenCL
implementation is installed (PoCL in CI): discovery and properties, memory and copies, streams
and events, through the public API and directly through the C ABI with cffi. The plugin registers
the generated elementwise kernels (tests/device_plugins/test_opencl_kernels.py); every other op
runs through the runtime's counted CPU fallback.

Skipped, with the reason, when the plugin is not built (no OpenCL headers/ICD loader) or sees no
OpenCL device (no ICD installed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import hwport
import hwport.runtime as rt
from hwport.device import Event, Stream, stream_guard
from tests.conftest import INSTALL_ROOT, exported_functions, run_isolated

PLUGIN_SO = INSTALL_ROOT / "device_plugins" / "opencl" / "libhwport_opencl.so"
P = "custom:opencl"

if not PLUGIN_SO.exists():
    pytest.skip(f"the OpenCL plugin is not built ({PLUGIN_SO} missing: no OpenCL headers/ICD "
                "loader at build time)", allow_module_level=True)


def _opencl_entry() -> dict | None:
    found = [p for p in rt.plugins() if p["device_type"] == "opencl"]
    return found[0] if found else None


_entry = _opencl_entry()
if _entry is None:
    pytest.skip(f"the OpenCL plugin did not load: {rt.plugin_errors()}", allow_module_level=True)
if _entry["device_count"] == 0:
    pytest.skip(f"the OpenCL plugin sees no device: {_entry.get('device_count_note', '')}",
                allow_module_level=True)

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(np.bool_ if name == "bool" else name)


def values(name: str, shape, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np_dtype(name)
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    return (rng.standard_normal(size=shape) * 8).astype(dt)


def same(actual, expected) -> None:
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_array_equal(actual.astype(np.float64), expected.astype(np.float64))


# ---- the plugin loads ------------------------------------------------------------------------

def test_plugin_is_listed_with_devices_and_kernels():
    e = _opencl_entry()
    assert e["device_count"] >= 1
    assert e["num_kernels"] > 0  # the elementwise kernels (test_opencl_kernels.py)
    assert e["has_streams"] is True
    assert "opencl" in hwport.device.get_all_custom_device_type()
    assert not [err for err in rt.plugin_errors() if "opencl" in str(err.get("path", ""))]


def test_runtime_cli_lists_the_plugin():
    proc = subprocess.run([sys.executable, "-m", "hwport.runtime"], capture_output=True,
                          text=True, timeout=120, cwd=INSTALL_ROOT.parent)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^\s*opencl\s+abi 1\.2", proc.stdout, re.M), proc.stdout
    assert "custom:opencl:0" in proc.stdout


def test_exports_only_the_init_symbol():
    assert exported_functions(PLUGIN_SO) == {"hwport_plugin_init"}


# ---- properties match OpenCL's own view ------------------------------------------------------

def _reference_devices() -> list[dict]:
    """Every OpenCL device in enumeration order, from pyopencl, else from `clinfo --raw`."""
    try:
        import pyopencl as cl
    except ImportError:
        cl = None
    if cl is not None:
        return [{"name": d.name.strip(), "vendor": d.vendor.strip(),
                 "driver_version": d.driver_version.strip(),
                 "global_memory": d.global_mem_size, "align_bits": d.mem_base_addr_align,
                 "compute_units": d.max_compute_units,
                 "max_work_group_size": d.max_work_group_size}
                for p in cl.get_platforms() for d in p.get_devices()]
    clinfo = shutil.which("clinfo")
    if clinfo is None:
        pytest.skip("neither pyopencl nor clinfo is available to cross-check the properties")
    out = subprocess.run([clinfo, "--raw"], capture_output=True, text=True, timeout=60).stdout
    keys = {"CL_DEVICE_NAME": "name", "CL_DEVICE_VENDOR": "vendor",
            "CL_DRIVER_VERSION": "driver_version", "CL_DEVICE_GLOBAL_MEM_SIZE": "global_memory",
            "CL_DEVICE_MEM_BASE_ADDR_ALIGN": "align_bits",
            "CL_DEVICE_MAX_COMPUTE_UNITS": "compute_units",
            "CL_DEVICE_MAX_WORK_GROUP_SIZE": "max_work_group_size"}
    devices: dict[str, dict] = {}
    for line in out.splitlines():
        m = re.match(r"^\[([^\]]+)/(\d+)\]\s+(CL_\w+)\s+(.*)$", line)
        if not m or m.group(3) not in keys:
            continue
        dev = devices.setdefault(f"{m.group(1)}/{m.group(2)}", {})
        key, value = keys[m.group(3)], m.group(4).strip()
        dev.setdefault(key, value if key in ("name", "vendor", "driver_version")
                       else int(value.split()[0], 0))
    return list(devices.values())


def test_properties_match_opencl():
    ref = _reference_devices()
    n = _opencl_entry()["device_count"]
    if len(ref) != n:
        pytest.skip(f"HWPORT_OPENCL_DEVICES selects {n} of {len(ref)} devices")
    for i, want in enumerate(ref):
        got = hwport.device.get_device_properties(f"{P}:{i}")
        assert got["host_memory"] is False
        assert got["name"] == want["name"]
        assert got["vendor"] == want["vendor"]
        assert got["driver_version"] == want["driver_version"]
        assert got["total_memory"] == want["global_memory"]
        assert got["memory_alignment"] == want["align_bits"] // 8
        assert got["compute_units"] == want["compute_units"]
        assert got["max_work_group_size"] == want["max_work_group_size"]


# ---- data round trips --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype_with_views(dtype):
    a = values(dtype, (7, 9, 5))
    t = hwport.to_tensor(a, place=P)
    assert str(t.place).startswith(P)
    same(t.numpy(), a)
    same(np.asarray(t), a)
    # views with offsets, and non-contiguous views read back through numpy()
    same(t[3:].numpy(), a[3:])
    same(t[2, 4:].numpy(), a[2, 4:])
    same(t[1:6:2, ::3, 1:].numpy(), a[1:6:2, ::3, 1:])
    same(t.transpose([2, 0, 1]).numpy(), a.transpose(2, 0, 1))
    # an empty tensor and a scalar
    same(hwport.to_tensor(a[:0], place=P).numpy(), a[:0])
    same(hwport.to_tensor(a[0, 0, 0], place=P).numpy(), np.asarray(a[0, 0, 0]))


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float16", "bfloat16", "float32"])
def test_to_between_opencl_and_cpu(dtype):
    a = values(dtype, (33, 17), seed=1)
    o = hwport.to_tensor(a, place=P)
    c = o.to("custom:cpu")
    assert str(c.place).startswith("custom:cpu")
    same(c.numpy(), a)
    back = c.to(P)
    assert str(back.place).startswith(P)
    same(back.numpy(), a)
    # a strided view crosses devices too
    same(o[5:, ::4].to("custom:cpu").numpy(), a[5:, ::4])
    same(c[::-1].to(P).numpy(), a[::-1])


def test_large_round_trip():
    a = np.random.default_rng(2).standard_normal(3_000_001).astype(np.float32)
    t = hwport.to_tensor(a, place=P)
    same(t.numpy(), a)
    same(t[1_000_000:2_000_003].numpy(), a[1_000_000:2_000_003])


# ---- ops run through the counted CPU fallback ------------------------------------------------

def test_ops_are_numpy_correct_through_the_fallback():
    rng = np.random.default_rng(3)
    xa = rng.standard_normal((16, 24)).astype(np.float32)
    xb = rng.standard_normal((16, 24)).astype(np.float32)
    xm = rng.standard_normal((24, 8)).astype(np.float32)
    a, b, m = (hwport.to_tensor(v, place=P) for v in (xa, xb, xm))
    rt.reset_fallback_stats()
    out_add = a + b
    out_exp = hwport.exp(a)
    out_sum = hwport.sum(a)
    out_mm = hwport.matmul(a, m)
    out_view = a[2:, 1::2] * 2  # a strided view with an offset as an input
    for out in (out_add, out_exp, out_sum, out_mm, out_view):
        assert str(out.place).startswith(P)
    np.testing.assert_allclose(out_add.numpy(), xa + xb, rtol=1e-6)
    np.testing.assert_allclose(out_exp.numpy(), np.exp(xa), rtol=1e-5)
    np.testing.assert_allclose(out_sum.numpy(), xa.sum(dtype=np.float64), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(out_mm.numpy(), xa @ xm, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out_view.numpy(), xa[2:, 1::2] * 2, rtol=1e-6)
    out_cat = hwport.ops.concat([a, b], axis=0)
    np.testing.assert_array_equal(out_cat.numpy(), np.concatenate([xa, xb]))
    stats = rt.fallback_stats()
    place = rt._core.resolve_place(P)
    # An op runs its OpenCL kernel when the plugin has one, else the counted CPU fallback.
    for op in ("add", "exp", "sum", "matmul", "concat"):
        if rt._core.has_kernel(op, place, "float32"):
            assert stats.get((op, "opencl", "float32"), 0) == 0, (op, stats)
        else:
            assert stats.get((op, "opencl", "float32"), 0) >= 1, (op, stats)
    assert rt._core.has_kernel("matmul", place, "float32")  # kernels_matmul.c


def test_fallback_error_mode_raises():
    """HWPORT_FALLBACK=error: an op with an OpenCL kernel (matmul) still runs; each candidate
    op the plugin has no kernel for raises FallbackError naming the device."""
    place = rt._core.resolve_place(P)
    calls = {"concat": "hwport.ops.concat([a, a], axis=0)",
             "take_along_axis": "hwport.ops.take_along_axis(a, i, axis=0)",
             "argsort": "hwport.ops.argsort(a, axis=0)"}
    missing = [op for op in calls if not rt._core.has_kernel(op, place, "float32")]
    body = "".join(f"""
        try:
            {calls[op]}
        except hwport.FallbackError as e:
            assert "opencl" in str(e), str(e)
            print("raised")
        else:
            print("no error")""" for op in missing)
    proc = run_isolated(f"""
        import numpy as np, hwport
        a = hwport.to_tensor(np.ones((4, 4), np.float32), place="custom:opencl")
        i = hwport.to_tensor(np.zeros((1, 4), np.int64), place="custom:opencl")
        print(float(hwport.matmul(a, a).numpy()[0, 0]))  # has a kernel: no fallback, no error
        {body.strip()}
    """, {"HWPORT_FALLBACK": "error"})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert proc.stdout.split() == ["4.0"] + ["raised"] * len(missing), proc.stdout


# ---- memory --------------------------------------------------------------------------------

def test_memory_stats_return_to_baseline():
    hwport.device.synchronize(P)
    hwport.device.empty_cache(P)
    base = hwport.device.memory_stats(P)
    x = hwport.to_tensor(np.ones((512, 512), np.float32), place=P)
    ys = [x + x for _ in range(5)]
    z = hwport.matmul(ys[0], ys[1])
    np.testing.assert_array_equal(z.numpy()[:2, :2], np.full((2, 2), 4.0 * 512, np.float32))
    during = hwport.device.memory_stats(P)
    assert during["device_bytes_in_use"] > base["device_bytes_in_use"]
    assert during["device_num_allocs"] > base["device_num_allocs"]
    del x, ys, z
    hwport.device.synchronize(P)
    hwport.device.empty_cache(P)
    after = hwport.device.memory_stats(P)
    assert after["allocated_bytes"] == base["allocated_bytes"]
    assert after["device_bytes_in_use"] == base["device_bytes_in_use"]
    assert (after["device_num_allocs"] - base["device_num_allocs"]
            == after["device_num_frees"] - base["device_num_frees"])
    assert after["device_peak_bytes_in_use"] >= during["device_bytes_in_use"]
    assert after["device_bytes_limit"] > 0


def test_out_of_memory_above_the_limit_then_memory_is_usable():
    proc = run_isolated("""
        import numpy as np, hwport
        MB = 1 << 20
        P = "custom:opencl"
        s = hwport.device.memory_stats(P)
        assert s["device_bytes_limit"] == 32 * MB, s
        assert hwport.device.get_device_properties(P)["total_memory"] == 32 * MB
        a = hwport.to_tensor(np.ones(4 * MB // 4, np.float32), place=P)
        try:
            hwport.to_tensor(np.zeros(40 * MB // 4, np.float32), place=P)
        except hwport.OutOfMemoryError as e:
            msg = str(e)
        else:
            raise SystemExit("no OutOfMemoryError")
        assert "custom:opencl:0" in msg, msg
        b = hwport.to_tensor(np.full(4 * MB // 4, 2, np.float32), place=P)
        assert float((a + b).numpy()[-1]) == 3.0
        del a, b
        hwport.device.synchronize(P)
        hwport.device.empty_cache(P)
        s = hwport.device.memory_stats(P)
        assert s["device_bytes_in_use"] == 0 and s["allocated_bytes"] == 0, s
        print("ok")
    """, {"HWPORT_OPENCL_MEMORY_LIMIT": "32M"})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert proc.stdout.strip() == "ok"


def test_device_filter_env():
    proc = run_isolated("""
        import hwport.runtime as rt
        print([p["device_count"] for p in rt.plugins() if p["device_type"] == "opencl"])
    """, {"HWPORT_OPENCL_DEVICES": "no-such-opencl-device"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in ("[0]", "[]"), proc.stdout


# ---- streams and events ----------------------------------------------------------------------

N = 1 << 20


def test_two_streams_ordered_by_an_event():
    rng = np.random.default_rng(4)
    xa = rng.standard_normal(N).astype(np.float32)
    xb = rng.standard_normal(N).astype(np.float32)
    a, b = hwport.to_tensor(xa, place=P), hwport.to_tensor(xb, place=P)
    want = (xa + xb) * xa
    producer, consumer = Stream(P), Stream(P)
    for _ in range(5):
        with stream_guard(producer):
            c = a + b
        done = producer.record_event()
        consumer.wait_event(done)
        with stream_guard(consumer):
            d = c * a
        del c
        with stream_guard(producer):
            scratch = a * b
        consumer.synchronize()
        assert consumer.query() is True
        np.testing.assert_array_equal(d.numpy(), want)
        del scratch


def test_event_record_synchronize_query_and_copies_in_order():
    s = Stream(P)
    e = Event(P)
    assert e.query() is True  # never recorded: complete
    x = hwport.to_tensor(np.arange(N, dtype=np.float32), place=P)
    with stream_guard(s):
        y = x
        for _ in range(4):
            y = y + x
        z = y.to("custom:cpu")
        w = z.to(P)
    e.record(s)
    e.synchronize()
    assert e.query() is True
    assert s.query() is True
    np.testing.assert_array_equal(w.numpy()[-3:], 5 * np.arange(N - 3, N, dtype=np.float32))


def test_launches_past_a_gate_run_in_order_and_complete():
    # A stream's launches are batched behind a gate (stream_gate.c) opened every 256 launches,
    # by a query, a record, a copy or a synchronize: a chain of dependent ops longer than a
    # gate, then a host read, an event and a query must see every launch, in order.
    s = Stream(P)
    one = hwport.to_tensor(np.ones(7, np.float32), place=P)
    with stream_guard(s):
        y = one
        for _ in range(600):
            y = y + one
    e = s.record_event()
    while not e.query():  # no synchronize: the gate opens at the record
        pass
    assert s.query() is True
    np.testing.assert_array_equal(y.numpy(), np.full(7, 601, np.float32))
    with stream_guard(s):
        z = y * 2.0  # then a copy on the stream right behind a launch
        host = z.to("custom:cpu")
    s.synchronize()
    np.testing.assert_array_equal(host.numpy(), np.full(7, 1202, np.float32))


def test_threads_launching_while_another_synchronizes():
    # One thread's gate must not hold another thread's synchronize for good (the gate thread
    # opens it) and no launch is lost across the opens.
    results: dict[int, np.ndarray] = {}
    errors: list[Exception] = []

    def work(k: int) -> None:
        try:
            s = Stream(P)
            one = hwport.to_tensor(np.ones(5, np.float32), place=P)
            with stream_guard(s):
                y = one
                for _ in range(400):
                    y = y + one
            s.synchronize()
            results[k] = y.numpy()
        except Exception as exc:  # noqa: BLE001 (reported by the main thread)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        hwport.device.synchronize(P)
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(2):
        np.testing.assert_array_equal(results[k], np.full(5, 401, np.float32))


# ---- the C ABI directly (cffi) -------------------------------------------------------------

@pytest.fixture(scope="module")
def ocl():
    pytest.importorskip("cffi")
    from hwport.conformance.direct_host import DirectHost

    h = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_DEVICES": None,
                                   "HWPORT_OPENCL_MEMORY_LIMIT": None})
    assert h.init_status == 0
    return h


def test_direct_api_shape(ocl):
    from hwport.conformance.direct_host import NULL, ffi

    api = ocl.api
    assert ffi.string(api.device_type) == b"opencl"
    assert (api.abi_major, api.abi_minor) == (1, 2)
    assert api.stream != NULL and api.ccl == NULL and api.codegen != NULL
    assert ocl.registrations  # the generated elementwise kernels
    assert ocl.device_count() >= 1
    assert ocl.properties(0).flags == 0


def _plugin_add_program_source() -> str:
    """The float32 elementwise program's `add` kernels exactly as the plugin's generator writes
    them (phi_ops/codegen/gen_opencl_elementwise.py, around the same preludes)."""
    from tests.conftest import REPO_ROOT

    sys.path.insert(0, str(REPO_ROOT / "phi_ops" / "codegen"))
    try:
        import gen_opencl_elementwise as gen
    finally:
        sys.path.pop(0)
    ops = {op["name"]: op for op in gen.collect(gen.load(REPO_ROOT / "phi_ops" / "ops.yaml"))}
    ocl_dir = REPO_ROOT / "device_plugins" / "opencl"
    prelude = "\n".join((ocl_dir / f).read_text() for f in ("elementwise_prelude.cl", "expf.cl"))
    body = gen.kernel_source(ops["add"], "float32")
    return (f"#define DT_{gen.OCL_DTYPES['float32'][1]} 1\n{prelude}\n{body}"
            + gen.contiguous_variant(ops["add"], "float32", body))


def test_direct_abi_1_1_properties_match_pyopencl(ocl):
    """max_allocation, the float16 flag, the architecture and simd_width against pyopencl's view
    of the same device; no DLPack device (a cl_mem is no address) and no 1.1 functions."""
    cl = pytest.importorskip("pyopencl")
    from hwport.conformance.direct_host import NULL, DirectHost, ffi

    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    if len(devices) != ocl.device_count():
        pytest.skip(f"HWPORT_OPENCL_DEVICES selects {ocl.device_count()} of {len(devices)}")
    lib = ocl.lib
    source = _plugin_add_program_source()
    for i, d in enumerate(devices):
        p = ocl.properties(i)
        assert ffi.string(p.name).decode() == d.name.strip()
        assert p.max_allocation == min(d.max_mem_alloc_size, d.global_mem_size)
        extensions = d.extensions.split()
        assert bool(p.flags & lib.HWP_DEVICE_FLOAT16_ARITHMETIC) == ("cl_khr_fp16" in extensions)
        assert not p.flags & (lib.HWP_DEVICE_BFLOAT16_ARITHMETIC | lib.HWP_DEVICE_HOST_MEMORY)
        if "cl_nv_device_attribute_query" in extensions:
            cc = (d.compute_capability_major_nv, d.compute_capability_minor_nv)
            assert ffi.string(p.architecture).decode() == f"sm_{cc[0]}{cc[1]}"
            assert (p.architecture_major, p.architecture_minor) == cc
        else:  # core OpenCL names no instruction-set generation
            assert ffi.string(p.architecture) == b""
            assert (p.architecture_major, p.architecture_minor) == (0, 0)
        ctx = cl.Context([d])
        options = ["-DHAS_FP64=1"] if d.double_fp_config else []
        kc_add = cl.Program(ctx, source).build(options=options).kc_add
        want = kc_add.get_work_group_info(
            cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, d)
        assert p.simd_width == want >= 1
        assert p.max_threads_per_compute_unit == 0
        assert (p.dlpack_device_type, p.dlpack_device_id) == (lib.HWP_DLPACK_NONE, 0)
    for name in ("device_address", "wrap_device_memory", "release_device_buffer"):
        assert getattr(ocl.mem, name) == NULL, name
    for name in ("native_stream", "native_stream_wait"):
        assert getattr(ocl.streams, name) == NULL, name
    # The limit caps total_memory and so the largest single allocation.
    h = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_MEMORY_LIMIT": "1M",
                                   "HWPORT_OPENCL_DEVICES": None})
    assert h.properties(0).max_allocation == min(1 << 20, devices[0].max_mem_alloc_size)


def test_direct_error_paths(ocl):
    from hwport.conformance.direct_host import INVALID_ARGUMENT, NULL, ffi

    n = ocl.device_count()
    out = ffi.new("HWP_Buffer *")
    ocl.expect_error(ocl.mem.allocate(n, 16, out), INVALID_ARGUMENT, "allocate", "out of range")
    ocl.expect_error(ocl.mem.allocate(-1, 16, out), INVALID_ARGUMENT, "allocate", "device -1")
    ocl.expect_error(ocl.mem.allocate(0, 0, out), INVALID_ARGUMENT, "allocate", "nbytes")
    ocl.expect_error(ocl.mem.allocate(0, 16, NULL), INVALID_ARGUMENT, "allocate", "out is NULL")
    ocl.expect_error(ocl.dev.get_device_count(NULL), INVALID_ARGUMENT, "get_device_count")
    ocl.expect_error(ocl.dev.get_properties(0, NULL), INVALID_ARGUMENT, "get_properties")
    ocl.expect_error(ocl.dev.synchronize_device(n), INVALID_ARGUMENT, "synchronize_device")
    ocl.expect_error(ocl.streams.create_stream(0, NULL), INVALID_ARGUMENT, "create_stream")
    assert ocl.mem.deallocate(0, NULL) == 0
    assert ocl.streams.destroy_stream(0, NULL) == 0
    assert ocl.streams.destroy_event(0, NULL) == 0
    buf = ocl.alloc(64)
    src = bytes(128)
    ocl.expect_error(ocl.mem.copy_h2d(0, buf, 0, src, 128), INVALID_ARGUMENT, "copy_h2d",
                     "outside")
    ocl.expect_error(ocl.mem.copy_h2d(0, buf, 0, NULL, 8), INVALID_ARGUMENT, "copy_h2d", "src")
    ocl.free(buf)
    ocl.expect_error(ocl.mem.deallocate(0, buf), INVALID_ARGUMENT, "deallocate", "not a live")


def test_direct_memory_stats_and_limit(ocl):
    from hwport.conformance.direct_host import OUT_OF_MEMORY, DirectHost, ffi

    h = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_MEMORY_LIMIT": "1M",
                                   "HWPORT_OPENCL_DEVICES": None})
    s0 = h.stats()
    assert s0["bytes_limit"] == 1 << 20 and s0["bytes_in_use"] == 0
    a = h.alloc(600_000)
    out = ffi.new("HWP_Buffer *")
    h.expect_error(h.mem.allocate(0, 600_000, out), OUT_OF_MEMORY, "out of memory",
                   "HWPORT_OPENCL_MEMORY_LIMIT")
    s = h.stats()
    assert s["bytes_in_use"] == 600_000 and s["num_allocs"] == 1
    h.free(a)
    b = h.alloc(1 << 20)  # usable again up to the limit
    h.free(b)
    s = h.stats()
    assert s["bytes_in_use"] == 0 and s["peak_bytes_in_use"] == 1 << 20
    assert s["num_allocs"] == 2 and s["num_frees"] == 2


def test_direct_copies_with_offsets_and_overlap(ocl):
    data = np.arange(256, dtype=np.uint8)
    a, b = ocl.alloc(256), ocl.alloc(256)
    ocl.h2d(a, data)
    assert ocl.d2h(a, 10, offset=100) == bytes(range(100, 110))
    assert ocl.mem.copy_d2d(0, b, 5, a, 50, 100) == 0
    assert ocl.d2h(b, 100, offset=5) == bytes(range(50, 150))
    # overlapping ranges of one buffer behave like memmove
    assert ocl.mem.copy_d2d(0, a, 10, a, 0, 100) == 0
    want = data.copy()
    want[10:110] = data[0:100]
    assert ocl.d2h(a, 256) == want.tobytes()
    ocl.free(a)
    ocl.free(b)


def test_direct_streams_events_async_copies(ocl):
    from hwport.conformance.direct_host import NOT_READY, NULL, OK, ffi

    n = 1 << 22
    host = np.random.default_rng(5).integers(0, 255, n, dtype=np.uint8)
    back = np.zeros(n, np.uint8)
    buf, buf2 = ocl.alloc(n), ocl.alloc(n)
    s1, s2 = ocl.create_stream(), ocl.create_stream()
    ev = ocl.create_event()
    assert ocl.streams.query_event(0, ev) == OK  # never recorded
    assert ocl.mem.copy_h2d_async(0, s1, buf, 0, ffi.from_buffer(host), n) == OK
    assert ocl.mem.memset_async(0, s1, buf, 0, 7, 16) == OK
    assert ocl.streams.record_event(0, s1, ev) == OK
    assert ocl.streams.stream_wait_event(0, s2, ev) == OK
    assert ocl.mem.copy_d2d_async(0, s2, buf2, 0, buf, 0, n) == OK
    assert ocl.mem.copy_d2h_async(0, s2, ffi.from_buffer(back), buf2, 0, n) == OK
    assert ocl.streams.query_stream(0, s2) in (OK, NOT_READY)
    ocl.sync_stream(s2)
    assert ocl.streams.query_stream(0, s2) == OK
    assert ocl.streams.synchronize_event(0, ev) == OK
    assert ocl.streams.query_event(0, ev) == OK
    want = host.copy()
    want[:16] = 7
    np.testing.assert_array_equal(back, want)
    # record again on the other stream; NULL-stream work is synchronous
    assert ocl.streams.record_event(0, s2, ev) == OK
    assert ocl.mem.memset_async(0, NULL, buf, 8, 1, 8) == OK
    assert ocl.d2h(buf, 8, offset=8) == b"\x01" * 8
    assert ocl.streams.record_event(0, NULL, ev) == OK
    assert ocl.streams.query_event(0, ev) == OK
    assert ocl.streams.destroy_event(0, ev) == OK
    ocl.destroy_stream(s1)
    ocl.destroy_stream(s2)
    ocl.free(buf)
    ocl.free(buf2)


def test_direct_concurrent_allocations_and_copies(ocl):
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(20):
                data = rng.integers(0, 255, 4096, dtype=np.uint8)
                buf = ocl.alloc(4096)
                s = ocl.create_stream()
                ocl.h2d(buf, data)
                assert ocl.d2h(buf, 4096) == data.tobytes()
                ocl.destroy_stream(s)
                ocl.free(buf)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert ocl.stats()["bytes_in_use"] == 0


def test_direct_zero_devices_explains_why():
    from hwport.conformance.direct_host import DirectHost

    h = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_DEVICES": "no-such-opencl-device"})
    assert h.init_status == 0
    assert h.device_count() == 0
    assert "HWPORT_OPENCL_DEVICES" in h.last_error()
    h2 = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_DEVICES": "0"})
    assert h2.device_count() == 1
    # a substring of "platform name / device name", case-insensitive, in a comma list
    props = h2.properties(0)  # kept: .name points into it (cffi frees it with the object)
    name = ffi_string(props.name)
    h3 = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_DEVICES": f"nothing, {name.upper()}"})
    assert h3.device_count() >= 1
    props3 = h3.properties(0)
    assert ffi_string(props3.name) == name


def ffi_string(cdata) -> str:
    from hwport.conformance.direct_host import ffi

    return ffi.string(cdata).decode()


@pytest.mark.parametrize("opt", ["-O0", "-O2", "-O3"])
def test_plugin_compiles_warning_free(tmp_path, opt):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    from tests.conftest import ABI_INCLUDE_DIR, REPO_ROOT

    support = REPO_ROOT / "device_plugins" / "common"
    sources = sorted((REPO_ROOT / "device_plugins" / "opencl").glob("*.c"))
    sources += sorted(support.glob("*.c"))
    probe = subprocess.run([cc, "-E", "-x", "c", "-", "-o", os.devnull],
                           input="#include <CL/cl.h>\n", capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("no OpenCL headers (CL/cl.h)")
    for src in sources:
        cmd = [cc, "-std=gnu99", opt, "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra",
               "-Werror", "-DCL_TARGET_OPENCL_VERSION=120", f"-I{ABI_INCLUDE_DIR}",
               f"-I{support}", "-c", str(src), "-o", str(tmp_path / (src.stem + ".o"))]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"


def test_no_icd_means_zero_devices_with_a_reason():
    """Without any OpenCL implementation the plugin still loads, with 0 devices and a note."""
    proc = run_isolated("""
        import json, hwport.runtime as rt
        print(json.dumps([p for p in rt.plugins() if p["device_type"] == "opencl"]))
    """, {"OCL_ICD_VENDORS": "/nonexistent-hwport-test", "OCL_ICD_FILENAMES": ""})
    assert proc.returncode == 0, proc.stderr
    import json

    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(found) == 1, found
    if found[0]["device_count"] != 0:
        pytest.skip("this ICD loader ignores OCL_ICD_VENDORS")
    assert "OpenCL" in found[0]["device_count_note"], found
