"""lower_group: a fused group of pd_op primitives -> scheduled loop IR -> source in the target's
dialect, with the launches for concrete shapes.

    lowered = lower_group(ops, inputs, outputs, target)
    module = _core.codegen_compile(place, lowered.dialect, lowered.source, lowered.options)
    for launch in lowered.launches({("in", 0): x.shape, ...}):
        args = [ins[i] if kind == "in" else outs[i] if kind == "out" else value
                for kind, value in launch.args]            # ("in", i) ("out", j) ("i64", v)
        module.get_function(launch.kernel).launch(launch.grid, launch.group, args)

The group: ops in order (elementwise unary/binary/ternary ops with a C form in ops.yaml, cast,
fill/full/builtin.constant, expand/broadcast_to, reshape/flatten, squeeze/unsqueeze,
transpose, copy, and reductions sum/mean/prod/max/min with any axes and keepdim), `inputs`
the values it reads from outside, `outputs` the values it must write (contiguous, row-major).
A group with reductions is one kernel: per row, its reductions in order, then its elementwise
consumers (RMSNorm, softmax, layer_norm). Raises analysis.Unsupported for what it cannot fuse.

The source depends only on the group's shape class (analysis.py): every dim is a kernel
argument, so `launches` serves any shapes of that class (it checks them)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hwport.pir.core import Operation, Value

from .analysis import DimSource, GroupAnalysis, Unsupported
from .group_spec import GroupSpec, multiply_by_reciprocals
from .loop_ir import Expr, Kernel
from .printer import print_kernel
from .schedule_cpu import CpuPlan, schedule_cpu
from .schedule_simt import SimtPlan, schedule_simt
from .target import TargetInfo
from .targets import renderer_for
from .tuning import RULE, Tuning

__all__ = ["Launch", "LoweredGroup", "Unsupported", "lower_group"]

ArgSpec = tuple[str, Any]  # ("in", i) | ("out", j) | ("i64", value) | ("f64", value)


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: tuple[int, int, int]
    group: tuple[int, int, int]
    args: list[ArgSpec]
    scratch: list[tuple[str, int]] = field(default_factory=list)  # (dtype, elements): none yet


@dataclass
class LoweredGroup:
    dialect: str
    source: str
    options: str
    kernel_names: list[str]
    kernels: list[Kernel]  # the scheduled loop IR, one per kernel name
    target: TargetInfo
    specs: list[GroupSpec]
    plans: list[CpuPlan | SimtPlan]
    dim_sources: dict[str, DimSource]
    ones: list[DimSource]
    shapes_of: dict[tuple[str, int], list[Expr]]  # each input/output's dims as expressions
    tuning: Tuning = RULE  # the schedule parameters it was lowered with

    def print_ir(self) -> str:
        return "\n\n".join(print_kernel(k) for k in self.kernels)

    def dims(self, shapes: Mapping[Any, Sequence[int]]) -> dict[str, int]:
        """The dim arguments' values for concrete shapes (ValueError: not this shape class)."""
        got = {_key(k): tuple(int(d) for d in v) for k, v in shapes.items()}
        env: dict[str, int] = {}
        for name, src in self.dim_sources.items():
            shape = got.get((src.role, src.index))
            if shape is None:
                raise ValueError(f"launches: the shape of {src.role}put {src.index} is needed")
            env[name] = shape[src.axis]
        for key, shape in got.items():
            dims = self.shapes_of.get(key)
            if dims is None:
                raise ValueError(f"launches: the group has no {key[0]}put {key[1]}")
            want = [evaluate(d, env) for d in dims]
            if len(want) != len(shape) or any(a != b for a, b in zip(want, shape, strict=True)):
                raise ValueError(f"launches: {key[0]}put {key[1]} has shape {list(shape)}, not "
                                 f"of this kernel's shape class (expected {want})")
        return env

    @property
    def spec(self) -> GroupSpec:
        """The first kernel's GroupSpec (the only one of most groups)."""
        return self.specs[0]

    def launches(self, shapes: Mapping[Any, Sequence[int]]) -> list[Launch]:
        """The launches for concrete shapes, in order (keys ("in", i) / ("out", j), or i for
        input i); each Launch's args follow its kernel's parameters."""
        env = self.dims(shapes)
        out: list[Launch] = []
        for k, spec, plan in zip(self.kernels, self.specs, self.plans, strict=True):
            launch = self._launch(k, spec, plan, env)
            if launch is not None:
                out.append(launch)
        return out

    def _launch(self, k: Kernel, spec: GroupSpec, plan: CpuPlan | SimtPlan,
                env: dict[str, int]) -> Launch | None:
        rows, inner = evaluate(spec.rows, env), evaluate(spec.inner, env)
        args: list[ArgSpec] = [(b.role, b.index) for b in k.buffers]
        args += [("i64", env[s.name]) for s in spec.dims]
        if isinstance(plan, CpuPlan):
            grid, chunk = plan.launch(rows, inner, self.target.compute_units,
                                      evaluate(spec.cols, env))
            if grid == 0:
                return None
            args.append(("i64", chunk))
            return Launch(k.name, (grid, 1, 1), (1, 1, 1), args)
        grid, group, extra = plan.launch(rows, inner, evaluate(spec.cols, env),
                                         self.target.compute_units)
        if grid == 0:
            return None
        args += [("i64", v) for v in extra]
        if grid > self.target.max_grid_size:
            raise ValueError(f"launches: {grid} groups exceed the target's grid size "
                             f"{self.target.max_grid_size}")
        return Launch(k.name, (grid, 1, 1), (group, 1, 1), args)


