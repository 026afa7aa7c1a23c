"""The OpenCL plugin, driven directly through its C ABI, rejects views whose element count,
byte strides or byte extent overflow int64 (the same cases as the CPU plugin's, in
tests/runtime/test_sizes.py: a child process each, so a regression fails instead of crashing)."""

from __future__ import annotations

from tests.device_plugins.opencl_env import PLUGIN_SO, require_opencl_device
from tests.runtime.test_sizes import check_direct

require_opencl_device()


def test_opencl_plugin_rejects_views_whose_sizes_overflow():
    check_direct(PLUGIN_SO, {"HWPORT_OPENCL_DEVICES": None, "HWPORT_OPENCL_MEMORY_LIMIT": None})
