"""The CUDA reference plugin (device_plugins/cuda).

Without a GPU (the CI machine has nvcc and the CUDA runtime but no driver): the plugin is built
whenever nvcc exists, loads through the runtime without breaking `import hwport`, reports zero
devices with the CUDA reason, registers the kernels ops.yaml calls for, and every ABI call on a
device that does not exist returns an error value (directly through cffi, no runtime core). The
CUDA-error -> HWP_Status mapping is checked on the plugin's own errors.c, compiled here.

With a GPU (tests marked `gpu`, skipped when the plugin reports no device): ops on custom:cuda
against numpy with the op tolerances and no CPU fallback, streams/events, memory accounting,
the tiled matmul, a CuPy cross-check and DLPack exchange with CuPy. scripts/gpu_check.sh runs
them (and the whole phi_ops oracle on custom:cuda) on a GPU machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hwport
import hwport.runtime as rt
from hwport.conformance import direct_host as dh
from tests.conftest import INSTALL_ROOT, exported_functions, run_isolated

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "phi_ops" / "codegen"))
import gen_cuda_elementwise as gen  # noqa: E402
from gen_cpu_elementwise import GenError, load  # noqa: E402
from gen_opencl_elementwise import collect  # noqa: E402

PLUGIN_SO = INSTALL_ROOT / "device_plugins" / "cuda" / "libhwport_cuda.so"
CUDA_SRC = REPO / "device_plugins" / "cuda"
NVCC = shutil.which("nvcc")
DTYPES = ["bool", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
DT = dh.DTYPE_CODE

if not PLUGIN_SO.exists():
    if NVCC:
        pytest.fail(f"nvcc is at {NVCC} but the CUDA plugin was not built ({PLUGIN_SO})",
                    pytrace=False)
    pytest.skip("no nvcc: the CUDA plugin is not built", allow_module_level=True)


def _entry() -> dict | None:
    found = [p for p in rt.plugins() if p["device_type"] == "cuda"]
    return found[0] if found else None


ENTRY = _entry()
NUM_DEVICES = ENTRY["device_count"] if ENTRY else 0
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(
    NUM_DEVICES == 0,
    reason=f"the CUDA plugin reports no device: {ENTRY and ENTRY['device_count_note']}")


# ---- the plugin is built and loads ---------------------------------------------------------

def test_plugin_exports_only_the_entry_point():
    assert exported_functions(PLUGIN_SO) == {"hwport_plugin_init"}


def test_import_hwport_loads_the_plugin_in_a_fresh_process():
    proc = run_isolated("""
        import json, hwport, hwport.runtime as rt
        cuda = [p for p in rt.plugins() if p["device_type"] == "cuda"]
        errs = [e for e in rt.plugin_errors() if "cuda" in e["path"]]
        x = hwport.to_tensor([1.0, 2.0], place="cpu")
        print(json.dumps({"cuda": cuda, "errors": errs, "sum": float(hwport.sum(x).numpy())}))
    """)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["errors"] == [], out["errors"]
    assert len(out["cuda"]) == 1
    entry = out["cuda"][0]
    assert entry["abi_version"] == "1.2" and entry["has_streams"]
    assert entry["num_kernels"] == len(expected_registrations())
    assert out["sum"] == 3.0  # the host still works next to the plugin


@pytest.mark.skipif(NUM_DEVICES > 0, reason="this machine has a CUDA device")
def test_zero_devices_come_with_the_cuda_reason():
    note = ENTRY["device_count_note"]
    assert "cudaGetDeviceCount failed" in note or "no CUDA device" in note, note
    assert "cudaError" in note or "driver" in note, note
    assert "cuda" in hwport.device.get_all_custom_device_type()
    assert not any(p.startswith("custom:cuda") for p in hwport.device.get_all_places())
    with pytest.raises(ValueError, match=r"0 devices: .*CUDA"):
        hwport.to_tensor([1.0], place="custom:cuda")


# ---- direct through the C ABI --------------------------------------------------------------

@pytest.fixture(scope="module")
def h():
    host = dh.DirectHost(PLUGIN_SO)
    assert host.init_status == dh.OK
    return host


def expected_registrations() -> set[tuple[str, int]]:
    """(op, dtype code) the plugin must register: the generated elementwise ops (the OpenCL
    generator's selection from ops.yaml), reductions, fused nn, matmul, scans, uniform and the
    index ops, over DTYPES: every primitive of ops.yaml, and the composites it runs natively
    (the native elementwise ones, mean, the fused nn ones)."""
    doc = load(REPO / "phi_ops" / "ops.yaml")
    want = {(op["name"], DT[d]) for op in collect(doc) for d in op["dtypes"] if d in DTYPES}
    by_name = {op["name"]: op for op in doc["ops"]}
    groups = doc["dtype_groups"]

    def dtypes_of(name: str) -> list[str]:
        spec = by_name[name]["dtypes"]
        return [d for d in (groups[spec] if isinstance(spec, str) else spec) if d in DTYPES]

    for name in ("sum", "prod", "max", "min", "mean", "argmax", "argmin", "matmul", "softmax",
                 "log_softmax", "layer_norm", "rms_norm", "cumsum", "cumprod", "uniform",
                 "arange", "concat", "pad", "gather", "take_along_axis", "scatter", "argsort"):
        want |= {(name, DT[d]) for d in dtypes_of(name)}
    return want


def test_registrations_follow_ops_yaml(h):
    assert set(h.registrations) == expected_registrations()
    strided = {op for (op, _d), r in h.registrations.items() if r.flags & 1}
    assert {"add", "where", "cast", "sum", "argmax"} <= strided
    assert not strided & {"matmul", "softmax", "layer_norm"}  # these take contiguous inputs


def test_registrations_are_the_cpu_plugins_for_these_dtypes(h, cpu):
    """The CPU reference plugin has every primitive (and the fused nn ops): the CUDA plugin
    registers the same (op, dtype) pairs for its dtypes."""
    codes = {DT[d] for d in DTYPES}
    # fused kernels the CPU plugin alone has (so far)
    cpu_only = {"linear", "adam_update", "embedding", "softmax_grad", "layer_norm_grad",
                "rms_norm_grad", "cross_entropy", "cross_entropy_grad"}
    assert set(h.registrations) == {key for key in cpu.registrations if key[1] in codes
                                    and key[0] not in cpu_only}


def test_device_count_and_reason(h):
    n = h.device_count()
    assert n == NUM_DEVICES
    if n == 0:
        assert "cudaGetDeviceCount" in h.last_error() or "no CUDA device" in h.last_error()


def _bad_devices() -> list[int]:
    return [-1, NUM_DEVICES, NUM_DEVICES + 7]


@pytest.mark.parametrize("device", _bad_devices())
def test_every_table_call_on_a_missing_device_is_an_error(h, device):
    ffi, NULL = dh.ffi, dh.NULL
    fake = ffi.cast("HWP_Buffer", 0x1000)
    host = bytearray(64)
    hp = ffi.from_buffer(host)
    props = ffi.new("HWP_DeviceProperties *")
    props.struct_size = ffi.sizeof("HWP_DeviceProperties")
    stats = ffi.new("HWP_MemoryStats *")
    stats.struct_size = ffi.sizeof("HWP_MemoryStats")
    addr, native = ffi.new("void **"), ffi.new("uintptr_t *")
    d, m, s = h.dev, h.mem, h.streams
    calls = {
        "synchronize_device": lambda: d.synchronize_device(device),
        "get_properties": lambda: d.get_properties(device, props),
        "init_device": lambda: d.init_device(device),
        "deinit_device": lambda: d.deinit_device(device),
        "set_device": lambda: d.set_device(device),
        "allocate": lambda: m.allocate(device, 64, ffi.new("HWP_Buffer *")),
        "deallocate": lambda: m.deallocate(device, fake),
        "copy_h2d": lambda: m.copy_h2d(device, fake, 0, hp, 8),
        "copy_d2h": lambda: m.copy_d2h(device, hp, fake, 0, 8),
        "copy_d2d": lambda: m.copy_d2d(device, fake, 0, fake, 8, 8),
        "copy_h2d_async": lambda: m.copy_h2d_async(device, NULL, fake, 0, hp, 8),
        "copy_d2h_async": lambda: m.copy_d2h_async(device, NULL, hp, fake, 0, 8),
        "copy_d2d_async": lambda: m.copy_d2d_async(device, NULL, fake, 0, fake, 8, 8),
        "memset_async": lambda: m.memset_async(device, NULL, fake, 0, 0, 8),
        "get_memory_stats": lambda: m.get_memory_stats(device, stats),
        "create_stream": lambda: s.create_stream(device, ffi.new("HWP_Stream *")),
        "synchronize_stream": lambda: s.synchronize_stream(device, NULL),
        "query_stream": lambda: s.query_stream(device, NULL),
        "create_event": lambda: s.create_event(device, ffi.new("HWP_Event *")),
        # ABI 1.1
        "device_address": lambda: m.device_address(device, fake, 0, addr),
        "wrap_device_memory": lambda: m.wrap_device_memory(device, ffi.cast("void *", 0x1000),
                                                           64, ffi.new("HWP_Buffer *")),
        "release_device_buffer": lambda: m.release_device_buffer(device, fake),
        "native_stream": lambda: s.native_stream(device, NULL, native),
        "native_stream_wait": lambda: s.native_stream_wait(device, 1, NULL),
    }
    for name, call in calls.items():
        h.expect_error(call(), dh.INVALID_ARGUMENT, "out of range")
        assert name  # (named for the failure message of expect_error's assert)
    if NUM_DEVICES == 0:
        assert "cudaGetDeviceCount" in h.last_error() or "no CUDA device" in h.last_error()
    # Destroying NULL is a no-op on any device index (the ABI's rule).
    assert s.destroy_stream(device, NULL) == dh.OK
    assert s.destroy_event(device, NULL) == dh.OK
    assert m.deallocate(device, NULL) == dh.OK
    assert props.name[0] == b"\0"  # out parameters untouched on error
    assert addr[0] == NULL and native[0] == 0


def test_the_abi_1_1_functions_are_present(h):
    """A CUDA device exchanges its memory and streams with other frameworks (DLPack kDLCUDA):
    the plugin fills every 1.1 function (the host-memory ones stay NULL)."""
    for name in ("device_address", "wrap_device_memory", "release_device_buffer"):
        assert getattr(h.mem, name) != dh.NULL, name
    for name in ("native_stream", "native_stream_wait"):
        assert getattr(h.streams, name) != dh.NULL, name
    for name in ("host_address", "wrap_host_memory", "release_host_buffer"):
        assert getattr(h.mem, name) == dh.NULL, name


def _inputs_of(op: str) -> int:
    if op in ("fill", "arange", "uniform"):
        return 0
    if op in ("where", "scatter"):
        return 3
    binary = {o["name"] for o in collect(load(REPO / "phi_ops" / "ops.yaml"))
              if o["kind"] == "binary"}
    return 2 if op in binary | {"matmul", "gather", "take_along_axis"} else 1


def test_every_kernel_on_a_missing_device_is_an_error(h):
    buf = dh.ffi.cast("HWP_Buffer", 0x1000)
    for (op, dtype), _reg in sorted(h.registrations.items()):
        nin = _inputs_of(op)
        views = [dh.View(buf, 0, dtype if not (op == "where" and i == 0) else DT["bool"],
                         (2, 3), None) for i in range(nin)]
        out = dh.View(buf, 0, dtype, (2, 3), None)
        status = h.call_kernel(op, dtype, views, [out], attrs={"axis": -1, "value": 1},
                               device=NUM_DEVICES)
        h.expect_error(status, dh.INVALID_ARGUMENT, op, "out of range")


def test_a_kernel_with_the_wrong_arity_is_an_error(h):
    buf = dh.ffi.cast("HWP_Buffer", 0x1000)
    v = dh.View(buf, 0, DT["float32"], (4,), None)
    for op, n in (("add", 1), ("matmul", 3), ("sum", 2), ("softmax", 0)):
        status = h.call_kernel(op, DT["float32"], [v] * n, [v], attrs={"axis": [0]})
        h.expect_error(status, dh.INVALID_ARGUMENT, op, "input(s)")
    reg = h.registrations[("exp", DT["float32"])]
    h.expect_error(reg.fn(dh.NULL), dh.INVALID_ARGUMENT)


def test_init_rejects_another_abi_major():
    other = dh.DirectHost(PLUGIN_SO, abi_major=2)
    assert other.init_status == dh.VERSION_MISMATCH


# ---- CUDA errors -> HWP_Status (the plugin's errors.c, compiled here) -----------------------

@pytest.fixture(scope="module")
def errors_lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    if NVCC:  # nvcc may be a wrapper script outside the toolkit
        roots.insert(0, str(Path(NVCC).resolve().parents[1]))
    cuda_root = next((Path(r) for r in roots
                      if r and (Path(r) / "include" / "cuda_runtime_api.h").exists()), None)
    if cc is None or cuda_root is None:
        pytest.skip("no C compiler or CUDA headers to build errors.c")
    lib_dir = next((d for d in (cuda_root / "lib64", cuda_root / "lib")
                    if (d / "libcudart_static.a").exists()), None)
    if lib_dir is None:
        pytest.skip("no libcudart_static.a")
    out = tmp_path_factory.mktemp("cuda_errors") / "libcuerr.so"
    cmd = [cc, "-std=gnu99", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror",
           f"-I{REPO / 'runtime' / 'include'}", f"-I{REPO / 'device_plugins' / 'common'}",
           f"-I{cuda_root / 'include'}", str(CUDA_SRC / "errors.c"),
           str(REPO / "device_plugins" / "common" / "plugin_support.c"), f"-L{lib_dir}",
           "-lcudart_static", "-ldl", "-lpthread", "-lrt", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    import cffi

    ffi = cffi.FFI()
    ffi.cdef("int cu_status_of(int err); int cu_error_is_sticky(int err);"
             "int cu_cuda_error(int err, const char *fn, const char *call);"
             "const char *hwps_last_error(void);")
    return ffi, ffi.dlopen(str(out))


# (cudaError_t value, name, expected HWP_Status, sticky)
CUDA_ERRORS = [
    (0, "cudaSuccess", dh.OK, False),
    (1, "cudaErrorInvalidValue", dh.INVALID_ARGUMENT, False),
    (2, "cudaErrorMemoryAllocation", dh.OUT_OF_MEMORY, False),
    (35, "cudaErrorInsufficientDriver", dh.DEVICE_ERROR, False),
    (100, "cudaErrorNoDevice", dh.DEVICE_ERROR, False),
    (101, "cudaErrorInvalidDevice", dh.INVALID_ARGUMENT, False),
    (209, "cudaErrorNoKernelImageForDevice", 3, False),
    (600, "cudaErrorNotReady", dh.NOT_READY, False),
    (700, "cudaErrorIllegalAddress", dh.DEVICE_ERROR, True),
    (719, "cudaErrorLaunchFailure", dh.DEVICE_ERROR, True),
    (801, "cudaErrorNotSupported", 3, False),
]


@pytest.mark.parametrize("err,name,status,sticky", CUDA_ERRORS, ids=[e[1] for e in CUDA_ERRORS])
def test_cuda_errors_map_to_statuses(errors_lib, err, name, status, sticky):
    ffi, lib = errors_lib
    assert lib.cu_status_of(err) == status
    assert bool(lib.cu_error_is_sticky(err)) == sticky
    got = lib.cu_cuda_error(err, b"copy_h2d", b"cudaMemcpy")
    assert got == status
    if status != dh.OK:
        msg = ffi.string(lib.hwps_last_error()).decode()
        assert msg.startswith("copy_h2d: cudaMemcpy failed: " + name), msg
        assert ("sticky" in msg) == sticky, msg


# ---- the generator -------------------------------------------------------------------------

def test_generator_writes_one_table_per_dtype(tmp_path):
    paths = gen.generate(REPO / "phi_ops" / "ops.yaml", tmp_path, ["float32", "bool", "float32"])
    names = sorted(p.name for p in paths)
    assert names == ["cuda_dtypes.h", "cuda_ew_bool.cu", "cuda_ew_float32.cu", "cuda_ew_ops.cuh",
                     "cuda_ew_tables.h"]
    ops = collect(load(REPO / "phi_ops" / "ops.yaml"))
    functors = (tmp_path / "cuda_ew_ops.cuh").read_text()
    for op in ops:
        assert (f"struct cu_ew_f_{op['name']} " in functors) == (op["kind"] in ("unary", "binary"))
    for dtype in ("bool", "float32"):
        table = (tmp_path / f"cuda_ew_{dtype}.cu").read_text()
        listed = {line.split('"')[1] for line in table.splitlines() if line.startswith('    {"')}
        assert listed == {op["name"] for op in ops if dtype in op["dtypes"]}
    assert "0x101u" in (tmp_path / "cuda_dtypes.h").read_text()  # bool (0) and float32 (8)
    mtime = (tmp_path / "cuda_ew_bool.cu").stat().st_mtime_ns
    gen.generate(REPO / "phi_ops" / "ops.yaml", tmp_path, ["bool", "float32"])
    assert (tmp_path / "cuda_ew_bool.cu").stat().st_mtime_ns == mtime  # unchanged: not rewritten


def test_generator_rejects_an_unknown_dtype(tmp_path):
    with pytest.raises(GenError, match="unknown dtype 'complex64'"):
        gen.generate(REPO / "phi_ops" / "ops.yaml", tmp_path, ["float32", "complex64"])
    script = str(REPO / "phi_ops" / "codegen" / "gen_cuda_elementwise.py")
    proc = subprocess.run([sys.executable, script, str(REPO / "phi_ops" / "ops.yaml")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "usage" in proc.stderr


def test_build_skips_cuda_cleanly_without_nvcc():
    text = (REPO / "device_plugins" / "CMakeLists.txt").read_text()
    assert "check_language(CUDA)" in text and "HWPORT_CUDA_SKIP_REASON" in text
    top = (REPO / "CMakeLists.txt").read_text()
    assert 'CUDA plugin: skipped (${HWPORT_CUDA_SKIP_REASON})' in top


# ---- on a GPU ------------------------------------------------------------------------------

P = "custom:cuda"


def _np(name: str) -> np.dtype:
    return dh.np_dtype(name)


def _sample(name: str, shape, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if name.startswith("int"):
        return rng.integers(-1000, 1000, size=shape).astype(name)
    return rng.standard_normal(size=shape).astype(_np(name))


def _no_fallback(before: dict) -> None:
    grown = {k: v - before.get(k, 0) for k, v in rt.fallback_stats().items()
             if k[1] == "cuda" and v > before.get(k, 0)}
    assert not grown, f"ran on the CPU fallback: {grown}"


@gpu
@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_gpu_ops_match_numpy(dtype):
    from hwport.phi_ops.reference import reference
    from hwport.phi_ops.tolerance import assert_close

    before = dict(rt.fallback_stats())
    x, y = _sample(dtype, (37, 129), 1), _sample(dtype, (37, 129), 2)
    w = _sample(dtype, (129,), 3)
    yt = np.ascontiguousarray(y.T)
    tx, ty, tw = (hwport.to_tensor(a, place=P) for a in (x, y, w))
    checks = [
        ("add", [x, y], {}, hwport.add(tx, ty)),
        ("exp", [x], {}, hwport.exp(tx)),
        ("maximum", [x, y], {}, hwport.maximum(tx, ty)),
        ("sum", [x], {"axis": [1]}, hwport.sum(tx, axis=1)),
        ("max", [x], {"axis": [0]}, hwport.max(tx, axis=0)),
        ("argmax", [x], {"axis": 1}, hwport.argmax(tx, axis=1)),
        ("softmax", [x], {"axis": -1}, hwport.softmax(tx, axis=-1)),
        ("rms_norm", [x, w], {}, hwport.rms_norm(tx, [129], tw)),
        ("matmul", [x, yt], {}, hwport.matmul(tx, hwport.to_tensor(yt, place=P))),
    ]
    for op, ins, attrs, got in checks:
        assert str(got.place).startswith(P), op
        assert_close(op, dtype, got.numpy(), reference(op, ins, attrs))
    _no_fallback(before)


@gpu
@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_gpu_uniform_is_bit_exact_with_philox(dtype):
    from hwport.phi_ops import philox

    before = dict(rt.fallback_stats())
    got = hwport.uniform([1000, 37], seed=(1 << 40) + 7, min=-2.0, max=3.0, offset=-5,
                         dtype=dtype, place=P).numpy()
    want = philox.uniform([1000, 37], -2.0, 3.0, (1 << 40) + 7, -5, dtype)
    np.testing.assert_array_equal(got.view(np.uint8), np.asarray(want).view(np.uint8))
    _no_fallback(before)


@gpu
@needs_gpu
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "bfloat16"])
def test_gpu_scans_and_index_ops(dtype):
    from hwport.phi_ops.reference import reference

    before = dict(rt.fallback_stats())
    x = _sample(dtype, (6, 70, 5), 8)
    t = hwport.to_tensor(x, place=P)
    acc = np.float64 if dtype.startswith("float") or dtype == "bfloat16" else np.int64
    got = hwport.cumsum(t, axis=1).numpy().astype(np.float64)
    np.testing.assert_allclose(got, np.cumsum(x.astype(acc), axis=1).astype(np.float64),
                               rtol=1e-2 if dtype == "bfloat16" else 1e-5, atol=1e-3)
    np.testing.assert_array_equal(hwport.concat([t, t[:, :3]], axis=1).numpy(),
                                  np.concatenate([x, x[:, :3]], axis=1))
    np.testing.assert_array_equal(hwport.pad(t, [1, 0, 2, 3, 0, 1], value=7).numpy(),
                                  np.pad(x, [(1, 0), (2, 3), (0, 1)], constant_values=7))
    idx = np.array([69, 0, 3, 3], np.int64)
    np.testing.assert_array_equal(
        hwport.gather(t, hwport.to_tensor(idx, place=P), axis=1).numpy(), x[:, idx])
    ia = np.random.default_rng(9).integers(0, 70, size=(6, 11, 5))
    np.testing.assert_array_equal(
        hwport.take_along_axis(t, hwport.to_tensor(ia, place=P), axis=1).numpy(),
        np.take_along_axis(x, ia, axis=1))
    rows = np.array([4, 0, 4, 69], np.int32)
    upd = _sample(dtype, (6, 4, 5), 10)
    want_assign, want_add = x.copy(), x.astype(acc)
    for j, r in enumerate(rows):
        want_assign[:, r] = upd[:, j]
        want_add[:, r] += upd[:, j].astype(acc)
    ti, tu = hwport.to_tensor(rows, place=P), hwport.to_tensor(upd, place=P)
    np.testing.assert_array_equal(hwport.scatter(t, ti, tu, axis=1).numpy(), want_assign)
    np.testing.assert_array_equal(hwport.scatter(t, ti, tu, axis=1, reduce="add").numpy(),
                                  want_add.astype(x.dtype))
    for desc in (False, True):
        s = np.round(x * 2) / 2 if x.dtype.kind == "f" else x // 300  # ties to keep stable
        if x.dtype.kind == "f":
            s[0, 3, 1] = np.nan
        got = hwport.argsort(hwport.to_tensor(s, place=P), axis=1, descending=desc).numpy()
        want = reference("argsort", [s], {"axis": 1, "descending": desc})
        np.testing.assert_array_equal(got, np.asarray(want))
    if dtype != "bfloat16":
        np.testing.assert_array_equal(hwport.arange(3, 50, 4, dtype=dtype, place=P).numpy(),
                                      np.arange(3, 50, 4, dtype=dtype))
    _no_fallback(before)


@gpu
@needs_gpu
def test_gpu_strided_and_large_elementwise():
    x = _sample("float32", (1 << 21,), 4)
    t = hwport.to_tensor(x, place=P)
    np.testing.assert_array_equal(hwport.multiply(t, t).numpy(), x * x)
    m = _sample("int64", (300, 500), 5)
    tm = hwport.to_tensor(m, place=P)
    np.testing.assert_array_equal(hwport.add(tm.T, tm.T).numpy(), m.T + m.T)
    np.testing.assert_array_equal(hwport.sum(tm, axis=[0]).numpy(), m.sum(axis=0))


@gpu
@needs_gpu
def test_gpu_device_properties_and_memory_accounting(h):
    props = h.properties(0)
    assert dh.ffi.string(props.vendor) == b"NVIDIA"
    assert props.total_memory > 1 << 30 and props.compute_units > 0
    assert dh.ffi.string(props.driver_version).startswith(b"driver ")
    assert dh.ffi.string(props.architecture).startswith(b"sm_")
    base = h.stats(0)
    a = dh.DeviceArray(h, np.arange(1000, dtype=np.float32))
    assert h.stats(0)["bytes_in_use"] == base["bytes_in_use"] + 4000
    np.testing.assert_array_equal(a.read(), np.arange(1000, dtype=np.float32))
    a.free()
    assert h.stats(0)["bytes_in_use"] == base["bytes_in_use"]
    h.expect_error(h.mem.deallocate(0, a.buffer), dh.INVALID_ARGUMENT, "not a live buffer")


@gpu
@needs_gpu
def test_gpu_streams_and_events_order_work(h):
    x = (np.arange(1 << 20) % 97 / 10).astype(np.float32)
    a, b = dh.DeviceArray(h, x), dh.DeviceArray.empty(h, x.shape, x.dtype)
    s1, s2 = h.create_stream(), h.create_stream()
    ev = h.create_event()
    reg_view = a.view()
    assert h.call_kernel("exp", DT["float32"], [reg_view], [b.view()], stream=s1) == dh.OK
    h.check(h.streams.record_event(0, s1, ev), "record_event")
    h.check(h.streams.stream_wait_event(0, s2, ev), "stream_wait_event")
    c = dh.DeviceArray.empty(h, x.shape, x.dtype)
    assert h.call_kernel("add", DT["float32"], [b.view(), b.view()], [c.view()], stream=s2) == 0
    h.sync_stream(s2)
    assert h.streams.query_stream(0, s2) == dh.OK
    np.testing.assert_allclose(c.read(), 2 * np.exp(x), rtol=1e-6)
    h.check(h.streams.destroy_event(0, ev), "destroy_event")
    h.destroy_stream(s1)
    h.destroy_stream(s2)
    for arr in (a, b, c):
        arr.free()


def _busy_stream(h, a, b, stream, launches: int = 40) -> None:
    """Keeps `stream` busy: `launches` exp kernels a -> b (float32) enqueued back to back."""
    for _ in range(launches):
        assert h.call_kernel("exp", DT["float32"], [a.view()], [b.view()], stream=stream) == 0


@gpu
@needs_gpu
def test_gpu_a_kernel_after_a_not_ready_query_succeeds(h):
    """A query that finds work pending (cudaErrorNotReady) must not make the next kernel on
    that thread report a launch error (the kernels read launch errors with cudaGetLastError)."""
    x = np.full(1 << 26, 0.5, np.float32)  # each exp moves 512 MiB: longer than a launch
    a, b, c = (dh.DeviceArray(h, x) for _ in range(3))
    s = h.create_stream()
    ev = h.create_event()
    seen_not_ready = False
    for _ in range(5):
        _busy_stream(h, a, b, s)
        h.record_event(s, ev)
        ready = h.query_stream(s), h.query_event(ev)
        seen_not_ready |= dh.NOT_READY in ready
        for stream in (s, dh.NULL):
            status = h.call_kernel("add", DT["float32"], [a.view(), a.view()], [c.view()],
                                   stream=stream)
            assert status == dh.OK, h.last_error()
        h.sync_stream(s)
        if seen_not_ready:
            break
    assert seen_not_ready, "40 kernels over 256 MiB never left the stream busy"
    np.testing.assert_array_equal(c.read(), x + x)
    h.destroy_event(ev)
    h.destroy_stream(s)
    for arr in (a, b, c):
        arr.free()


@gpu
@needs_gpu
def test_gpu_synchronous_copies_and_memset_order_against_streams(h):
    """The NULL stream is synchronous: a copy_h2d from pageable memory has landed when it
    returns (a kernel on a non-blocking stream sees all of it), and a memset on the NULL stream
    runs after the work already enqueued on the device's streams."""
    n = 1 << 24
    s = h.create_stream()
    src = dh.DeviceArray(h, np.full(n, 0.5, np.float32))
    dst = dh.DeviceArray.empty(h, (n,), np.float32)
    for k in range(3):
        x = (np.arange(n, dtype=np.float32) + k) % 1000
        h.h2d(src.buffer, x)
        assert h.call_kernel("copy", DT["float32"], [src.view()], [dst.view()], stream=s) == 0
        h.sync_stream(s)
        np.testing.assert_array_equal(dst.read(), x)
        _busy_stream(h, src, dst, s)
        h.memset(dst.buffer, 0, n * 4)
        got = dst.read()
        assert not got.any(), f"{np.count_nonzero(got)} elements written after the memset"
    h.destroy_stream(s)
    src.free()
    dst.free()


@gpu
@needs_gpu
def test_gpu_argsort_and_split_reductions_without_host_workspace(h):
    """The direct host gives no workspace (nor does the runtime for a block inside a segment):
    argsort and the chunked reductions take stream-ordered scratch memory instead."""
    rng = np.random.default_rng(12)
    x = np.round(rng.standard_normal((3, 5000)) * 4).astype(np.float32)  # many ties
    a, out = dh.DeviceArray(h, x), dh.DeviceArray.empty(h, x.shape, np.int64)
    s = h.create_stream()
    for stream in (dh.NULL, s):
        for desc in (0, 1):
            status = h.call_kernel("argsort", DT["float32"], [a.view()], [out.view()],
                                   {"axis": 1, "descending": bool(desc)}, stream=stream)
            assert status == dh.OK, h.last_error()
            h.sync_stream(s)
            want = np.argsort(-x if desc else x, axis=1, kind="stable")
            np.testing.assert_array_equal(out.read(), want)
    v = rng.standard_normal(1 << 22).astype(np.float32)  # one output, a long row: chunks
    av, sv = dh.DeviceArray(h, v), dh.DeviceArray.empty(h, (), np.float32)
    im = dh.DeviceArray.empty(h, (), np.int64)
    assert h.call_kernel("sum", DT["float32"], [av.view()], [sv.view()], {"axis": [0]},
                         stream=s) == dh.OK, h.last_error()
    assert h.call_kernel("argmax", DT["float32"], [av.view()], [im.view()], {"axis": 0},
                         stream=s) == dh.OK, h.last_error()
    h.sync_stream(s)
    np.testing.assert_allclose(sv.read(), v.astype(np.float64).sum(), rtol=1e-6, atol=1e-3)
    assert im.read() == np.argmax(v)
    h.destroy_stream(s)
    for arr in (a, out, av, sv, im):
        arr.free()


@gpu
@needs_gpu
def test_gpu_tiled_matmul_matches_numpy():
    proc = run_isolated("""
        import numpy as np, hwport
        rng = np.random.default_rng(0)
        for dt in ("float32", "float64", "int32", "int64"):
            x = (rng.standard_normal((3, 70, 45)) * 4).astype(dt)
            y = (rng.standard_normal((3, 45, 33)) * 4).astype(dt)
            got = hwport.matmul(hwport.to_tensor(x, place="custom:cuda"),
                                hwport.to_tensor(y, place="custom:cuda")).numpy()
            np.testing.assert_allclose(got, x @ y, rtol=1e-5, atol=1e-4)
        print("ok")
    """, env={"HWPORT_CUDA_MATMUL": "tiled"})
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


@gpu
@needs_gpu
def test_gpu_cupy_cross_check():
    cp = pytest.importorskip("cupy")
    x = _sample("float32", (64, 257), 6)
    y = _sample("float32", (257, 31), 7)
    tx, ty = hwport.to_tensor(x, place=P), hwport.to_tensor(y, place=P)
    cx, cy = cp.asarray(x), cp.asarray(y)
    np.testing.assert_allclose(hwport.exp(tx).numpy(), cp.exp(cx).get(), rtol=2e-6)
    np.testing.assert_allclose(hwport.sum(tx, axis=1).numpy(), cx.sum(axis=1).get(),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(hwport.matmul(tx, ty).numpy(), (cx @ cy).get(), rtol=1e-4,
                               atol=1e-4)
    e = cp.exp(cx - cx.max(axis=1, keepdims=True))
    np.testing.assert_allclose(hwport.softmax(tx, axis=1).numpy(),
                               (e / e.sum(axis=1, keepdims=True)).get(), rtol=1e-5, atol=1e-7)


# ---- ABI 1.1: DLPack exchange with CuPy -----------------------------------------------------

def _ptr(cdata) -> int:
    return int(dh.ffi.cast("uintptr_t", cdata))


@gpu
@needs_gpu
def test_gpu_abi_1_1_properties_match_cupy(h):
    cp = pytest.importorskip("cupy")
    ffi, lib = dh.ffi, h.lib
    ordinal = 0  # the plugin's device 0 is CUDA device 0 (no device was skipped)
    dev = cp.cuda.Device(ordinal)
    attrs = dev.attributes
    cuda_props = cp.cuda.runtime.getDeviceProperties(ordinal)
    major, minor = cuda_props["major"], cuda_props["minor"]
    assert dev.compute_capability == f"{major}{minor}"
    p = h.properties(0)
    assert ffi.string(p.architecture).decode() == f"sm_{major}{minor}"
    assert (p.architecture_major, p.architecture_minor) == (major, minor)
    assert p.simd_width == attrs["WarpSize"] == 32
    assert p.compute_units == attrs["MultiProcessorCount"]
    assert p.max_threads_per_compute_unit == attrs["MaxThreadsPerMultiProcessor"]
    assert p.max_work_group_size == attrs["MaxThreadsPerBlock"]
    assert p.max_allocation == p.total_memory == cuda_props["totalGlobalMem"]
    assert bool(p.flags & lib.HWP_DEVICE_FLOAT16_ARITHMETIC) == (major * 10 + minor >= 53)
    assert bool(p.flags & lib.HWP_DEVICE_BFLOAT16_ARITHMETIC) == (major >= 8)
    assert not p.flags & lib.HWP_DEVICE_HOST_MEMORY
    assert (p.dlpack_device_type, p.dlpack_device_id) == (lib.HWP_DLPACK_CUDA, ordinal)


def _wrap(h, address: int, nbytes: int):
    out = dh.ffi.new("HWP_Buffer *")
    h.check(h.mem.wrap_device_memory(0, dh.ffi.cast("void *", address), nbytes, out),
            "wrap_device_memory")
    return out[0]


@gpu
@needs_gpu
def test_gpu_wrap_device_memory_round_trip(h):
    cp = pytest.importorskip("cupy")
    ffi, INVALID = dh.ffi, dh.INVALID_ARGUMENT
    x = cp.arange(1000, dtype=cp.float32) * 3
    y = cp.zeros(1000, dtype=cp.float32)
    counted = ("bytes_in_use", "num_allocs", "num_frees")
    base = {k: h.stats(0)[k] for k in counted}
    xb, yb = _wrap(h, x.data.ptr, x.nbytes), _wrap(h, y.data.ptr, y.nbytes)
    assert _ptr(xb) == x.data.ptr
    assert {k: h.stats(0)[k] for k in counted} == base  # wrapped memory is not the plugin's
    np.testing.assert_array_equal(h.read(xb, np.float32, (1000,)), x.get())
    addr = ffi.new("void **")
    h.check(h.mem.device_address(0, xb, 40, addr), "device_address")
    assert _ptr(addr[0]) == x.data.ptr + 40
    h.check(h.mem.device_address(0, xb, x.nbytes, addr), "device_address")  # one past the end
    h.expect_error(h.mem.device_address(0, xb, x.nbytes + 1, addr), INVALID, "exceeds")
    # A kernel reads and writes wrapped memory; CuPy sees the result in place.
    xv = dh.View(xb, 0, DT["float32"], (1000,), None)
    yv = dh.View(yb, 0, DT["float32"], (1000,), None)
    assert h.call_kernel("add", DT["float32"], [xv, xv], [yv]) == dh.OK
    np.testing.assert_array_equal(y.get(), 2 * x.get())
    h.expect_error(h.mem.copy_h2d(0, xb, 3996, ffi.from_buffer(bytes(8)), 8), INVALID,
                   "exceeds")
    # Never freed here; released once per wrap.
    h.expect_error(h.mem.deallocate(0, xb), INVALID, "release_device_buffer")
    again = _wrap(h, x.data.ptr, 400)  # the same address twice: counted
    assert _ptr(again) == _ptr(xb)
    h.check(h.mem.release_device_buffer(0, xb), "release_device_buffer")
    np.testing.assert_array_equal(h.read(xb, np.float32, (1000,)), x.get())  # one wrap left
    h.check(h.mem.release_device_buffer(0, xb), "release_device_buffer")
    h.expect_error(h.mem.release_device_buffer(0, xb), INVALID, "not a wrapped buffer")
    h.expect_error(h.mem.copy_d2h(0, ffi.from_buffer(bytearray(4)), xb, 0, 4), INVALID,
                   "not a live buffer")
    h.check(h.mem.release_device_buffer(0, yb), "release_device_buffer")
    # The plugin's own buffer coming back (exported, re-imported): counted on the same entry.
    a = dh.DeviceArray(h, np.arange(10, dtype=np.float32))
    h.expect_error(h.mem.release_device_buffer(0, a.buffer), INVALID, "allocated, not wrapped")
    h.check(h.mem.device_address(0, a.buffer, 0, addr), "device_address")
    h.expect_error(h.mem.wrap_device_memory(0, addr[0], 44, ffi.new("HWP_Buffer *")), INVALID,
                   "exceed")
    assert _ptr(_wrap(h, _ptr(addr[0]), 40)) == _ptr(a.buffer)
    h.expect_error(h.mem.deallocate(0, a.buffer), INVALID, "still wrapped")
    h.check(h.mem.release_device_buffer(0, a.buffer), "release_device_buffer")
    a.free()
    # Host, managed and NULL memory are refused.
    host = np.zeros(16, np.float32)
    out = ffi.new("HWP_Buffer *")
    h.expect_error(h.mem.wrap_device_memory(0, ffi.cast("void *", host.ctypes.data), 64, out),
                   INVALID, "not device memory")
    managed = cp.cuda.malloc_managed(1024)
    h.expect_error(h.mem.wrap_device_memory(0, ffi.cast("void *", managed.ptr), 1024, out),
                   INVALID, "managed")
    h.expect_error(h.mem.wrap_device_memory(0, dh.NULL, 64, out), INVALID, "NULL")
    h.expect_error(h.mem.wrap_device_memory(0, ffi.cast("void *", x.data.ptr), 0, out),
                   INVALID, "nbytes")
    assert out[0] == dh.NULL
    assert h.stats(0)["bytes_in_use"] == base["bytes_in_use"]


@gpu
@needs_gpu
def test_gpu_native_stream_wait_orders_cupy_after_hwport(h):
    cp = pytest.importorskip("cupy")
    ffi = dh.ffi
    native = ffi.new("uintptr_t *")
    h.check(h.streams.native_stream(0, dh.NULL, native), "native_stream")
    assert native[0] == 1  # the NULL stream's work runs on the legacy default stream
    s = h.create_stream()
    h.check(h.streams.native_stream(0, s, native), "native_stream")
    assert native[0] not in (0, 1, 2)
    h.expect_error(h.streams.native_stream_wait(0, 0, s), dh.INVALID_ARGUMENT, "ambiguous")
    n, rounds = 1 << 24, 64
    x = (np.arange(n) % 7 / 7).astype(np.float32)
    a = dh.DeviceArray(h, x)
    y = cp.zeros(n, dtype=cp.float32)
    yb = _wrap(h, y.data.ptr, y.nbytes)
    yv = dh.View(yb, 0, DT["float32"], (n,), None)
    # Long work on the hwport stream: y = exp(x) * 2**rounds, one pass at a time.
    assert h.call_kernel("exp", DT["float32"], [a.view()], [yv], stream=s) == dh.OK
    for _ in range(rounds):
        assert h.call_kernel("add", DT["float32"], [yv, yv], [yv], stream=s) == dh.OK
    theirs = cp.cuda.Stream(non_blocking=True)
    h.check(h.streams.native_stream_wait(0, theirs.ptr, s), "native_stream_wait")
    with theirs:
        z = y * 1  # runs on `theirs`, after the hwport stream's work
    theirs.synchronize()
    np.testing.assert_allclose(z.get(), np.exp(x) * np.float32(2.0**rounds), rtol=1e-5)
    h.check(h.streams.native_stream_wait(0, 2, s), "native_stream_wait")  # per-thread default
    h.check(h.streams.native_stream_wait(0, 1, dh.NULL), "native_stream_wait")
    h.sync_stream(s)
    h.check(h.mem.release_device_buffer(0, yb), "release_device_buffer")
    h.destroy_stream(s)
    a.free()


# ---- DLPack through the Python API (hwport.from_dlpack / __dlpack__) --------------------------

def _capsule_data(t) -> tuple[int, int, int]:
    """(data + byte_offset, dtype code, dtype bits) of the unversioned DLPack capsule t exports."""
    import ctypes

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.c_void_p),
                    ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    capsule = t.__dlpack__()
    dl = DLTensor.from_address(get(capsule, b"dltensor"))
    return (dl.data or 0) + dl.byte_offset, dl.code, dl.bits


@gpu
@needs_gpu
def test_gpu_dlpack_device_properties():
    cp = pytest.importorskip("cupy")
    props = hwport.device.get_device_properties(P)
    major, minor = (int(v) for v in divmod(int(cp.cuda.Device(0).compute_capability), 10))
    assert props["dlpack_device"] == (2, 0)
    assert props["architecture"] == f"sm_{major}{minor}"
    assert props["architecture_version"] == (major, minor)
    assert props["simd_width"] == 32
    assert props["max_allocation"] == props["total_memory"]
    assert props["bfloat16_arithmetic"] == (major >= 8)


@gpu
@needs_gpu
def test_gpu_dlpack_from_cupy():
    cp = pytest.importorskip("cupy")
    c = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    t = hwport.from_dlpack(c)
    assert str(t.place).startswith(P)
    np.testing.assert_array_equal(t.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    same = hwport.from_dlpack(c, place=P)  # the producer's device: still zero-copy
    copied = hwport.from_dlpack(c, place="cpu")  # another device: a copy
    c[1, 2] = 100
    cp.cuda.get_current_stream().synchronize()
    assert t.numpy()[1, 2] == 100 and same.numpy()[1, 2] == 100
    assert copied.numpy()[1, 2] == 6
    assert np.array_equal(hwport.add(t, t).numpy(), 2 * c.get())
    # Strided views of CuPy arrays import with their strides.
    m = cp.arange(35, dtype=cp.int64).reshape(5, 7)
    for view in (m.T, m[:, ::2], m[1:, 3]):
        np.testing.assert_array_equal(hwport.from_dlpack(view).numpy(), view.get())


@gpu
@needs_gpu
def test_gpu_dlpack_to_cupy():
    cp = pytest.importorskip("cupy")
    t = hwport.to_tensor(np.arange(6, dtype=np.float32), place=P)
    assert t.__dlpack_device__() == (2, 0)
    c = cp.from_dlpack(t)
    np.testing.assert_array_equal(c.get(), np.arange(6, dtype=np.float32))
    assert c.data.ptr == _capsule_data(t)[0]  # shared, not copied
    c[3] = 42
    cp.cuda.get_current_stream().synchronize()
    assert t.numpy()[3] == 42
    m = np.arange(35, dtype=np.float32).reshape(5, 7)
    tm = hwport.to_tensor(m, place=P)
    for got, want in ((tm.T, m.T), (tm[:, ::2], m[:, ::2]), (tm[2:, 1:4], m[2:, 1:4])):
        np.testing.assert_array_equal(cp.from_dlpack(got).get(), want)


@gpu
@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "bool"])
def test_gpu_dlpack_dtypes(dtype):
    cp = pytest.importorskip("cupy")
    x = _sample(dtype, (4, 9), 11)
    t = hwport.to_tensor(x, place=P)
    code, bits = {"float16": (2, 16), "bfloat16": (4, 16), "bool": (6, 8)}[dtype]
    assert _capsule_data(t)[1:] == (code, bits)
    back = hwport.from_dlpack(t)  # hwport's own export comes back zero-copy
    assert back.dtype == t.dtype
    np.testing.assert_array_equal(back.numpy(), x)
    if dtype == "bfloat16":
        return  # CuPy has no bfloat16
    c = cp.from_dlpack(t.T)
    np.testing.assert_array_equal(c.get(), x.T)
    np.testing.assert_array_equal(hwport.from_dlpack(cp.asarray(x)[:, ::3]).numpy(), x[:, ::3])


