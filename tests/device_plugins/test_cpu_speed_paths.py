"""The cpu plugin's vector paths added for issue 20 against numpy / torch, at the lengths where
they switch (below, at and above the vector widths and unrolled bodies), from misaligned starts
and strided views, with special values:

- float32 / float16 / bfloat16 sum runs (8 float64 accumulators, prefetched; half inputs
  converted 8/16 lanes at a time): within one float32 ulp of the exactly rounded sum;
- float16 / bfloat16 add and multiply fused per vector, and the vector bfloat16 narrowing
  (round to nearest even, ties, NaN kept quiet, overflow to inf): bit-identical to torch;
- where as a bit select: bit-identical to numpy for every dtype and broadcast;
- cast float32 -> int32 without branches: truncation, NaN -> 0, saturation, as the generic loop;
- a GEMV below the stream's inline threshold: the same values as numpy's product."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from tests.seeds import rng_for

torch = pytest.importorskip("torch")

PLACE = "custom:cpu"
MANT = {"float32": 23, "float16": 10, "bfloat16": 7}
LENGTHS = (1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 1000, 4097, 70_001)


def _t(a: np.ndarray):
    return hwport.to_tensor(a, place=PLACE)


# ---- sums ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_sum_runs_are_float64_accurate(dt):
    rng = rng_for("speed_sum_" + dt)
    base = (rng.standard_normal(70_100) * 10).astype(np.float32)
    t = _t(base).astype(dt)
    wide = t.astype("float64").numpy()  # the half values, exactly
    for n in LENGTHS:
        for off in (0, 3):
            x = wide[off:off + n]
            got = t[off:off + n].sum().astype("float64").numpy()
            want = x.sum()
            # the exact sum rounded once to the output dtype, give or take one of its ulps
            want_r = float(torch.tensor(want, dtype=torch.float64).to(getattr(torch, dt)))
            ulp = max(abs(want_r) * 2.0 ** -MANT[dt], 2.0 ** -24)
            assert abs(float(got) - float(want_r)) <= ulp, (dt, n, off, got, want)
    # cancellation: the float64 accumulation keeps the small exact sum
    c = np.concatenate([base[:5000], -base[:5000], np.float32([0.25])])
    got = _t(c).astype(dt).sum().astype("float64").numpy()
    assert float(got) == 0.25
    # strided (the generic loop) and NaN propagation through the vector path
    x = base[::3][:3001]
    assert abs(float(_t(base).astype(dt)[::3][:3001].sum().astype("float64").numpy())
               - float(_t(x).astype(dt).astype("float64").numpy().sum())) <= 1e-2 * 100
    y = base[:1000].copy()
    y[517] = np.nan
    assert np.isnan(float(_t(y).astype(dt).sum().astype("float32").numpy()))


# ---- float16 / bfloat16 add and multiply -----------------------------------------------------

def _special() -> np.ndarray:
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 65504.0, 65520.0, 6e-8, 1e-40,
            3.0e38, -3.0e38, 1.00390625, 1.01171875, 0.1, 1 / 3]
    return np.array(vals, dtype=np.float32)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "multiply"])
def test_half_add_multiply_match_torch_bitwise(dt, op):
    rng = rng_for(f"speed_{op}_{dt}")
    tdt = getattr(torch, dt)
    for n in LENGTHS:
        a = (rng.standard_normal(n + 3) * 100).astype(np.float32)
        b = (rng.standard_normal(n + 3) * 100).astype(np.float32)
        sp = _special()
        k = min(len(sp), n)
        a[3:3 + k] = sp[:k]
        b[3:3 + k] = sp[::-1][:k]
        ta, tb = torch.from_numpy(a).to(tdt), torch.from_numpy(b).to(tdt)
        ha, hb = _t(a).astype(dt), _t(b).astype(dt)
        fn = (lambda x, y: x + y) if op == "add" else (lambda x, y: x * y)
        for sl in (slice(0, n), slice(3, n + 3)):  # aligned and misaligned starts
            got = fn(ha[sl], hb[sl]).astype("float32").numpy()
            want = fn(ta[sl], tb[sl]).float().numpy()
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {n}")
            ok = ~np.isnan(want)
            np.testing.assert_array_equal(got[ok], want[ok], err_msg=f"{op} {dt} {n}")
        # a broadcast scalar (the chunked path)
        got = fn(ha[:n], hb[:1]).astype("float32").numpy()
        want = fn(ta[:n], tb[:1]).float().numpy()
        ok = ~np.isnan(want)
        np.testing.assert_array_equal(got[ok], want[ok])


def test_bfloat16_narrowing_rounds_to_nearest_even():
    """exp of bfloat16 goes through the vector narrowing of the chunked loops: ties, NaN."""
    bits = np.arange(0, 1 << 16, 7, dtype=np.uint32) << 16 | 0x8000  # exact ties
    x = bits.view(np.float32)
    got = _t(x).astype("bfloat16").astype("float32").numpy()
    want = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    y = np.linspace(-20, 20, 4099).astype(np.float32)
    h = _t(y).astype("bfloat16")
    got = hwport.exp(h).astype("float32").numpy()
    want = torch.exp(torch.from_numpy(y).to(torch.bfloat16).float()).to(torch.bfloat16).float()
    np.testing.assert_allclose(got, want.numpy(), rtol=1.6e-2, atol=1e-3)


# ---- where -----------------------------------------------------------------------------------

WHERE_DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16",
                "float32", "float64"]


@pytest.mark.parametrize("dt", WHERE_DTYPES)
def test_where_bit_select_matches_numpy(dt):
    rng = rng_for("speed_where_" + dt)
    for n in (1, 15, 16, 17, 64, 65, 1031, 70_001):
        cond = rng.random(n + 1) < 0.5
        x = (rng.standard_normal(n + 1) * 50).astype(np.float32)
        y = (rng.standard_normal(n + 1) * 50).astype(np.float32)
        x[0] = -0.0
        hc, hx, hy = _t(cond), _t(x).astype(dt), _t(y).astype(dt)
        xs, ys = hx.astype("float64").numpy(), hy.astype("float64").numpy()
        for sl in (slice(0, n), slice(1, n + 1)):  # aligned and misaligned
            got = hwport.where(hc[sl], hx[sl], hy[sl]).astype("float64").numpy()
            want = np.where(cond[sl], xs[sl], ys[sl])
            np.testing.assert_array_equal(got, want, err_msg=f"{dt} {n}")
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        # broadcast scalars on either side and both
        got = hwport.where(hc[:n], hx[:n], hy[:1]).astype("float64").numpy()
        np.testing.assert_array_equal(got, np.where(cond[:n], xs[:n], ys[0]))
        got = hwport.where(hc[:n], hx[:1], hy[:n]).astype("float64").numpy()
        np.testing.assert_array_equal(got, np.where(cond[:n], xs[0], ys[:n]))
        got = hwport.where(hc[:n], hx[:1], hy[:1]).astype("float64").numpy()
        np.testing.assert_array_equal(got, np.where(cond[:n], xs[0], ys[0]))


# ---- cast float32 -> int32 -------------------------------------------------------------------

def _sat_int32(x: np.ndarray) -> np.ndarray:
    d = x.astype(np.float64)
    r = np.trunc(np.nan_to_num(d, nan=0.0, posinf=2.0**40, neginf=-2.0**40))
    return np.clip(r, -2.0**31, 2.0**31 - 1).astype(np.int32)


def test_cast_float32_int32_truncates_and_saturates():
    rng = rng_for("speed_cast")
    sp = np.array([0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2147483520.0, 2147483648.0,
                   4294967296.0, -2147483648.0, -2147483904.0, -1e20, 1e20, np.inf, -np.inf,
                   np.nan, 1e-45, 16777217.0], dtype=np.float32)
    for n in LENGTHS:
        x = (rng.standard_normal(n + 1) * 1e6).astype(np.float32)
        x[1:1 + min(n, len(sp))] = sp[:min(n, len(sp))]
        for sl in (slice(0, n), slice(1, n + 1)):
            got = _t(x[sl]).cast("int32").numpy()
            np.testing.assert_array_equal(got, _sat_int32(x[sl]), err_msg=str(n))
            got = _t(x)[sl].cast("int32").numpy()  # a view at an offset
            np.testing.assert_array_equal(got, _sat_int32(x[sl]), err_msg=str(n))
    got = _t(sp)[::2].cast("int32").numpy()  # strided: the generic loop
    np.testing.assert_array_equal(got, _sat_int32(sp[::2]))


# ---- GEMV inline -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1, 512, 2048), (2048, 512, 1), (1, 3000, 1000)])
def test_gemv_inline_matches_numpy(shape):
    m, k, n = shape
    rng = rng_for(f"speed_gemv_{m}_{k}_{n}")
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    got = (_t(a) @ _t(b)).numpy()
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-4, atol=1e-4)
