"""The CPU plugin's own float32 vector sin, cos, expm1, log1p, log, tanh and sigmoid
(device_plugins/cpu/fast_vmathf.h, the AVX2/AVX-512 loops' variants; SLEEF takes sin/cos vectors
with some |x| > 4000; sigmoid also in the SSE2 and scalar variants, and under silu), through
hwport on custom:cpu against numpy in float64 rounded once: within 2 ulp (sigmoid: 3, silu: 4)
over dense grids (every 509th..4093rd float32 bit pattern of the range, both signs, shuffled
subsets whose lengths leave scalar tails), sin/cos near their zeros within 1e-10 absolute, large
and special arguments (the SLEEF fallback, inf, NaN, -0, -1, the ends of expm1's range,
sigmoid's saturation to exactly 0 and 1 and its subnormal results) exactly as numpy has them."""

from __future__ import annotations

import numpy as np
import pytest

import hwport

PLACE = "custom:cpu"


def _grid(hi: float, step: int = 1021) -> np.ndarray:
    bits = np.arange(0, np.float32(hi).view(np.uint32), step, dtype=np.uint32)
    pos = bits.view(np.float32)
    return np.concatenate([pos, -pos])


def _ulp_err(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / spacing


def _run(name: str, x: np.ndarray) -> np.ndarray:
    return getattr(hwport, name)(hwport.to_tensor(x, place=PLACE)).numpy()


@pytest.mark.parametrize("name", ["sin", "cos"])
@pytest.mark.parametrize("n", [None, 100003])  # the whole grid, and a length with a tail
def test_sin_cos_float32_within_2_ulp(name: str, n: int | None) -> None:
    x = _grid(4000.0)
    x = x[np.random.default_rng(0).permutation(x.size)[:n]]  # n: a shuffled subset
    got = _run(name, x)
    ref = getattr(np, name)(x.astype(np.float64))
    far = np.abs(ref) >= 1e-3  # away from the zeros: relative; near them: absolute
    err = _ulp_err(got[far], ref[far])
    assert err.max() <= 2.0, f"{name}({x[far][err.argmax()]!r}) off by {err.max():.2f} ulp"
    assert np.abs(got[~far] - ref[~far]).max(initial=0.0) <= 1e-10


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_float32_large_and_special_arguments(name: str) -> None:
    # 16-lane groups mixing large arguments (SLEEF's vector) with small ones, and specials
    big = np.array([4000.5, 1e5, -3e6, 1e30, -1e38, 8192.0, 5000.0, 123456.7] * 2, np.float32)
    small = np.linspace(-3, 3, 16, dtype=np.float32)
    x = np.concatenate([big, small, [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30, -1e-40]]
                       ).astype(np.float32)
    got = _run(name, x)
    with np.errstate(invalid="ignore"):
        ref = getattr(np, name)(x.astype(np.float64))
    fin = np.isfinite(x)
    assert _ulp_err(got[fin], ref[fin]).max() <= 2.0
    assert np.isnan(got[~fin]).all()
    if name == "sin":  # odd: -0 and tiny values come back as they are
        np.testing.assert_array_equal(got[-4:], x[-4:])
        assert np.signbit(got[-3])


@pytest.mark.parametrize("n", [None, 77777])
def test_expm1_float32_within_2_ulp(n: int | None) -> None:
    x = np.concatenate([_grid(20.0, 509), _grid(88.72, 4093)]).astype(np.float32)
    x = x[np.random.default_rng(1).permutation(x.size)[:n]]
    got = _run("expm1", x)
    err = _ulp_err(got, np.expm1(x.astype(np.float64)))
    assert err.max() <= 2.0, f"expm1({x[err.argmax()]!r}) off by {err.max():.2f} ulp"


def test_expm1_float32_special_arguments() -> None:
    # exact: zeros (signed), tiny values, infinities, NaN, overflow, the clamp to -1 below -18
    x = np.array([0.0, -0.0, 1e-30, -1e-40, np.inf, -np.inf, np.nan, 88.73, 89.5, 200.0,
                  -18.5, -1e30], np.float32)
    with np.errstate(over="ignore"):
        ref = np.expm1(x.astype(np.float64)).astype(np.float32)
    got = _run("expm1", np.tile(x, 3))[:x.size]
    np.testing.assert_array_equal(got, ref)
    assert np.array_equal(np.signbit(got[:4]), np.signbit(x[:4]))
    # the top binade (h = 2^127 there) and the edges of the clamps: within 2 ulp
    y = np.array([88.72, 88.5, 88.0, -17.0, -17.9, 1e-7, -1e-7, 0.34, -0.35], np.float32)
    assert _ulp_err(_run("expm1", y), np.expm1(y.astype(np.float64))).max() <= 2.0


@pytest.mark.parametrize("n", [None, 88889])
def test_log1p_float32_within_2_ulp(n: int | None) -> None:
    # (-1, 0) densely, then up to the top of the range
    neg = -_grid(1.0, 509)[1:]
    neg = neg[neg > -1]
    x = np.concatenate([neg, _grid(3e38, 4093)[: _grid(3e38, 4093).size // 2]]).astype(np.float32)
    x = x[x > -1]
    x = x[np.random.default_rng(2).permutation(x.size)[:n]]
    got = _run("log1p", x)
    err = _ulp_err(got, np.log1p(x.astype(np.float64)))
    assert err.max() <= 2.0, f"log1p({x[err.argmax()]!r}) off by {err.max():.2f} ulp"


def test_log1p_float32_special_arguments() -> None:
    x = np.array([0.0, -0.0, 1e-30, -1e-40, np.inf, np.nan, -1.0, -2.0, -np.inf, 3.4e38,
                  1e-7, -0.99999994], np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log1p(x.astype(np.float64)).astype(np.float32)
    got = _run("log1p", np.tile(x, 3))[:x.size]
    np.testing.assert_array_equal(got, ref)
    assert np.array_equal(np.signbit(got[:4]), np.signbit(x[:4]))


@pytest.mark.parametrize("n", [None, 65537])
def test_log_float32_within_2_ulp(n: int | None) -> None:
    # every binade from the subnormals to the top, densely around 1 (where log crosses 0)
    x = np.concatenate([_grid(3.4e38, 4093), _grid(2.0, 509)])
    x = x[x > 0]
    x = x[np.random.default_rng(3).permutation(x.size)[:n]]
    got = _run("log", x)
    err = _ulp_err(got, np.log(x.astype(np.float64)))
    assert err.max() <= 2.0, f"log({x[err.argmax()]!r}) off by {err.max():.2f} ulp"


def test_log_float32_special_arguments() -> None:
    x = np.array([0.0, -0.0, 1e-45, 1.1754942e-38, 1.0, np.inf, np.nan, -1.0, -np.inf, -1e-40,
                  3.4028235e38], np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log(x.astype(np.float64)).astype(np.float32)
    got = _run("log", np.tile(x, 3))[:x.size]
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("n", [None, 50001])
def test_tanh_float32_within_2_ulp(n: int | None) -> None:
    # both signs, across the polynomial's edge at 0.625 and out to where tanh rounds to 1
    x = np.concatenate([_grid(10.0, 509), _grid(1.0, 127)])
    x = x[np.random.default_rng(4).permutation(x.size)[:n]]
    got = _run("tanh", x)
    ref = np.tanh(x.astype(np.float64))
    err = _ulp_err(got, ref)
    assert err.max() <= 2.0, f"tanh({x[err.argmax()]!r}) off by {err.max():.2f} ulp"


def test_tanh_float32_special_arguments() -> None:
    x = np.array([0.0, -0.0, 1e-30, -1e-40, np.inf, -np.inf, np.nan, 9.1, -20.0, 1e30],
                 np.float32)
    ref = np.tanh(x.astype(np.float64)).astype(np.float32)
    got = _run("tanh", np.tile(x, 3))[:x.size]
    np.testing.assert_array_equal(got, ref)
    assert np.array_equal(np.signbit(got), np.signbit(ref))


def _sigmoid64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


@pytest.mark.parametrize("n", [None, 70001])
def test_sigmoid_float32_within_3_ulp(n: int | None) -> None:
    # both signs out to where sigmoid is 0 or 1 in float32 (|x| ~ 104 and 17), subnormals, the
    # subnormal results below -87.3, and densely where it bends (|x| < 8)
    x = np.concatenate([_grid(110.0, 1021), _grid(8.0, 251)])
    x = x[np.random.default_rng(5).permutation(x.size)[:n]]
    got = hwport.sigmoid(hwport.to_tensor(x, place=PLACE)).numpy()
    err = _ulp_err(got, _sigmoid64(x))
    assert err.max() <= 3.0, f"sigmoid({x[err.argmax()]!r}) off by {err.max():.2f} ulp"


def test_sigmoid_float32_special_arguments() -> None:
    # exact: 1/2 at +-0 and the tiny values, 0 and 1 where sigmoid saturates (no overflow or
    # NaN for huge |x|), NaN propagated; subnormal results to the last subnormal ulp
    x = np.array([0.0, -0.0, 1e-30, -1e-40, np.inf, -np.inf, 17.5, 105.0, -105.0, 1e30, -1e30,
                  3.4028235e38, -3.4028235e38, -104.0, -103.9, -100.0, -95.5, -88.0, -87.5],
                 np.float32)
    ref = _sigmoid64(x).astype(np.float32)
    for xs in (np.tile(x, 3), np.concatenate([x, [np.nan, -np.nan, np.nan]]).astype(np.float32)):
        got = hwport.sigmoid(hwport.to_tensor(xs, place=PLACE)).numpy()
        np.testing.assert_array_equal(got[:x.size], ref)
    assert np.isnan(got[x.size:]).all()


@pytest.mark.parametrize("n", [None, 30011])
def test_silu_float32_within_4_ulp(n: int | None) -> None:
    # x * sigmoid(x) where sigmoid(x) is a normal float (x > -87.3; below, silu's subnormal
    # results are x times sigmoid's subnormal ulp); its own grid, so tails land elsewhere
    x = np.concatenate([_grid(87.0, 1021), _grid(8.0, 509)])
    x = x[np.random.default_rng(6).permutation(x.size)[:n]]
    got = hwport.nn.functional.silu(hwport.to_tensor(x, place=PLACE)).numpy()
    ref = x.astype(np.float64) * _sigmoid64(x)
    tiny = np.abs(ref) < np.finfo(np.float32).tiny  # silu(x) of a subnormal x: subnormal
    err = _ulp_err(got[~tiny], ref[~tiny])
    assert err.max() <= 4.0, f"silu({x[~tiny][err.argmax()]!r}) off by {err.max():.2f} ulp"
    assert np.abs(got[tiny] - ref[tiny]).max(initial=0.0) <= 2 * 1.4e-45
