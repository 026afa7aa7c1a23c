"""The thresholds suite: every kernel family at the sizes where real kernels change code path
(vector bodies and scalar tails, tiles and K tails, work-groups, multi-pass reductions), through
the public Python API on `custom:<device_type>` against the numpy oracle with the op's tolerance,
as the kernels suite runs its small cases (kernels._call / _compare).

Families are derived from phi_ops/ops.yaml, never listed op by op:
  elementwise  category unary/binary/ternary with an elementwise infer_meta: 1-D length n
  reduction    category reduction: flat (n), rows (3, n) over the last dim, cols (n, 3) over dim 0
               (float32/float64 sums, scans and products of positive values: no cancellation)
  scan         category scan: the same three shapes along one axis
  rows         a row-wise op (nn or index, elementwise infer_meta, an `axis` or
               `normalized_ndim` attribute, nothing required): rows (3, n) (softmax, layer_norm,
               rms_norm, sort, ...)
  matmul       category linalg: M x K @ K x N with K not a multiple of any tile, M = 1 (GEMV)
  precision    the ops whose `kernel` text promises float32 accumulation for float16/bfloat16
               inputs: n = 16384 values in [0.5, 1.5), where a float16 running sum stagnates at
               4096 (bfloat16: 512), with the op's tolerance but atol at most rtol x the smallest
               output (so atol cannot hide a relative error)

Lengths come from conformance/suites/ladder.py: the default run samples the boundaries
(63/64/65 ... 4095/4097, around the device's SIMD width and max work-group size, and 65535/65537
for one dtype of each element size); `hwcheck run --thorough` sweeps every 2^k - 1, 2^k, 2^k + 1
for k <= 16. A case is "thresholds::<op>/<dtype>/<shape>-<sizes>", e.g.
"thresholds::sum/float32/rows-wg+1" or "thresholds::matmul/float32/mnk-3x5x65".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import Case, CheckFailed, Result, Status, Target
from . import kernels, ladder, op_common

NAME = "thresholds"

# The phrase of an op's ops.yaml `kernel` text that makes it a precision case.
ACCUMULATES = "accumulates in float32 for float16/bfloat16 inputs"
PRECISION_LENGTHS = ("16384",)
PRECISION_DTYPES = ("float16", "bfloat16")
ELEMENTWISE_META = ("unary", "binary", "where")
ROW_ATTRS = ("axis", "normalized_ndim")
# Required attributes of otherwise elementwise ops: a value per input dtype (cast: to another
# dtype, so that it is never the identity).
REQUIRED_ATTRS: dict[str, Any] = {"dtype": lambda d: "float64" if d == "float32" else "float32"}
# Ops whose default attributes make them trivial (clip without bounds is the identity).
ATTRS: dict[str, dict[str, Any]] = {"clip": {"min": -1.0, "max": 1.0}}
# Large sizes run for the first claimed dtype of each element size in this order.
LEAD_ORDER = ("float32", "float16", "float64", "int32", "int64", "int16", "int8", "uint8",
              "bool", "bfloat16")


# ---- families (from ops.yaml) ----------------------------------------------------------------

def family(op: Any) -> str | None:
    """The kernel family of an ops.yaml op, or None when no size threshold applies to it."""
    attrs = {a.name: a for a in op.attrs}
    required = [a for a in op.attrs if a.required]
    if op.category == "linalg":
        return "matmul"
    if op.category == "reduction":
        return "reduction"
    if op.category == "scan":
        return "scan"
    if op.category in ("unary", "binary", "ternary") and op.infer_meta in ELEMENTWISE_META \
            and all(a.name in REQUIRED_ATTRS for a in required):
        return "elementwise"
    if op.category in ("nn", "index") and op.infer_meta == "unary" and not required \
            and any(a in attrs for a in ROW_ATTRS):
        return "rows"
    return None


def precision_ops(ops: dict[str, Any]) -> list[str]:
    return [n for n, op in ops.items() if op.kernel and ACCUMULATES in op.kernel]


def lead_dtypes(dtypes: list[str]) -> set[str]:
    """The first dtype of LEAD_ORDER per element size among `dtypes`."""
    from hwport.phi_ops.sample_inputs import np_dtype

    out: dict[int, str] = {}
    for d in sorted(dtypes, key=lambda d: LEAD_ORDER.index(d) if d in LEAD_ORDER else 99):
        out.setdefault(np_dtype(d).itemsize, d)
    return set(out.values())


# ---- the sizes per family --------------------------------------------------------------------

def _lengths(thorough: bool, lead: bool) -> list[str]:
    if thorough:
        return list(dict.fromkeys(ladder.full_ladder() + ladder.DEVICE_LENGTHS))
    return list(ladder.DEFAULT_LENGTHS + ladder.DEVICE_LENGTHS
                + (ladder.LARGE_LENGTHS if lead else ()))


def _matmul_shapes(thorough: bool, lead: bool) -> list[tuple[str, str, str]]:
    """M, N, K: K past every tile (M = 3, N = 5), M and N tails, GEMV (M = 1 or N = 1); the
    thorough ladder adds every K up to 2^13 + 1, M and N up to 2^10 + 1, cubes up to 257."""
    shapes: list[tuple[str, str, str]] = []
    if thorough:
        mn = ladder.full_ladder(10)
        shapes = [("3", "5", k) for k in ladder.full_ladder(13)] \
            + [(m, "5", "17") for m in mn] + [("3", n, "17") for n in mn] \
            + [(s, s, s) for s in ladder.full_ladder(8)] \
            + [("1", n, "1025") for n in mn] + [(m, "1", "1025") for m in mn]
        lead = True
    ks = ("63", "64", "65", "127", "129", "255", "257", "1023", "1025", "4097", "simd+1",
          "wg-1", "wg+1")
    shapes += [("3", "5", k) for k in ks] + [
        ("63", "65", "17"), ("65", "63", "17"), ("129", "257", "9"), ("257", "129", "9"),
        ("1", "257", "1025"), ("1", "4097", "65"), ("257", "1", "1025"), ("1", "1", "4097"),
        ("wg+1", "5", "17"), ("3", "wg+1", "17")]
    if lead:
        shapes += [("257", "257", "257"), ("129", "131", "1025")]
    return list(dict.fromkeys(shapes))


def _shapes(fam: str, thorough: bool, lead: bool) -> list[tuple[str, list[str]]]:
    """[(shape kind, size specs)] of a family."""
    if fam == "matmul":
        return [("mnk", list(s)) for s in _matmul_shapes(thorough, lead)]
    lengths = _lengths(thorough, lead)
    kinds = {"elementwise": ("n",), "reduction": ("flat", "rows", "cols"),
             "scan": ("flat", "rows", "cols"), "rows": ("rows",)}[fam]
    # Column reductions are the strided path: the boundaries, not the large sizes.
    return [(k, [n]) for k in kinds for n in lengths
            if not (k == "cols" and n in ladder.LARGE_LENGTHS)]


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    from hwport.phi_ops.sample_inputs import OPS

    failed = op_common.load_error_case(NAME, options)
    if failed:
        return failed
    base = int(options.get("seed", 0))
    thorough = ladder.is_thorough(options)
    cases: list[Case] = []
    for op_name, op in OPS.items():
        fam = family(op)
        if fam is None:
            continue
        dtypes = op_common.claimed_dtypes(op.dtypes, options)
        leads = lead_dtypes(dtypes)
        for d in dtypes:
            seed = op_common.group_seed(base, f"{NAME}/{op_name}", d)
            for kind, sizes in _shapes(fam, thorough, d in leads):
                cases.append(Case(NAME, f"{op_name}/{d}/{kind}-{'x'.join(sizes)}",
                                  {"op": op_name, "dtype": d, "kind": kind, "sizes": sizes},
                                  seed))
    for op_name in precision_ops(OPS):
        for d in op_common.claimed_dtypes([t for t in OPS[op_name].dtypes
                                           if t in PRECISION_DTYPES], options):
            seed = op_common.group_seed(base, f"{NAME}/{op_name}/accumulate", d)
            for n in PRECISION_LENGTHS:
                cases.append(Case(NAME, f"{op_name}/{d}/accumulate-{n}",
                                  {"op": op_name, "dtype": d, "kind": "accumulate",
                                   "sizes": [n]}, seed))
    return cases


# ---- inputs ----------------------------------------------------------------------------------

def _domain(op: Any, i: int, d: str) -> str:
    from hwport.phi_ops import sample_inputs as si

    if op.category == "unary" or (op.infer_meta == "unary" and op.category == "ternary"):
        return si.UNARY_DOMAIN.get(op.name, "any")
    if op.category == "binary":
        return si.BINARY_DOMAIN.get(op.name, ("any", "any"))[i]
    if op.category in ("reduction", "scan", "linalg"):
        if op.name in si.REDUCE_DOMAIN:
            return si.REDUCE_DOMAIN[op.name]
        if d in si.INTEGER:
            return "small"
        # float32/float64 tolerances are tight: long sums without cancellation keep the
        # relative error what the accumulation order gives (float16 sums could overflow).
        return "positive" if d in ("float32", "float64") else "any"
    return "any"


def _values(op: Any, i: int, d: str, shape: tuple[int, ...], rng: np.random.Generator
            ) -> np.ndarray:
    from hwport.phi_ops import sample_inputs as si

    name = op.inputs[i].name
    if name == "condition":
        return si.sample("bool", shape, rng)
    if op.name in ("prod", "cumprod") and d != "bool":
        # Products of +-1 stay exact at any length (a dropped element still shows: its sign).
        signs = [1] if d == "uint8" else [-1, 1]
        return si.as_dtype(rng.choice(signs, size=shape), d)
    return si.sample(d, shape, rng, _domain(op, i, d))


def _axis_attr(op: Any, axis: int) -> dict[str, Any]:
    a = next(a for a in op.attrs if a.name == "axis")
    return {"axis": [axis] if a.type == "ints" else axis}


def build(op_name: str, d: str, kind: str, dims: list[int], seed: int) -> Any:
    """The sample_inputs.Case of one thresholds case (sizes already resolved)."""
    from hwport.phi_ops import sample_inputs as si

    op = si.OPS[op_name]
    rng = si.rng_for(NAME, op_name, d, kind, *dims, seed)
    attrs = {a.name: REQUIRED_ATTRS[a.name](d) for a in op.attrs if a.required}
    attrs.update(ATTRS.get(op_name, {}))
    if kind == "accumulate":
        return _accumulate_case(op, d, dims[0], rng)
    if kind == "mnk":
        m, n, k = dims
        return si.C(op_name, d, kind, [_values(op, 0, d, (m, k), rng),
                                       _values(op, 1, d, (k, n), rng)], attrs)
    n = dims[0]
    shape = {"n": (n,), "flat": (n,), "rows": (3, n), "cols": (n, 3)}[kind]
    if kind == "rows" and "axis" in op.attr_map and op.category in ("reduction", "scan"):
        attrs.update(_axis_attr(op, 1))
    elif kind == "cols":
        attrs.update(_axis_attr(op, 0))
    inputs = []
    for i, spec in enumerate(op.inputs):
        # Optional inputs (layer_norm's weight and bias) are given: their own row-length loops.
        inputs.append(_values(op, i, d, shape if i == 0 or kind == "n" else (n,), rng)
                      if not spec.optional else si.sample(d, (n,), rng))
    return si.C(op_name, d, kind, inputs, attrs)


def _accumulate_case(op: Any, d: str, n: int, rng: np.random.Generator) -> Any:
    """n values in [0.5, 1.5): their sums pass 4096, where float16 steps are 4."""
    from hwport.phi_ops import sample_inputs as si

    def pos(*shape: int) -> np.ndarray:
        return si.as_dtype(rng.uniform(0.5, 1.5, shape), d)

    if op.category == "linalg":
        return si.C(op.name, d, "accumulate", [pos(2, n), pos(n, 3)])
    if op.category in ("reduction", "scan"):
        return si.C(op.name, d, "accumulate", [pos(n)])
    if op.infer_meta == "cross_entropy_grad":  # n classes; the loss's gradient a 0-d one
        return si.C(op.name, d, "accumulate",
                    [pos(2, n), np.array([0, n - 1], np.int64), si.as_dtype(1.0, d)])
    # a backward op's grad has the first input's shape; optional inputs are left out
    inputs = [pos(2, n)] + [pos(2, n) if i.name == "grad" else None for i in op.inputs[1:]]
    return si.C(op.name, d, "accumulate", inputs)


def precision_tolerance(op_name: str, d: str, want: Any) -> dict[str, float]:
    """The op's tolerance with atol at most rtol x the smallest nonzero |output| (a backward
    op's outputs cancel to ~0 by construction, as layer_norm_grad's rows sum to 0: rtol x the
    median |output| there, which a stagnating float16 sum still exceeds by far)."""
    from hwport.phi_ops.tolerance import tolerance_for

    tol = dict(tolerance_for(op_name, d))
    mags = np.abs(np.asarray(want, np.float64))
    mags = mags[mags > 0]
    if "rtol" in tol and mags.size:
        scale = float(np.median(mags)) if op_name.endswith("_grad") else float(mags.min())
        tol["atol"] = min(tol.get("atol", 0.0), tol["rtol"] * scale)
    return tol


# ---- run -------------------------------------------------------------------------------------

def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    if case.name == op_common.LOAD_CASE:
        op_common.raise_load_error(case)
    from hwport.phi_ops.reference import reference

    op, dtype, kind = case.params["op"], case.params["dtype"], case.params["kind"]
    where = op_common.place(target)
    props = ladder.device_properties(where, state)
    dims = [ladder.resolve(s, props, minimum=1) for s in case.params["sizes"]]
    sc = build(op, dtype, kind, dims, case.seed)
    want = reference(op, sc.inputs, sc.attrs)
    if kind == "accumulate":
        sc.tolerance = precision_tolerance(op, dtype, want)
    before = op_common.fallbacks(target.device_type)
    _, got = kernels._call(op, sc, where)
    fell_back = op_common.grown(before, op_common.fallbacks(target.device_type))
    key_dtype = sc.key_dtype()
    details: dict[str, Any] = {"sizes": dims, "path": kernels._path(op, key_dtype, where,
                                                                    fell_back)}
    if fell_back:
        details["fallback_ops"] = sorted({k[0] for k in fell_back})
    ok, message, stats = kernels._compare(op, key_dtype, got, want, sc.tolerance)
    details.update(stats)
    if not ok:
        shape = "x".join(map(str, dims))
        raise CheckFailed(f"{kind} {shape}: {message}", **details)
    return Result(case, Status.PASS, details=details)
