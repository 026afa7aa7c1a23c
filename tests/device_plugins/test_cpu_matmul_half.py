"""float16/bfloat16 matmul on custom:cpu through BLAS (kernels_linalg.c): operands with
contiguous rows are converted a row at a time at vector width, other views packed element by
element, the float32 buffers kept between calls up to 8 MiB each (larger ones per call). Against
numpy in float64 over the operands as the dtype holds them, the result rounded once: within
the rounding of the output plus float32 accumulation."""

from __future__ import annotations

import numpy as np
import pytest

import hwport

PLACE = "custom:cpu"


def _check(x: hwport.Tensor, y: hwport.Tensor, dtype: str) -> None:
    xs = hwport.cast(x, "float32").numpy().astype(np.float64)
    ys = hwport.cast(y, "float32").numpy().astype(np.float64)
    got = hwport.cast(x @ y, "float32").numpy().astype(np.float64)
    ref = xs @ ys
    mant = 10 if dtype == "float16" else 7
    scale = np.abs(xs) @ np.abs(ys)  # the size of the sum's terms
    tol = 2.0 ** -mant * np.abs(ref) + 1e-6 * scale + 1e-30
    err = np.abs(got - ref)
    worst = np.unravel_index((err - tol).argmax(), err.shape)
    assert (err <= tol).all(), f"max excess {(err - tol).max()} at {worst}"


def _t(a: np.ndarray, dtype: str) -> hwport.Tensor:
    return hwport.cast(hwport.to_tensor(a.astype(np.float32), place=PLACE), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("m, k, n", [(64, 96, 80), (33, 17, 129), (1, 300, 70), (70, 300, 1),
                                     (257, 131, 65)])
def test_half_matmul_contiguous_and_views(dtype: str, m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(m * 1000 + n)
    x = _t(rng.standard_normal((m, k)), dtype)
    y = _t(rng.standard_normal((k, n)), dtype)
    _check(x, y, dtype)  # contiguous rows: the vector conversion
    yt = hwport.transpose(_t(rng.standard_normal((n, k)), dtype), [1, 0])
    _check(x, yt, dtype)  # a transposed view: packed element by element
    xt = hwport.transpose(_t(rng.standard_normal((k, m)), dtype), [1, 0])
    _check(xt, y, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_matmul_buffers_grow_shrink_and_overflow_the_kept_size(dtype: str) -> None:
    # sizes up and down reuse (and grow) the kept buffers; 1500 x 1500 float32 (9 MB) is past
    # the 8 MiB kept per operand: a buffer of its own for that call, the kept ones untouched
    rng = np.random.default_rng(7)
    for m, k, n in [(100, 100, 100), (400, 300, 500), (50, 60, 70), (1500, 1500, 8),
                    (8, 1500, 1500), (120, 80, 90)]:
        _check(_t(rng.standard_normal((m, k)), dtype), _t(rng.standard_normal((k, n)), dtype),
               dtype)
