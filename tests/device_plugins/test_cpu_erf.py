"""The CPU plugin's float32 erf (device_plugins/cpu/fast_erff.h, a branch-free polynomial form
the loops vectorize), through hwport on custom:cpu: within 2 ulp of Python's math.erf (float64,
rounded once) over every 4096th float32 bit pattern in [0, 10] of both signs (small values, the
switch between the two forms at 0.875, the tails where erf rounds to +-1) and subnormals, with
lengths that leave a scalar tail; +-inf, NaN and signed zeros exactly; gelu's exact form, which
calls it, within its ops.yaml tolerance of the same oracle; float16/bfloat16 (computed in
float32) within half an ulp of their dtype plus the float32 error."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hwport

PLACE = "custom:cpu"
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _grid() -> np.ndarray:
    bits = np.arange(0, np.float32(10).view(np.uint32), 4096, dtype=np.uint32)
    pos = np.concatenate([bits.view(np.float32), np.float32(1e-45) * np.arange(1, 300)])
    return np.concatenate([pos, -pos, [np.float32(0.875), np.nextafter(np.float32(0.875), 0)]]
                          ).astype(np.float32)


def _ulp_err(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32))


@pytest.mark.parametrize("n", [None, 1037])  # the whole grid, and a length with a scalar tail
def test_erf_float32_within_2_ulp_of_math_erf(n: int | None) -> None:
    x = _grid()[:n]
    got = hwport.erf(hwport.to_tensor(x, place=PLACE)).numpy()
    err = _ulp_err(got, _erf(x.astype(np.float64)))
    assert err.max() <= 2.0, f"erf({x[err.argmax()]!r}) off by {err.max():.2f} ulp"
    assert np.array_equal(np.signbit(got), np.signbit(x))  # odd, -0 included


def test_erf_float32_specials() -> None:
    x = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 4.0, 1e30, -1e30], np.float32)
    got = hwport.erf(hwport.to_tensor(x, place=PLACE)).numpy()
    np.testing.assert_array_equal(got, [1, -1, np.nan, np.nan, 0, 0, 1, 1, -1])
    assert not np.signbit(got[4]) and np.signbit(got[5])


def test_erf_float32_nan_payloads_stay_nan() -> None:
    # every NaN, whatever its payload's low bits (the 2^n scaling adds n into the exponent bits:
    # a NaN must never reach it), of both signs
    bits = np.array([0x7FC00000, 0x7FC00001, 0x7FC001FF, 0x7F800001, 0x7FFFFFFF, 0xFFC00003,
                     0xFF800101], np.uint32)
    got = hwport.erf(hwport.to_tensor(np.tile(bits.view(np.float32), 5), place=PLACE)).numpy()
    assert np.isnan(got).all(), got


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_both_forms_in_one_loop_switch(approximate: bool) -> None:
    # the loop is generated once per value of the flag (CPU_EW_HOIST_gelu): each picks its form
    x = np.linspace(-6, 6, 4099, dtype=np.float32)
    got = hwport.nn.functional.gelu(hwport.to_tensor(x, place=PLACE),
                                    approximate=approximate).numpy()
    xd = x.astype(np.float64)
    if approximate:
        ref = 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3)))
    else:
        ref = xd * (_erf(xd / math.sqrt(2)) + 1) / 2
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    other = 0.5 * xd * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3))) \
        if not approximate else xd * (_erf(xd / math.sqrt(2)) + 1) / 2
    assert np.abs(got - other).max() > 1e-4  # the forms differ: the test can tell them apart


def test_gelu_float32_within_tolerance_of_math_erf() -> None:
    x = np.linspace(-10, 10, 20011, dtype=np.float32)
    got = hwport.nn.functional.gelu(hwport.to_tensor(x, place=PLACE)).numpy()
    xd = x.astype(np.float64)
    ref = xd * (_erf(xd / math.sqrt(2)) + 1) / 2
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)  # ops.yaml composite, float32


@pytest.mark.parametrize("dtype, mant", [("float16", 10), ("bfloat16", 7)])
def test_erf_half_types_computed_in_float32(dtype: str, mant: int) -> None:
    t = hwport.cast(hwport.to_tensor(np.linspace(-5, 5, 4001, dtype=np.float32), place=PLACE),
                    dtype)
    xs = hwport.cast(t, "float32").numpy().astype(np.float64)
    got = hwport.cast(hwport.erf(t), "float32").numpy().astype(np.float64)
    ref = _erf(xs)
    ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), 2.0**-14))) - mant)
    assert (np.abs(got - ref) / ulp).max() <= 0.51  # rounding once, float32's error negligible
