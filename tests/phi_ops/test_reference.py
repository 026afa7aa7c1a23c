"""The oracle itself (phi_ops/promotion.py, philox.py, reference.py, tolerance.py): the
promotion table, the value conversions, the Philox known-answer vectors and the random
streams, every op of ops.yaml evaluated for every listed dtype, spot checks against
independent formulas (and PyTorch CPU where it is installed), and the comparator."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from phi_ops import philox, promotion, tolerance
from phi_ops.promotion import cast_array, out_dtype, promote_types, result_type
from phi_ops.reference import reference, reference_function_names
from phi_ops.schema import load_ops

OPS = load_ops()
DTYPES = promotion.DTYPES
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "uint8", "int16", "int32", "int64")
BF16 = np.dtype(ml_dtypes.bfloat16)


def arr(values: Any, dtype: str) -> np.ndarray:
    """An array of `dtype` from (float64) values, converted with cast semantics."""
    return cast_array(np.asarray(values, dtype=np.float64), dtype)


def sample(dtype: str, shape: tuple[int, ...], seed: int = 0, lo: float = -4,
           hi: float = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "uint8":
        lo = max(lo, 0)
    if dtype in INTS:
        return rng.integers(int(lo), int(hi) + 1, shape).astype(dtype)
    return arr(rng.uniform(lo, hi, shape), dtype)


def f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


# ---- promotion ------------------------------------------------------------------------------

def _kind(d: str) -> int:
    return 0 if d == "bool" else (1 if d in INTS else 2)


def _expected_promotion(a: str, b: str) -> str:
    """The documented rule, written independently of promote_types."""
    if a == b:
        return a
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return a if ka > kb else b
    if ka == 2:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return a if promotion.itemsize(a) > promotion.itemsize(b) else b
    size = promotion.itemsize
    if "uint8" in (a, b):
        other = b if a == "uint8" else a
        return other if size(other) > 1 else "int16"
    return a if size(a) > size(b) else b


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_promotion_table(a, b):
    assert promote_types(a, b) == promote_types(b, a) == _expected_promotion(a, b)


def test_promotion_spot_checks():
    assert promote_types("int8", "uint8") == "int16"
    assert promote_types("int16", "uint8") == "int16"
    assert promote_types("int64", "uint8") == "int64"
    assert promote_types("int32", "float16") == "float16"  # numpy would say float64
    assert promote_types("int64", "bfloat16") == "bfloat16"
    assert promote_types("bool", "float16") == "float16"
    assert promote_types("float16", "bfloat16") == "float32"
    assert promote_types("bfloat16", "float64") == "float64"
    assert promote_types("bool", "bool") == "bool"
    assert promote_types("bool", "uint8") == "uint8"
    with pytest.raises(ValueError, match="unknown dtype"):
        promote_types("float8", "int8")


def test_result_type_is_order_independent():
    for combo in itertools.product(DTYPES, repeat=3):
        results = {result_type(*p) for p in itertools.permutations(combo)}
        assert len(results) == 1, combo


def test_scalar_dtype():
    sd = promotion.scalar_dtype
    for d in DTYPES:
        assert sd(True, d) == d
        assert sd(3, d) == ("int64" if d == "bool" else d)
        assert sd(2.5, d) == (d if d in FLOATS else "float32")
    assert sd(True, None) == "bool" and sd(1, None) == "int64" and sd(1.0, None) == "float32"
    assert sd(np.int32(4), "int8") == "int8" and sd(np.float64(1), "uint8") == "float32"


def test_out_dtype_rules():
    assert out_dtype("add", ["int8", "uint8"]) == ["int16"]
    assert out_dtype("add", ["float16", "bfloat16"]) == ["float32"]
    assert out_dtype("divide", ["int32", "int64"]) == ["float32"]
    assert out_dtype("divide", ["int32", "float16"]) == ["float16"]
    assert out_dtype("divide", ["bool", "bool"]) == ["float32"]
    assert out_dtype("equal", ["float64", "int8"]) == ["bool"]
    assert out_dtype("argmax", ["float16"]) == ["int64"]
    assert out_dtype("sum", ["bool"]) == ["int64"]
    assert out_dtype("sum", ["uint8"]) == ["int64"]
    assert out_dtype("sum", ["bfloat16"]) == ["bfloat16"]
    assert out_dtype("sum", ["int8"], {"dtype": "float32"}) == ["float32"]
    assert out_dtype("cumprod", ["int16"]) == ["int64"]
    assert out_dtype("where", ["int8", "int16", "float16"]) == ["float16"]
    assert out_dtype("where", ["float64", "int16", "uint8"]) == ["int16"]
    assert out_dtype("gather", ["float16", "int64"]) == ["float16"]
    assert out_dtype("scatter", ["int8", "int64", "float32"]) == ["int8"]
    assert out_dtype("embedding", ["int32", "bfloat16"]) == ["bfloat16"]
    assert out_dtype("cross_entropy", ["float16", "int64"]) == ["float16"]
    assert out_dtype("concat", [["int8", "uint8", "bool"]]) == ["int16"]
    assert out_dtype("concat", ["int8", "float16"]) == ["float16"]  # flat variadic list
    assert out_dtype("topk", ["int16"]) == ["int16", "int64"]
    assert out_dtype("split", ["uint8"]) == ["uint8"]
    assert out_dtype("layer_norm", ["float16", "float32", None]) == ["float16"]
    assert out_dtype("layer_norm", ["bfloat16"]) == ["bfloat16"]  # trailing inputs left out
    assert out_dtype("scaled_dot_product_attention",
                     ["float16", "float16", "float16", "float32"]) == ["float16"]
    assert out_dtype("linear", ["float16", "float32", "float64"]) == ["float32"]
    assert out_dtype("cast", ["int8"], {"dtype": "bfloat16"}) == ["bfloat16"]
    assert out_dtype("full", [], {"fill_value": True, "dtype": None}) == ["bool"]
    assert out_dtype("full", [], {"fill_value": 3, "dtype": None}) == ["int64"]
    assert out_dtype("full", [], {"fill_value": 3.0, "dtype": None}) == ["float32"]
    assert out_dtype("full", [], {"fill_value": 3.0, "dtype": "int8"}) == ["int8"]
    assert out_dtype("full_like", ["uint8"], {"fill_value": 1.5, "dtype": None}) == ["uint8"]
    assert out_dtype("zeros_like", ["int16"], {"dtype": "float64"}) == ["float64"]
    assert out_dtype("arange", [], {"start": 0, "end": 5, "step": 1, "dtype": None}) == ["int64"]
    assert out_dtype("arange", [], {"start": 5, "end": None, "step": 1,
                                    "dtype": None}) == ["int64"]
    assert out_dtype("arange", [], {"start": 0, "end": 5.0, "step": 1,
                                    "dtype": None}) == ["float32"]
    assert out_dtype("zeros", [], {"shape": [2], "dtype": None}) == ["float32"]
    assert out_dtype("uniform", [], {"dtype": "float16"}) == ["float16"]
    with pytest.raises(ValueError, match="required"):
        out_dtype("cast", ["int8"], {"dtype": None})


# ---- value conversions --------------------------------------------------------------------

def _round_exact(value: float, mant_bits: int, min_exp: int, max_finite: float) -> float:
    """Round-to-nearest-even of a float64 to a binary format, with exact rationals."""
    if value == 0 or not math.isfinite(value):
        return value
    q = Fraction(value)
    sign = -1 if q < 0 else 1
    q = abs(q)
    e = max(math.floor(math.log2(q)), min_exp)
    while Fraction(2) ** e > q:
        e -= 1
    while Fraction(2) ** (e + 1) <= q:
        e += 1
    e = max(e, min_exp)
    unit = Fraction(2) ** (e - mant_bits)
    n = q / unit
    r = math.floor(n)
    frac = n - r
    if frac > Fraction(1, 2) or (frac == Fraction(1, 2) and r % 2 == 1):
        r += 1
    out = r * unit
    half_up = Fraction(max_finite) + Fraction(2) ** (math.floor(math.log2(max_finite))
                                                     - mant_bits - 1)
    if out > Fraction(max_finite) or q >= half_up:
        return sign * math.inf
    return sign * float(out)


def _random_doubles(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64)
    bits |= rng.integers(0, 2, n).astype(np.uint64) << np.uint64(63)
    x = bits.view(np.float64)
    # plus values near the interesting ranges (subnormals, ties, the overflow edge)
    extra = np.concatenate([
        rng.uniform(-70000, 70000, 200), rng.uniform(-1e-5, 1e-5, 200),
        rng.uniform(-1e-39, 1e-39, 200), rng.uniform(-3.4e38, 3.4e38, 200),
        [1 + 2**-8 + 2**-40, 1 + 2**-8, 1 + 3 * 2**-8, 65519.99, 65520.0, 3.3961e38,
         3.3895313892515355e38 + 1e31, 2**-133, 2**-134, 3 * 2**-135, 2**-24, 2**-25,
         3 * 2**-26, -0.0, 0.0],
    ])
    return np.concatenate([x[np.isfinite(x)], extra])


def test_float64_to_bfloat16_rounds_once():
    x = _random_doubles(3000, 1)
    got = promotion.round_float64(x, "bfloat16").astype(np.float64)
    want = np.array([_round_exact(v, 7, -126 - 7 + 7, float(ml_dtypes.finfo(BF16).max))
                     if abs(v) >= 2.0**-126 else _round_sub(v, -133) for v in x])
    np.testing.assert_array_equal(got, want)
    # ml_dtypes rounds through float32 (double rounding); we do not
    v = np.array([1 + 2**-8 + 2**-40])
    assert float(promotion.round_float64(v, "bfloat16")[0]) == 1 + 2**-7


def _round_sub(v: float, unit_exp: int) -> float:
    """Round to a multiple of 2**unit_exp (subnormal range), ties to even."""
    q = Fraction(v) / Fraction(2) ** unit_exp
    r = math.floor(q)
    if q - r > Fraction(1, 2) or (q - r == Fraction(1, 2) and r % 2 == 1):
        r += 1
    return math.copysign(float(r * Fraction(2) ** unit_exp), v)


def test_float64_to_float16_rounds_once():
    x = _random_doubles(3000, 2)
    got = promotion.round_float64(x, "float16")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, x.astype(np.float16))  # numpy rounds directly
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 1e300, -1e300])
    r = promotion.round_float64(special, "float16").astype(np.float64)
    assert np.isnan(r[:2]).all() and list(r[2:]) == [np.inf, -np.inf, np.inf, -np.inf]


def test_cast_semantics():
    x = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 2.9, -2.9, -0.5, 127.9, 128.0, -129.0])
    assert cast_array(x, "int8").tolist() == [0, 127, -128, 127, -128, 2, -2, 0, 127, 127, -128]
    assert cast_array(x, "uint8").tolist() == [0, 255, 0, 255, 0, 2, 0, 0, 127, 128, 0]
    big = np.array([2.0**63, -2.0**63, 9.2e18, -1e19])
    assert cast_array(big, "int64").tolist() == [2**63 - 1, -2**63, 9200000000000000000,
                                                 -2**63]
    assert cast_array(np.array([np.nan, 0.0, -0.0, 0.1]), "bool").tolist() == [True, False,
                                                                              False, True]
    assert cast_array(np.array([300, -1], np.int32), "uint8").tolist() == [44, 255]  # wraps
    assert cast_array(np.array([True, False]), "float16").tolist() == [1.0, 0.0]
    assert cast_array(arr([1.5], "bfloat16"), "int32").tolist() == [1]
    assert cast_array(np.array([2**24 + 1], np.int64), "float32").tolist() == [2.0**24]
    assert cast_array(np.array([70000], np.int32), "float16").tolist() == [np.inf]
    assert promotion.scalar_to_dtype(300, "uint8") == 44  # fill: ints wrap
    assert promotion.scalar_to_dtype(300.0, "uint8") == 255  # floats saturate
    assert promotion.scalar_to_dtype(-2.7, "int16") == -2


# ---- Philox ---------------------------------------------------------------------------------

KATS = [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


@pytest.mark.parametrize("ctr,key,want", KATS)
def test_philox_known_answers(ctr, key, want):
    out = philox.philox4x32(np.array(ctr, np.uint32), np.array(key, np.uint32))
    assert out.dtype == np.uint32 and out.tolist() == want


def test_philox_vectorized_matches_one_at_a_time():
    ctrs = np.array([k[0] for k in KATS], np.uint32)
    # one key per row (broadcast key [..., 2])
    keys = np.array([k[1] for k in KATS], np.uint32)
    assert philox.philox4x32(ctrs, keys).tolist() == [k[2] for k in KATS]


def test_counters_are_128_bit_little_endian():
    c = philox.counters(2**64 - 1, 3)
    assert c.tolist() == [[0xFFFFFFFF, 0xFFFFFFFF, 0, 0], [0, 0, 1, 0], [1, 0, 1, 0]]
    assert philox.counters(2**128 - 1, 2).tolist() == [[0xFFFFFFFF] * 4, [0, 0, 0, 0]]
    assert philox.seed_key(0x1234567890ABCDEF).tolist() == [0x90ABCDEF, 0x12345678]
    assert philox.seed_key(-1).tolist() == [0xFFFFFFFF, 0xFFFFFFFF]


def test_uniform_is_the_documented_formula():
    seed, offset = 0x0123456789ABCDEF, 17
    r = philox.philox4x32(philox.counters(offset, 6), philox.seed_key(seed)).astype(np.uint64)
    u32 = (r[:, 0] >> np.uint64(8)).astype(np.float64) * 2.0**-24
    u64 = ((r[:, 1] << np.uint64(21)) ^ (r[:, 0] >> np.uint64(11))).astype(np.float64) * 2**-53
    got = philox.uniform([2, 3], -1.0, 3.0, seed, offset, "float32")
    assert got.dtype == np.float32 and got.shape == (2, 3)
    np.testing.assert_array_equal(got.ravel(), (-1.0 + 4.0 * u32).astype(np.float32))
    got64 = philox.uniform([6], -1.0, 3.0, seed, offset, "float64")
    np.testing.assert_array_equal(got64, -1.0 + 4.0 * u64)
    for d in ("float16", "bfloat16"):
        h = philox.uniform([6], -1.0, 3.0, seed, offset, d)
        np.testing.assert_array_equal(h, promotion.round_float64(-1.0 + 4.0 * u32, d))
    # element i uses counter offset + i
    a = philox.uniform([10], 0.0, 1.0, 5, 0, "float64")
    b = philox.uniform([7], 0.0, 1.0, 5, 3, "float64")
    np.testing.assert_array_equal(a[3:], b)


def test_uniform_statistics():
    n = 200_000
    for d in FLOATS:
        u = f64(philox.uniform([n], 0.0, 1.0, 1234, 0, d))
        assert 0.0 <= u.min() and u.max() <= 1.0
        assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
        hist = np.histogram(u, bins=10, range=(0, 1))[0] / n
        assert np.abs(hist - 0.1).max() < 0.01
    u32 = philox.uniform([n], 0.0, 1.0, 1234, 0, "float32")
    assert u32.max() < 1.0  # (w0 >> 8) * 2**-24 never reaches 1 in float32
    v = f64(philox.uniform([n], -3.0, 5.0, 7, 99, "float64"))
    assert -3.0 <= v.min() and v.max() < 5.0 and abs(v.mean() - 1.0) < 0.03


def test_normal_is_box_muller_as_documented():
    shape, seed, offset = [3, 5], 99, 1000
    n = 15
    a = philox.unit(n, seed, offset, "float32")
    b = philox.unit(n, seed, offset + n, "float32")
    np.testing.assert_array_equal(a, f64(philox.uniform([n], 0.0, 1.0, seed, offset,
                                                        "float32")))
    z = np.sqrt(-2.0 * np.log(1.0 - a)) * np.cos(philox.TWO_PI * b)
    got = philox.normal(shape, 2.0, 0.5, seed, offset, "float64")
    np.testing.assert_array_equal(got.ravel(), 2.0 + 0.5 * z)
    for d in ("float32", "float16", "bfloat16"):
        np.testing.assert_array_equal(philox.normal(shape, 2.0, 0.5, seed, offset, d),
                                      promotion.round_float64(got, d))


def test_normal_statistics():
    z = philox.normal([400_000], 0.0, 1.0, 42, 0, "float64")
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    assert abs(np.mean(z**3)) < 0.03 and abs(np.mean(z**4) - 3.0) < 0.06
    # quantiles of the standard normal
    for q, want in ((0.025, -1.959964), (0.5, 0.0), (0.8413447, 1.0), (0.975, 1.959964)):
        assert abs(np.quantile(z, q) - want) < 0.02
    w = f64(philox.normal([100_000], 3.0, 2.0, 43, 0, "bfloat16"))
    assert abs(w.mean() - 3.0) < 0.03 and abs(w.std() - 2.0) < 0.03


# ---- every op of ops.yaml ------------------------------------------------------------------

def _idx(values: list[int]) -> np.ndarray:
    return np.array(values, np.int64)


def _case(name: str, d: str) -> tuple[list[Any], dict[str, Any]]:
    """Inputs and attributes of a small valid call of op `name` keyed by dtype d."""
    op = OPS[name]
    x = sample(d, (3, 4), 1)
    cat = op.category
    if name in ("log", "log1p", "log2", "sqrt", "rsqrt"):
        return [sample(d, (3, 4), 1, 0.1, 4)], {}
    if cat == "unary" and name != "cast":
        attrs = {"approximate": True} if name == "gelu" else {}
        return [x], attrs
    if name == "cast":
        return [x], {"dtype": "float16" if d != "float16" else "int32"}
    if cat == "binary":
        y = sample(d, (4,), 2, 1 if name in ("floor_divide", "remainder") else -4)
        if name == "pow":
            y = sample(d, (4,), 2, 0, 3)
        return [x, y], {}
    if name == "where":
        return [sample("bool", (3, 1), 3), x, sample(d, (4,), 4)], {}
    if name == "clip":
        return [x], {"min": -1.5, "max": 2}
    if cat in ("reduction", "scan"):
        attrs: dict[str, Any] = {}
        if name in ("cumsum", "cumprod", "argmax", "argmin"):
            attrs["axis"] = 1
        elif name in ("var", "std", "sum", "mean"):
            attrs["axis"] = [0]
        return [x], attrs
    if name == "matmul":
        return [sample(d, (2, 3, 4), 5), sample(d, (4, 2), 6)], {"transpose_x": False}
    simple_shape = {
        "reshape": {"shape": [2, -1]}, "transpose": {"perm": [1, 0]}, "flatten": {},
        "squeeze": {"axis": []}, "unsqueeze": {"axis": [0, -1]}, "expand": {"shape": [2, 3, -1]},
        "split": {"sections": 2, "axis": 1}, "flip": {"axis": [1]}, "tile": {"repeats": [2, 1]},
        "roll": {"shifts": [1], "axis": [1]}, "pad": {"pad": [1, 0, 0, 2], "value": 1.0},
        "tril": {"diagonal": 0}, "triu": {"diagonal": 1}, "copy": {},
        "slice": {"axes": [1], "starts": [-3], "ends": [100], "strides": [2]},
        "topk": {"k": 2}, "sort": {"descending": True}, "argsort": {},
        "softmax": {}, "log_softmax": {}, "dropout": {"p": 0.3, "seed": 3},
        "zeros_like": {}, "ones_like": {}, "full_like": {"fill_value": 2},
        "layer_norm": {}, "rms_norm": {},
    }
    if name in simple_shape:
        return [x], simple_shape[name]
    if name in ("concat", "stack"):
        return [[x, sample(d, (3, 4), 7)]], {"axis": 1}
    if name in ("gather", "index_select"):
        return [x, _idx([3, 0, 3])], {"axis": 1}
    if name == "take_along_axis":
        return [x, _idx([[0], [2], [1]])], {"axis": 1}
    if name == "scatter":
        return [x, _idx([2, 0, 2]), sample(d, (3, 3), 8)], {"axis": 1, "reduce": "assign"}
    if name == "embedding":  # keyed by the index (dtypes: all); vary the weight's dtype
        return [_idx([[0, 4, 4], [1, 2, 3]]), sample(d, (5, 2), 10)], {}
    if op.category == "creation" or op.category == "random":
        attrs = {"shape": [2, 3], "dtype": d}
        if name == "fill":
            attrs["value"] = 1.0
        if name == "full":
            attrs["fill_value"] = 3
        if name in ("uniform", "normal"):
            attrs["seed"] = 11
        if name == "arange":
            attrs = {"start": 1, "end": 7, "step": 2, "dtype": d}
        if name == "linspace":
            attrs = {"start": 0.0, "stop": 1.0, "num": 5, "dtype": d}
        if name == "eye":
            attrs = {"n": 3, "m": 4, "dtype": d}
        return [], attrs
    if name == "linear":
        return [x, sample(d, (4, 2), 12), sample(d, (2,), 13)], {}
    if name == "scaled_dot_product_attention":
        q = sample(d, (2, 3, 4), 14)
        return [q, sample(d, (2, 5, 4), 15), sample(d, (2, 5, 3), 16), None], {}
    if name == "rotary_embedding":
        return [x, sample(d, (4,), 17), sample(d, (4,), 18)], {}
    if name == "cross_entropy":
        return [x, _idx([0, 3, -100])], {}
    if name == "adam_update":  # moment2 >= 0
        v = np.abs(sample(d, (3, 4), 20))
        return [x, sample(d, (3, 4), 19), sample(d, (3, 4), 21), v], {
            "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lr": 0.01, "decay": 0.99}
    if name == "cross_entropy_grad":
        return [x, _idx([0, 3, -100]), sample(d, (), 25)], {}
    if name == "softmax_grad":
        return [x, sample(d, (3, 4), 22)], {"axis": -1}
    if name in ("layer_norm_grad", "rms_norm_grad"):
        return [x, sample(d, (3, 4), 23), sample(d, (4,), 24)], {}
    raise AssertionError(f"no case for {name}")


CASES = [(name, d) for name, op in OPS.items() for d in op.dtypes]


def test_every_ref_function_exists():
    wanted = {op.reference[4:] for op in OPS.values() if op.reference.startswith("ref:")}
    assert wanted <= set(reference_function_names())


@pytest.mark.parametrize("name,d", CASES)
def test_every_op_and_dtype_evaluates(name, d):
    op = OPS[name]
    inputs, attrs = _case(name, d)
    got = reference(name, inputs, attrs)
    in_dtypes = [None if v is None else ([t.dtype for t in v] if isinstance(v, list) else v.dtype)
                 for v in inputs]
    want_dtypes = out_dtype(op, in_dtypes, {a.name: attrs.get(a.name, a.default)
                                            for a in op.attrs})
    outs = got if isinstance(got, tuple) else (got,)
    for i, o in enumerate(outs):
        assert isinstance(o, np.ndarray) and o.flags.c_contiguous
        want = want_dtypes[min(i, len(want_dtypes) - 1)]
        assert promotion.dtype_name(o.dtype) == want, (name, d, i)
    # deterministic
    again = reference(name, inputs, attrs)
    for a, b in zip(outs, again if isinstance(again, tuple) else (again,), strict=True):
        assert a.shape == b.shape and a.tobytes() == b.tobytes()


def test_undefined_dtype_and_bad_attrs_are_errors():
    with pytest.raises(ValueError, match="not defined for dtype uint8"):
        reference("neg", [np.arange(3, dtype=np.uint8)], {})
    with pytest.raises(ValueError, match="not defined for dtype int32"):
        reference("exp", [np.arange(3, dtype=np.int32)], {})
    with pytest.raises(ValueError, match="not defined for dtype bool"):
        reference("subtract", [np.ones(2, bool), np.ones(2, bool)], {})
    with pytest.raises(ValueError, match="unknown attribute"):
        reference("exp", [np.ones(2)], {"axis": 1})
    with pytest.raises(ValueError, match="required"):
        reference("reshape", [np.ones(2)], {})
    with pytest.raises(ValueError, match="unknown op"):
        reference("nope", [], {})
    with pytest.raises(ValueError, match="expected 2 inputs"):
        reference("add", [np.ones(2)], {})


# ---- elementwise semantics ------------------------------------------------------------------

def test_add_rounds_once_from_the_exact_sum():
    rng = np.random.default_rng(0)
    for d in ("float16", "bfloat16", "float32"):
        x = arr(rng.normal(size=1000) * 100, d)
        y = arr(rng.normal(size=1000) * 1e-2, d)
        got = reference("add", [x, y], {})
        want = promotion.round_float64(f64(x) + f64(y), d)  # exact in float64
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    # mixed: int32 + float16 runs in float16 (the int is cast first)
    got = reference("add", [np.array([2049], np.int32), np.array([0.0], np.float16)], {})
    assert got.dtype == np.float16 and got.tolist() == [2048.0]


def test_bool_and_integer_arithmetic():
    t, f = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert reference("add", [t, f], {}).tolist() == [True, True, True, False]
    assert reference("multiply", [t, f], {}).tolist() == [True, False, False, False]
    a = np.array([127, -128, 100], np.int8)
    assert reference("add", [a, np.array([1, -1, 100], np.int8)], {}).tolist() == [-128, 127,
                                                                                    -56]
    assert reference("multiply", [a, np.array([2], np.int8)], {}).tolist() == [-2, 0, -56]
    assert reference("neg", [np.array([-128], np.int8)], {}).tolist() == [-128]
    assert reference("abs", [np.array([-128, -3], np.int8)], {}).tolist() == [-128, 3]
    assert reference("subtract", [np.array([0], np.uint8), np.array([1], np.uint8)],
                     {}).tolist() == [255]
    # int8 with uint8 -> int16: no wrap
    assert reference("add", [np.array([127], np.int8), np.array([255], np.uint8)],
                     {}).tolist() == [382]
    x = np.array([7, -7, 7, -7, 5, -128, 0], np.int8)
    y = np.array([2, 2, -2, -2, 0, -1, 0], np.int8)
    assert reference("floor_divide", [x, y], {}).tolist() == [3, -4, -4, 3, 0, -128, 0]
    assert reference("remainder", [x, y], {}).tolist() == [1, 1, -1, -1, 0, 0, 0]
    assert reference("divide", [np.array([1, -7], np.int64), np.array([3, 0], np.int64)],
                     {}).tolist() == [np.float32(1 / 3), -np.inf]


def test_integer_pow():
    base = np.array([2, 2, 1, 1, -1, -1, 0, 3, 0, -2], np.int32)
    exp_ = np.array([10, 31, -5, 0, -3, -4, -1, -2, 0, 31], np.int32)
    got = reference("pow", [base, exp_], {})
    assert got.dtype == np.int32
    assert got.tolist() == [1024, -2**31, 1, 1, -1, 1, 0, 0, 1, -2**31]
    assert reference("pow", [np.array([3], np.uint8), np.array([5], np.uint8)],
                     {}).tolist() == [243 % 256]
    assert reference("pow", [np.array([3], np.int64), np.array([40], np.int64)],
                     {}).tolist() == [(3**40 + 2**63) % 2**64 - 2**63]


def test_float_rounding_nan_and_extremes():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, np.nan, -np.inf], np.float32)
    assert reference("round", [x], {})[:5].tolist() == [0.0, 2.0, 2.0, -0.0, -2.0]
    assert np.isnan(reference("sign", [x], {})[5])
    m = reference("maximum", [np.array([1.0, np.nan, 2.0]), np.array([np.nan, 0.0, 1.0])], {})
    assert np.isnan(m[:2]).all() and m[2] == 2.0
    m = reference("minimum", [np.array([1.0, np.nan]), np.array([np.nan, 0.0])], {})
    assert np.isnan(m).all()
    big = np.array([2**62 + 1], np.int64)
    for name in ("floor", "ceil", "round"):
        assert reference(name, [big], {}).tolist() == [2**62 + 1]
    assert reference("isnan", [np.array([1, 2], np.int8)], {}).tolist() == [False, False]
    assert reference("logical_not", [np.array([0.0, np.nan])], {}).tolist() == [True, False]
    assert reference("bitwise_not", [np.array([True, False])], {}).tolist() == [False, True]
    assert reference("bitwise_not", [np.array([0, 5], np.uint8)], {}).tolist() == [255, 250]


def test_erf_gelu_softplus_independent_formulas():
    xs = np.array([-30.0, -5.0, -1.0, -1e-3, 0.0, 0.3, 1.0, 4.0, 30.0])
    np.testing.assert_array_equal(reference("erf", [xs], {}), [math.erf(v) for v in xs])
    g = reference("gelu", [xs], {"approximate": False})
    np.testing.assert_allclose(g, [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in xs],
                               rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(g, [0.5 * v * math.erfc(-v / math.sqrt(2)) for v in xs],
                               rtol=1e-12, atol=0)
    assert g[0] < 0  # -30: no cancellation to 0
    gt = reference("gelu", [xs], {"approximate": True})
    c = math.sqrt(2 / math.pi)
    np.testing.assert_allclose(gt, [0.5 * v * (1 + math.tanh(c * (v + 0.044715 * v**3)))
                                    for v in xs], rtol=1e-14, atol=1e-16)
    sp = reference("softplus", [xs], {"beta": 2.0, "threshold": 10.0})
    want = [v if 2 * v > 10 else math.log1p(math.exp(2 * v)) / 2 for v in xs]
    np.testing.assert_allclose(sp, want, rtol=1e-15)
    s = reference("sigmoid", [np.array([-1000.0, 0.0, 1000.0], np.float32)], {})
    assert s.tolist() == [0.0, 0.5, 1.0]


def test_clip():
    x = np.array([-5, -1, 0, 3, 9], np.int8)
    assert reference("clip", [x], {"min": -1.7, "max": 3.9}).tolist() == [-1, -1, 0, 3, 3]
    assert reference("clip", [x], {"min": None, "max": 2}).tolist() == [-5, -1, 0, 2, 2]
    assert reference("clip", [x], {"min": -1000, "max": None}).tolist() == x.tolist()
    assert reference("clip", [np.array([0, 200], np.uint8)], {"min": -3.0, "max": 300}
                     ).tolist() == [0, 200]
    f = np.array([np.nan, -2.0, 0.5, 7.0], np.float16)
    r = reference("clip", [f], {"min": 0.1, "max": 1.0})
    assert np.isnan(r[0]) and r[1:].tolist() == [np.float16(0.1), 0.5, 1.0]
    assert reference("clip", [np.array([1.0, 5.0])], {"min": 3.0, "max": 2.0}).tolist() == [
        2.0, 2.0]


# ---- reductions and scans ------------------------------------------------------------------

def test_sum_and_friends():
    x = np.arange(24, dtype=np.int8).reshape(2, 3, 4) * 10
    got = reference("sum", [x], {"axis": []})
    assert got.dtype == np.int64 and int(got) == int(x.astype(np.int64).sum())
    got = reference("sum", [x], {"axis": [-1, 0], "keepdim": True})
    assert got.shape == (1, 3, 1)
    np.testing.assert_array_equal(got, x.astype(np.int64).sum(axis=(0, 2), keepdims=True))
    assert reference("sum", [np.array([True, True, False])], {}).tolist() == 2
    assert reference("sum", [np.array([1.7, 2.7])], {"dtype": "int32"}).tolist() == 3
    assert reference("prod", [np.array([2**40, 2**40], np.int64)], {}).tolist() == 0  # wraps
    h = arr(np.full(4096, 0.1), "float16")
    assert float(reference("sum", [h], {})) == float(np.float16(4096 * float(h[0])))
    assert reference("sum", [np.zeros((0, 3))], {"axis": [0]}).tolist() == [0.0] * 3
    assert reference("prod", [np.zeros((0,), np.int8)], {}).tolist() == 1
    assert np.isnan(reference("mean", [np.zeros((0,))], {}))
    with pytest.raises(ValueError, match="zero elements"):
        reference("max", [np.zeros((2, 0))], {"axis": [1]})
    with pytest.raises(ValueError, match="repeats"):
        reference("sum", [x], {"axis": [0, -3]})


def test_max_min_argmax_nan_and_ties():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, -1.0]])
    assert np.isnan(reference("max", [x], {"axis": [1]})[0])
    assert reference("max", [x], {"axis": [1]})[1] == 5.0
    assert reference("argmax", [x], {"axis": 1}).tolist() == [1, 1]  # NaN is the max; first
    assert reference("argmin", [x], {"axis": 1}).tolist() == [1, 3]  # NaN is the min
    assert reference("argmax", [x], {"axis": None}).tolist() == 1
    k = reference("argmax", [x], {"axis": None, "keepdim": True})
    assert k.shape == (1, 1) and k.dtype == np.int64
    assert reference("argmax", [np.array([False, True, True])], {}).tolist() == 1
    assert reference("max", [np.array([3, -7], np.int8)], {}).tolist() == 3
    assert reference("any", [np.array([0.0, np.nan])], {}).tolist() is True
    assert reference("all", [np.zeros((0,))], {}).tolist() is True


def test_logsumexp_var_std():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [np.inf, 1.0], [0.0, np.log(3.0)]])
    got = reference("logsumexp", [x], {"axis": [1]})
    assert got[0] == pytest.approx(1000 + math.log(2))
    assert got[1] == -np.inf and got[2] == np.inf and got[3] == pytest.approx(math.log(4))
    y = np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])
    np.testing.assert_allclose(reference("var", [y], {"axis": [1]}), np.var(y, 1, ddof=1))
    np.testing.assert_allclose(reference("std", [y], {"axis": [1], "unbiased": False}),
                               np.std(y, 1))
    assert np.isnan(reference("var", [np.array([5.0])], {}))


def test_cumsum_cumprod():
    x = np.array([[100, 100], [100, 100]], np.int8)
    got = reference("cumsum", [x], {"axis": None})
    assert got.dtype == np.int64 and got.tolist() == [100, 200, 300, 400]
    assert reference("cumsum", [x], {"axis": -2}).tolist() == [[100, 100], [200, 200]]
    assert reference("cumprod", [np.array([True, True, False, True])],
                     {}).tolist() == [1, 1, 0, 0]
    f = reference("cumsum", [arr([0.1] * 5, "float32")], {"axis": 0})
    np.testing.assert_array_equal(f, np.cumsum(f64(arr([0.1] * 5, "float32"))).astype(
        np.float32))


# ---- linear algebra, shapes, indexing ------------------------------------------------------

def test_matmul():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(2, 1, 3, 4)), rng.normal(size=(5, 4, 2))
    np.testing.assert_allclose(reference("matmul", [x, y], {}), x @ y, rtol=1e-14)
    xt = np.swapaxes(x, -1, -2).copy()
    np.testing.assert_allclose(reference("matmul", [xt, y], {"transpose_x": True}), x @ y,
                               rtol=1e-14)
    v = rng.normal(size=4)
    np.testing.assert_allclose(reference("matmul", [v, v], {"transpose_x": True}), v @ v)
    assert reference("matmul", [v, v], {}).shape == ()
    i8 = np.full((2, 3), 100, np.int8)
    got = reference("matmul", [i8, i8.T.copy()], {})
    assert got.dtype == np.int8 and got.tolist() == [[30000 % 256] * 2] * 2  # 48: wrapped


def test_shape_ops():
    x = np.arange(24).reshape(2, 3, 4)
    assert reference("transpose", [x], {"perm": None}).shape == (4, 3, 2)
    assert reference("transpose", [x], {"perm": [-1, 0, 1]}).shape == (4, 2, 3)
    assert reference("flatten", [x], {"start_axis": 1}).shape == (2, 12)
    assert reference("flatten", [np.array(5)], {}).shape == (1,)
    s = np.zeros((1, 3, 1, 2))
    assert reference("squeeze", [s], {"axis": []}).shape == (3, 2)
    assert reference("squeeze", [s], {"axis": [1, -2]}).shape == (1, 3, 2)  # dim 1 kept
    assert reference("unsqueeze", [np.zeros((3, 2))], {"axis": [0, -1]}).shape == (1, 3, 2, 1)
    assert reference("unsqueeze", [np.zeros((3, 2))], {"axis": 1}).shape == (3, 1, 2)
    e = reference("expand", [np.array([[1], [2]])], {"shape": [3, -1, 4]})
    assert e.shape == (3, 2, 4) and e[2, 1, 3] == 2
    with pytest.raises(ValueError):
        reference("expand", [np.array([1, 2])], {"shape": [-1, 2]})
    parts = reference("split", [x], {"sections": [1, -1], "axis": -1})
    assert [p.shape for p in parts] == [(2, 3, 1), (2, 3, 3)]
    parts = reference("split", [x], {"sections": 2, "axis": 2})
    assert [p.shape for p in parts] == [(2, 3, 2), (2, 3, 2)]
    assert len(reference("split", [x], {"sections": [2], "axis": 0})) == 1  # sizes
    assert len(reference("split", [x], {"sections": [2], "axis": 0, "_sizes": False})) == 2
    with pytest.raises(ValueError, match="equal parts"):
        reference("split", [x], {"sections": 5, "axis": 2})
    sl = reference("slice", [x], {"axes": [2, 0], "starts": [-1, 5], "ends": [-100, 9],
                                  "strides": [-2, 1]})
    np.testing.assert_array_equal(sl, x[5:9, :, -1:-100:-2])
    np.testing.assert_array_equal(reference("flip", [x], {"axis": [0, -1]}), x[::-1, :, ::-1])
    np.testing.assert_array_equal(reference("roll", [x], {"shifts": [5]}),
                                  np.roll(x.ravel(), 5).reshape(x.shape))
    np.testing.assert_array_equal(reference("roll", [x], {"shifts": [1, -1], "axis": [0, 2]}),
                                  np.roll(x, (1, -1), (0, 2)))
    p = reference("pad", [np.ones((2, 2), np.int16)], {"pad": [1, 0], "value": 7.9})
    assert p.tolist() == [[7, 7], [1, 1], [1, 1]]
    with pytest.raises(ValueError, match="negative"):
        reference("pad", [np.ones((2, 2))], {"pad": [-1, 0]})
    np.testing.assert_array_equal(reference("tile", [np.array([1, 2])], {"repeats": [2, 2]}),
                                  np.tile([1, 2], (2, 2)))
    with pytest.raises(ValueError):
        reference("tril", [np.ones(3)], {})
    c = reference("concat", [[np.array([1], np.int8), np.array([2.5], np.float16)]], {})
    assert c.dtype == np.float16 and c.tolist() == [1.0, 2.5]
    st = reference("stack", [[np.zeros(2), np.ones(2)]], {"axis": -1})
    assert st.shape == (2, 2)


def test_indexing_ops():
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(reference("gather", [x, _idx([3, 0, 3])], {"axis": -1}),
                                  x[:, [3, 0, 3]])
    with pytest.raises(IndexError):
        reference("gather", [x, _idx([-1])], {})
    with pytest.raises(IndexError):
        reference("index_select", [x, _idx([3])], {"axis": 0})
    np.testing.assert_array_equal(
        reference("take_along_axis", [x, _idx([[1, 0, 2, 2]])], {"axis": 0}),
        x[[1, 0, 2, 2], [0, 1, 2, 3]][None])
    upd = np.array([[10], [20], [30]]) * np.array([1, 1, 1, 1])
    got = reference("scatter", [x, _idx([2, 0, 2]), upd], {"axis": 0, "reduce": "assign"})
    assert got[2].tolist() == [30] * 4 and got[0].tolist() == [20] * 4
    got = reference("scatter", [x, _idx([2, 0, 2]), upd], {"axis": 0, "reduce": "add"})
    assert got[2].tolist() == (x[2] + 40).tolist() and got[1].tolist() == x[1].tolist()
    got = reference("scatter", [np.zeros(3, np.float16), _idx([1, 1]),
                                np.array([0.1, 0.2])], {"reduce": "add"})
    assert got.dtype == np.float16 and got[1] == np.float16(float(np.float16(0.1)) +
                                                            float(np.float16(0.2)))
    b = reference("scatter", [np.array([False, False]), _idx([0, 0]), np.array([True, False])],
                  {"reduce": "add"})
    assert b.tolist() == [True, False]
    e = reference("embedding", [np.array([[1, 0]], np.int32), np.eye(3, dtype=np.float32)], {})
    assert e.shape == (1, 2, 3) and e.dtype == np.float32


def test_sort_argsort_topk():
    x = np.array([3.0, np.nan, 1.0, 3.0, -np.inf, np.nan, 1.0])
    assert reference("argsort", [x], {}).tolist() == [4, 2, 6, 0, 3, 1, 5]
    assert reference("argsort", [x], {"descending": True}).tolist() == [1, 5, 0, 3, 2, 6, 4]
    s = reference("sort", [x], {"descending": True})
    assert np.isnan(s[:2]).all() and s[2:].tolist() == [3.0, 3.0, 1.0, 1.0, -np.inf]
    v, i = reference("topk", [x], {"k": 3})
    assert i.tolist() == [1, 5, 0] and i.dtype == np.int64
    v, i = reference("topk", [x], {"k": 3, "largest": False})
    assert v.tolist() == [-np.inf, 1.0, 1.0] and i.tolist() == [4, 2, 6]
    u = np.array([[5, 255, 0, 255]], np.uint8)
    assert reference("argsort", [u], {"axis": 1, "descending": True}).tolist() == [[1, 3, 0, 2]]
    v, i = reference("topk", [u], {"k": 2, "axis": -1})
    assert v.tolist() == [[255, 255]] and i.tolist() == [[1, 3]]
    mn = np.array([-128, 127, -128], np.int8)
    assert reference("argsort", [mn], {"descending": True}).tolist() == [1, 0, 2]


# ---- creation, cast, random ops -------------------------------------------------------------

def test_creation_ops():
    assert reference("full", [], {"shape": [2], "fill_value": 3}).dtype == np.int64
    assert reference("full", [], {"shape": [2], "fill_value": 2.5}).dtype == np.float32
    assert reference("full", [], {"shape": [1], "fill_value": True}).tolist() == [True]
    assert reference("fill", [], {"shape": [1], "value": 300, "dtype": "uint8"}).tolist() == [44]
    assert reference("fill", [], {"shape": [1], "value": -2.7, "dtype": "int8"}).tolist() == [-2]
    assert reference("fill", [], {"shape": [1], "value": 1e9, "dtype": "int8"}).tolist() == [127]
    fl = reference("full_like", [np.zeros(2, np.int8)], {"fill_value": 2.7, "dtype": "float32"})
    assert fl.dtype == np.float32 and fl.tolist() == [np.float32(2.7)] * 2
    assert reference("full_like", [np.zeros(2, np.int8)], {"fill_value": 2.7}).tolist() == [2, 2]
    assert reference("ones_like", [np.zeros((1, 2), BF16)], {}).dtype == BF16
    assert reference("eye", [], {"n": 2, "dtype": "bool"}).tolist() == [[True, False],
                                                                         [False, True]]
    assert reference("eye", [], {"n": 2, "m": 3}).shape == (2, 3)
    ar = reference("arange", [], {"start": 5})
    assert ar.dtype == np.int64 and ar.tolist() == [0, 1, 2, 3, 4]
    assert reference("arange", [], {"start": 10, "end": 0, "step": -3}).tolist() == [10, 7, 4, 1]
    assert reference("arange", [], {"start": 0, "end": 1, "step": 0.25}).tolist() == [
        0, 0.25, 0.5, 0.75]
    assert reference("arange", [], {"start": 0, "end": 1.0, "step": 0.1}).dtype == np.float32
    assert reference("arange", [], {"start": 0.5, "end": 3, "dtype": "int32"}).tolist() == [
        0, 1, 2]
    assert reference("arange", [], {"start": 120, "end": 130, "step": 4,
                                    "dtype": "int8"}).tolist() == [120, 124, -128]
    big = reference("arange", [], {"start": 2**60, "end": 2**60 + 3})
    assert big.tolist() == [2**60, 2**60 + 1, 2**60 + 2]
    ls = reference("linspace", [], {"start": 0.0, "stop": 1.0, "num": 3, "dtype": "float16"})
    assert ls.dtype == np.float16 and ls.tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match="step"):
        reference("arange", [], {"start": 0, "end": 3, "step": 0})


def test_cast_and_random_ops():
    c = reference("cast", [np.array([np.nan, -1e20, 3.99], np.float32)], {"dtype": "int32"})
    assert c.tolist() == [0, -2**31, 3]
    u = reference("uniform", [], {"shape": [4], "seed": 5, "low": 1.0, "high": 2.0})
    np.testing.assert_array_equal(u, philox.uniform([4], 1.0, 2.0, 5, 0, "float32"))
    n = reference("normal", [], {"shape": [4], "seed": 5, "dtype": "bfloat16", "offset": 7})
    np.testing.assert_array_equal(n, philox.normal([4], 0.0, 1.0, 5, 7, "bfloat16"))


def test_dropout():
    x = arr(np.arange(1, 10001), "float32")
    x[0], x[1] = np.inf, np.nan
    p = 0.3
    got = reference("dropout", [x], {"p": p, "seed": 7, "offset": 3})
    keep = philox.unit(x.size, 7, 3, "float32") >= p
    np.testing.assert_array_equal(got, np.where(keep, f64(x) * (1 / (1 - p)), 0.0).astype(
        np.float32))
    assert abs(keep.mean() - 0.7) < 0.02
    np.testing.assert_array_equal(reference("dropout", [x], {"training": False}), x)
    assert not reference("dropout", [x], {"p": 1.0}).any()
    np.testing.assert_array_equal(reference("dropout", [x[2:]], {"p": 0.0}), x[2:])
    with pytest.raises(ValueError, match="p must be"):
        reference("dropout", [x], {"p": 1.5})


# ---- nn ops: independent formulas ------------------------------------------------------------

def test_softmax_layer_norm_rms_norm_formulas():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 3, 5))
    sm = reference("softmax", [x], {"axis": 1})
    np.testing.assert_allclose(sm, np.exp(x) / np.exp(x).sum(1, keepdims=True), rtol=1e-14)
    lsm = reference("log_softmax", [x], {})
    np.testing.assert_allclose(lsm, np.log(np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
                               rtol=1e-13)
    w, b = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    ln = reference("layer_norm", [x, w, b], {"normalized_ndim": 2, "epsilon": 1e-3})
    m = x.mean((1, 2), keepdims=True)
    v = ((x - m) ** 2).mean((1, 2), keepdims=True)
    np.testing.assert_allclose(ln, (x - m) / np.sqrt(v + 1e-3) * w + b, rtol=1e-13)
    rms = reference("rms_norm", [x, None], {})
    # the default eps is Paddle's (1e-5)
    np.testing.assert_allclose(rms, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5),
                               rtol=1e-14)
    h = reference("layer_norm", [arr(x, "float16"), w[0].astype(np.float32), None], {})
    assert h.dtype == np.float16
    with pytest.raises(ValueError, match="weight"):
        reference("layer_norm", [x, np.ones(3), None], {})


def test_rotary_and_cross_entropy_formulas():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 6))
    cos, sin = np.cos(np.arange(6.0)), np.sin(np.arange(6.0))
    got = reference("rotary_embedding", [x, cos, sin], {})
    rot = np.concatenate([-x[:, 3:], x[:, :3]], axis=-1)
    np.testing.assert_allclose(got, x * cos + rot * sin, rtol=1e-15)
    logits = rng.normal(size=(4, 3))
    label = _idx([2, -100, 0, 1])
    per = [math.log(sum(math.exp(v) for v in row)) - row[lab]
           for row, lab in zip(logits, label.tolist(), strict=True) if lab != -100]
    none = reference("cross_entropy", [logits, label], {"reduction": "none"})
    assert none[1] == 0.0
    np.testing.assert_allclose(none[[0, 2, 3]], per, rtol=1e-13)
    np.testing.assert_allclose(reference("cross_entropy", [logits, label], {}), np.mean(per))
    np.testing.assert_allclose(reference("cross_entropy", [logits, label], {"reduction": "sum"}),
                               np.sum(per))
    assert np.isnan(reference("cross_entropy", [logits, _idx([-100] * 4)], {}))
    with pytest.raises(IndexError):
        reference("cross_entropy", [logits, _idx([3, 0, 0, 0])], {})


def test_sdpa_formula_and_masks():
    rng = np.random.default_rng(6)
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))

    def naive(mask_add):
        s = q @ np.swapaxes(k, -1, -2) / 2.0 + mask_add
        p = np.exp(s - s.max(-1, keepdims=True))
        return (p / p.sum(-1, keepdims=True)) @ v

    np.testing.assert_allclose(reference("scaled_dot_product_attention", [q, k, v, None], {}),
                               naive(0.0), rtol=1e-13)
    causal = np.where(np.tril(np.ones((3, 5), bool)), 0.0, -np.inf)
    np.testing.assert_allclose(
        reference("scaled_dot_product_attention", [q, k, v, None], {"is_causal": True}),
        naive(causal), rtol=1e-13)
    bmask = rng.random((3, 5)) < 0.7
    bmask[:, 0] = True
    np.testing.assert_allclose(
        reference("scaled_dot_product_attention", [q, k, v, bmask], {}),
        naive(np.where(bmask, 0.0, -np.inf)), rtol=1e-13)
    fmask = rng.normal(size=(1, 3, 5)).astype(np.float32)
    np.testing.assert_allclose(
        reference("scaled_dot_product_attention", [q, k, v, fmask], {"scale": 0.5}),
        naive(f64(fmask)), rtol=1e-13)
    out = reference("scaled_dot_product_attention",
                    [arr(q, "float16"), arr(k, "float16"), arr(v, "float16"), fmask], {})
    assert out.dtype == np.float16


# ---- nn ops against PyTorch ----------------------------------------------------------------

@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_against_torch_activations(torch):
    x = np.random.default_rng(7).normal(size=200) * 6
    x = np.concatenate([x, [-40.0, 0.0, 40.0, 10.0, 9.99]])
    t = torch.from_numpy(x)
    F = torch.nn.functional
    # (PyTorch evaluates 1 + erf / 1 + tanh directly: cancellation at negative x, so atol)
    np.testing.assert_allclose(reference("gelu", [x], {}), F.gelu(t).numpy(), rtol=1e-14,
                               atol=1e-15)
    np.testing.assert_allclose(reference("gelu", [x], {"approximate": True}),
                               F.gelu(t, approximate="tanh").numpy(), rtol=1e-14, atol=1e-15)
    for beta, thr in ((1.0, 20.0), (2.0, 5.0), (0.5, 1.0)):
        np.testing.assert_allclose(reference("softplus", [x], {"beta": beta, "threshold": thr}),
                                   F.softplus(t, beta=beta, threshold=thr).numpy(), rtol=1e-14)
    np.testing.assert_allclose(reference("silu", [x], {}), F.silu(t).numpy(), rtol=1e-14)
    np.testing.assert_allclose(reference("erf", [x], {}), torch.erf(t).numpy(), rtol=1e-14,
                               atol=1e-300)


def test_against_torch_norms_and_losses(torch):
    rng = np.random.default_rng(8)
    x = rng.normal(size=(3, 4, 6)) * 3 + 1
    w, b = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    F = torch.nn.functional
    t = torch.from_numpy
    np.testing.assert_allclose(
        reference("layer_norm", [x, w, b], {"normalized_ndim": 2, "epsilon": 1e-5}),
        F.layer_norm(t(x), (4, 6), t(w), t(b), eps=1e-5).numpy(), rtol=1e-12, atol=1e-12)
    if hasattr(F, "rms_norm"):
        np.testing.assert_allclose(
            reference("rms_norm", [x, w[0]], {"epsilon": 1e-6}),
            F.rms_norm(t(x), (6,), t(w[0]), eps=1e-6).numpy(), rtol=1e-12)
    np.testing.assert_allclose(reference("log_softmax", [x], {"axis": 1}),
                               F.log_softmax(t(x), dim=1).numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(reference("logsumexp", [x], {"axis": [0, 2]}),
                               torch.logsumexp(t(x), dim=(0, 2)).numpy(), rtol=1e-13)
    np.testing.assert_allclose(reference("std", [x], {"axis": [1], "keepdim": True}),
                               torch.std(t(x), dim=1, keepdim=True).numpy(), rtol=1e-13)
    logits = rng.normal(size=(8, 5)) * 4
    label = rng.integers(0, 5, 8)
    label[[1, 6]] = 2
    for red in ("mean", "sum", "none"):
        np.testing.assert_allclose(
            reference("cross_entropy", [logits, label], {"reduction": red, "ignore_index": 2}),
            F.cross_entropy(t(logits), t(label), reduction=red, ignore_index=2).numpy(),
            rtol=1e-12, atol=1e-14)


def test_against_torch_attention(torch):
    rng = np.random.default_rng(9)
    q, k, v = (rng.normal(size=s) for s in ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)))
    F = torch.nn.functional
    t = torch.from_numpy
    for kwargs in ({}, {"is_causal": True}, {"scale": 0.3}):
        np.testing.assert_allclose(
            reference("scaled_dot_product_attention", [q, k, v, None], kwargs),
            F.scaled_dot_product_attention(t(q), t(k), t(v), **kwargs).numpy(), rtol=1e-12,
            atol=1e-13)
    bmask = rng.random((5, 7)) < 0.6
    bmask[:, 0] = True
    fmask = rng.normal(size=(3, 5, 7))
    for m in (bmask, fmask):
        np.testing.assert_allclose(
            reference("scaled_dot_product_attention", [q, k, v, m], {}),
            F.scaled_dot_product_attention(t(q), t(k), t(v), attn_mask=t(m)).numpy(),
            rtol=1e-12, atol=1e-13)


def test_against_torch_sort_topk_and_scans(torch):
    rng = np.random.default_rng(10)
    x = rng.integers(-3, 4, (4, 9)).astype(np.float64)
    x[0, [2, 5]] = np.nan
    t = torch.from_numpy(x)
    for desc in (False, True):
        np.testing.assert_array_equal(
            reference("argsort", [x], {"axis": 1, "descending": desc}),
            torch.sort(t, dim=1, descending=desc, stable=True).indices.numpy())
    vals, idx = reference("topk", [x[1:]], {"k": 4})
    tv, _ = torch.topk(t[1:], 4)
    np.testing.assert_array_equal(vals, tv.numpy())  # (torch's tie order is unspecified)
    np.testing.assert_array_equal(np.take_along_axis(x[1:], idx, 1), vals)
    y = rng.normal(size=(3, 4))
    np.testing.assert_allclose(reference("cumprod", [y], {"axis": 0}),
                               torch.cumprod(torch.from_numpy(y), 0).numpy(), rtol=1e-14)
    a = rng.normal(size=50) * 10
    b = rng.normal(size=50) * 3
    np.testing.assert_array_equal(reference("remainder", [a, b], {}),
                                  torch.remainder(torch.from_numpy(a), torch.from_numpy(b)))


# ---- the comparator --------------------------------------------------------------------------

def test_ulp_distance():
    f32 = np.float32
    one = np.array([1.0], f32)
    nxt = np.nextafter(one, f32(2))
    assert tolerance.ulp_distance(nxt, one, "float32").tolist() == [1]
    tiny = np.array([np.nextafter(f32(0), f32(1))])
    assert tolerance.ulp_distance(-tiny, tiny, "float32").tolist() == [2]  # across zero
    assert tolerance.ulp_distance(np.array([-0.0]), np.array([0.0]), "float64").tolist() == [0]
    assert tolerance.ulp_distance(np.array([-1.0]), np.array([1.0]), "float64").tolist() == [
        2 * 0x3FF0000000000000]
    h = np.array([1.0], np.float16)
    assert tolerance.ulp_distance(h + np.float16(2 ** -10), h, "float16").tolist() == [1]
    bf = arr([1.0, 1.0 + 2**-7], "bfloat16")
    assert tolerance.ulp_distance(bf[1:], bf[:1], "bfloat16").tolist() == [1]


def test_compare_tolerance_profiles():
    want = arr([1.0, 2.0, 3.0], "float16")
    got = want.copy()
    got[2] = np.nextafter(got[2], np.float16(4))
    c = tolerance.compare("add", "float16", got, want)  # rounding: 1 ulp
    assert c.ok and c.max_ulp == 1 and c.first_mismatch is None
    got[2] = np.nextafter(got[2], np.float16(4))
    c = tolerance.compare("add", "float16", got, want)
    assert not c.ok and c.max_ulp == 2 and c.first_mismatch == (2,) and c.mismatches == 1
    assert "add[float16]" in c.message and "ulp <= 1" in c.message and "(2,)" in c.message
    # float32 is absent from `rounding`: exact
    w32 = np.array([1.0, 2.0], np.float32)
    g32 = np.nextafter(w32, np.float32(3))
    assert not tolerance.compare("add", "float32", g32, w32).ok
    assert tolerance.compare("exp", "float32", g32, w32).ok  # rtol 1e-6
    # rtol/atol
    w = np.array([0.0, 100.0])
    tol = {"rtol": 1e-12, "atol": 1e-12}
    assert tolerance.compare("x", "f", w + np.array([1e-12, 1e-10]), w, tolerance=tol).ok
    c = tolerance.compare("x", "f", w + np.array([0.0, 1e-8]), w, tolerance=tol)
    assert not c.ok and c.first_mismatch == (1,) and "rtol=1e-12" in c.message
    with pytest.raises(ValueError, match="unknown op"):
        tolerance.compare("nope", "float32", w, w)


def test_compare_nan_inf_zero_and_worst_element():
    w = np.array([[np.nan, np.inf, -np.inf, 0.0, 5.0]])
    g = np.array([[np.nan, np.inf, -np.inf, -0.0, 5.0]])
    c = tolerance.compare("abs", "float64", g, w)
    assert c.ok and c.max_abs_error == 0.0
    g2 = g.copy()
    g2[0, 1] = 1.7e308  # 1 ulp from inf is still wrong
    c = tolerance.compare("exp", "float64", g2, w)
    assert not c.ok and c.first_mismatch == (0, 1) and "want inf" in c.message
    g3 = g.copy()
    g3[0, 4] = np.nan
    c = tolerance.compare("exp", "float64", g3, w)
    assert not c.ok and c.first_mismatch == (0, 4) and "got nan" in c.message
    g4 = g.copy()
    g4[0, 0] = 1.0
    assert not tolerance.compare("exp", "float64", g4, w).ok
    # the worst element is named, the first mismatch too
    want = np.arange(6, dtype=np.float32)
    got = want.copy()
    got[1] += 1e-3
    got[4] += 1.0
    c = tolerance.compare("exp", "float32", got, want)
    assert c.first_mismatch == (1,) and c.mismatches == 2
    assert "worst at index (4,): got 5.0, want 4.0" in c.message


def test_compare_bitwise():
    w = np.array([0.0, np.nan, 1.0])
    g = np.array([-0.0, np.nan, 1.0])
    assert tolerance.compare("copy", "float64", g, w).ok
    c = tolerance.compare("copy", "float64", g, w, bitwise=True)
    assert not c.ok and c.first_mismatch == (0,) and "bitwise" in c.message
    assert tolerance.compare("copy", "float64", w.copy(), w, bitwise=True).ok
    b = arr([[1.0, 2.0]], "bfloat16")
    assert tolerance.compare("copy", "bfloat16", b.copy(), b, bitwise=True).ok
    assert tolerance.compare("copy", "float32", np.float32(2), np.float32(2), bitwise=True).ok


def test_compare_shapes_dtypes_and_integers():
    c = tolerance.compare("exp", "float32", np.zeros((2, 3), np.float32),
                          np.zeros((3, 2), np.float32))
    assert not c.ok and "shape mismatch" in c.message and "[2, 3]" in c.message
    c = tolerance.compare("exp", "float32", np.zeros(2, np.float64), np.zeros(2, np.float32))
    assert not c.ok and "dtype mismatch: got float64, want float32" in c.message
    # integer outputs compare exactly whatever the profile
    c = tolerance.compare("sum", "float32", np.array([5, 7]), np.array([5, 8]))
    assert not c.ok and c.first_mismatch == (1,) and "got 7, want 8" in c.message
    assert tolerance.compare("equal", "int8", np.array([True]), np.array([True])).ok
    assert tolerance.compare("exp", "float32", np.zeros((0, 3), np.float32),
                             np.zeros((0, 3), np.float32)).ok
    assert tolerance.compare("exp", "float32", np.float32(1.0), np.float32(1.0)).ok


def test_assert_close():
    tolerance.assert_close("exp", "float32", np.ones(2, np.float32), np.ones(2, np.float32))
    with pytest.raises(AssertionError, match=r"exp\[float32\].*index \(1,\)"):
        tolerance.assert_close("exp", "float32", np.array([1, 2], np.float32),
                               np.array([1, 3], np.float32))
    v, i = reference("topk", [np.array([1.0, 3.0, 2.0])], {"k": 2})
    tolerance.assert_close("topk", "float64", (v, i), (v, i))
    with pytest.raises(AssertionError, match="output 1"):
        tolerance.assert_close("topk", "float64", (v, i[::-1].copy()), (v, i))


def test_reference_matches_itself_within_tolerance_for_every_float_op():
    """The comparator accepts the oracle's own output for every float case (sanity)."""
    for name, d in CASES:
        if d not in FLOATS:
            continue
        inputs, attrs = _case(name, d)
        want = reference(name, inputs, attrs)
        tolerance.assert_close(name, d, want, want)
