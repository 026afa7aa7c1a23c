"""What hwcheck's ccl suite checks, shared by the parent (case names, suites/ccl.py) and the
ranks (inputs, expected values, tolerances; ccl_worker.py).

Every rank derives every other rank's input from (case seed, rank), so each rank computes the
expected result of a collective on its own: nothing but the collective under test moves data.

Inputs per reduction keep results meaningful and exact where they can be: integer SUM/AVG
inputs in [-10, 10] (no overflow up to 12 ranks, AVG's truncation well defined), PROD in
[-2, 2] (wraps, as two's complement does everywhere), MAX/MIN over the dtype's whole range;
floats in [-1, 1] (SUM/AVG), +-[0.5, 2] (PROD), [-100, 100] (MAX/MIN and data). Integers,
bool, MAX and MIN must be exact; float SUM/AVG/PROD within the reduction tolerance
n * eps(dtype) * (sum over ranks of |x|), which any summation order meets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")
OPS = ("sum", "prod", "max", "min", "avg")  # HWP_CCL_SUM .. HWP_CCL_AVG, in ABI order
OP_CODES = {name: i for i, name in enumerate(OPS)}
# reduce and reduce_scatter: two reductions (one arithmetic, one selecting); all_reduce has all.
ROOTED_OPS = ("sum", "max")

DEFAULT_MAX_BYTES = 4 << 20  # the largest buffer per rank by default ("a few MiB")
LARGE_BYTES = 64 << 20  # --ccl-large
BUSBW_BYTES = (64 << 10, 1 << 20, 4 << 20)
BUSBW_LARGE_BYTES = (16 << 20, 64 << 20)
BUSBW_COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all")
# nccl-tests' bus bandwidth factors (busbw = algbw * factor(n)).
BUSBW_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
}


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(np.bool_ if name == "bool" else name)


def itemsize(name: str) -> int:
    return np_dtype(name).itemsize


def sizes(dtype: str, counts: list[int] | None, large: bool) -> list[int]:
    """Element counts per rank: 0, 1, odd ones, and the largest buffer of DEFAULT_MAX_BYTES
    (plus LARGE_BYTES with --ccl-large), each + 1 so that no size is a power of two; `counts`
    (--ccl-sizes) replaces them."""
    if counts is not None:
        return sorted(set(counts))
    out = [0, 1, 1023, 65537, DEFAULT_MAX_BYTES // itemsize(dtype) + 1]
    if large:
        out.append(LARGE_BYTES // itemsize(dtype) + 1)
    return out


def _finfo(dt: np.dtype) -> Any:
    if dt.name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.finfo(dt)
    return np.finfo(dt)


def make_input(dtype: str, count: int, rank: int, seed: int, kind: str) -> np.ndarray:
    """Rank `rank`'s input of a case: `kind` is a reduction name or "data" (no arithmetic)."""
    dt = np_dtype(dtype)
    rng = np.random.default_rng([seed & 0xFFFFFFFF, rank, OPS.index(kind) if kind in OPS else 9])
    if dtype == "bool":
        return rng.integers(0, 2, count).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = {"sum": (-10, 10), "avg": (-10, 10), "prod": (-2, 2)}.get(
            kind, (int(info.min), int(info.max)))
        lo = max(lo, int(info.min))
        return rng.integers(lo, hi, count, dtype=np.int64 if dt.kind == "i" else np.uint64,
                            endpoint=True).astype(dt)
    if kind in ("sum", "avg"):
        x = rng.uniform(-1.0, 1.0, count)
    elif kind == "prod":
        x = rng.uniform(0.5, 2.0, count) * rng.choice([-1.0, 1.0], count)
    else:
        x = rng.uniform(-100.0, 100.0, count)
    return x.astype(np.float32).astype(dt) if dt.itemsize == 2 else x.astype(dt)


def sentinel(dtype: str, count: int) -> np.ndarray:
    """What an output holds before the collective (a value no check expects)."""
    dt = np_dtype(dtype)
    if dtype == "bool":
        return np.ones(count, bool)
    return np.full(count, 77 if dt.kind in "iu" else -7.25, dtype=dt)


def reduce_expected(stack: np.ndarray, op: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(expected, tolerance or None for exact) of a reduction over axis 0 (the ranks)."""
    dt = stack.dtype
    n = stack.shape[0]
    if dt == np.bool_:
        return (stack.any(0) if op in ("sum", "max") else stack.all(0)), None
    if op == "max":
        return stack.max(0), None
    if op == "min":
        return stack.min(0), None
    if dt.kind in "iu":
        if op == "sum":
            return np.add.reduce(stack, axis=0, dtype=dt), None
        if op == "prod":
            return np.multiply.reduce(stack, axis=0, dtype=dt), None
        s = stack.astype(np.int64).sum(0)
        return (np.sign(s) * (np.abs(s) // n)).astype(dt), None
    w = stack.astype(np.float64)
    eps = float(_finfo(dt).eps)
    if op == "prod":
        p = w.prod(0)
        return p, (n + 1) * eps * np.abs(p)
    s = w.sum(0)
    tol = (n + 1) * eps * np.abs(w).sum(0)
    return (s / n, tol / n) if op == "avg" else (s, tol)


def compare(got: np.ndarray, want: np.ndarray, tol: np.ndarray | None) -> dict[str, Any] | None:
    """None when `got` matches; else what is wrong (first mismatch, how many, worst error)."""
    if got.shape != want.shape:
        return {"problem": f"shape {list(got.shape)}, expected {list(want.shape)}"}
    if got.size == 0:
        return None
    if tol is None:
        bad = got != want.astype(got.dtype)
        err = None
    else:
        g = got.astype(np.float64)
        diff = np.abs(g - want)
        bad = ~(diff <= tol)
        err = float(np.nanmax(diff)) if np.any(bad) else None
    if not np.any(bad):
        return None
    idx = np.flatnonzero(bad)
    i = int(idx[0])
    out = {"mismatches": int(idx.size), "elements": int(got.size), "first_mismatch": i,
           "got": got[i].item() if got.dtype != np.bool_ else bool(got[i]),
           "want": want[i].item() if hasattr(want[i], "item") else want[i],
           "last_mismatch": int(idx[-1])}
    if err is not None:
        out["max_abs_err"] = err
        out["tolerance_at_first"] = float(tol[i])
    return out
