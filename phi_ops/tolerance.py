"""Comparing a result against the oracle with the op's tolerance (ops.yaml `tolerances`).

    compare(op_name, dtype, got, want) -> Comparison
    assert_close(op_name, dtype, got, want)          # raises AssertionError(message)

Used by the test suite and by the `hwcheck` conformance CLI. Rules:

- `got` and `want` must have the same shape and the same dtype; otherwise the comparison fails
  with a message saying which.
- The tolerance is the op's profile entry for `dtype` (the dtype the case runs in, i.e. the
  dtype that keys the kernel); a dtype absent from the profile means exact. An entry is either
  {ulp: n} (at most n units in the last place apart) or {rtol, atol} (|got - want| <= atol +
  rtol * |want|, as numpy.testing.assert_allclose).
- Tolerances apply to floating outputs only; bool and integer outputs (argmax indices, a
  comparison's result, a sum of integers) always compare exactly.
- Exact means equal values: the sign of a zero and NaN payloads are not compared (libm and
  numpy do not pin them down), so +0 == -0 and NaN == NaN. `bitwise=True` demands identical
  bytes instead (for data-movement ops that promise a bit-exact copy).
- NaN matches NaN only (at the same position); an infinity matches only the same infinity,
  whatever the tolerance.
- ULP distance is computed on the integer representation of the values in their own dtype
  (sign-magnitude mapped to a monotonic integer line, so +0 and -0 are the same point and the
  distance across zero is the sum of both sides).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .promotion import FLOATING, dtype_name
from .schema import load_ops

_UINT_OF = {"float16": np.uint16, "bfloat16": np.uint16, "float32": np.uint32,
            "float64": np.uint64}
_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


@dataclass
class Comparison:
    """The outcome of one comparison. Error statistics cover the elements where both values
    are finite (None when there are none, or for non-float dtypes: max_ulp)."""

    ok: bool
    message: str
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    max_ulp: int | None = None
    first_mismatch: tuple[int, ...] | None = None
    mismatches: int = 0
    tolerance: dict[str, float] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.ok


def tolerance_for(op_name: str, dtype: str) -> dict[str, float]:
    """The op's tolerance entry for dtype ({} = exact)."""
    ops = load_ops()
    if op_name not in ops:
        raise ValueError(f"unknown op {op_name!r}")
    return dict(ops[op_name].tolerance.get(dtype, {}))


def describe_tolerance(tol: Mapping[str, float]) -> str:
    if not tol:
        return "exact"
    if "ulp" in tol:
        return f"ulp <= {int(tol['ulp'])}"
    return f"rtol={tol.get('rtol', 0.0):g}, atol={tol.get('atol', 0.0):g}"


def _ordered(x: np.ndarray, dtype: str) -> np.ndarray:
    """Float values as integers on a monotonic line (int64; float64 needs the full range, so
    it is returned as int64 with -0 and +0 both at 0)."""
    bits = x.view(_UINT_OF[dtype]).astype(np.uint64)
    sign_bit = np.uint64(1) << np.uint64(_BITS[dtype] - 1)
    mag = (bits & (sign_bit - np.uint64(1))).astype(np.int64)
    return np.where((bits & sign_bit) != 0, -mag, mag)


def ulp_distance(got: np.ndarray, want: np.ndarray, dtype: str) -> np.ndarray:
    """|ordered(got) - ordered(want)| as uint64 (both arrays of the float dtype `dtype`;
    meaningful for non-NaN values)."""
    a = _ordered(np.array(got, order="C"), dtype)
    b = _ordered(np.array(want, order="C"), dtype)
    au, bu = a.astype(np.uint64), b.astype(np.uint64)  # two's complement: wraps correctly
    return np.where(a >= b, au - bu, bu - au)


