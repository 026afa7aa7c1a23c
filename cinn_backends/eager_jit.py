"""The eager JIT (issue 17): an op call on a device with a codegen target and no native kernel
for it runs through kernels the compiler generates, instead of the CPU fallback.

The runtime asks the provider registered here (runtime/src/dispatch.h, `_core.set_jit_provider`)
with (op, dtype, place, inputs, outputs, attrs): inputs on the device and contiguous, outputs
allocated contiguous. The provider builds a one-op pd_op program over the inputs' shapes and
dtypes with the call's attributes, lowers it as a group of one op (lower_group), compiles it
through the plugin (compile.compile_source: cached in process and on disk) and launches it. The
lowered group is kept per (op, dtype, place, attrs, shape class), so a repeated call only
computes its launches. What lower_group cannot lower is remembered and answered False at once
(the runtime then runs the counted CPU fallback).

`install()` is called by hwport.runtime at import when a loaded plugin has a codegen target and
HWPORT_CINN is not 0; the compiler itself is imported on the first call that needs it."""

from __future__ import annotations

import atexit
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["STATS", "install", "installed", "provide", "reset", "uninstall", "unsupported"]

# calls asked, groups lowered, keys found unsupported, calls launched, and the modules the
# eager JIT compiled (its share of compile.STATS["compiled"])
STATS: dict[str, int] = {"calls": 0, "lowered": 0, "unsupported": 0, "launched": 0,
                         "compiled": 0}
_lock = threading.Lock()
_installed: list[bool] = []


@dataclass
class _Entry:
    lowered: Any  # LoweredGroup or index_kernels.IndexLowered
    module: Any  # compile.CompiledModule


_PLANS_MAX = 4096  # launch plans kept (then forgotten all at once)


_FLOATS = ("float16", "bfloat16", "float32", "float64")
_INTS = ("int8", "uint8", "int16", "int32", "int64")
_entries: dict[tuple, _Entry] = {}
_unsupported: dict[tuple, str] = {}  # key -> why lower_group refused
_unsupported_ops: dict[str, str] = {}  # op -> the last reason (for reports)
# (op, dtype, place, attrs, dtypes, exact shapes) -> [(function, grid, group, args)], None
# when refused: a repeated call of the same shapes skips the lookup and launch computation
_plans: dict[tuple, list[tuple] | None] = {}


