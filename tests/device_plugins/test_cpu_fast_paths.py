"""The cpu plugin's fast paths against numpy, at the sizes where they switch: the float math
through SLEEF's vector functions (loops built for AVX2 and AVX-512, chosen at load) and the
matrix-vector products (matmul with M == 1 or N == 1 through cblas gemv).

Math: every length from 1 to 70 (below, at and above each vector width: 4, 8 and 16 floats,
2, 4 and 8 doubles, and the unrolled bodies), a misaligned start, a strided view, and special
values (NaN, +-inf, +-0, the largest finite, subnormals) at every lane position of one vector,
each element checked against a float64 (float32) or long double (float64) oracle within the
op's tolerance from phi_ops/ops.yaml, NaN where the oracle has NaN. GEMV: every operand layout
(contiguous, transposed, strided, misaligned start) on both sides, and batches."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hwport
from hwport import phi_ops
from hwport.conformance.direct_host import np_dtype
from tests.seeds import rng_for

PLACE = "custom:cpu"
F = hwport.nn.functional
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.where(x > 20, x, np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))))


# op name in ops.yaml: (hwport call, oracle over the wide type, input range)
MATH = {
    "exp": (hwport.exp, np.exp, (-80, 80)),
    "expm1": (hwport.expm1, np.expm1, (-10, 10)),
    "log": (hwport.log, np.log, (1e-3, 1e4)),
    "log1p": (hwport.log1p, np.log1p, (-0.99, 1e4)),
    "sqrt": (hwport.sqrt, np.sqrt, (0, 1e4)),
    "sin": (hwport.sin, np.sin, (-50, 50)),
    "cos": (hwport.cos, np.cos, (-50, 50)),
    "tanh": (hwport.tanh, np.tanh, (-10, 10)),
    "erf": (hwport.erf, lambda x: _erf(x.astype(np.float64)).astype(x.dtype), (-4, 4)),
    "sigmoid": (F.sigmoid, _sigmoid, (-30, 30)),
    "silu": (F.silu, lambda x: x * _sigmoid(x), (-30, 30)),
    "softplus": (F.softplus, _softplus, (-30, 30)),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + _erf(x.astype(np.float64) / np.sqrt(2))),
             (-6, 6)),
}
DTYPES = ("float32", "float64")
WIDE = {"float32": np.float64, "float64": np.longdouble}


def _tol(op: str, dtype: str) -> tuple[float, float]:
    t = phi_ops.load_ops()[op].tolerance[dtype]
    if "ulp" in t:  # sqrt: elementwise profile
        return float(np.finfo(dtype).eps) * t["ulp"], 0.0
    return t["rtol"], t["atol"]


def _check(op: str, dtype: str, x: np.ndarray, got: np.ndarray, what: str) -> None:
    _, ref_fn, _ = MATH[op]
    with np.errstate(all="ignore"):
        ref = np.asarray(ref_fn(x.astype(WIDE[dtype])))
    rtol, atol = _tol(op, dtype)
    ref64 = ref.astype(np.float64)
    got64 = got.astype(np.float64)
    nan_ok = np.isnan(got64) == np.isnan(ref64)
    both = ~np.isnan(ref64)
    inf_ok = ~both | ~np.isinf(ref64) | (got64 == ref64)
    with np.errstate(all="ignore"):
        close = ~both | np.isinf(ref64) | (np.abs(got64 - ref64) <= atol + rtol * np.abs(ref64))
    bad = ~(nan_ok & inf_ok & close)
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        raise AssertionError(f"{op} {dtype} {what}: {int(bad.sum())} wrong, e.g. at {i}: "
                             f"x={x[i]!r} got={got[i]!r} expected={ref[i]!r}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(MATH))
def test_math_every_length_offset_and_stride(op, dtype):
    fn, _, (lo, hi) = MATH[op]
    rng = rng_for("fast_math", op, dtype)
    base = rng.uniform(lo, hi, 2 * 71 + 3).astype(dtype)
    t = hwport.to_tensor(base, place=PLACE)
    for n in range(1, 71):
        _check(op, dtype, base[:n], fn(t[:n]).numpy(), f"length {n}")
        _check(op, dtype, base[1:n + 1], fn(t[1:n + 1]).numpy(), f"length {n} at offset 1")
    _check(op, dtype, base[1::2], fn(t[1::2]).numpy(), "stride 2")
    two_d = base[:140].reshape(10, 14)
    _check(op, dtype, two_d.T.copy(), fn(hwport.transpose(hwport.to_tensor(two_d, place=PLACE),
                                                          [1, 0])).numpy(), "transposed view")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(MATH))
def test_math_special_values_in_every_lane(op, dtype):
    fn, _, (lo, hi) = MATH[op]
    fi = np.finfo(dtype)
    # gelu's formula x * (1 + erf) * 0.5 overflows at the largest finite (as its decomposition)
    big = fi.max / 4 if op == "gelu" else fi.max
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, big, -big, fi.tiny / 4,
                         -fi.tiny / 4, 1.0, -1.0], dtype=dtype)
    rng = rng_for("fast_math_specials", op, dtype)
    width = 16 if dtype == "float32" else 8  # AVX-512 lanes; AVX2/SSE2 widths divide it
    rows = []
    for s in specials:
        for lane in range(width):
            row = rng.uniform(lo, hi, 3 * width).astype(dtype)
            row[width + lane] = s
            rows.append(row)
    x = np.concatenate(rows)
    _check(op, dtype, x, fn(hwport.to_tensor(x, place=PLACE)).numpy(), "specials in each lane")


def test_gelu_tanh_and_pow_lengths():
    rng = rng_for("fast_math_2")
    for dtype in DTYPES:
        x = rng.uniform(-6, 6, 70).astype(dtype)
        b = rng.uniform(0.01, 30, 70).astype(dtype)
        e = rng.uniform(-6, 6, 70).astype(dtype)
        c = np.sqrt(WIDE[dtype](2) / WIDE[dtype](np.pi))
        rtol, atol = _tol("gelu", dtype)
        prt, pat = _tol("pow", dtype)
        for n in (1, 7, 8, 9, 15, 16, 17, 33, 70):
            xw = x[:n].astype(WIDE[dtype])
            got = F.gelu(hwport.to_tensor(x[:n], place=PLACE), approximate=True).numpy()
            ref = 0.5 * xw * (1 + np.tanh(c * (xw + WIDE[dtype](0.044715) * xw**3)))
            np.testing.assert_allclose(got, ref.astype(np.float64), rtol=rtol, atol=atol)
            got = hwport.pow(hwport.to_tensor(b[:n], place=PLACE),
                             hwport.to_tensor(e[:n], place=PLACE)).numpy()
            ref = np.power(b[:n].astype(WIDE[dtype]), e[:n].astype(WIDE[dtype]))
            np.testing.assert_allclose(got, ref.astype(np.float64), rtol=prt, atol=pat)


# ---- GEMV ----------------------------------------------------------------------------------

def _operand(a: np.ndarray, how: str):
    """A hwport tensor with a's values in the layout `how`."""
    if how == "contiguous":
        return hwport.to_tensor(a, place=PLACE)
    if how == "transposed":
        t = hwport.to_tensor(np.ascontiguousarray(a.T), place=PLACE)
        return hwport.transpose(t, [1, 0])
    if how == "strided":
        big = np.zeros((a.shape[0], 2 * a.shape[1]), a.dtype)
        big[:, ::2] = a
        return hwport.to_tensor(big, place=PLACE)[:, ::2]
    if how == "misaligned":  # starts one element into its buffer
        flat = np.concatenate([np.zeros(1, a.dtype), a.reshape(-1)])
        t = hwport.to_tensor(flat, place=PLACE)[1:]
        return hwport.reshape(t, list(a.shape))
    raise AssertionError(how)


