"""The OpenCL plugin's uniform kernel (device_plugins/opencl/kernels_random.c, random.cl):
Philox-4x32-10 bit-exact with phi_ops/philox.py (the numpy oracle, itself checked on the
Random123 known-answer vectors in tests/phi_ops) and with the CPU plugin, for every float dtype:
seeds using both key words and negative ones, offsets that carry into the counter's upper words
and wrap around 2**128, sizes 0 .. 2**20 + 3, any low/high; a launch at offset o + k continues
the stream of one at offset o; attribute errors through the C ABI. Skipped when the plugin is not
built, sees no OpenCL device, or registers no random kernels (no double precision)."""

from __future__ import annotations

import numpy as np
import pytest
from opencl_env import PLUGIN_SO, P, registration_line, require_opencl_device

import hwport
from phi_ops.reference import reference

require_opencl_device()
_LINE = registration_line("random")
if _LINE is None or _LINE.startswith("opencl: registered 0 "):
    pytest.skip(f"the OpenCL plugin registers no random kernels: {_LINE}",
                allow_module_level=True)

FLOATS = ("float16", "bfloat16", "float32", "float64")


def uniform(place: str, shape, **attrs) -> np.ndarray:
    """The uniform op (hwport.ops.uniform: seed 0 is Philox key 0) with the op's attrs (the
    public function names low/high min/max)."""
    public = {{"low": "min", "high": "max"}.get(k, k): v for k, v in attrs.items()}
    t = hwport.ops.uniform(list(shape), place=place, **public)
    assert place.split(":")[-1] in str(t.place), t.place
    return t.numpy()


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def test_registered():
    assert _LINE == "opencl: registered 4 random kernels (float64: yes)", _LINE


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("seed,offset", [
    (0, 0), (42, 7), (-1, 0), (0x1234_5678_9ABC_DEF0, 123), (7, (1 << 32) - 3),
    (7, (1 << 63) - 5), (3, -2), (3, -(1 << 40))])
def test_bit_exact_with_philox_py_and_cpu(dtype, seed, offset):
    for shape, low, high in (((1000,), 0.0, 1.0), ((3, 0), 0.0, 1.0), ((17, 33), -2.5, 4.0),
                             ((1,), 10.0, 10.5)):
        attrs = {"seed": seed, "offset": offset, "dtype": dtype, "low": low, "high": high}
        got = uniform(P, shape, **attrs)
        want = reference("uniform", [], {"shape": list(shape), **attrs})
        assert got.dtype == want.dtype and got.shape == want.shape
        assert bits(got) == bits(want), (dtype, seed, offset, shape)
        assert bits(got) == bits(uniform("cpu", shape, **attrs))
        if got.size:
            g = got.astype(np.float64)
            assert g.min() >= low and g.max() <= high
            assert len(np.unique(g)) > min(got.size, 50) // 2  # not a constant


@pytest.mark.parametrize("dtype", FLOATS)
def test_large_and_continuation(dtype):
    n = (1 << 20) + 3
    full = uniform(P, (n,), seed=99, offset=5, dtype=dtype)
    assert bits(full) == bits(uniform("cpu", (n,), seed=99, offset=5, dtype=dtype))
    tail = uniform(P, (1000,), seed=99, offset=5 + n - 1000, dtype=dtype)
    assert bits(full[-1000:]) == bits(tail)
    f = full.astype(np.float64)
    assert abs(f.mean() - 0.5) < 0.01 and abs(f.var() - 1 / 12) < 0.01


def test_seeds_and_offsets_give_different_streams():
    a = uniform(P, (64,), seed=1, offset=0, dtype="float32")
    assert not np.array_equal(a, uniform(P, (64,), seed=2, offset=0, dtype="float32"))
    assert not np.array_equal(a, uniform(P, (64,), seed=1 + (1 << 32), offset=0, dtype="float32"))
    assert not np.array_equal(a, uniform(P, (64,), seed=1, offset=64, dtype="float32"))


def test_direct_attribute_errors():
    from hwport.conformance.direct_host import (
        DTYPE_CODE,
        INVALID_ARGUMENT,
        OK,
        DeviceArray,
        DirectHost,
    )

    h = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_DEVICES": None})
    assert h.init_status == OK
    out = DeviceArray(h, np.zeros(16, np.float32))
    try:
        st = h.call_kernel("uniform", DTYPE_CODE["float32"], [], [out.view()], attrs={})
        h.expect_error(st, INVALID_ARGUMENT, "uniform", "seed", "missing")
        st = h.call_kernel("uniform", DTYPE_CODE["float32"], [], [out.view()],
                           attrs={"seed": 1, "low": "x"})
        h.expect_error(st, INVALID_ARGUMENT, "uniform", "low")
        st = h.call_kernel("uniform", DTYPE_CODE["float32"], [], [out.view()],
                           attrs={"seed": 5, "offset": 3})
        assert st == OK, h.last_error()
        want = reference("uniform", [], {"shape": [16], "seed": 5, "offset": 3,
                                         "dtype": "float32"})
        assert bits(out.read()) == bits(want)
    finally:
        out.free()
    assert h.stats()["bytes_in_use"] == 0


def test_uniform_no_longer_falls_back():
    import hwport.runtime as rt

    rt.reset_fallback_stats()
    for dtype in FLOATS:
        uniform(P, (5, 3), seed=1, dtype=dtype)
    leaked = {k: v for k, v in rt.fallback_stats().items() if k[1] == "opencl"}
    assert not leaked, leaked