@gpu
@needs_gpu
def test_gpu_dlpack_streams_with_pending_work():
    """The protocol orders the consumer after the producer's pending work on either side:
    a CuPy producer busy on a non-blocking stream, and an hwport producer busy on an hwport
    stream read by CuPy on another non-blocking stream."""
    cp = pytest.importorskip("cupy")
    from hwport.device import Stream, stream_guard

    n, rounds = 1 << 24, 50
    busy = cp.cuda.Stream(non_blocking=True)
    with busy:
        c = cp.zeros(n, dtype=cp.float32)
        for _ in range(rounds):
            c += 1
        hs = Stream(P)
        with stream_guard(hs):
            t = hwport.from_dlpack(c)
            u = hwport.add(t, t)  # on the hwport stream: must see all `rounds` additions
    np.testing.assert_array_equal(u.numpy(), np.full(n, 2.0 * rounds, np.float32))
    reader = cp.cuda.Stream(non_blocking=True)
    with stream_guard(hs):  # exported from the stream that produced it (as torch does)
        v = hwport.exp(hwport.to_tensor(np.zeros(n, np.float32), place=P))
        for _ in range(rounds):
            v = hwport.add(v, v)
        with reader:
            got = cp.from_dlpack(v) * 1
    reader.synchronize()
    np.testing.assert_array_equal(got.get(), np.full(n, 2.0**rounds, np.float32))


