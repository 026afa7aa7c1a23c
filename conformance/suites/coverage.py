"""The coverage suite: for each op of phi_ops/ops.yaml and each dtype of it the plugin claims,
how the op's calls really run on this plugin: its own native kernel, a decomposition into ops
that all run natively, or (partly) the counted CPU fallback (with the primitives that fell back).

One case per op ("coverage::<op>"). It runs every shape case of the kernels suite for each
claimed dtype except the >= 1M-element ones (the same inputs, from the same seeds) and watches
hwport.runtime.fallback_stats() around each call, so a kernel that exists but refuses some calls
(HWP_ERROR_NOT_SUPPORTED at run time), or a decomposition whose primitives fall back for some
shapes, shows as what it is. PASS when every case ran on the device (native or decomposition),
NOT_SUPPORTED when some case needed the CPU fallback (a gap in the port, not a wrong result: the
kernels suite checks the values). details: "paths" {dtype: the worst path of its cases},
"cases" {dtype: {path: count}}, "fallback_ops" {dtype: ["op[dtype]"]}, "fallback_cases"
{dtype: [shape case]}, "errors" {dtype: first error}.

And "coverage::strided-inputs": for each claimed dtype without a native "copy" kernel, every op
with a native kernel is called on its strided shape cases; when the host's contiguous copy of
an input ran on the CPU fallback (a kernel without HWP_KERNEL_ACCEPTS_STRIDED, and no copy
primitive), it FAILs naming the ops (docs/abi.md: such kernels need "copy").
"""

from __future__ import annotations

from typing import Any

from ..model import Case, CheckFailed, Result, Status, Target
from . import op_common

NAME = "coverage"
STRIDED_CASE = "strided-inputs"
# The order of a dtype's path: the worst of its cases wins.
PATHS = ("native", "decomposition", "fallback", "error")


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    from hwport.phi_ops.schema import load_ops

    failed = op_common.load_error_case(NAME, options)
    if failed:
        return failed
    base = int(options.get("seed", 0))
    out = []
    claimed: set[str] = set()
    for name, op in load_ops().items():
        dtypes = op_common.claimed_dtypes(op.dtypes, options)
        claimed.update(dtypes)
        if dtypes:
            out.append(Case(NAME, name, {"op": name, "dtypes": dtypes, "base_seed": base,
                                         "primitive": op.is_primitive}))
    if claimed:
        out.append(Case(NAME, STRIDED_CASE, {"dtypes": sorted(claimed), "base_seed": base}))
    return out


def _cases(state: dict[str, Any], op: str, dtype: str, base: int) -> list[Any]:
    """The kernels suite's shape cases of (op, dtype) for run seed `base`, without the large."""
    seed = op_common.group_seed(base, op, dtype)
    return [c for c in op_common.sample_cases(state, op, dtype, seed).values() if not c.large]


def run_observed(sc: Any, where: str, device_type: str) -> tuple[dict[Any, int], str]:
    """Runs one shape case on the device: ({(op, dtype): CPU-fallback calls it caused},
    error). Only the op call is watched, not reading the result back."""
    from hwport.phi_ops import sample_inputs

    before = op_common.fallbacks(device_type)
    try:
        sample_inputs.run_op(sc, where)
    except Exception as exc:  # noqa: BLE001 - reported; the kernels suite judges the call
        return op_common.grown(before, op_common.fallbacks(device_type)), \
            f"{sc.name}: {type(exc).__name__}: {exc}"
    return op_common.grown(before, op_common.fallbacks(device_type)), ""


