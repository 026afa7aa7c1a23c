"""Kernel workspace (HWP_KernelContext.allocate_workspace): the ABI hands a kernel a bare
buffer, so the runtime must give it a caching-allocator block that begins its plugin buffer,
never refuse because the cached block it found sits inside a segment. The OpenCL reference
plugin asks for one when a reduction has too few rows to fill the device (a second pass over
partial results); without it, it silently runs one work-group per row."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from tests.conftest import run_isolated

P = "custom:opencl"
pytestmark = pytest.mark.skipif(
    "opencl" not in hwport.device.get_all_custom_device_type(), reason="no OpenCL plugin")


def test_a_workspace_is_granted_even_when_the_cached_segment_is_partly_used():
    # A fresh process: the allocator's cache starts empty, so the counts below are exact.
    proc = run_isolated("""
        import numpy as np, hwport
        P = "custom:opencl"
        x_np = np.random.default_rng(0).standard_normal((1, 1 << 20)).astype(np.float32)
        x = hwport.to_tensor(x_np, place=P)
        keep = hwport.to_tensor(np.ones(3, np.float32), place=P)  # a small block at offset 0
        device_allocs = []
        for _ in range(3):
            before = hwport.device.memory_stats(P)["num_device_allocs"]
            y = hwport.sum(x, axis=1)
            device_allocs.append(hwport.device.memory_stats(P)["num_device_allocs"] - before)
            np.testing.assert_allclose(y.numpy(), x_np.sum(axis=1, dtype=np.float64), rtol=1e-5)
        # The first call's workspace could not come from inside the used small segment: it
        # gets a segment of its own; afterwards that block (offset 0, cached) serves again.
        assert device_allocs == [1, 0, 0], device_allocs
        assert keep.numpy().tolist() == [1, 1, 1]
        print("ok")
    """)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr


def test_segment_start_blocks_leave_ordinary_allocations_alone():
    stats0 = hwport.device.memory_stats(P)
    ts = [hwport.to_tensor(np.full(100, i, np.float32), place=P) for i in range(8)]
    stats1 = hwport.device.memory_stats(P)
    # Small tensors still share segments: at most one new one for all eight.
    assert stats1["num_device_allocs"] - stats0["num_device_allocs"] <= 1
    assert [t.numpy()[0] for t in ts] == list(range(8))
