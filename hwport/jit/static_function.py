"""StaticFunction: a function (or a layer's forward) served by captured PIR programs.

A call looks up its guard: the tensor arguments' dtypes, places, static dims (a dim an
InputSpec declares None is symbolic and left out) and stop_gradient flags, the other
arguments' values, grad mode and the layer's training flag. A guard seen before runs its
program through the C++ executor (pir.Executor: kernels resolved once, memory planned by
liveness). A new guard captures (capture.py): the function runs once, eagerly, while the
pipeline's trace layer records it; that run's result is returned, and the record becomes a
program (canonicalize, cse, dce and the DRR fusions run on it) cached for the guard. The
cache holds at most `max_programs` guards (least recently used out); every capture is logged
at debug level on the `hwport.jit` logger with its guard and its cost.

Calls the program cannot serve run eagerly, every time for their guard:
- a graph break under full_graph=False (a host read of a traced value, an in-place write, a
  random op), said once as a warning; under full_graph=True the capture raises instead;
- a call that needs gradients (grad mode on and an input or a parameter with
  stop_gradient=False): the program has no backward yet, the eager pipeline records one."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hwport.nn.layer import structure_epoch as layer_structure_epoch
from hwport.runtime import Tensor, _core

from .capture import CaptureBreak, Recorder, build, capturing, recording
from .pytree import flatten, unflatten

_log = logging.getLogger("hwport.jit")

MAX_PROGRAMS = 16  # guards kept per function, least recently used out
_ENABLED = [True]


def enable_to_static(enable_to_static_bool: bool) -> None:
    """Turns to_static on or off process-wide (off: decorated functions run eagerly)."""
    if not isinstance(enable_to_static_bool, bool):
        raise TypeError(f"enable_to_static: expected a bool, got {enable_to_static_bool!r}")
    _ENABLED[0] = enable_to_static_bool


class StaticCaptureError(RuntimeError):
    """to_static could not express the function as a program (full_graph=True)."""


def _constant_key(v: Any) -> Any:
    try:
        hash(v)
        return (type(v).__qualname__, v)
    except TypeError:
        return (type(v).__qualname__, repr(v))


# ---- one cached program -------------------------------------------------------------------

FROM_PROGRAM = object()  # an output leaf the program gives (others, None too, are kept)


@dataclass
class _Entry:
    eager_reason: str | None = None
    program: Any = None  # the pd_op program after the passes (the executor runs it lowered)
    executor: Any = None
    feed_names: tuple[str, ...] = ()
    params: dict[str, Tensor] | None = None  # name -> the tensor bound (layer's ones by name)
    out_tree: Any = None
    out_leaves: list[Any] | None = None  # FROM_PROGRAM where the program gives the output
    specialized: dict[Any, _Entry] | None = None  # symbolic dims that did not generalize
    before_run: list[Callable[[], None]] | None = None  # host work first (optimizer scalars)
    written: list[Tensor] | None = None  # parameters the program writes (outputs after ours)
    grads: list[Tensor] | None = None  # parameters whose .grad the program sets (then those)
    run_attrs: list[tuple[str, int, Callable[[], dict[str, Any]]]] | None = None  # resolved
    epoch: int = -1  # layers' structure epoch (hwport/nn/layer.py) the parameters were bound at

    def run(self, tensors: list[Tensor]) -> Any:
        for hook in self.before_run or ():
            hook()
        for op, ordinal, attrs in self.run_attrs or ():
            self.executor.set_kernel_attrs(op, ordinal, attrs())
        outs = self.executor.run(dict(zip(self.feed_names, tensors, strict=True)))
        n = sum(v is FROM_PROGRAM for v in self.out_leaves)  # (the writes are the executor's)
        for param, g in zip(self.grads or (), outs[n:], strict=True):
            param.grad = g.clone()  # (an output of the arena: the next run reuses it)
        it = iter(outs[:n])
        leaves = [next(it) if v is FROM_PROGRAM else v for v in self.out_leaves]
        return unflatten(self.out_tree, leaves)


def _print_ir(title: str) -> Callable[[str], None] | None:
    if os.environ.get("HWPORT_PRINT_IR", "") in ("", "0"):
        return None

    def out(text: str) -> None:
        print(f"// ---- {title}: {text}", flush=True)
    return out


PASSES = "canonicalize,cse,dce,fuse,dce"
# backend="CINN": the captured program is simplified; each plan of it (static shapes: a
# symbolic program has one per shape signature) then decomposes its composites into
# primitives, which fuse into cinn.group regions the compiler turns into generated kernels
# (cinn_backends/) as the plan is lowered; the kernels take the dims as arguments, so plans
# of one shape class share them.
CINN_PASSES = "canonicalize,cse,dce"
CINN_PLAN_PASSES = "cinn_decompose,canonicalize,cse,dce,cinn_fusion,dce"


def plan_passes(backend: str | None) -> str:
    """The executor's per-plan pipeline for `backend` ("" without the compiler)."""
    if backend != "CINN":
        return ""
    from hwport.cinn_backends import compile as cinn_compile
    from hwport.cinn_backends import register

    if not cinn_compile.enabled():
        return ""
    register()
    return CINN_PLAN_PASSES
