"""The eager JIT (issue 17): an op call on a device with a codegen target and no native kernel
for it runs through kernels the compiler generates, instead of the CPU fallback.

The runtime asks the provider registered here (runtime/src/dispatch.h, `_core.set_jit_provider`)
with (op, dtype, place, inputs, outputs, attrs): inputs on the device, strided ones as they are
(read in place through index maps where view_of describes them, else made contiguous by the
device's copy kernel), outputs allocated contiguous. A composite without a kernel comes whole,
before its formula runs (`provide_composite`, runtime/src/jit_composite.h).

The provider builds a one-op pd_op program over the inputs' shapes and dtypes with the call's
attributes, lowers it as a group of one op (lower_group), compiles it through the plugin
(compile.compile_source: cached in process and on disk) and launches it. The lowered group is
kept per (op, dtype, place, attrs, shape class, input views), so a repeated call only computes
its launches. What lower_group cannot lower is remembered and answered False at once (the
runtime then runs the counted CPU fallback).

`install()` is called by hwport.runtime at import when a loaded plugin has a codegen target and
HWPORT_CINN is not 0; the compiler itself is imported on the first call that needs it."""

from __future__ import annotations

import atexit
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["STATS", "install", "installed", "provide", "provide_composite", "reset", "uninstall",
           "unsupported"]

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
    views: bool = False  # the kernels read the call's strided inputs as views (view_of)


_PLANS_MAX = 4096  # launch plans kept (then forgotten all at once)


_FLOATS = ("float16", "bfloat16", "float32", "float64")
_INTS = ("int8", "uint8", "int16", "int32", "int64")
_entries: dict[tuple, _Entry] = {}
_unsupported: dict[tuple, str] = {}  # key -> why lower_group refused
_unsupported_ops: dict[str, str] = {}  # op -> the last reason (for reports)
# (op, dtype, place, attrs, dtypes, exact shapes) -> [(function, grid, group, args)], None
# when refused: a repeated call of the same shapes skips the lookup and launch computation
_plans: dict[tuple, list[tuple] | None] = {}
# (op, place, attrs, input shapes and dtypes) -> the composite's one output (shape, dtype), or
# None: provide_composite declines such calls at once (the runtime runs the formula)
_composite_outs: dict[tuple, tuple[tuple[int, ...], str] | None] = {}


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


View = tuple[tuple[int, ...], tuple[int, ...]]  # (base dims in memory order, broadcast dims)


def view_of(shape: Sequence[int], strides: Sequence[int]) -> View | None:
    """How a strided input reads a contiguous block of memory: (its dims with a stride, in
    memory order, outermost first; its dims of stride 0), or None when it cannot (a slice, a
    negative stride). A transposed input has its dims out of order; a broadcast one (the
    runtime's broadcast_to of a binary op's operand) stride-0 dims. Size-1 dims count as
    broadcast dims."""
    real = [k for k, (d, s) in enumerate(zip(shape, strides, strict=True)) if d != 1 and s != 0]
    order = sorted(real, key=lambda k: -strides[k])
    expect = 1
    for k in reversed(order):
        if strides[k] != expect:
            return None
        expect *= shape[k]
    bcast = tuple(k for k in range(len(shape)) if k not in real)
    return tuple(order), bcast


def _view_value(b: Any, name: str, shape: Sequence[int], dtype: str, view: View | None) -> tuple:
    """(the data value the kernel's buffer holds, the value of the input's shape): the view as
    index maps over its block (transpose, reshape, expand), which lower_group folds into the
    kernel's loads instead of a copy materializing them."""
    if view is None:
        v = b.data(name, [int(d) for d in shape], dtype)
        return v, v
    order, bcast = view
    base = b.data(name, [int(shape[k]) for k in order], dtype)
    v = base
    ascending = sorted(order)
    if list(order) != ascending:
        v = b.pd_op.transpose(v, perm=[order.index(k) for k in ascending])
    kept = [int(shape[k]) if k in order else 1 for k in range(len(shape))]
    if list(v.type.shape) != kept:
        v = b.pd_op.reshape(v, shape=kept)
    if bcast and kept != [int(d) for d in shape]:
        v = b.pd_op.expand(v, shape=[int(d) for d in shape])
    return base, v


