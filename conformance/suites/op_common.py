"""What the kernels and coverage suites share: the dtypes a target claims, the case a plugin
that did not load gets, the place, the sample-input cases of (op, dtype) (cached per worker)
and the CPU-fallback counter of a device type."""

from __future__ import annotations

import zlib
from typing import Any

from ..model import Case, CheckFailed, Target

LOAD_CASE = "plugin-loads"


def load_error_case(suite: str, options: dict[str, Any]) -> list[Case]:
    """[one case that fails with the load error] when the target plugin did not load, else []."""
    error = options.get("plugin", {}).get("load_error")
    return [Case(suite, LOAD_CASE, {"error": error})] if error else []


def raise_load_error(case: Case) -> None:
    raise CheckFailed(f"the plugin did not load, so no op can run on it: {case.params['error']}",
                      load_error=case.params["error"])


def claimed_dtypes(op_dtypes: tuple[str, ...] | list[str], options: dict[str, Any]) -> list[str]:
    """The op's dtypes the plugin claims (has any kernel for), narrowed by --dtype."""
    claimed = set(options.get("plugin", {}).get("dtypes", ()))
    wanted = options.get("dtypes")
    return [d for d in op_dtypes if d in claimed and (not wanted or d in wanted)]


def group_seed(base: int, op: str, dtype: str) -> int:
    """The seed of the inputs of every case of (op, dtype) for run seed `base`."""
    return zlib.crc32(f"{base}/{op}/{dtype}".encode()) or 1


def place(target: Target) -> str:
    return f"custom:{target.device_type}"


def sample_cases(state: dict[str, Any], op: str, dtype: str, seed: int) -> dict[str, Any]:
    """{case name: sample_inputs.Case} for (op, dtype, seed), keeping the last few groups."""
    from hwport.phi_ops import sample_inputs

    cache: dict[tuple[str, str, int], dict[str, Any]] = state.setdefault("sample_cases", {})
    key = (op, dtype, seed)
    if key not in cache:
        if len(cache) >= 4:
            cache.pop(next(iter(cache)))
        cache[key] = {c.name: c for c in sample_inputs.cases_for(op, dtype, seed)}
    return cache[key]


def fallbacks(device_type: str) -> dict[tuple[str, str], int]:
    """{(op, dtype): count} of the ops that ran on the CPU fallback for this device type."""
    import hwport.runtime

    return {(k[0], k[2]): v for k, v in hwport.runtime.fallback_stats().items()
            if k[1] == device_type}


def compiled(device_type: str) -> dict[tuple[str, str], int]:
    """{(op, dtype): count} of the ops the eager JIT ran through compiled kernels for this
    device type (the device has no kernel for them, its codegen target generated one)."""
    import hwport.runtime

    return {(k[0], k[2]): v for k, v in hwport.runtime.compiled_stats().items()
            if k[1] == device_type}


def grown(before: dict[Any, int], after: dict[Any, int]) -> dict[Any, int]:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] > before.get(k, 0)}
