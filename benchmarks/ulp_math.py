"""Max error in ulp of custom:cpu's float math against a higher-precision reference, per function
and dtype (float32: numpy float64; float64: numpy long double, 80-bit on x86-64, except erf and
gelu's exact form, whose reference is math.erf in float64, so float64 figures there include the
reference's own <= 1 ulp). The error of an element is |got - ref| / ulp(ref in the dtype); inputs
are random over each function's useful range (gelu: [-2, 8], below it the formula cancels and
only the absolute tolerance means anything) plus a few special points (NaN/inf agreement is
the oracle suite's job, not counted here).
--erf-grid: erf's float32/float16/bfloat16 error over a dense grid instead (every 256th float32
bit pattern in [0, 10], so tails and small values, both signs, and the 4095 smallest subnormals),
plus its special values checked exactly: +-inf -> +-1, NaN -> NaN, -0 -> -0.
Run: .venv/bin python benchmarks/ulp_math.py [--json out.json] [-n 200000] [--erf-grid]"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable

import numpy as np

import hwport

PLACE = "custom:cpu"
F = hwport.nn.functional
LD = np.longdouble
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erf_ld(x: np.ndarray) -> np.ndarray:
    return _erf(x.astype(np.float64)).astype(x.dtype)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _softplus(x: np.ndarray) -> np.ndarray:  # beta 1, threshold 20 (the defaults)
    return np.where(x > 20, x, np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    c = np.sqrt(x.dtype.type(2) / x.dtype.type(np.pi))
    return 0.5 * x * (1 + np.tanh(c * (x + x.dtype.type(0.044715) * x**3)))


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + _erf_ld(x / np.sqrt(x.dtype.type(2))))


def _uniform(lo: float, hi: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, n: rng.uniform(lo, hi, n)


def _log_uniform(lo: float, hi: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, n: np.exp(rng.uniform(np.log(lo), np.log(hi), n))


# name: (hwport call, reference over float64/long double, inputs per dtype: (f32, f64))
CASES: dict[str, tuple[Callable, Callable, tuple]] = {
    "exp": (hwport.exp, np.exp, (_uniform(-87, 88), _uniform(-700, 700))),
    "expm1": (hwport.expm1, np.expm1, (_uniform(-10, 10), _uniform(-10, 10))),
    "log": (hwport.log, np.log, (_log_uniform(1e-30, 1e30), _log_uniform(1e-300, 1e300))),
    "log1p": (hwport.log1p, np.log1p, (_uniform(-0.999, 10), _uniform(-0.999, 10))),
    "log2": (hwport.log2, np.log2, (_log_uniform(1e-30, 1e30), _log_uniform(1e-300, 1e300))),
    "sqrt": (hwport.sqrt, np.sqrt, (_log_uniform(1e-30, 1e30), _log_uniform(1e-300, 1e300))),
    "rsqrt": (hwport.rsqrt, lambda x: 1 / np.sqrt(x),
              (_log_uniform(1e-30, 1e30), _log_uniform(1e-300, 1e300))),
    "sin": (hwport.sin, np.sin, (_uniform(-100, 100), _uniform(-100, 100))),
    "cos": (hwport.cos, np.cos, (_uniform(-100, 100), _uniform(-100, 100))),
    "tan": (hwport.tan, np.tan, (_uniform(-1.5, 1.5), _uniform(-1.5, 1.5))),
    "tanh": (hwport.tanh, np.tanh, (_uniform(-10, 10), _uniform(-20, 20))),
    "erf": (hwport.erf, _erf_ld, (_uniform(-4, 4), _uniform(-6, 6))),
    "sigmoid": (F.sigmoid, _sigmoid, (_uniform(-30, 30), _uniform(-30, 30))),
    "silu": (F.silu, lambda x: x * _sigmoid(x), (_uniform(-30, 30), _uniform(-30, 30))),
    "softplus": (F.softplus, _softplus, (_uniform(-30, 30), _uniform(-30, 30))),
    "gelu": (F.gelu, _gelu_erf, (_uniform(-2, 8), _uniform(-2, 8))),
    "gelu_tanh": (lambda t: F.gelu(t, approximate=True), _gelu_tanh,
                  (_uniform(-2, 8), _uniform(-2, 8))),
    "pow": (hwport.pow, np.power, (_log_uniform(1e-3, 1e3), _log_uniform(1e-3, 1e3))),
}


def max_ulp(got: np.ndarray, ref: np.ndarray, dtype: type) -> float:
    finite = np.isfinite(ref) & np.isfinite(got)
    ref_t = ref[finite].astype(dtype)
    ulp = np.spacing(np.abs(ref_t)).astype(ref.dtype)
    err = np.abs(got[finite].astype(ref.dtype) - ref[finite]) / ulp
    return float(err.max()) if err.size else 0.0


def measure(n: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(0)
    out: dict[str, dict[str, float]] = {}
    for name, (fn, ref_fn, gens) in CASES.items():
        out[name] = {}
        for dtype, wide, gen in ((np.float32, np.float64, gens[0]), (np.float64, LD, gens[1])):
            x = gen(rng, n).astype(dtype)
            x[:7] = [0.5, 1.0, 2.0, 0.75, 1.5, 3.0, 0.1]  # a few exact/typical points
            args = [x]
            if name == "pow":
                args.append(rng.uniform(-8, 8, n).astype(dtype))
            tensors = [hwport.to_tensor(a, place=PLACE) for a in args]
            got = fn(*tensors).numpy()
            with np.errstate(all="ignore"):
                ref = ref_fn(*[a.astype(wide) for a in args])
            out[name][np.dtype(dtype).name] = max_ulp(got, np.asarray(ref, dtype=wide), dtype)
    return out


def erf_grid() -> dict[str, float]:
    """Max ulp of float32 erf (and float16/bfloat16, computed in float32) over a dense grid."""
    bits = np.arange(0, np.float32(10).view(np.uint32), 256, dtype=np.uint32)  # 0 .. 10
    pos = np.concatenate([bits.view(np.float32), np.float32(1e-45) * np.arange(1, 4096)])
    x = np.concatenate([pos, -pos]).astype(np.float32)
    out = {}
    for name in ("float32", "float16", "bfloat16"):
        t = hwport.to_tensor(x, place=PLACE)
        if name != "float32":
            t = hwport.cast(t, name)
        # the inputs as the dtype holds them
        xs = hwport.cast(t, "float32").numpy().astype(np.float64)
        got = hwport.cast(hwport.erf(t), "float32").numpy().astype(np.float64)
        ref_d = _erf(xs)
        if name == "float32":
            out[name] = max_ulp(got, ref_d, np.float32)
        else:  # ulp of the narrow dtype: its spacing is 2^(e - mantissa bits)
            mant = 10 if name == "float16" else 7
            e = np.floor(np.log2(np.maximum(np.abs(ref_d), 2.0**-14)))
            out[name] = float((np.abs(got - ref_d) / 2.0 ** (e - mant)).max())
    special = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0], dtype=np.float32)
    got = hwport.erf(hwport.to_tensor(special, place=PLACE)).numpy()
    ok = (got[0] == 1 and got[1] == -1 and np.isnan(got[2]) and got[3] == 0
          and np.signbit(got[3]) and got[4] == 0 and not np.signbit(got[4]))
    out["specials_ok"] = float(ok)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200_000, help="random inputs per function and dtype")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--before", help="a --json file of an earlier build: print both columns")
    ap.add_argument("--erf-grid", action="store_true", help="erf over a dense grid (see above)")
    args = ap.parse_args()
    if args.erf_grid:
        g = erf_grid()
        print("erf, dense grid: max ulp " + ", ".join(f"{k} {v:.2f}" for k, v in g.items()
                                                      if k != "specials_ok")
              + f"; specials (+-inf, NaN, +-0) {'ok' if g['specials_ok'] else 'WRONG'}")
        return
    res = measure(args.n)
    before = json.load(open(args.before)) if args.before else None
    head = "function      " + (" f32 before  f32 after  f64 before  f64 after" if before
                               else "   float32    float64")
    print(f"max ulp error, {args.n} inputs per function and dtype\n{head}")
    for name, row in res.items():
        if before:
            b = before.get(name, {})
            cells = [b.get("float32", math.nan), row["float32"], b.get("float64", math.nan),
                     row["float64"]]
            print(f"{name:<12}" + "".join(f"{c:11.2f}" for c in cells))
        else:
            print(f"{name:<12}{row['float32']:10.2f} {row['float64']:10.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