def _build_program(op: str, inputs: Sequence[Any], outputs: Sequence[Any],
                   attrs: dict[str, Any], views: Sequence[View | None] = ()) -> tuple:
    """A one-op pd_op program over the inputs: (program, ops, input values, result values),
    the input values being the blocks the kernel reads (`views`: a strided input's view_of).
    The attributes a kernel reads from its output (a creation op's shape and dtype) come from
    the first output."""
    from hwport import pir
    from hwport.pir.dialect import lookup_op

    info = lookup_op(f"pd_op.{op}")
    if info is None:
        raise NotImplementedError(f"pd_op has no op {op!r}")
    p = pir.Program()
    with pir.Builder(p) as b:
        pairs = [_view_value(b, f"x{i}", t.shape, str(t.dtype), views[i] if views else None)
                 for i, t in enumerate(inputs)]
        vals = [base for base, _ in pairs]
        specs = info.operands or ()
        args: list[Any] = [v for _, v in pairs]
        if len(specs) == 1 and specs[0].variadic:
            args = [args]
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
           attrs: dict[str, Any], views: Sequence[View | None] = (), tuning: Any = None) -> Any:
    from . import index_kernels
    from .compile import target_info
    from .lower_group import lower_group
    from .target import TargetInfo
    from .tuning import RULE

    tuning = tuning or RULE

    info = target_info(place)
    if info is None:
        raise NotImplementedError(f"{place} has no codegen target")
    target = TargetInfo.from_dict(info)
    # a float -> integer cast saturates (cast_kernel.py); lower_group's C conversion does not
    saturating = op == "cast" and str(inputs[0].dtype) in _FLOATS and \
        str(outputs[0].dtype) in _INTS
    if (op in index_kernels.OPS and op != "cast") or saturating:
        if any(views):
            raise NotImplementedError("index kernels read contiguous inputs")
        metas = [(tuple(int(d) for d in t.shape), str(t.dtype)) for t in inputs]
        out_metas = [(tuple(int(d) for d in t.shape), str(t.dtype)) for t in outputs]
        return index_kernels.lower_index_op(op, metas, out_metas, attrs, target)
    program, ops, vals, results = _build_program(op, inputs, outputs, attrs, views)
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
        return lower_group(ops, vals, results, target, tuning=tuning)
    except Unsupported:
        if any(views):
            raise
        decomposed = _decomposed(program, results)
        if decomposed is None:
            raise
        return lower_group(decomposed[0], vals, decomposed[1], target, tuning=tuning)


def tune_bucket(shapes: Sequence[Sequence[int]]) -> int:
    """0 for a call too small to tune (autotune.py's HWPORT_CINN_TUNE_MIN elements), else its
    largest tensor's element count rounded up to a power of two: the eager JIT keeps a kernel
    per shape class and size bucket, each bucket with its own tuned schedule."""
    from . import autotune

    n = max((math.prod(s) for s in shapes), default=0)
    if not autotune.enabled() or n < autotune.min_elements():
        return 0
    return 1 << (n - 1).bit_length()


def _tuned(lowered: Any, op: str, place: Any, inputs: Sequence[Any], outputs: Sequence[Any],
           attrs: dict[str, Any]) -> Any:
    """The group's schedule autotuned on the device for this call's shapes (autotune.py: a
    winner cached on disk, else measured now), as to_static's groups are; the rule for index
    kernels, which have no tuning space."""
    from . import autotune
    from .lower_group import LoweredGroup

    if not isinstance(lowered, LoweredGroup):
        return lowered
    shapes = {("in", i): tuple(int(d) for d in t.shape) for i, t in enumerate(inputs)}
    shapes.update({("out", j): tuple(int(d) for d in t.shape) for j, t in enumerate(outputs)})
    return autotune.tuned(place, lambda t: _lower(op, place, inputs, outputs, attrs, tuning=t),
                          shapes, rule=lowered)


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
           attrs: dict[str, Any], views: Sequence[View | None] = ()) -> _Entry | None:
    from .compile import compile_source

    try:
        lowered = None
        if any(views):  # the strided inputs read in place; else made contiguous by the caller
            try:
                lowered = _lower(op, place, inputs, outputs, attrs, views)
            except Exception:  # noqa: BLE001 (the views do not fuse: contiguous inputs then)
                lowered = None
        used_views = lowered is not None
        if lowered is None:
            lowered = _lower(op, place, inputs, outputs, attrs)
            if key[-1]:  # a size bucket worth tuning (contiguous inputs)
                lowered = _tuned(lowered, op, place, inputs, outputs, attrs)
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
    from .compile import CompileBudgetExceeded

    try:
        try:
            module = compile_source(place, lowered.dialect, lowered.source, lowered.options)
        except CompileBudgetExceeded:
            raise
        except Exception:
            if not used_views:
                raise
            # the views' gathers do not compile (GCC 12 -march=native on AVX-512 stops with an
            # internal error vectorizing isinf of float16 loads of a transposed input): the
            # contiguous inputs' kernels instead
            used_views = False
            lowered = _lower(op, place, inputs, outputs, attrs)
            module = compile_source(place, lowered.dialect, lowered.source, lowered.options)
    except Exception as exc:
        if not isinstance(exc, CompileBudgetExceeded):  # a budget overrun compiles on
            with _lock:
                _unsupported[key] = f"{type(exc).__name__}: does not compile"
                _unsupported_ops[op] = _unsupported[key]
        raise
    entry = _Entry(lowered, module, used_views)
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
    # strided inputs (the runtime passes them as they are): read in place where they are a
    # transposed or broadcast block of memory (view_of), else made contiguous by the device's
    # copy kernel
    views: list[View | None] = []
    for i, t in enumerate(inputs):
        view = None if t.is_contiguous() else view_of(t.shape, t.strides)
        if view is None and not t.is_contiguous():
            inputs[i] = t.contiguous()
        views.append(view)
    tensors = [*inputs, *outputs]
    shapes = [tuple(t.shape) for t in tensors]
    call = (op, dtype, str(place), _freeze(attrs), tuple(str(t.dtype) for t in tensors),
            tuple(shapes), tuple(views))
    plan = _plans.get(call, False)
    if plan is False:  # not a call of these exact shapes seen before
        # a composite's decomposition may bake its shapes into constants (var's N - 1, a
        # mean's 1/N): its kernels serve only these shapes; a primitive's the shape class
        key = (*call[:5], shape_class(shapes) if _primitive(op) else call[5], call[6],
               0 if any(views) else tune_bucket(shapes))
        if key in _unsupported:
            return False
        entry = _entries.get(key)
        if entry is None:
            entry = _entry(key, op, place, inputs, outputs, attrs, views)
            if entry is None:
                return False
        bases = [tuple(s[k] for k in v[0]) if v is not None and entry.views else s
                 for s, v in zip(shapes, views, strict=False)]
        plan = (_plan(entry, [*bases, *shapes[len(inputs):]], len(inputs)), entry.views)
        with _lock:
            if len(_plans) >= _PLANS_MAX:
                _plans.clear()
            _plans[call] = plan
    plan, read_views = plan
    if plan is None:
        return False  # this call refused (a launch plan that does not take these shapes)
    if not read_views:
        for i, v in enumerate(views):
            if v is not None:
                inputs[i] = inputs[i].contiguous()
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