def _key(k: Any) -> tuple[str, int]:
    if isinstance(k, int):
        return ("in", k)
    if isinstance(k, str):
        role = "in" if k.startswith("in") else "out"
        return (role, int(k[len(role):]))
    return (str(k[0]), int(k[1]))


def evaluate(e: Expr, env: Mapping[str, int]) -> int:
    """An index expression's value for dim values env."""
    from .loop_ir import Binary, Const, Select, Var

    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Var):
        return int(env[e.name])
    if isinstance(e, Binary):
        a, b = evaluate(e.a, env), evaluate(e.b, env)
        ops = {"+": a + b, "-": a - b, "*": a * b, "min": min(a, b), "max": max(a, b),
               "==": int(a == b), "<": int(a < b)}
        if e.op in ops:
            return ops[e.op]
        if e.op == "/":
            return a // b
        if e.op == "%":
            return a % b
    if isinstance(e, Select):
        return evaluate(e.a, env) if evaluate(e.cond, env) else evaluate(e.b, env)
    raise ValueError(f"not an index expression: {e!r}")


def lower_group(ops: Sequence[Operation], inputs: Sequence[Value], outputs: Sequence[Value],
                target: TargetInfo, dialect: str | None = None,
                tuning: Tuning = RULE) -> LoweredGroup:
    """Lower one fused group for `target` (in `dialect`, default the target's preferred),
    scheduled with `tuning`'s parameters (tuning.py; the default is the rule's schedule)."""
    from .rewrite import deep_recursion

    with deep_recursion():
        return _lower_group(ops, inputs, outputs, target, dialect, tuning)


def _lower_group(ops: Sequence[Operation], inputs: Sequence[Value], outputs: Sequence[Value],
                 target: TargetInfo, dialect: str | None, tuning: Tuning) -> LoweredGroup:
    dialect = dialect or target.dialect
    renderer = renderer_for(dialect)
    analysis = GroupAnalysis(ops, inputs, outputs, "kernel", columns=True)
    specs = analysis.specs()
    kernels: list[Kernel] = []
    plans: list[CpuPlan | SimtPlan] = []
    for spec in specs:
        multiply_by_reciprocals(spec)
        kernel, plan = schedule_simt(spec, target, tuning) if target.is_simt else \
            schedule_cpu(spec, target, tuning)
        digest = hashlib.sha256((dialect + "\n" + print_kernel(kernel)).encode()).hexdigest()
        name = f"cinn_{digest[:16]}"
        if any(k.name == name for k in kernels):
            name += f"_{len(kernels)}"
        kernel.name = spec.name = name
        kernels.append(kernel)
        plans.append(plan)
    if not target.float64 and any(_uses_float64(k) for k in kernels):
        where = target.architecture or "the target"
        raise Unsupported(f"the group computes in float64, which {where} does not support")
    source = renderer.render(kernels)
    if os.environ.get("HWPORT_PRINT_IR", "") not in ("", "0"):
        for k in kernels:
            print(f"// ---- cinn loop IR ({dialect}): {print_kernel(k)}", flush=True)
    shapes_of = {("in", i): analysis.dims_of(v) for i, v in enumerate(inputs)}
    shapes_of.update({("out", j): analysis.dims_of(v) for j, v in enumerate(outputs)})
    options_for = getattr(renderer, "options_for", None)  # optional: per-target options
    options = options_for(target) if callable(options_for) else renderer.options
    return LoweredGroup(dialect, source, options, [k.name for k in kernels], kernels,
                        target, specs, plans, dict(analysis.dim_sources), list(analysis.ones),
                        shapes_of, tuning)


def _uses_float64(k: Kernel) -> bool:
    from .loop_ir import nodes, stmt_exprs, walk

    if any(b.dtype == "float64" for b in k.buffers):
        return True
    exprs = [e for s in walk(k.body) for e in stmt_exprs(s)]
    return any(e.dtype == "float64" for e in nodes(exprs))
