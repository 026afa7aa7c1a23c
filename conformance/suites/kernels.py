"""The kernels suite: every op of phi_ops/ops.yaml x every dtype of the op that the plugin claims
(has at least one kernel for) x the op's shape cases from phi_ops.sample_inputs (0-d, empty,
odd sizes, broadcasting, transposed/stepped/negative-stride views, NaN/Inf, a few >= 1M
elements), run through the public Python API on `custom:<device_type>` exactly as a user calls
it, against the numpy oracle (phi_ops.reference) with the op's tolerance (phi_ops.tolerance).

A case is "kernels::<op>/<dtype>/<shape case>". Results record max abs/rel error, ULP distance,
the first mismatching index, and how the op ran (native kernel, decomposition or CPU fallback).
The inputs of all cases of (op, dtype) are drawn from the case seed, which depends on --seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import Case, CheckFailed, NotSupported, Result, Status, Target
from . import op_common

NAME = "kernels"


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    from hwport.phi_ops import sample_inputs

    failed = op_common.load_error_case(NAME, options)
    if failed:
        return failed
    base = int(options.get("seed", 0))
    cases = []
    for op_name, op in sample_inputs.OPS.items():
        for d in op_common.claimed_dtypes(op.dtypes, options):
            seed = op_common.group_seed(base, op_name, d)
            for sc in sample_inputs.cases_for(op_name, d, seed):
                cases.append(Case(NAME, f"{op_name}/{d}/{sc.name}",
                                  {"op": op_name, "dtype": d, "case": sc.name}, seed))
    return cases


def _call(op: str, sc: Any, where: str) -> Any:
    import hwport
    from hwport.phi_ops import sample_inputs

    try:
        result = sample_inputs.run_op(sc, where)
        got = sample_inputs.to_numpy(result)
        hwport.device.synchronize(where)  # as a user does before timing: the work completes
        return result, got
    except hwport.runtime.NotSupportedError as exc:
        raise NotSupported(f"{op}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - whatever the plugin made the call raise
        raise CheckFailed(f"{op} raised {type(exc).__name__}: {exc}",
                          exception=type(exc).__name__) from None


def _path(op: str, key_dtype: str, where: str, fell_back: dict[Any, int],
          compiled: dict[Any, int] | None = None) -> str:
    """How the call ran: any CPU fallback (a missing primitive, a kernel that refused the
    call at run time, the contiguous copy of an input) makes it "fallback"; the op itself run
    by the eager JIT's generated kernels (no native kernel) is "compiled"."""
    from hwport.runtime import _core

    if fell_back:
        return "fallback"
    if _core.has_kernel(op, where, key_dtype):
        return "native"
    return "compiled" if any(k[0] == op for k in compiled or {}) else "decomposition"


def _compare(op: str, key_dtype: str, got: Any, want: Any,
             tolerance: dict[str, float] | None) -> tuple[bool, str, dict[str, Any]]:
    """Compares every output; the details of the worst one (first failing, else largest ulp)."""
    from hwport.phi_ops.tolerance import compare

    gots = list(got) if isinstance(want, tuple | list) else [got]
    wants = list(want) if isinstance(want, tuple | list) else [want]
    if len(gots) != len(wants):
        return False, f"{op}: got {len(gots)} outputs, want {len(wants)}", {}
    details: dict[str, Any] = {}
    for i, (g, w) in enumerate(zip(gots, wants, strict=True)):
        c = compare(op, key_dtype, g, w, tolerance=tolerance)
        d = {"max_abs_err": c.max_abs_error, "max_rel_err": c.max_rel_error,
             "max_ulp": c.max_ulp, "first_mismatch": list(c.first_mismatch or []) or None,
             "mismatches": c.mismatches, "elements": int(np.size(w)),
             "tolerance": c.tolerance, "output": i}
        if not c.ok:
            prefix = f"output {i}: " if len(wants) > 1 else ""
            return False, prefix + c.message, d
        if not details or (d["max_ulp"] or 0) > (details["max_ulp"] or 0):
            details = d
    return True, "", details


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    if case.name == op_common.LOAD_CASE:
        op_common.raise_load_error(case)
    from hwport.phi_ops.reference import reference

    op, dtype = case.params["op"], case.params["dtype"]
    cases = op_common.sample_cases(state, op, dtype, case.seed)
    if case.params["case"] not in cases:
        raise ValueError(f"no shape case {case.params['case']!r} for {op}/{dtype}")
    sc = cases[case.params["case"]]
    where = op_common.place(target)
    want = reference(op, sc.inputs, sc.attrs)
    before = op_common.fallbacks(target.device_type)
    compiled_before = op_common.compiled(target.device_type)
    result, got = _call(op, sc, where)
    fell_back = op_common.grown(before, op_common.fallbacks(target.device_type))
    compiled = op_common.grown(compiled_before, op_common.compiled(target.device_type))
    key_dtype = sc.key_dtype()
    details: dict[str, Any] = {"path": _path(op, key_dtype, where, fell_back, compiled),
                               "key_dtype": key_dtype}
    if fell_back:
        details["fallback_ops"] = sorted({k[0] for k in fell_back})
    if compiled:
        details["compiled_ops"] = sorted({k[0] for k in compiled})

    import hwport

    expected_place = str(hwport.runtime._core.resolve_place(where))
    for i, r in enumerate(result if isinstance(result, tuple | list) else [result]):
        if str(r.place) != expected_place:
            raise CheckFailed(f"{op}: output {i} is on {r.place}, expected {expected_place}",
                              **details)
    ok, message, stats = _compare(op, key_dtype, got, want, sc.tolerance)
    details.update(stats)
    if not ok:
        raise CheckFailed(message, **details)
    if sc.check == "dropout_mask":  # which elements are dropped is bit-exact (Philox)
        dg, dw = np.asarray(got) == 0, np.asarray(want) == 0
        if not np.array_equal(dg, dw):
            first = np.argwhere(dg != dw)[0].tolist()
            raise CheckFailed(f"{op}: dropped positions differ from phi_ops.philox's stream, "
                              f"first at index {tuple(first)}", first_mismatch=first, **details)
    return Result(case, Status.PASS, details=details)