GEMV_LAYOUTS = ("contiguous", "transposed", "strided", "misaligned")
MATMUL_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-4),
              "float64": (1e-11, 1e-11)}


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
def test_gemv_every_layout(dtype):
    rng = rng_for("gemv", dtype)
    rtol, atol = MATMUL_TOL[dtype]
    for m, k, n in ((1, 1, 1), (1, 7, 1), (1, 33, 65), (1, 512, 300), (65, 33, 1),
                    (300, 512, 1), (2, 9, 1)):
        for hx in GEMV_LAYOUTS:
            for hy in GEMV_LAYOUTS:
                x = rng.standard_normal((m, k)).astype(np_dtype(dtype))
                y = rng.standard_normal((k, n)).astype(np_dtype(dtype))
                tx, ty = _operand(x, hx), _operand(y, hy)
                assert tx.dtype == getattr(hwport, dtype)
                got = (tx @ ty).numpy().astype(np.float64)
                xr = tx.numpy().astype(np.float64)
                yr = ty.numpy().astype(np.float64)
                np.testing.assert_allclose(got, xr @ yr, rtol=rtol, atol=atol * np.sqrt(k),
                                           err_msg=f"{dtype} {m}x{k}@{k}x{n} {hx}/{hy}")


def test_gemv_batched_and_broadcast():
    rng = rng_for("gemv_batched")
    x = rng.standard_normal((4, 1, 300)).astype(np.float32)
    y = rng.standard_normal((4, 300, 1000)).astype(np.float32)
    got = (hwport.to_tensor(x, place=PLACE) @ hwport.to_tensor(y, place=PLACE)).numpy()
    np.testing.assert_allclose(got, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-3)
    a = rng.standard_normal((3, 1000, 300)).astype(np.float64)
    v = rng.standard_normal((300, 1)).astype(np.float64)
    got = (hwport.to_tensor(a, place=PLACE) @ hwport.to_tensor(v, place=PLACE)).numpy()
    np.testing.assert_allclose(got, a @ v, rtol=1e-11, atol=1e-11)


