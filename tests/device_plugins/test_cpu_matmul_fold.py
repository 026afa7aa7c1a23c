"""matmul on custom:cpu with a 2-D right operand broadcast over x's batch dims
(device_plugins/cpu/kernels_linalg.c, mm_fold_batches): when x's rows are evenly spaced across
its batches the product runs as one of B*M rows; other layouts keep one product per batch.
Against numpy for every layout, dtype and path (oneDNN, OpenBLAS, the plugin's own GEMM)."""

from __future__ import annotations

import numpy as np
import pytest

import hwport

PLACE = "custom:cpu"


def _t(a: np.ndarray) -> hwport.Tensor:
    return hwport.to_tensor(a, place=PLACE)


def _views(rng: np.random.Generator, dtype: str):
    def arr(*shape):
        a = rng.standard_normal(shape) * 3
        return a.astype(dtype) if dtype.startswith("float") else np.round(a).astype(dtype)

    yield "3-D contiguous", _t(arr(8, 32, 64)), arr(64, 48)
    yield "4-D contiguous", _t(arr(2, 3, 17, 20)), arr(20, 9)
    yield "one row per batch", _t(arr(6, 1, 33)), arr(33, 70)
    x = _t(arr(16, 5, 24))
    yield "every other batch (strided, evenly spaced)", x[::2], arr(24, 40)
    xt = hwport.transpose(_t(arr(5, 6, 24)), [1, 0, 2])
    yield "batches transposed (not evenly spaced)", xt, arr(24, 30)
    yield "columns transposed", hwport.transpose(_t(arr(4, 24, 40)), [0, 2, 1]), arr(24, 12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("batched_y", [False, True])
def test_broadcast_right_operand_matches_numpy(dtype: str, batched_y: bool) -> None:
    rng = np.random.default_rng(11)
    for what, x, y2 in _views(rng, dtype):
        # [1, .., K, N]: the host broadcasts it, so the kernel sees the batch dims
        y = y2.reshape((1,) * (len(x.shape) - 2) + y2.shape) if batched_y else y2
        got = (x @ _t(y)).numpy()
        ref = x.numpy().astype(np.float64) @ y.astype(np.float64)
        assert got.shape == ref.shape, what
        tol = 1e-4 if dtype == "float32" else 1e-10
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * 10, err_msg=what)


def test_a_batched_right_operand_is_not_folded() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 16, 8)).astype(np.float32)
    y = rng.standard_normal((4, 8, 12)).astype(np.float32)
    np.testing.assert_allclose((_t(x) @ _t(y)).numpy(), x @ y, rtol=1e-5, atol=1e-5)
