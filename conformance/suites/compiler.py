"""The compiler suite: hwport's fusion compiler (hwport.cinn_backends) working through the
plugin's codegen target, as a user reaches it — jit.to_static(fn, backend="CINN") on
`custom:<device_type>`.

- `compiler::fused/<group>`: a fused group (RMSNorm, softmax, layer_norm, a bias + gelu +
  residual epilogue, a reduction over a middle axis, a broadcasting elementwise chain) compiles
  into generated kernels and matches the numpy oracle within ops.yaml's tolerance; the run must
  launch the compiled kernel (a group that falls back to its ops FAILs, with the reason).
- `compiler::compile_error_log`: source that does not compile raises CodegenCompileError whose
  log is the compiler's own output (a vendor debugging a codegen target needs it).
- `compiler::shape_class`: one kernel serves every batch size of InputSpec([None, ...]).
- `compiler::cache_across_processes`: a second process with the same cache directory loads the
  kernels from disk and compiles nothing (NOT_SUPPORTED where the target cannot serialize).

A plugin without a codegen target (optional) gives NOT_SUPPORTED everywhere."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from typing import Any

import numpy as np

from ..model import Case, CheckFailed, NotSupported, Result, Status, Target
from . import op_common

NAME = "compiler"

ROWS, COLS = 37, 96  # odd rows, a row that is not a multiple of common vector widths


def _rms(x, w):
    import hwport

    return x * hwport.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _softmax(x):
    import hwport

    return hwport.nn.functional.softmax(x, axis=-1)


def _layer_norm(x, w, b):
    import hwport

    return hwport.nn.functional.layer_norm(x, x.shape[-1:], w, b, 1e-5)


def _epilogue(x, b, r):
    import hwport

    return hwport.nn.functional.gelu(x + b) + r


def _middle_sum(x):
    return (x * x).sum(axis=1) + 1.0


def _chain(x, b):
    import hwport

    return hwport.tanh(x * b - 0.5) * hwport.exp(-(x * x))


def _ref_rms(x, w):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


def _ref_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _ref_layer_norm(x, w, b):
    x = x.astype(np.float64)
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * w + b


def _ref_epilogue(x, b, r):
    from math import erf

    z = (x + b).astype(np.float64)
    return z * 0.5 * (1.0 + np.vectorize(erf)(z / np.sqrt(2.0))) + r


GROUPS: dict[str, tuple[Any, Any, list[tuple[int, ...]]]] = {
    "rms_norm": (_rms, _ref_rms, [(ROWS, COLS), (COLS,)]),
    "softmax": (_softmax, _ref_softmax, [(ROWS, COLS)]),
    "layer_norm": (_layer_norm, _ref_layer_norm, [(ROWS, COLS), (COLS,), (COLS,)]),
    "bias_gelu_residual": (_epilogue, _ref_epilogue, [(ROWS, COLS), (COLS,), (ROWS, COLS)]),
    "middle_axis_sum": (_middle_sum, lambda x: (x.astype(np.float64) ** 2).sum(1) + 1.0,
                        [(5, ROWS, 7)]),
    "broadcast_chain": (_chain, lambda x, b: np.tanh(x * b - 0.5) * np.exp(-(x * x)),
                        [(ROWS, COLS), (1, COLS)]),
}
CHECKS = ("compile_error_log", "shape_class", "cache_across_processes")


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    failed = op_common.load_error_case(NAME, options)
    if failed:
        return failed
    return [Case(NAME, f"fused/{g}", {"group": g}) for g in GROUPS] + \
        [Case(NAME, c) for c in CHECKS]


def _target_info(where: str) -> dict[str, Any]:
    from hwport.runtime import _core

    info = _core.codegen_target_info(where)
    if info is None:
        raise NotSupported("the plugin has no codegen target (optional: the codegen table is "
                           "absent, predates ABI 1.2, or get_target_info said "
                           "HWP_ERROR_NOT_SUPPORTED): the compiler generates nothing for it")
    return info


def _fresh_cache(state: dict[str, Any]) -> None:
    """This worker's own module cache (the vendor's ~/.cache is left alone)."""
    if "cache_dir" not in state:
        state["cache_dir"] = tempfile.mkdtemp(prefix="hwcheck-cinn-")
        os.environ["HWPORT_CINN_CACHE_DIR"] = state["cache_dir"]


def _run_fused(case: Case, where: str) -> dict[str, Any]:
    import hwport
    from hwport.cinn_backends import compile as cinn_compile
    from hwport.phi_ops.tolerance import compare

    fn, ref, shapes = GROUPS[case.params["group"]]
    rng = np.random.default_rng(case.seed or 1)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    args = [hwport.to_tensor(a, place=where) for a in arrays]
    cinn_compile.reset_stats()
    static = hwport.jit.to_static(fn, backend="CINN")
    static(*args)  # the capture runs eagerly
    got = static(*args).numpy()
    stats = dict(cinn_compile.STATS)
    details = {"compiled": int(stats["compiled"]), "disk_hits": int(stats["disk_hits"]),
               "fallbacks": int(stats["fallbacks"])}
    if stats["fallbacks"]:
        raise CheckFailed(f"{case.params['group']}: a fused group fell back to its ops (the "
                          "warning names the reason: a compile error with its build log, a "
                          "launch the plugin refused, or the compile budget)", **details)
    (entry,) = static._cache.values()
    plan = entry.executor._static
    if plan is None or "launch cinn_" not in plan.impl.describe():
        raise CheckFailed(f"{case.params['group']}: no compiled kernel was launched", **details)
    want = np.asarray(ref(*arrays)).astype(np.float32)
    c = compare("layer_norm", "float32", got, want)  # a composite's float32 tolerance
    details.update({"max_abs_err": c.max_abs_error, "max_ulp": c.max_ulp})
    if not c.ok:
        raise CheckFailed(f"{case.params['group']}: {c.message}", **details)
    return details


def _compile_error(where: str, info: dict[str, Any]) -> dict[str, Any]:
    import hwport
    from hwport.runtime import _core

    bad = "hwcheck_undeclared + ;"
    broken = {"c99": f"void f(void) {{ int x = {bad} }}\n",
              "opencl-c-1.2": f"__kernel void f(__global int *p) {{ p[0] = {bad} }}\n",
              "cuda-c++17": f'extern "C" __global__ void f(int *p) {{ p[0] = {bad} }}\n'}
    dialect = next((d for d in info["dialects"] if d in broken), None)
    if dialect is None:
        raise NotSupported(f"no broken sample for the dialects {info['dialects']}")
    try:
        _core.codegen_compile(where, dialect, broken[dialect], "")
    except hwport.runtime.CodegenCompileError as exc:
        log = getattr(exc, "log", "")
        if "hwcheck_undeclared" not in log:
            raise CheckFailed("compile failed as it should, but its build log does not show the "
                              f"compiler's message about the bad name: {log[:300]!r}") from None
        return {"dialect": dialect, "log_bytes": len(log)}
    raise CheckFailed(f"{dialect}: source with a syntax error compiled without an error")


def _shape_class(where: str) -> dict[str, Any]:
    import hwport
    from hwport.cinn_backends import compile as cinn_compile
    from hwport.cinn_backends import eager_jit
    from hwport.static import InputSpec

    cinn_compile.reset_stats()
    # the eager JIT's own kernels (ops capture runs on a device without native kernels) are
    # not the group's
    eager_before = eager_jit.STATS["compiled"]
    static = hwport.jit.to_static(_rms, backend="CINN", input_spec=[
        InputSpec([None, COLS], "float32"), InputSpec([COLS], "float32")])
    rng = np.random.default_rng(5)
    w = rng.standard_normal(COLS).astype(np.float32)
    for batch in (2, 3, 64):  # not 1 (a dim of 1 is its own class: a broadcast)
        x = rng.standard_normal((batch, COLS)).astype(np.float32)
        args = [hwport.to_tensor(x, place=where), hwport.to_tensor(w, place=where)]
        static(*args)
        got = static(*args).numpy()
        if not np.allclose(got, _ref_rms(x, w), rtol=1e-4, atol=1e-5):
            raise CheckFailed(f"batch {batch}: the compiled RMSNorm differs from the oracle")
    stats = {k: int(v) for k, v in cinn_compile.STATS.items() if k != "compile_seconds"}
    made = stats["compiled"] + stats["disk_hits"] - (eager_jit.STATS["compiled"] - eager_before)
    if made > 1:
        raise CheckFailed(f"{made} kernels were compiled or loaded for 3 batch sizes of one "
                          "shape class (expected at most 1: dims are kernel arguments)", **stats)
    if made + stats["memory_hits"] < 3:
        raise CheckFailed("the 3 batch sizes did not all run the shape class's kernel", **stats)
    return stats


_CHILD = textwrap.dedent("""
    import sys, numpy as np, hwport
    from hwport.cinn_backends import compile as cc
    where = sys.argv[1]
    def f(x, w):
        return x * hwport.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    x = hwport.to_tensor(np.ones((4, 40), np.float32), place=where)
    w = hwport.to_tensor(np.ones(40, np.float32), place=where)
    s = hwport.jit.to_static(f, backend="CINN")
    s(x, w); s(x, w)
    print(int(cc.STATS["compiled"]), int(cc.STATS["disk_hits"]))