def _fmt(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return repr(float(v))
    return repr(v.item() if isinstance(v, np.generic) else v)


def compare(op_name: str, dtype: str, got: Any, want: Any, *,
            tolerance: Mapping[str, float] | None = None,
            bitwise: bool = False) -> Comparison:
    """Compare `got` against the oracle's `want` with op_name's tolerance for `dtype` (or an
    explicit `tolerance` entry such as {"ulp": 2} or {"rtol": 1e-5, "atol": 1e-6}).
    bitwise=True demands identical bytes (signed zeros and NaN payloads included), for ops
    that promise a bit-exact copy (copy, reshape, gather...)."""
    tol = dict(tolerance) if tolerance is not None else tolerance_for(op_name, dtype)
    if bitwise:
        tol = {}
    head = f"{op_name}[{dtype}]"
    got = np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return Comparison(False, f"{head}: shape mismatch: got {list(got.shape)}, want "
                                 f"{list(want.shape)}", tolerance=tol)
    gd, wd = dtype_name(got.dtype), dtype_name(want.dtype)
    if gd != wd:
        return Comparison(False, f"{head}: dtype mismatch: got {gd}, want {wd}",
                          tolerance=tol)
    floating = wd in FLOATING
    if not floating:
        tol = {}
    n = want.size
    if bitwise:
        g8 = np.ascontiguousarray(got).view(np.uint8).reshape(*got.shape, got.dtype.itemsize)
        w8 = np.ascontiguousarray(want).view(np.uint8).reshape(*want.shape,
                                                                 want.dtype.itemsize)
        bad = np.any(g8 != w8, axis=-1)
        max_abs = max_rel = None
        max_ulp = None
        score = bad.astype(np.float64)
    elif not floating:
        bad = got != want
        max_abs = max_rel = None
        max_ulp = None
        score = bad.astype(np.float64)
    else:
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        gnan, wnan = np.isnan(g), np.isnan(w)
        ginf, winf = np.isinf(g), np.isinf(w)
        finite = ~(gnan | wnan | ginf | winf)
        special_bad = (gnan != wnan) | ((ginf | winf) & ~(gnan | wnan) & (g != w))
        with np.errstate(all="ignore"):
            diff = np.where(finite, np.abs(g - w), 0.0)
            rel = np.where(finite & (w != 0), diff / np.abs(w),
                           np.where(finite & (diff > 0), np.inf, 0.0))
        ulps = np.where(finite, ulp_distance(got, want, wd), np.uint64(0))
        if not tol:
            bad_finite = finite & (g != w)
            score = np.where(bad_finite, 1.0, 0.0)
        elif "ulp" in tol:
            limit = int(tol["ulp"])
            bad_finite = finite & (ulps > np.uint64(limit))
            score = ulps.astype(np.float64) / max(limit, 1)
        else:
            rtol, atol = float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0))
            allowed = atol + rtol * np.abs(np.where(finite, w, 0.0))
            bad_finite = finite & (diff > allowed)
            with np.errstate(all="ignore"):
                score = np.where(allowed > 0, diff / np.where(allowed > 0, allowed, 1.0),
                                 np.where(diff > 0, np.inf, 0.0))
        bad = bad_finite | special_bad
        score = np.where(special_bad, np.inf, np.where(finite, score, 0.0))
        any_finite = bool(finite.any())
        max_abs = float(diff.max()) if any_finite else None
        max_rel = float(rel.max()) if any_finite else None
        max_ulp = int(ulps.max()) if any_finite else None

    mismatches = int(np.count_nonzero(bad))
    tol_text = "bitwise identity" if bitwise else describe_tolerance(tol)
    stats = []
    if max_abs is not None:
        stats.append(f"max abs err {max_abs:.3g}")
        stats.append(f"max rel err {max_rel:.3g}")
    if max_ulp is not None:
        stats.append(f"max {max_ulp} ulp")
    stats_text = f" ({', '.join(stats)})" if stats else ""
    if mismatches == 0:
        return Comparison(True, f"{head}: ok, {n} elements within {tol_text}{stats_text}",
                          max_abs, max_rel, max_ulp, None, 0, tol)
    first = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(bad)[0]), want.shape))
    flat_score = np.where(bad, score, -1.0).reshape(-1)
    worst_flat = int(np.argmax(flat_score))
    worst = tuple(int(i) for i in np.unravel_index(worst_flat, want.shape))
    gv, wv = got.reshape(-1)[worst_flat], want.reshape(-1)[worst_flat]
    detail = ""
    if floating:
        gf, wf = float(gv), float(wv)
        if np.isfinite(gf) and np.isfinite(wf):
            d = abs(gf - wf)
            u = int(ulp_distance(np.asarray(gv).reshape(1), np.asarray(wv).reshape(1), wd)[0])
            detail = f" (abs err {d:.3g}, rel err {d / abs(wf) if wf else float('inf'):.3g}, " \
                     f"{u} ulp)"
    message = (f"{head}: {mismatches} of {n} elements differ beyond {tol_text}; worst at index "
               f"{worst}: got {_fmt(gv)}, want {_fmt(wv)}{detail}; first mismatch at index "
               f"{first}{stats_text}")
    return Comparison(False, message, max_abs, max_rel, max_ulp, first, mismatches, tol)


def assert_close(op_name: str, dtype: str, got: Any, want: Any, *,
                 tolerance: Mapping[str, float] | None = None, bitwise: bool = False) -> None:
    """compare(), raising AssertionError(message) on failure. `got`/`want` may also be
    matching tuples/lists of arrays (ops with several outputs): each pair is compared."""
    if isinstance(want, tuple | list):
        if not isinstance(got, Sequence) or len(got) != len(want):
            n_got = len(got) if isinstance(got, Sequence) else 1
            raise AssertionError(f"{op_name}[{dtype}]: got {n_got} outputs, want {len(want)}")
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            c = compare(op_name, dtype, g, w, tolerance=tolerance, bitwise=bitwise)
            if not c.ok:
                raise AssertionError(f"output {i}: {c.message}")
        return
    c = compare(op_name, dtype, got, want, tolerance=tolerance, bitwise=bitwise)
    if not c.ok:
        raise AssertionError(c.message)
