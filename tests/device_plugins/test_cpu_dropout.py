"""The CPU plugin's native dropout kernel (device_plugins/cpu/kernels_random.c) against the
composite's decomposition (phi_ops/decompositions.py dropout, the ops.yaml op's definition):
the same bytes for every float dtype, p in [0, 1], training on and off, seeds, offsets, views,
NaN/inf/-0 inputs; and the kernel is what a call runs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import hwport
from hwport.phi_ops import decompositions
from hwport.runtime import _core
from tests.pipeline_hooks import deferred_calls

PLACE = "custom:cpu"
F = hwport.nn.functional


def _x(dtype: str, shape=(5, 7)) -> hwport.Tensor:
    rng = np.random.default_rng(11)
    v = rng.standard_normal(shape).astype(np.float64) * 3
    v.flat[:4] = [np.nan, np.inf, -0.0, -np.inf]
    return hwport.cast(hwport.to_tensor(v, place=PLACE), dtype)


def _bytes(t: hwport.Tensor) -> bytes:
    return t.numpy().tobytes()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_the_kernel_gives_the_decompositions_bytes(dtype):
    assert _core.has_kernel("dropout", PLACE, dtype)
    x = _x(dtype)
    for xs, p, training, seed, offset in itertools.product(
            (x, hwport.transpose(x, [1, 0])), (0.0, 0.1, 0.5, 0.999, 1.0),
            (True, False), (0, 7, 2**62), (0, 5, 2**40)):
        with deferred_calls() as deferred:
            got = F.dropout(xs, p, training=training, seed=seed, offset=offset)
        assert deferred == []  # the native kernel, from C++
        want = decompositions.dropout(xs, p=p, training=training, seed=seed, offset=offset)
        assert (got.dtype, list(got.shape)) == (want.dtype, list(want.shape))
        assert _bytes(got) == _bytes(want), (dtype, p, training, seed, offset)


def test_about_p_of_the_elements_are_dropped_and_the_rest_scaled():
    x = hwport.ones([100000], "float32", PLACE)
    y = F.dropout(x, 0.3, seed=3).numpy()
    dropped = float((y == 0).mean())
    assert abs(dropped - 0.3) < 0.01
    np.testing.assert_allclose(y[y != 0], np.float32(1 / 0.7), rtol=0)
    # the same (seed, offset) gives the same mask; another seed another one
    assert _bytes(F.dropout(x, 0.3, seed=3)) == y.tobytes()
    assert _bytes(F.dropout(x, 0.3, seed=4)) != y.tobytes()
