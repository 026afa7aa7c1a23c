"""Building groups for the compiler tests: a pir program (composites decomposed, as the fusion
pass hands them over) whose ops between its data inputs and its outputs form one group."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from hwport import pir
from hwport.cinn_backends.interpret import interpret
from hwport.cinn_backends.lower_group import LoweredGroup, lower_group
from hwport.cinn_backends.target import TargetInfo, cpu_target
from hwport.pir.passes import PassManager
from tests.cinn import runners

CPU = cpu_target(compute_units=2, vector_width=8)
SIMT = TargetInfo(dialects=("opencl-c-1.2",), architecture="test-simt", is_simt=True,
                  max_group_size=32, compute_units=4, local_memory_bytes=32768,
                  simd_width=32, preferred_vector_width=1)


def dtype_of(a: np.ndarray) -> str:
    return "bfloat16" if a.dtype.name == "bfloat16" else a.dtype.name


def program(inputs: Sequence[tuple[Sequence[Any], str]], body: Callable[..., Any],
            decompose: bool = True) -> pir.Program:
    p = pir.Program()
    with pir.Builder(p) as b:
        vals = [b.data(f"x{i}", list(shape), dt) for i, (shape, dt) in enumerate(inputs)]
        outs = body(b.pd_op, *vals)
        for j, o in enumerate(outs if isinstance(outs, list | tuple) else [outs]):
            b.output(o, f"out{j}")
    if decompose:
        PassManager("decompose").run(p)
    return p


def group_of(p: pir.Program) -> tuple[list[pir.Operation], list[pir.Value], list[pir.Value]]:
    ins = [op.result() for op in p.block.ops if op.name == "builtin.data"]
    outs = [op.operand(0) for op in p.block.ops if op.name == "builtin.shadow_output"]
    ops = [op for op in p.block.ops if op.name not in ("builtin.data", "builtin.shadow_output")]
    return ops, ins, outs  # type: ignore[return-value]


def lower(p: pir.Program, target: TargetInfo = CPU, tuning: Any = None) -> LoweredGroup:
    ops, ins, outs = group_of(p)
    if tuning is None:
        return lower_group(ops, ins, outs, target)
    return lower_group(ops, ins, outs, target, tuning=tuning)


def out_specs(p: pir.Program) -> list[tuple[tuple[int, ...], Any]]:
    from hwport.cinn_backends.interpret import np_dtype

    _, _, outs = group_of(p)
    return [(tuple(int(d) for d in o.type.shape), np_dtype(o.type.dtype)) for o in outs]


_CL: list[Any] = []


def opencl() -> Any:
    if not _CL:
        _CL.append(runners.opencl_context())
    return _CL[0]


def run_everywhere(p: pir.Program, feeds: Sequence[np.ndarray], *, interp: bool = True,
                   simt: bool = True, cl: bool = True) -> dict[str, list[np.ndarray]]:
    """The group's outputs: interpreted (CPU and SIMT schedules), compiled c99, OpenCL."""
    specs = out_specs(p)
    got: dict[str, list[np.ndarray]] = {}
    cpu = lower(p, CPU)
    if interp:
        got["interp-cpu"] = interpret(cpu, feeds, specs)
    if runners.have_cc():
        got["c99"] = runners.run_c99(cpu, list(feeds), specs)
    # the runtime refuses an empty tensor's (NULL) buffer as a launch argument
    if runners.have_core_codegen() and all(np.size(a) for a in feeds):
        got["custom:cpu"] = runners.run_core(cpu, list(feeds), specs)
    if simt:
        gpu = lower(p, SIMT)
        if interp:
            got["interp-simt"] = interpret(gpu, feeds, specs)
        env = opencl() if cl else None
        if env is not None:
            got["opencl"] = runners.run_opencl(env, gpu, list(feeds), specs)
        if cl and runners.have_core_codegen("custom:opencl") and all(np.size(a) for a in feeds):
            from hwport.runtime import _core

            info = TargetInfo.from_dict(_core.codegen_target_info("custom:opencl"))
            got["custom:opencl"] = runners.run_core(lower(p, info), list(feeds), specs,
                                                    "custom:opencl")
            # the item schedule (a CPU row body per work-item), whose vectorized loops the
            # OpenCL renderer writes with vector types (render/opencl_vector.py)
            from hwport.cinn_backends.tuning import Tuning

            got["custom:opencl-item"] = runners.run_core(
                lower(p, info, Tuning("item", group=1, per_unit=2)), list(feeds), specs,
                "custom:opencl")
    if not got:
        pytest.skip("nothing to run the group on")
    return got


def assert_all_close(got: dict[str, list[np.ndarray]], want: Sequence[np.ndarray],
                     rtol: float, atol: float) -> None:
    for where, outs in got.items():
        assert len(outs) == len(want), where
        for j, (g, w) in enumerate(zip(outs, want, strict=True)):
            assert g.shape == w.shape, (where, j, g.shape, w.shape)
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                       rtol=rtol, atol=atol, err_msg=f"{where} output {j}")
