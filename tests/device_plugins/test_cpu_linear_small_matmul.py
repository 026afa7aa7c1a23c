"""The CPU plugin's linear kernel (matmul's GEMM, then the bias: the decomposition's bytes in one
launch) and its direct kernel for small batched float products (attention-sized; every layout
of the operands, tile remainders, N past the direct kernel's width) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport.runtime import _core
from phi_ops import decompositions

F = hwport.nn.functional
DTYPES = [np.float32, np.float64]
TOL = {np.float32: 2e-5, np.float64: 1e-12}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("xs,ws", [((8, 32, 64), (64, 192)), ((5, 3), (3, 7)), ((0, 4), (4, 2)),
                                   ((2, 0), (0, 3)), ((300, 70), (70, 300)), ((3,), (3, 2))])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_kernel_gives_the_decompositions_bytes(dtype, xs, ws, with_bias):
    rng = np.random.default_rng(len(xs) * 7 + ws[1])
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (xs, ws, ws[1:]))
    tx, tw = hwport.to_tensor(x), hwport.to_tensor(w)
    tb = hwport.to_tensor(b) if with_bias else None
    assert _core.has_kernel("linear", tx.place, tx.dtype)
    got = F.linear(tx, tw, tb)
    assert got.numpy().tobytes() == decompositions.linear(tx, tw, tb).numpy().tobytes()
    want = x.astype(np.float64) @ w + (b if with_bias else 0)
    np.testing.assert_allclose(got.numpy(), want, rtol=TOL[dtype], atol=TOL[dtype] * 10)


def _layout(t, how):
    if how == "T":  # the same values, stored transposed
        return hwport.to_tensor(np.ascontiguousarray(np.swapaxes(t, -1, -2))).transpose(
            [*range(t.ndim - 2), t.ndim - 1, t.ndim - 2])
    if how == "step":  # every other column of a wider tensor
        wide = np.zeros(t.shape[:-1] + (2 * t.shape[-1],), t.dtype)
        wide[..., ::2] = t
        return hwport.to_tensor(wide)[..., ::2]
    return hwport.to_tensor(t)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(8, 4, 32, 32, 16), (3, 7, 5, 37), (6, 1, 9, 1),
                                   (2, 45, 65, 40), (4, 13, 3, 33), (2, 9, 4, 300)])
@pytest.mark.parametrize("lx", ["c", "T", "step"])
@pytest.mark.parametrize("ly", ["c", "T", "step"])
def test_small_batched_products_match_numpy(dtype, shape, lx, ly):
    *batch, m, k, n = shape
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.standard_normal((*batch, m, k)).astype(dtype)
    b = rng.standard_normal((*batch, k, n)).astype(dtype)
    got = hwport.matmul(_layout(a, lx), _layout(b, ly)).numpy()
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * 10)