# ---- transposing copies --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ("uint8", "int16", "float32", "float64", "bfloat16"))
def test_transpose_copy_tiles_edges_and_batches(dtype):
    """contiguous() of transposed views: sizes around the 32 x 32 tile and the 4 x 4 register
    blocks, below the tiled path's threshold, batched, and views that start mid-buffer or skip
    rows of their base (the input's outer stride is not the row length)."""
    rng = rng_for("transpose", dtype)
    dt = np_dtype(dtype)

    def check(base: np.ndarray, view_fn, what: str) -> None:
        t = hwport.to_tensor(base, place=PLACE)
        got = view_fn(t).contiguous().numpy()
        want = np.ascontiguousarray(view_fn(base))
        assert got.shape == want.shape, what
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), what

    for r, c in ((8, 8), (31, 33), (32, 32), (33, 31), (64, 70), (65, 129), (130, 67),
                 (4, 2000), (2000, 5), (257, 255)):
        base = (rng.standard_normal((r, c)) * 50).astype(dt)
        check(base, lambda a: a.T if isinstance(a, np.ndarray) else hwport.transpose(a, [1, 0]),
              f"{r}x{c}")
    base = (rng.standard_normal((3, 70, 45)) * 50).astype(dt)
    check(base, lambda a: a.transpose(0, 2, 1) if isinstance(a, np.ndarray)
          else hwport.transpose(a, [0, 2, 1]), "batched")
    base = (rng.standard_normal((140, 97)) * 50).astype(dt)
    check(base, lambda a: a[1:, 3:].T if isinstance(a, np.ndarray)
          else hwport.transpose(a[1:, 3:], [1, 0]), "offset start")
    check(base, lambda a: a[::2, 1:].T if isinstance(a, np.ndarray)
          else hwport.transpose(a[::2, 1:], [1, 0]), "every other row")


# ---- float16 / bfloat16 by vector conversions ----------------------------------------------

