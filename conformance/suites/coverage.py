"""The coverage suite: for each op of phi_ops/ops.yaml and each dtype of it the plugin claims,
how the op runs on this plugin: its own native kernel, a decomposition into ops that all run
natively, or (partly) the counted CPU fallback (with the primitives that fell back).

One case per op ("coverage::<op>"): PASS when every claimed dtype runs on the device (native or
decomposition), NOT_SUPPORTED when some dtype needs the CPU fallback (a gap in the port, not a
wrong result: the kernels suite checks the values). details["paths"] = {dtype: path}.
"""

from __future__ import annotations

from typing import Any

from ..model import Case, Result, Status, Target
from . import op_common

NAME = "coverage"


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    from hwport.phi_ops.schema import load_ops

    failed = op_common.load_error_case(NAME, options)
    if failed:
        return failed
    out = []
    for name, op in load_ops().items():
        dtypes = op_common.claimed_dtypes(op.dtypes, options)
        if dtypes:
            out.append(Case(NAME, name, {"op": name, "dtypes": dtypes,
                                         "primitive": op.is_primitive}))
    return out


def _probe_path(op: str, dtype: str, target: Target, state: dict[str, Any],
                seed: int) -> tuple[str, list[str], str]:
    """(path, primitives that fell back, error) for (op, dtype): native when the plugin has
    the kernel, else whatever running the op's first shape case shows."""
    from hwport.phi_ops import sample_inputs
    from hwport.runtime import _core

    where = op_common.place(target)
    cases = [c for c in op_common.sample_cases(state, op, dtype, seed).values() if not c.large]
    key = cases[0].key_dtype() if cases else dtype
    if _core.has_kernel(op, where, key):
        return "native", [], ""
    if not cases:
        return "unknown", [], "no shape case to run"
    before = op_common.fallbacks(target.device_type)
    try:
        sample_inputs.to_numpy(sample_inputs.run_op(cases[0], where))
    except Exception as exc:  # noqa: BLE001 - reported; the kernels suite judges values
        return "error", [], f"{type(exc).__name__}: {exc}"
    fell = op_common.grown(before, op_common.fallbacks(target.device_type))
    if fell:
        return "fallback", sorted({f"{o}[{d}]" for o, d in fell}), ""
    return "decomposition", [], ""


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    if case.name == op_common.LOAD_CASE:
        op_common.raise_load_error(case)
    op = case.params["op"]
    paths: dict[str, str] = {}
    fallback_ops: dict[str, list[str]] = {}
    errors: dict[str, str] = {}
    for d in case.params["dtypes"]:
        path, fell, err = _probe_path(op, d, target, state, case.seed)
        paths[d] = path
        if fell:
            fallback_ops[d] = fell
        if err:
            errors[d] = err
    details = {"paths": paths, "fallback_ops": fallback_ops, "errors": errors,
               "primitive": case.params.get("primitive", False)}
    counts = {p: sum(1 for v in paths.values() if v == p) for p in set(paths.values())}
    summary = ", ".join(f"{n} {p}" for p, n in sorted(counts.items()))
    if fallback_ops:
        fell_ops = sorted({f.split("[")[0] for fs in fallback_ops.values() for f in fs})
        return Result(case, Status.NOT_SUPPORTED,
                      f"{op} runs on the CPU fallback for {', '.join(fallback_ops)} "
                      f"(through {', '.join(fell_ops)}); {summary}", details=details)
    return Result(case, Status.PASS, summary, details=details)