@gpu
@needs_gpu
def test_gpu_dlpack_with_torch():
    """The same protocol with PyTorch on CUDA, both ways: shared memory, strides kept."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    a = torch.arange(20, dtype=torch.float32, device="cuda").reshape(4, 5)
    t = hwport.from_dlpack(a.T)
    assert t.shape == (5, 4) and t.strides == (1, 5)
    a[2, 3] = -1
    torch.cuda.synchronize()
    assert t.numpy()[3, 2] == -1  # shared
    u = hwport.to_tensor(np.arange(12, dtype=np.float32).reshape(3, 4), place=P)
    b = torch.from_dlpack(u[:, 1:])
    assert b.device.type == "cuda" and tuple(b.shape) == (3, 3) and b.stride() == (4, 1)
    np.testing.assert_array_equal(b.cpu().numpy(), np.arange(12, dtype=np.float32).reshape(
        3, 4)[:, 1:])
    b.mul_(2)
    torch.cuda.synchronize()
    assert u.numpy()[2, 3] == 22  # torch wrote into hwport's memory


def test_gpu_marker_is_registered():
    import tomllib

    conf = tomllib.loads((REPO / "pyproject.toml").read_text())
    markers = conf["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("gpu:") for m in markers)
    assert os.access(REPO / "scripts" / "gpu_check.sh", os.X_OK)