""")


def _cache_across_processes(target: Target, where: str, info: dict[str, Any]) -> dict[str, Any]:
    if not info.get("serialize"):
        raise NotSupported("the target cannot serialize modules (HWP_CODEGEN_SERIALIZE): every "
                           "process compiles its kernels")
    shared = tempfile.mkdtemp(prefix="hwcheck-cinn-shared-")
    env = {**os.environ, **target.env, "HWPORT_CINN_CACHE_DIR": shared}
    outs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _CHILD, where], env=env, capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0:
            raise CheckFailed(f"the child process failed: {r.stderr.strip()[-500:]}")
        outs.append([int(v) for v in r.stdout.split()[-2:]])
    (c1, _), (c2, d2) = outs
    if c1 < 1:
        raise CheckFailed("the first process compiled nothing (its cache directory was empty)")
    if c2 != 0 or d2 < 1:
        raise CheckFailed(f"the second process compiled {c2} module(s) and loaded {d2} from "
                          "disk: a warm process must compile nothing (check serialize and "
                          "deserialize of the codegen table)")
    return {"first_compiled": c1, "second_disk_hits": d2}


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    if case.name == op_common.LOAD_CASE:
        op_common.raise_load_error(case)
    where = op_common.place(target)
    info = _target_info(where)
    _fresh_cache(state)
    if case.name.startswith("fused/"):
        details = _run_fused(case, where)
    elif case.name == "compile_error_log":
        details = _compile_error(where, info)
    elif case.name == "shape_class":
        details = _shape_class(where)
    elif case.name == "cache_across_processes":
        details = _cache_across_processes(target, where, info)
    else:
        raise ValueError(f"unknown compiler check {case.name!r}")
    return Result(case, Status.PASS, details=details)
