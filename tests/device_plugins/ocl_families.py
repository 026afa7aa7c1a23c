"""Shared setup of the OpenCL kernel-family tests (test_opencl_arg_scan.py, test_opencl_matmul.py,
test_opencl_nn.py): skip unless the plugin is built, sees a device and logged the family's
registration line; dtype helpers; the no-fallback check; a DirectHost over the plugin."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import hwport
import hwport.runtime as rt
from hwport.device import Stream, stream_guard
from phi_ops.reference import reference
from phi_ops.tolerance import assert_close
from tests.device_plugins.opencl_env import (
    PLUGIN_SO,
    P,
    registration_line,
    require_opencl_device,
)

INTS = ("int8", "uint8", "int16", "int32", "int64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
ALL = ("bool", *INTS, *FLOATS)


def require_family(what: str) -> str:
    """The plugin's "opencl: registered N <what> kernels (float64: ..)" line; skips the calling
    module when the plugin is not built, did not load, sees no device or lacks the family."""
    require_opencl_device()
    line = registration_line(what)
    if line is not None:
        return line
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


def strided_views(a: np.ndarray, t) -> list:
    """(numpy result, tensor view) pairs of [6, 9, 5] `a` and its device copy `t`: transposed,
    flipped (negative strides) and stepped with an offset; the numpy side made contiguous."""
    views = [
        (np.transpose(a, (2, 0, 1)), hwport.ops.transpose(t, perm=[2, 0, 1])),
        (a[::-1, :, ::-1], hwport.ops.flip(t, axis=[0, 2])),
        (a[1:, 1::2, :], hwport.ops.slice(t, axes=[0, 1], starts=[1, 1], ends=[6, 9],
                                          strides=[1, 2])),
    ]
    return [(np.ascontiguousarray(v), tv) for v, tv in views]


def check_on_stream(calls) -> None:
    """Runs each (op, fn, a, attrs) of `calls` as fn(dev(a)) inside a non-default stream, then
    (after synchronizing) compares with the oracle's op(a, attrs)."""
    s = Stream(P)
    with stream_guard(s):
        outs = [(op, fn(dev(a)), a, attrs) for op, fn, a, attrs in calls]
    s.synchronize()
    for op, o, a, attrs in outs:
        assert_close(op, str(a.dtype), o.numpy(), np.asarray(reference(op, [a], attrs)))


@functools.cache
def direct_host():
    """A DirectHost over a private copy of the plugin (C ABI calls without the runtime), one
    per test process."""
    pytest.importorskip("cffi")
    from hwport.conformance.direct_host import DirectHost

    h = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_DEVICES": None,
                                   "HWPORT_OPENCL_MEMORY_LIMIT": None})
    assert h.init_status == 0
    return h