HALF = ("float16", "bfloat16")
HALF_LENGTHS = (*range(1, 40), 63, 64, 65, 511, 512, 513, 1025)  # lanes 8/16, chunks of 512


def _half_values(rng, dtype: str, n: int) -> np.ndarray:
    v = rng.standard_normal(n) * 8
    fi = np.finfo(np_dtype(dtype))
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, float(fi.max), float(fi.tiny) / 2]
    v[rng.integers(0, n, size=max(1, n // 8))] = rng.choice(specials, size=max(1, n // 8))
    return v.astype(np.float32).astype(np_dtype(dtype))


def _same_bits_or_nan(got: np.ndarray, want: np.ndarray, what: str) -> None:
    g, w = got.astype(np.float32), want.astype(np.float32)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan), what
    assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16)), what


@pytest.mark.parametrize("dtype", HALF)
def test_half_add_multiply_bit_exact(dtype):
    """float16/bfloat16 add and multiply round float32's result to nearest even: bit-equal to
    numpy's float32 arithmetic cast back, at every length around the lane and chunk sizes, from
    an offset start, a strided input and a broadcast scalar (overflow to inf, subnormals, NaN
    and inf included)."""
    rng = rng_for("half_binary", dtype)
    dt = np_dtype(dtype)
    x = _half_values(rng, dtype, 2 * 1026 + 2)
    y = _half_values(rng, dtype, 2 * 1026 + 2)
    tx, ty = hwport.to_tensor(x, place=PLACE), hwport.to_tensor(y, place=PLACE)
    ops = (("add", lambda a, b: a + b), ("multiply", lambda a, b: a * b))
    with np.errstate(over="ignore", invalid="ignore"):
        _binary_cases(ops, x, y, tx, ty, dt)


def _binary_cases(ops, x, y, tx, ty, dt) -> None:
    for name, f in ops:
        for n in HALF_LENGTHS:
            want = f(x[:n].astype(np.float32), y[:n].astype(np.float32)).astype(dt)
            _same_bits_or_nan(f(tx[:n], ty[:n]).numpy(), want, f"{name} length {n}")
            want = f(x[1:n + 1].astype(np.float32), y[:n].astype(np.float32)).astype(dt)
            _same_bits_or_nan(f(tx[1:n + 1], ty[:n]).numpy(), want, f"{name} {n} offset 1")
        want = f(x[::2].astype(np.float32), y[:1027].astype(np.float32)).astype(dt)
        _same_bits_or_nan(f(tx[::2], ty[:1027]).numpy(), want, f"{name} strided")
        want = f(x[:1025].astype(np.float32), y[5].astype(np.float32)).astype(dt)
        _same_bits_or_nan(f(tx[:1025], ty[5:6]).numpy(), want, f"{name} broadcast")


HALF_MATH = ("exp", "sigmoid", "gelu", "tanh", "sqrt")


@pytest.mark.parametrize("dtype", HALF)
def test_half_math_chunks_match_the_oracle(dtype):
    """Unary math and composites on float16/bfloat16 at the lane and chunk edges and from a
    strided view, within the ops.yaml tolerance of a float64 oracle; and bit-equal to the same
    op on the float32 upcast rounded back (the chunked path computes exactly that)."""
    rng = rng_for("half_math", dtype)
    dt = np_dtype(dtype)
    for op in HALF_MATH:
        fn, ref_fn, (lo, hi) = MATH[op]
        x = rng.uniform(max(lo, -10), min(hi, 10), 2 * 1026).astype(np.float32).astype(dt)
        t = hwport.to_tensor(x, place=PLACE)
        t32 = hwport.to_tensor(x.astype(np.float32), place=PLACE)
        rtol, atol = _tol(op, dtype)
        for n in HALF_LENGTHS:
            got = fn(t[:n]).numpy()
            with np.errstate(all="ignore"):
                ref = ref_fn(x[:n].astype(np.float64))
            np.testing.assert_allclose(got.astype(np.float64), ref, rtol=rtol, atol=atol,
                                       err_msg=f"{op} {dtype} length {n}")
            _same_bits_or_nan(got, fn(t32[:n]).numpy().astype(dt), f"{op} {dtype} {n} vs f32")
        got = fn(t[::2]).numpy()
        _same_bits_or_nan(got, fn(t32[::2]).numpy().astype(dt), f"{op} {dtype} strided")


