"""The CUDA plugin's codegen target (device_plugins/cuda/codegen.c: cuda-c++17 through NVRTC and
the driver API, both dlopen'ed at first use), through the C ABI with cffi.

Without a GPU (CI): the plugin loads with its codegen table, and every codegen call on a device
that does not exist is an error value with a message (a log for compile). With a GPU (tests
marked `gpu`, run by scripts/gpu_check.sh): hwcheck's abi::codegen_* cases pass, the fill kernel
writes the expected int64s through a buffer offset on a stream, and serialized bytes load back."""

from __future__ import annotations

import numpy as np
import pytest

from hwport.conformance.codegen_host import (
    FILL_NAME,
    SERIALIZE,
    SIMT,
    SUBGROUP_SHUFFLE,
    BufferArg,
    Codegen,
    fill_expected,
    fill_shape,
    fill_source,
    is_sentinel,
)
from hwport.conformance.direct_host import (
    INVALID_ARGUMENT,
    NOT_SUPPORTED,
    OK,
    DirectHost,
    field_end,
)
from hwport.conformance.model import Target
from tests.conftest import INSTALL_ROOT

PLUGIN_SO = INSTALL_ROOT / "device_plugins" / "cuda" / "libhwport_cuda.so"
DIALECT = "cuda-c++17"

if not PLUGIN_SO.exists():
    pytest.skip("the CUDA plugin is not built (no nvcc)", allow_module_level=True)

HOST = DirectHost(PLUGIN_SO)
NUM_DEVICES = HOST.device_count() if HOST.api is not None else 0
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(NUM_DEVICES == 0, reason="the CUDA plugin reports no device")


def require_target(h: DirectHost) -> None:
    """Skips (with the plugin's reason) where NVRTC or the driver API cannot be loaded."""
    status, _ = Codegen(h).target_info(0)
    if status == NOT_SUPPORTED:
        pytest.skip(f"no CUDA codegen target here: {h.last_error()}")


def test_the_table_is_complete() -> None:
    assert HOST.api is not None, HOST.init_message
    cg = Codegen(HOST)
    assert cg.present and not cg.bare
    assert cg.table.struct_size >= field_end("HWP_CodegenTable", "deserialize")
    assert all(cg.fn(n) is not None for n in ("get_target_info", "compile", "get_function",
                                              "launch", "unload", "serialize", "deserialize"))


def test_calls_on_a_missing_device_are_errors() -> None:
    cg = Codegen(HOST)
    status, info = cg.target_info(NUM_DEVICES)
    assert status == INVALID_ARGUMENT and info is None
    assert "out of range" in HOST.last_error()
    status, module, log = cg.compile(NUM_DEVICES, DIALECT, "extern \"C\" __global__ void k() {}")
    assert status == INVALID_ARGUMENT and is_sentinel(module)
    assert log and "out of range" in log
    status, module = cg.deserialize(NUM_DEVICES, DIALECT, b"HWPCUG01" + bytes(32))
    assert status == INVALID_ARGUMENT and is_sentinel(module)


@gpu
@needs_gpu
def test_hwcheck_codegen_cases_pass() -> None:
    from hwport.conformance.model import Case
    from hwport.conformance.suites import abi_codegen
    from hwport.conformance.worker import run_case

    require_target(HOST)
    states: dict = {}
    results = {n: run_case(Target("cuda"), Case("abi", n), states) for n in abi_codegen.CHECKS}
    bad = {n: (str(r.status), r.message) for n, r in results.items() if str(r.status) != "PASS"}
    assert not bad, bad


@gpu
@needs_gpu
def test_fill_on_a_stream_and_serialize_round_trip() -> None:
    h = DirectHost(PLUGIN_SO)
    require_target(h)
    cg = Codegen(h)
    status, info = cg.target_info(0)
    assert status == OK, h.last_error()
    assert info.dialects == [DIALECT] and info.architecture.startswith("sm_")
    assert info.flags & SIMT and info.flags & SUBGROUP_SHUFFLE and info.flags & SERIALIZE
    assert info.simd_width == 32 and info.max_group_size >= 256
    status, module, log = cg.compile(0, DIALECT, fill_source(DIALECT, info), "-O3 -lineinfo")
    assert status == OK, (h.last_error(), log)
    n, pad, base, f = 1000, 40, (1 << 40) + 7, 1.5
    buf = h.alloc(pad + 8 * n)
    stream = h.create_stream()
    try:
        status, fn = cg.get_function(module, FILL_NAME)
        assert status == OK, h.last_error()
        status, data = cg.serialize(module)
        assert status == OK and data[:8] == b"HWPCUG01"
        status, back = cg.deserialize(0, DIALECT, data)
        assert status == OK, h.last_error()
        status, fn2 = cg.get_function(back, FILL_NAME)
        assert status == OK, h.last_error()
        for function in (fn, fn2):
            h.h2d(buf, np.zeros(pad // 8 + n, np.int64))
            grid, group = fill_shape(info, n)
            args = [BufferArg(buf, pad), n, base, f]
            assert cg.launch(0, function, grid, group, args, stream=stream) == OK, h.last_error()
            h.sync_stream(stream)
            got = h.read(buf, np.dtype(np.int64), (n,), offset=pad)
            np.testing.assert_array_equal(got, fill_expected(n, base, f))
        assert cg.unload(back) == OK
    finally:
        h.destroy_stream(stream)
        h.free(buf)
        assert cg.unload(module) == OK