_PRIMITIVE: dict[str, bool] = {}
_COMPUTING = ("unary", "binary", "ternary", "reduction", "nn")  # provide_composite's categories


def _primitive(op: str) -> bool:
    """Whether pd_op.op is a primitive (or has no op definition): not a composite."""
    got = _PRIMITIVE.get(op)
    if got is None:
        from hwport.pir.dialect import lookup_op

        info = lookup_op(f"pd_op.{op}")
        got = info is None or info.op_def is None or info.op_def.is_primitive
        _PRIMITIVE[op] = got
    return got


def provide_composite(op: str, place: Any, inputs: tuple, attrs: dict[str, Any]) -> Any:
    """A composite op (softmax, layer_norm, relu, gelu, ...) on a device with a codegen target
    and no kernel for it, asked by the runtime before its C++ formula (runtime/src/
    jit_composite.h): its output computed by its decomposition fused into one kernel (provide
    lowers it so), or None: the formula runs its primitives one by one, each launching and
    materializing its broadcasts. Declines Python scalars, absent optional inputs and
    composites with several outputs, remembering a refusal per shape class."""
    from .compile import enabled

    if not enabled():
        return None
    from hwport.runtime import _core

    tensors = list(inputs)
    if not tensors or not all(isinstance(t, _core.Tensor) for t in tensors):
        return None
    key = (op, str(place), _freeze(attrs),
           tuple((tuple(t.shape), str(t.dtype)) for t in tensors))
    meta = _composite_outs.get(key, False)
    if meta is False:
        meta = _composite_meta(op, tensors, attrs)
        with _lock:
            if len(_composite_outs) >= _PLANS_MAX:
                _composite_outs.clear()
            _composite_outs[key] = meta
    if meta is None:
        return None
    # the runtime makes a primitive's strided inputs contiguous before asking; here, alike
    tensors = [t if t.is_contiguous() else t.contiguous() for t in tensors]
    out = _core.empty(list(meta[0]), meta[1], place)
    dtype = next((str(t.dtype) for t in tensors if str(t.dtype) in _FLOATS),
                 str(tensors[0].dtype))
    if not provide(op, dtype, place, tensors, [out], attrs):
        with _lock:
            _composite_outs[key] = None
        return None
    return out


def _composite_meta(op: str, inputs: Sequence[Any],
                    attrs: dict[str, Any]) -> tuple[tuple[int, ...], str] | None:
    """The one output's (shape, dtype) of the op over inputs like these, from its one-op
    program (infer-meta); None for a primitive, an op with several outputs or one the program
    builder refuses."""
    from hwport.pir.dialect import lookup_op

    if _primitive(op):
        return None
    # computing composites only: a shape composite returns a view (a kernel would copy it), a
    # random or optimizer one advances state its decomposition's kernel would not
    op_def = lookup_op(f"pd_op.{op}").op_def
    if op_def.category not in _COMPUTING or op in ("dropout", "normal"):
        return None
    try:
        _, _, _, results = _build_program(op, inputs, [], attrs)
    except Exception:  # noqa: BLE001 (attributes the builder does not take: the formula)
        return None
    if len(results) != 1:
        return None
    return tuple(int(d) for d in results[0].type.shape), str(results[0].type.dtype)


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
    _core.set_jit_composite_provider(provide_composite)
    if not _installed:
        atexit.register(uninstall)  # before the interpreter goes: no calls into it then
    _installed[:] = [True]


def uninstall() -> None:
    from hwport.runtime import _core

    _core.set_jit_provider(None)
    _core.set_jit_composite_provider(None)
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
        _composite_outs.clear()
        _unsupported.clear()
        _unsupported_ops.clear()
        for k in STATS:
            STATS[k] = 0
