"""Shared setup of the OpenCL kernel-family tests (test_opencl_arg_scan.py, test_opencl_matmul.py,
test_opencl_nn.py): skip unless the plugin is built, sees a device and logged the family's
registration line; dtype helpers; the no-fallback check; a DirectHost over the plugin."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
import hwport.runtime as rt
from tests.conftest import INSTALL_ROOT

PLUGIN_SO = INSTALL_ROOT / "device_plugins" / "opencl" / "libhwport_opencl.so"
P = "custom:opencl"
INTS = ("int8", "uint8", "int16", "int32", "int64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
ALL = ("bool", *INTS, *FLOATS)


def require_family(what: str) -> str:
    """The plugin's "opencl: registered N <what> kernels (float64: ..)" line; skips the calling
    module when the plugin is not built, did not load, sees no device or lacks the family."""
    if not PLUGIN_SO.exists():
        pytest.skip(f"the OpenCL plugin is not built ({PLUGIN_SO} missing)",
                    allow_module_level=True)
    found = [p for p in rt.plugins() if p["device_type"] == "opencl"]
    if not found:
        pytest.skip(f"the OpenCL plugin did not load: {rt.plugin_errors()}",
                    allow_module_level=True)
    if found[0]["device_count"] == 0:
        pytest.skip("the OpenCL plugin sees no device", allow_module_level=True)
    for (_t, _lvl, m) in rt._core.plugin_log():
        if str(m).startswith("opencl: registered") and f" {what} kernels" in str(m):
            return str(m)
    pytest.skip(f"the OpenCL plugin registers no {what} kernels", allow_module_level=True)
    raise AssertionError("unreachable")


def registered(line: str, dtypes) -> list[str]:
    """The dtypes the plugin registers: float64 only with "float64: yes" in its line."""
    return [d for d in dtypes if d != "float64" or "float64: yes" in line]


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(np.bool_ if name == "bool" else name)


def dev(a: np.ndarray):
    return hwport.to_tensor(a, place=P)


def assert_no_fallback(ops, run) -> None:
    """Runs `run()` and checks that none of `ops` went through the CPU fallback on opencl."""
    rt.reset_fallback_stats()
    run()
    stats = rt.fallback_stats()
    leaked = {k: v for k, v in stats.items() if k[1] == "opencl" and k[0] in ops}
    assert not leaked, leaked


def direct_host():
    """A DirectHost over a private copy of the plugin (C ABI calls without the runtime)."""
    pytest.importorskip("cffi")
    from direct_host import DirectHost

    h = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_DEVICES": None,
                                   "HWPORT_OPENCL_MEMORY_LIMIT": None})
    assert h.init_status == 0
    return h
