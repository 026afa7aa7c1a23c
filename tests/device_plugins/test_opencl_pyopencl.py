"""An independent view of the OpenCL devices through pyopencl (its own bindings over the same ICD
loader): every device the hwport OpenCL plugin exposes is one pyopencl sees, with the same name,
vendor, driver version, global memory size (or the plugin's HWPORT_OPENCL_MEMORY_LIMIT cap),
compute units and maximum work-group size; and results computed by pyopencl on that device equal
hwport's on custom:opencl for the same inputs (an elementwise product, a gather). Skipped without
pyopencl or when the plugin is not built or sees no device."""

from __future__ import annotations

import os

import numpy as np
import pytest
from opencl_env import require_opencl_device

import hwport
from hwport.device import get_device_properties

cl = pytest.importorskip("pyopencl")
cl_array = pytest.importorskip("pyopencl.array")

COUNT = require_opencl_device()["device_count"]


def _pyopencl_devices() -> list:
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:  # no ICD at all: hwport would have seen no device either
        pytest.fail(f"pyopencl sees no platform while hwport sees {COUNT} device(s): {e}")
    return [d for p in platforms for d in p.get_devices()]


def _match(index: int):
    """(hwport properties, the pyopencl device with the same name and vendor)."""
    props = get_device_properties(f"custom:opencl:{index}")
    same = [d for d in _pyopencl_devices()
            if d.name.strip() == props["name"] and d.vendor.strip() == props["vendor"]]
    assert same, (props, [(d.name, d.vendor) for d in _pyopencl_devices()])
    return props, same[0]


@pytest.mark.parametrize("index", range(COUNT))
def test_properties_match_pyopencl(index):
    props, dev = _match(index)
    assert props["driver_version"] == dev.driver_version.strip()
    assert props["max_work_group_size"] == dev.max_work_group_size
    assert props["compute_units"] == dev.max_compute_units
    if os.environ.get("HWPORT_OPENCL_MEMORY_LIMIT"):
        assert 0 < props["total_memory"] <= dev.global_mem_size
    else:
        assert props["total_memory"] == dev.global_mem_size
    assert props["host_memory"] is False


def test_results_match_pyopencl():
    _props, dev = _match(0)
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(100_003).astype(np.float32)
    b = rng.standard_normal(100_003).astype(np.float32)
    ga, gb = cl_array.to_device(queue, a), cl_array.to_device(queue, b)
    want = (ga * gb).get()
    got = hwport.multiply(hwport.to_tensor(a, place="custom:opencl:0"),
                          hwport.to_tensor(b, place="custom:opencl:0")).numpy()
    assert got.tobytes() == want.tobytes()  # one correctly rounded product each
    idx = rng.integers(0, a.size, 5000).astype(np.int64)
    want = cl_array.take(ga, cl_array.to_device(queue, idx)).get()
    got = hwport.gather(hwport.to_tensor(a, place="custom:opencl:0"),
                        hwport.to_tensor(idx, place="custom:opencl:0")).numpy()
    assert got.tobytes() == want.tobytes()
    assert not np.array_equal(want, a[:5000])  # the check is not vacuous