BACKENDS = (None, "CINN")


def check_backend(backend: Any, where: str) -> str | None:
    """to_static's backend: None (the executor with the device's kernels) or "CINN" (the
    fusion compiler); any case of "cinn" is taken."""
    if backend is None:
        return None
    if isinstance(backend, str) and backend.upper() == "CINN":
        return "CINN"
    raise ValueError(f"{where}: backend must be None or 'CINN', got {backend!r}")


def optimize(program: Any, name: str, backend: str | None = None) -> Any:
    """The passes that run before execution; HWPORT_PRINT_IR=1 prints the program after
    capture and after each pass. With backend "CINN" (and the compiler not turned off by
    HWPORT_CINN=0) the fusion compiler's passes run instead of the pattern fusions."""
    from hwport.pir.passes import PassManager

    passes = CINN_PASSES if plan_passes(backend) else PASSES
    printer = _print_ir(name)
    if printer is not None:
        printer(f"captured\n{program}")
        pm = PassManager(passes, print_after=True, output=printer)
    else:
        pm = PassManager(passes)
    pm.run(program)
    return program


class StaticFunction:
    """to_static's callable: see the module docstring."""

    def __init__(self, function: Callable[..., Any], input_spec: Sequence[Any] | None = None,
                 full_graph: bool = True, layer: Any = None,
                 max_programs: int = MAX_PROGRAMS, backend: str | None = None) -> None:
        self._backend = check_backend(backend, "to_static")
        self._function = function
        self._input_spec = list(input_spec) if input_spec is not None else None
        self._full_graph = bool(full_graph)
        self._layer = layer
        self.max_programs = max_programs
        self._cache: OrderedDict[Any, _Entry] = OrderedDict()
        self._warned: set[str] = set()
        self._bound: dict[int, StaticFunction] = {}
        self.num_captures = 0
        self.last_capture_seconds = 0.0
        functools.update_wrapper(self, function)
        try:
            params = list(inspect.signature(function).parameters)
        except (TypeError, ValueError):
            params = []
        self._arg_names = params[1:] if layer is not None else params

    @property
    def dygraph_function(self) -> Callable[..., Any]:
        return self._function

    @property
    def input_spec(self) -> list[Any] | None:
        return self._input_spec

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        """A method decorated in a class: one StaticFunction (one cache) per instance."""
        if instance is None:
            return self
        bound = instance.__dict__.get(_bound_key(self))
        if bound is None:
            bound = StaticFunction(self._function, self._input_spec, self._full_graph,
                                   layer=instance, max_programs=self.max_programs,
                                   backend=self._backend)
            instance.__dict__[_bound_key(self)] = bound
        return bound

    # -- calls --
    def _eager(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._layer is not None:
            return self._function(self._layer, *args, **kwargs)
        return self._function(*args, **kwargs)

    def _layer_tensors(self) -> dict[str, Tensor]:
        layer = self._layer
        if layer is None or not hasattr(layer, "named_parameters"):
            return {}
        named = dict(layer.named_parameters())
        named.update(layer.named_buffers())
        return named

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not _ENABLED[0] or capturing():
            return self._eager(args, kwargs)  # inside another capture: recorded into it
        leaves: list[Any] = []
        tree = flatten((args, kwargs), leaves)
        tensors = [v for v in leaves if isinstance(v, Tensor)]
        from hwport import autograd

        grad_mode = autograd.is_grad_enabled()
        key = self._guard(leaves, tensors, grad_mode)
        entry = self._cache.get(key)
        if entry is not None:
            self._cache.move_to_end(key)
            if entry.specialized is not None:
                exact = tuple(tuple(t.shape) for t in tensors)
                sub = entry.specialized.get(exact)
                if sub is None:
                    return self._capture(entry.specialized, exact, args, kwargs, leaves, tree,
                                         tensors, grad_mode, symbolic=False)
                entry = sub
            if entry.eager_reason is not None:
                return self._eager(args, kwargs)
            if self._layer is not None and entry.epoch != layer_structure_epoch[0] and \
                    not self._same_parameters(entry):
                self._cache.pop(key, None)  # the layer holds other parameter objects now
                return self._capture(self._cache, key, args, kwargs, leaves, tree, tensors,
                                     grad_mode, symbolic=True)
            return entry.run(tensors)
        return self._capture(self._cache, key, args, kwargs, leaves, tree, tensors, grad_mode,
                             symbolic=True)

    def _same_parameters(self, entry: _Entry) -> bool:
        """Whether the layer still holds the parameter and buffer objects the program binds
        (checked when some layer's structure changed since the capture)."""
        now = self._layer_tensors()
        if any(now.get(name, t) is not t for name, t in (entry.params or {}).items()):
            return False
        entry.epoch = layer_structure_epoch[0]
        return True

    def _specs(self, tensors: list[Tensor]) -> list[Any]:
        """The InputSpec of each tensor argument (None: all dims static), checked."""
        specs: list[Any] = [None] * len(tensors)
        if self._input_spec is None:
            return specs
        from hwport.static import InputSpec

        for i, (spec, t) in enumerate(zip(self._input_spec, tensors, strict=False)):
            if not isinstance(spec, InputSpec):
                continue
            shape = list(t.shape)
            if len(spec.shape) != len(shape) or any(d not in (-1, n)
                                                    for d, n in zip(spec.shape, shape,
                                                                    strict=True)):
                raise ValueError(f"to_static({self.__name__}): tensor argument {i} has shape "
                                 f"{shape}, which does not match its input_spec "
                                 f"{list(spec.shape)} (None / -1: any size)")
            if spec.dtype != t.dtype:
                raise ValueError(f"to_static({self.__name__}): tensor argument {i} has dtype "
                                 f"{t.dtype.name}, its input_spec says {spec.dtype.name}")
            specs[i] = spec
        return specs

    def _guard(self, leaves: list[Any], tensors: list[Tensor], grad_mode: bool) -> Any:
        specs = self._specs(tensors)
        parts: list[Any] = []
        k = 0
        for v in leaves:
            if isinstance(v, Tensor):
                spec = specs[k]
                k += 1
                dims = tuple(tuple(v.shape) if spec is None else
                             (None if d == -1 else n for d, n in zip(spec.shape, v.shape,
                                                                     strict=True)))
                parts.append((str(v.dtype), str(v.place), dims, v.stop_gradient))
            else:
                parts.append(_constant_key(v))
        training = getattr(self._layer, "training", None)
        return (tuple(parts), grad_mode, training)

    def _evict(self) -> None:
        while len(self._cache) > self.max_programs:
            self._cache.popitem(last=False)

    def _warn_once(self, reason: str) -> None:
        if reason not in self._warned:
            self._warned.add(reason)
            warnings.warn(f"to_static({self.__name__}): graph break, this call runs eagerly: "
                          f"{reason}", stacklevel=3)

    # -- capture --
    def _feed_names(self, tensors: list[Tensor]) -> list[str]:
        names: list[str] = []
        specs = self._input_spec or []
        for i in range(len(tensors)):
            spec = specs[i] if i < len(specs) else None
            name = getattr(spec, "name", None) or (
                self._arg_names[i] if i < len(self._arg_names) else f"input_{i}")
            while name in names:
                name = f"{name}_{i}"
            names.append(name)
        return names

    def _capture(self, cache: dict[Any, _Entry], key: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any], leaves: list[Any], tree: Any,
                 tensors: list[Tensor], grad_mode: bool, symbolic: bool) -> Any:
        started = time.perf_counter()
        layer_tensors = self._layer_tensors()
        recorder = Recorder({id(t): n for n, t in layer_tensors.items()},
                            full_graph=self._full_graph)
        names = self._feed_names(tensors)
        for t, name in zip(tensors, names, strict=True):
            recorder.add_data(t, name)
        try:
            with recording(recorder):
                result = self._eager(args, kwargs)
                recorder.check_writes()
        except CaptureBreak as brk:
            raise StaticCaptureError(f"to_static({self.__name__}): {brk.reason}") from None
        self.num_captures += 1
        entry = self._entry(recorder, result, (args, kwargs), tensors, names, grad_mode,
                            symbolic)
        cache[key] = entry
        if cache is self._cache:
            self._evict()
        self.last_capture_seconds = time.perf_counter() - started
        _log.debug("to_static(%s): capture %d for guard %r: %s in %.1f ms", self.__name__,
                   self.num_captures, key, entry.eager_reason or "program",
                   self.last_capture_seconds * 1e3)
        return result

    def _entry(self, recorder: Recorder, result: Any, call: Any, tensors: list[Tensor],
               names: list[str], grad_mode: bool, symbolic: bool) -> _Entry:
        if recorder.error is not None:
            self._warn_once(recorder.error.reason)
            return _Entry(eager_reason=recorder.error.reason)
        record = recorder.record
        out_leaves: list[Any] = []
        out_tree = flatten(result, out_leaves)
        outputs = [recorder.value_id(v) for v in out_leaves if isinstance(v, Tensor)]
        kept = [FROM_PROGRAM if isinstance(v, Tensor) else v for v in out_leaves]
        params = {name: recorder.tensor_of(vid) for vid, name in record.params.items()}
        written = [(recorder.tensor_of(pid), vid) for pid, vid in record.writes.items()]
        grads = [(t, recorder.value_id(g)) for t in params.values()
                 if isinstance(g := _core._held_grad(t), Tensor) and recorder.traced(g)]
        if grad_mode and not written and not grads and any(
                isinstance(v, Tensor) and not v.stop_gradient for v in out_leaves):
            # the caller may differentiate the result: the program has no backward for it
            return _Entry(eager_reason="gradients")
        n_user = len(outputs)
        outputs += [vid for _, vid in grads] + [vid for _, vid in written]
        written_names = {f"output_{n_user + len(grads) + k}": record.params[pid]
                         for k, pid in enumerate(record.writes)}
        specs = self._specs(tensors) if symbolic else [None] * len(tensors)
        dims = _symbolic_dims(record, specs)
        program = None
        specialized = None
        if dims and (written or recorder.before_run or recorder.run_attrs):
            # a step that writes state cannot be run again on zeros to check the symbolic
            # program (the probe would apply it): one program per size
            _log.debug("to_static(%s): a step writing state: one program per size",
                       self.__name__)
            specialized = {}
        elif dims:
            try:
                program = build(record, outputs, dims)
                if not self._generalizes(record, call, tensors, specs):
                    program = None
            except Exception as exc:  # noqa: BLE001 - any failure: capture per size instead
                _log.debug("to_static(%s): the symbolic program failed (%s)", self.__name__,
                           exc)
                program = None
            if program is None:
                _log.debug("to_static(%s): the capture depends on the size of a symbolic "
                           "dim; one program per size", self.__name__)
                specialized = {}
        if program is None:
            program = build(record, outputs)
        optimize(program, f"to_static({self.__name__})", self._backend)
        from hwport import pir

        place = tensors[0].place if tensors else _core.get_device()
        entry = _Entry(epoch=layer_structure_epoch[0],
                       program=program, executor=pir.Executor(program, place, params,
                                                              writes=written_names,
                                                              passes=plan_passes(self._backend)),
                       feed_names=tuple(names), before_run=list(recorder.before_run),
                       written=[t for t, _ in written], grads=[t for t, _ in grads],
                       run_attrs=[],
                       params=params, out_tree=out_tree, out_leaves=kept)
        for op, match, nth, fn in recorder.run_attrs:  # planned now: each finds its kernel
            ordinal = nth if match is None else entry.executor.kernel_ordinal(op, match, nth)
            base = entry.executor.kernel_attrs(op, ordinal)
            entry.run_attrs.append((op, ordinal, lambda fn=fn, base=base: {**base, **fn()}))
        if specialized is not None:
            specialized[tuple(tuple(t.shape) for t in tensors)] = entry
            return _Entry(specialized=specialized)
        return entry

    def _generalizes(self, record: Any, call: Any, tensors: list[Tensor],
                     specs: list[Any]) -> bool:
        """Whether the record is the same at other sizes of the symbolic dims: the function
        runs again on zeros of those sizes (each symbolic dim one larger) and must make the
        same calls with the same attributes (a size read into an attribute would differ)."""
        from hwport import autograd
        from hwport.runtime import _core

        probes = []
        for t, spec in zip(tensors, specs, strict=True):
            shape = list(t.shape)
            if spec is not None:
                shape = [n + 1 if d == -1 else n for d, n in zip(spec.shape, shape,
                                                                  strict=True)]
            probes.append(_core.full(shape, 0, t.dtype, t.place))
        recorder = Recorder({id(t): n for n, t in self._layer_tensors().items()},
                            full_graph=False)
        for t, (_, name) in zip(probes, record.data, strict=True):
            recorder.add_data(t, name)
        leaves: list[Any] = []
        tree = flatten(call, leaves)
        it = iter(probes)
        swapped = [next(it) if isinstance(v, Tensor) else v for v in leaves]
        args, kwargs = unflatten(tree, swapped)
        try:
            with recording(recorder), autograd.no_grad():
                self._eager(args, kwargs)
        except Exception as exc:  # noqa: BLE001 - a size the code cannot take: not general
            _log.debug("to_static(%s): the probe run failed: %s", self.__name__, exc)
            return False
        return recorder.error is None and \
            recorder.record.signature() == record.signature()


def _symbolic_dims(record: Any, specs: list[Any]) -> dict[int, list[Any]]:
    dims: dict[int, list[Any]] = {}
    n = 0
    for (vid, _), spec in zip(record.data, specs, strict=True):
        if spec is None or not spec.symbolic_dims():
            continue
        shape = list(record.metas[vid][0])
        for i in spec.symbolic_dims():
            shape[i] = f"s{n}"
            n += 1
        dims[vid] = shape
    return dims


def _bound_key(sf: StaticFunction) -> str:
    return f"_hwport_static_{sf._function.__name__}_{id(sf)}"
