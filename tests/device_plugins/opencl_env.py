"""What the OpenCL plugin tests share: the plugin's path, and a module-level skip when it is not
built, did not load or sees no device."""

from __future__ import annotations

import pytest

import hwport.runtime as rt
from tests.conftest import INSTALL_ROOT

PLUGIN_SO = INSTALL_ROOT / "device_plugins" / "opencl" / "libhwport_opencl.so"
P = "custom:opencl"


def require_opencl_device() -> dict:
    """The plugin's entry in hwport.runtime.plugins(); skips the calling module without one."""
    if not PLUGIN_SO.exists():
        pytest.skip(f"the OpenCL plugin is not built ({PLUGIN_SO} missing)",
                    allow_module_level=True)
    found = [p for p in rt.plugins() if p["device_type"] == "opencl"]
    if not found:
        pytest.skip(f"the OpenCL plugin did not load: {rt.plugin_errors()}",
                    allow_module_level=True)
    if found[0]["device_count"] == 0:
        pytest.skip("the OpenCL plugin sees no device", allow_module_level=True)
    return found[0]


def registration_line(family: str) -> str | None:
    """The plugin's "opencl: registered N <family> kernels ..." log line, if any."""
    for (_t, _lvl, m) in rt._core.plugin_log():
        if str(m).startswith("opencl: registered") and f" {family} kernels" in str(m):
            return str(m)
    return None