def _observe(op: str, dtype: str, target: Target, state: dict[str, Any],
             base: int) -> dict[str, Any]:
    """How each non-large shape case of (op, dtype) ran."""
    from hwport.runtime import _core

    where = op_common.place(target)
    counts = {p: 0 for p in PATHS}
    fell_ops: set[str] = set()
    fell_cases: list[str] = []
    error = ""
    for sc in _cases(state, op, dtype, base):
        fell, err = run_observed(sc, where, target.device_type)
        if fell:
            path = "fallback"
            fell_ops.update(f"{o}[{d}]" for o, d in fell)
            fell_cases.append(sc.name)
        elif err:
            path = "error"
        else:
            path = "native" if _core.has_kernel(op, where, sc.key_dtype()) else "decomposition"
        counts[path] += 1
        error = error or err
    ran = {p: n for p, n in counts.items() if n}
    worst = max(ran, key=PATHS.index) if ran else "unknown"
    return {"path": worst, "counts": ran, "fallback_ops": sorted(fell_ops),
            "fallback_cases": fell_cases, "error": error}


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    if case.name == op_common.LOAD_CASE:
        op_common.raise_load_error(case)
    base = int(case.params.get("base_seed", 0))
    if case.name == STRIDED_CASE:
        return _strided_inputs(target, case, state, base)
    op = case.params["op"]
    seen = {d: _observe(op, d, target, state, base) for d in case.params["dtypes"]}
    details = {"paths": {d: s["path"] for d, s in seen.items()},
               "cases": {d: s["counts"] for d, s in seen.items()},
               "fallback_ops": {d: s["fallback_ops"] for d, s in seen.items()
                                if s["fallback_ops"]},
               "fallback_cases": {d: s["fallback_cases"] for d, s in seen.items()
                                  if s["fallback_cases"]},
               "errors": {d: s["error"] for d, s in seen.items() if s["error"]},
               "primitive": case.params.get("primitive", False)}
    counts: dict[str, int] = {}
    for s in seen.values():
        counts[s["path"]] = counts.get(s["path"], 0) + 1
    summary = ", ".join(f"{n} {p}" for p, n in sorted(counts.items()))
    if details["fallback_ops"]:
        fell_ops = sorted({f.split("[")[0] for fs in details["fallback_ops"].values()
                           for f in fs})
        parts = [f"{d} ({len(details['fallback_cases'][d])} of "
                 f"{sum(seen[d]['counts'].values())} cases)" for d in details["fallback_ops"]]
        return Result(case, Status.NOT_SUPPORTED,
                      f"{op} runs on the CPU fallback for {', '.join(parts)} "
                      f"(through {', '.join(fell_ops)}); {summary}", details=details)
    return Result(case, Status.PASS, summary, details=details)


def _strided_inputs(target: Target, case: Case, state: dict[str, Any], base: int) -> Result:
    """Kernels that take only contiguous inputs rely on the plugin's "copy" kernel for the
    host's contiguous copy; without one, that copy silently runs on the CPU."""
    from hwport.phi_ops import sample_inputs
    from hwport.runtime import _core

    where = op_common.place(target)
    checked: dict[str, list[str]] = {}
    copied: dict[str, list[str]] = {}
    for d in case.params["dtypes"]:
        if _core.has_kernel("copy", where, d):
            continue  # the host's contiguous copies run natively
        for op in sample_inputs.OPS:
            if op == "copy" or not _core.has_kernel(op, where, d):
                continue
            checked.setdefault(d, []).append(op)
            for sc in _cases(state, op, d, base):
                if all(sc.layout(i) == "c" for i in range(len(sc.inputs))):
                    continue
                fell, _ = run_observed(sc, where, target.device_type)
                if ("copy", d) in fell:
                    copied.setdefault(d, []).append(op)
                    break
    details = {"checked": checked, "copy_fell_back": copied}
    if copied:
        listed = "; ".join(f"{d}: {', '.join(ops)}" for d, ops in copied.items())
        raise CheckFailed(
            f"the host's contiguous copy of strided inputs ran on the CPU fallback for kernels "
            f"of {listed}: a kernel registered without HWP_KERNEL_ACCEPTS_STRIDED gets "
            f"contiguous inputs through the plugin's \"copy\" kernel, which this plugin lacks "
            f"for {', '.join(copied)}; register copy (part of the minimal port) or accept "
            f"strided inputs", **details)
    note = "every dtype has a native copy kernel" if not checked else \
        f"no strided input needed the CPU's copy ({sum(map(len, checked.values()))} kernels)"
    return Result(case, Status.PASS, note, details=details)