@pytest.mark.parametrize("dtype", HALF)
def test_half_norm_rows_match_float32_rounded(dtype):
    """layer_norm / rms_norm / softmax on float16/bfloat16 gather rows to float32 at vector
    width and scatter them back: bit-equal to the float32 kernel on the upcast rounded back, for
    row lengths around the lane widths, and within tolerance of numpy."""
    rng = rng_for("half_norms", dtype)
    dt = np_dtype(dtype)
    for c in (1, 7, 8, 9, 15, 16, 17, 33, 100, 1030):
        x = (rng.standard_normal((5, c)) * 3).astype(np.float32).astype(dt)
        w = rng.standard_normal(c).astype(np.float32).astype(dt)
        t, t32 = hwport.to_tensor(x, place=PLACE), hwport.to_tensor(x.astype(np.float32),
                                                                    place=PLACE)
        tw, tw32 = hwport.to_tensor(w, place=PLACE), hwport.to_tensor(w.astype(np.float32),
                                                                      place=PLACE)
        for name, f in (("layer_norm", lambda a, b: F.layer_norm(a, [a.shape[-1]], b, None)),
                        ("rms_norm", lambda a, b: F.rms_norm(a, [a.shape[-1]], b)),
                        ("softmax", lambda a, b: F.softmax(a))):
            got = f(t, tw).numpy()
            _same_bits_or_nan(got, f(t32, tw32).numpy().astype(dt), f"{name} {dtype} [5,{c}]")
        e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(-1, keepdims=True))
        rtol, atol = _tol("softmax", dtype)
        np.testing.assert_allclose(F.softmax(t).numpy().astype(np.float64),
                                   e / e.sum(-1, keepdims=True), rtol=rtol, atol=atol)


# ---- float32 sums ---------------------------------------------------------------------------

def test_float32_sum_runs_accumulate_in_float64():
    """float32 sum/mean runs (the AVX2/AVX-512 loop with 32 float64 lanes) at lengths around the
    lane count, from an offset and over strided and 2-D inputs: every element added in float64,
    so the result is within one float32 ulp of the exactly rounded sum even where the values
    cancel (a float32 accumulation would be off by many)."""
    rng = rng_for("f32_sum")
    base = (rng.standard_normal(70_000) * 100).astype(np.float32)
    t = hwport.to_tensor(base, place=PLACE)

    def check(got: np.ndarray, x: np.ndarray, what: str, mean: bool = False) -> None:
        exact = x.astype(np.float64).sum(axis=-1) / (x.shape[-1] if mean else 1)
        want = exact.astype(np.float32)
        ulp = np.spacing(np.abs(want))
        assert np.all(np.abs(got.astype(np.float64) - want) <= ulp), (what, got, want)

    for n in (1, 31, 32, 33, 63, 64, 65, 1000, 1031, 65_537):
        check(t[:n].sum().numpy(), base[:n], f"sum {n}")
        check(t[3:n + 3].sum().numpy(), base[3:n + 3], f"sum {n} offset 3")
        check(t[:n].mean().numpy(), base[:n], f"mean {n}", mean=True)
    check(t[::3].sum().numpy(), base[::3], "strided")
    x2 = base[:64 * 1031].reshape(64, 1031)
    check(hwport.to_tensor(x2, place=PLACE).sum(axis=-1).numpy(), x2, "rows")
    cancel = np.concatenate([base[:5000], -base[:5000], np.float32([0.25])])
    check(hwport.to_tensor(cancel, place=PLACE).sum().numpy(), cancel, "cancelling")