def _freeze(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


def shape_class(shapes: Sequence[Sequence[int]]) -> tuple:
    """The shape class lower_group's kernels serve (analysis.py): each shape's rank, its
    size-1 dims, and which dims are equal (each dim as the index of its value's first use)."""
    first: dict[int, int] = {}
    out: list[tuple] = []
    for shape in shapes:
        out.append(tuple(-1 if d == 1 else first.setdefault(int(d), len(first)) for d in shape))
    return tuple(out)


def _build_program(op: str, inputs: Sequence[Any], outputs: Sequence[Any],
                   attrs: dict[str, Any]) -> tuple:
    """A one-op pd_op program over the inputs: (program, ops, input values, result values). The
    attributes a kernel reads from its output (a creation op's shape and dtype) come from the
    first output."""
    from hwport import pir
    from hwport.pir.dialect import lookup_op

    info = lookup_op(f"pd_op.{op}")
    if info is None:
        raise NotImplementedError(f"pd_op has no op {op!r}")
    p = pir.Program()
    with pir.Builder(p) as b:
        vals = [b.data(f"x{i}", [int(d) for d in t.shape], str(t.dtype))
                for i, t in enumerate(inputs)]
        specs = info.operands or ()
        args: list[Any] = list(vals)
        if len(specs) == 1 and specs[0].variadic:
            args = [vals]
        kwargs = {k: v for k, v in attrs.items() if k in info.attr_map}
        if outputs and "shape" in info.attr_map and "shape" not in kwargs:
            kwargs["shape"] = [int(d) for d in outputs[0].shape]
        if outputs and "dtype" in info.attr_map and "dtype" not in kwargs:
            kwargs["dtype"] = str(outputs[0].dtype)
        result = getattr(b.pd_op, op)(*args, **kwargs)
    results = list(result) if isinstance(result, list | tuple) else [result]
    ops = [o for o in p.block.ops if o.name != "builtin.data"]
    return p, ops, vals, results


def _lower(op: str, place: Any, inputs: Sequence[Any], outputs: Sequence[Any],
           attrs: dict[str, Any]) -> Any:
    from . import index_kernels
    from .compile import target_info
    from .lower_group import lower_group
    from .target import TargetInfo

    info = target_info(place)
    if info is None:
        raise NotImplementedError(f"{place} has no codegen target")
    target = TargetInfo.from_dict(info)
    # a float -> integer cast saturates (cast_kernel.py); lower_group's C conversion does not
    saturating = op == "cast" and str(inputs[0].dtype) in _FLOATS and \
        str(outputs[0].dtype) in _INTS
    if (op in index_kernels.OPS and op != "cast") or saturating:
        metas = [(tuple(int(d) for d in t.shape), str(t.dtype)) for t in inputs]
        out_metas = [(tuple(int(d) for d in t.shape), str(t.dtype)) for t in outputs]
        return index_kernels.lower_index_op(op, metas, out_metas, attrs, target)
    program, ops, vals, results = _build_program(op, inputs, outputs, attrs)
    if len(results) != len(outputs):
        raise NotImplementedError(f"pd_op.{op} has {len(results)} results, the call "
                                  f"{len(outputs)} outputs")
    for j, (r, t) in enumerate(zip(results, outputs, strict=True)):
        want = (tuple(int(d) for d in t.shape), str(t.dtype))
        got = (tuple(r.type.shape), str(r.type.dtype))
        if got != want:
            raise NotImplementedError(f"pd_op.{op} output {j} is {got}, the call's {want}")
    from .analysis import Unsupported

    try:
        return lower_group(ops, vals, results, target)
    except Unsupported:
        decomposed = _decomposed(program, results)
        if decomposed is None:
            raise
        return lower_group(decomposed[0], vals, decomposed[1], target)


def _decomposed(program: Any, results: Sequence[Any]) -> tuple[list[Any], list[Any]] | None:
    """A composite's one-op program as its decomposition's primitives (cinn_decompose, then
    canonicalize, cse, dce): (ops, the values standing for the results), or None when nothing
    decomposed. lower_group then takes them as one group (softmax, layer_norm: one kernel
    per row) or refuses."""
    from hwport import pir
    from hwport.pir.passes import PassManager

    from . import decompose  # noqa: F401 (registers cinn_decompose)

    with pir.Builder(program) as b:
        for j, r in enumerate(results):
            b.output(r, f"out{j}")
    PassManager("cinn_decompose,canonicalize,cse,dce").run(program)
    ops = [o for o in program.block.ops if o.name not in ("builtin.data",
                                                           "builtin.shadow_output")]
    outs = [o.operand(0) for o in program.block.ops if o.name == "builtin.shadow_output"]
    if len(outs) != len(results) or any(o.name.startswith("pd_op.") and o.info is not None
                                        and o.info.op_def is not None
                                        and not o.info.op_def.is_primitive for o in ops):
        return None
    return ops, outs


def _entry(key: tuple, op: str, place: Any, inputs: Sequence[Any], outputs: Sequence[Any],
           attrs: dict[str, Any]) -> _Entry | None:
    from .compile import compile_source

    try:
        lowered = _lower(op, place, inputs, outputs, attrs)
        if any(not k.name for k in lowered.kernels):
            raise NotImplementedError("a kernel without a name")
    except Exception as exc:  # noqa: BLE001 (whatever lower_group refuses: the CPU fallback)
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        with _lock:
            _unsupported[key] = why
            _unsupported_ops[op] = why
            STATS["unsupported"] += 1
        return None
    from . import compile as cinn_compile

    before = cinn_compile.STATS["compiled"]
    try:
        module = compile_source(place, lowered.dialect, lowered.source, lowered.options)
    except Exception as exc:
        from .compile import CompileBudgetExceeded

        if not isinstance(exc, CompileBudgetExceeded):  # a budget overrun compiles on
            with _lock:
                _unsupported[key] = f"{type(exc).__name__}: does not compile"
                _unsupported_ops[op] = _unsupported[key]
        raise
    entry = _Entry(lowered, module)
    with _lock:
        _entries[key] = entry
        STATS["lowered"] += 1
        STATS["compiled"] += int(cinn_compile.STATS["compiled"] - before)
    return entry


def provide(op: str, dtype: str, place: Any, inputs: list[Any], outputs: list[Any],
            attrs: dict[str, Any]) -> bool:
    """Runs `op` through compiled kernels writing `outputs`; False: not lowerable (the runtime
    runs the CPU fallback). Raises only for a compile or launch failure (the runtime warns once
    and falls back)."""
    from .compile import enabled

    if not enabled():
        return False
    STATS["calls"] += 1
    tensors = [*inputs, *outputs]
    shapes = [tuple(t.shape) for t in tensors]
    call = (op, dtype, str(place), _freeze(attrs), tuple(str(t.dtype) for t in tensors),
            tuple(shapes))
    plan = _plans.get(call, False)
    if plan is False:  # not a call of these exact shapes seen before
        key = (*call[:5], shape_class(shapes))
        if key in _unsupported:
            return False
        entry = _entries.get(key)
        if entry is None:
            entry = _entry(key, op, place, inputs, outputs, attrs)
            if entry is None:
                return False
        plan = _plan(entry, shapes, len(inputs))
        with _lock:
            if len(_plans) >= _PLANS_MAX:
                _plans.clear()
            _plans[call] = plan
    if plan is None:
        return False  # this call refused (a launch plan that does not take these shapes)
    # An empty input has no buffer (a NULL handle some plugins refuse); its kernels never read
    # it, so any tensor of the call with storage stands in for it.
    stand_in = None
    for fn, grid, group, spec in plan:
        args: list[Any] = []
        for kind, value in spec:
            if kind == "in":
                args.append(inputs[value])
            elif kind == "out":
                args.append(outputs[value])
            elif kind == "stand_in":
                if stand_in is None:
                    stand_in = next((t for t, s in zip([*outputs, *inputs],
                                                       [*shapes[len(inputs):],
                                                        *shapes[:len(inputs)]], strict=True)
                                     if math.prod(s) > 0), None)
                args.append(stand_in if stand_in is not None else inputs[value])
            else:
                args.append(value)
        fn.launch(grid, group, args)
    STATS["launched"] += 1
    return True


def _plan(entry: _Entry, shapes: list[tuple[int, ...]], n_in: int) -> list[tuple] | None:
    """The launches of a call of these shapes: (function, grid, group, args) with args
    ("in", i) / ("out", j) / ("stand_in", i) (an empty input) or a converted scalar; None:
    refused."""
    dims = {("in", i): s for i, s in enumerate(shapes[:n_in])}
    dims.update({("out", j): s for j, s in enumerate(shapes[n_in:])})
    launches = entry.lowered.launches(dims)
    if launches is None or any(launch.scratch for launch in launches):
        return None
    out = []
    for launch in launches:
        spec: list[tuple[str, Any]] = []
        for kind, value in launch.args:
            if kind == "in":
                spec.append(("stand_in" if math.prod(shapes[value]) == 0 else "in", value))
            elif kind == "out":
                spec.append(("out", value))
            else:
                spec.append(("value", int(value) if kind == "i64" else float(value)))
        out.append((entry.module.function(launch.kernel), list(launch.grid),
                    list(launch.group), spec))
    return out


def install() -> None:
    """Registers the provider with the runtime (idempotent)."""
    from hwport.runtime import _core

    _core.set_jit_provider(provide)
    if not _installed:
        atexit.register(uninstall)  # before the interpreter goes: no calls into it then
    _installed[:] = [True]


def uninstall() -> None:
    from hwport.runtime import _core

    _core.set_jit_provider(None)
    _installed[:] = [False] if _installed else []


def installed() -> bool:
    from hwport.runtime import _core

    return _core.jit_provider() is provide


def unsupported() -> dict[str, str]:
    """op -> why lower_group (or the compile) refused it, for the ops that fell back."""
    with _lock:
        return dict(_unsupported_ops)


def reset() -> None:
    """Forgets the lowered groups and the unsupported keys (tests)."""
    with _lock:
        _entries.clear()
        _plans.clear()
        _unsupported.clear()
        _unsupported_ops.clear()
        for k in STATS:
            STATS[k] = 0
