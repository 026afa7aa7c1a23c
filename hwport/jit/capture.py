"""to_static's capture: the pipeline's trace layer records one run of a Python function.

The function runs once, eagerly, while a `Recorder` sits in the pipeline's `trace` slot
(runtime/src/layers.h). Every op call the function makes (operators, the op functions,
nn.functional, indexing, the ops of the autograd engine) reaches the recorder after its
arguments are checked and its meta inferred; it notes the op, its attributes and which traced
values its inputs are, lets the call run, and names the outputs. Calls made inside another
call (a decomposition's sub-ops) pass through unrecorded: the program holds the op itself.

A tensor input of a call is one of: a program input (`data`), an output of an earlier
recorded call, a parameter (a layer's parameter or buffer by its name; any other tensor made
before the capture, by reference), or a constant (a 0-d tensor the call made of a Python
scalar). After the run, `build` turns the record into a PIR program (builtin.data /
builtin.parameter / builtin.constant, pd_op ops, builtin.shadow_output), with symbolic dims
where the caller asks for them.

What a program cannot hold is caught, not recorded wrongly:
- a host read of a traced tensor's values (Python `if` on a tensor, .numpy(), .item(),
  print) is data-dependent: `CaptureBreak` (the caller raises it as an error naming the file
  and line, or runs the call eagerly: a graph break);
- an in-place write (Tensor.set_value) into a traced tensor or a parameter: the same;
- a random op drawing from the global generator other than uniform and dropout (normal with
  seed 0): refused the same way. Dropout (recorded as its sub-ops) and uniform draw afresh on
  every run: each run draws the same stretch of the generator as eager would and patches it
  into the uniform kernel (an explicit seed is a fixed stream and is recorded as it is)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hwport.pir import Builder, Program
from hwport.pir.eager_attrs import recorded_kwargs
from hwport.pir.types import TensorType


class CaptureBreak(Exception):
    """Something in the function a program cannot express; `reason` says what and where."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ---- where the user's code is -------------------------------------------------------------

@functools.cache
def _package_dirs() -> tuple[str, ...]:
    import hwport
    from hwport import phi_ops, pir, runtime

    return tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                 for m in (hwport, phi_ops, pir, runtime))


def user_frame() -> str:
    """'file:line: code' of the innermost caller outside hwport itself."""
    package_dirs = _package_dirs()
    frame = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if not name.startswith(package_dirs) and not name.startswith("<frozen"):
            import linecache

            code = linecache.getline(name, frame.f_lineno).strip()
            return f"{name}:{frame.f_lineno}" + (f" (`{code}`)" if code else "")
        frame = frame.f_back
    return "<unknown>"


def _read_by_hwport() -> bool:
    """Whether the code reading a tensor's values (past Tensor's own read methods) is
    hwport's."""
    frame = sys._getframe(2)
    tensor_py = os.path.join(_package_dirs()[0], "tensor.py")
    while frame is not None and os.path.abspath(frame.f_code.co_filename) == tensor_py:
        frame = frame.f_back
    return frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        _package_dirs())


# ---- the record ---------------------------------------------------------------------------

RANDOM_OPS = frozenset({"uniform", "normal", "dropout"})


@dataclass
class Call:
    op: str  # a pd_op name, or "cf.if" / "cf.while"
    inputs: list[Any]  # per input slot: a value id, a list of them, or None
    attrs: dict[str, Any]
    outputs: list[int]  # value ids
    # cf.if: (then calls, then yields), (else calls, else yields); cf.while: one region whose
    # yields are the next condition and carried values, its block arguments in `args`
    regions: list[tuple[list[Call], list[int]]] = field(default_factory=list)
    args: list[int] = field(default_factory=list)


@dataclass
class Record:
    """One run of the function, as value ids: what each id is and the calls in order."""

    data: list[tuple[int, str]] = field(default_factory=list)  # (id, feed name)
    params: dict[int, str] = field(default_factory=dict)  # id -> parameter name
    consts: dict[int, tuple[Any, tuple[int, ...], str]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    metas: dict[int, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    # Tensor.set_value into a parameter: its id -> the id of the value it holds at the end
    writes: dict[int, int] = field(default_factory=dict)

    def signature(self) -> tuple[Any, ...]:
        """What must agree between two runs of the same code path at different sizes for one
        program to serve both: the ops, how they connect, their attributes, the constants."""
        return (_calls_signature(self.calls),
                tuple(sorted((k, repr(v)) for k, v in self.consts.items())),
                tuple(sorted(self.params.items())))


def _calls_signature(calls: list[Call]) -> tuple[Any, ...]:
    return tuple((c.op, repr(c.inputs), repr(sorted(c.attrs.items())), tuple(c.outputs),
                  tuple((_calls_signature(cs), tuple(ys)) for cs, ys in c.regions),
                  tuple(c.args)) for c in calls)


class Recorder:
    """The trace layer during a capture (registered in the "trace" slot)."""

    def __init__(self, param_names: dict[int, str], full_graph: bool = True) -> None:
        from hwport.runtime import _core

        self.full_graph = full_graph
        self._core = _core
        self.record = Record()
        self.param_names = param_names  # id(tensor) -> name (the layer's parameters, buffers)
        self.depth = 0
        self._ids: dict[int, int] = {}  # id(tensor) -> value id
        self._layouts: dict[tuple[Any, ...], int] = {}  # another wrapper of a known view
        self._versions: dict[int, tuple[Any, int]] = {}  # value id -> (tensor, storage version)
        self._keep: list[Any] = []  # every tensor seen, alive so ids stay unique
        self._written: dict[int, int] = {}  # id(parameter written) -> its parameter id
        self._written_storages: set[int] = set()
        self._captured = 0
        self._calls = [self.record.calls]  # where calls go: a region's list inside cond/while
        self._paused = 0  # while_loop's later iterations run unrecorded
        self._decomposed: dict[str, bool] = {}
        # (seed, offset) the global generator gave -> how many counters it reserved
        self.drawn: dict[tuple[int, int], int] = {}
        # host work a program run must repeat first (an optimizer's per-step scalars)
        self.before_run: list[Any] = []
        # (op, match, n, fn): a call whose attributes are recomputed on the host before each
        # run (fn() -> attrs) and patched into its kernel: the nth kernel serving op whose
        # attributes include `match` (None: the nth serving op)
        self.run_attrs: list[tuple[str, dict[str, Any] | None, int, Any]] = []
        self._draw_slots: dict[tuple[int, int], dict[str, Any]] = {}
        self.error: CaptureBreak | None = None

    # -- value ids --
    def _layout(self, t: Any) -> tuple[Any, ...]:
        return (self._core._storage_id(t), tuple(t.shape), tuple(t.strides), int(t._offset),
                str(t.dtype))

    def _name(self, t: Any, vid: int) -> None:
        self._keep.append(t)
        self._ids[id(t)] = vid  # (a later name of the same object wins)
        self._layouts.setdefault(self._layout(t), vid)
        self._versions[vid] = (t, self._core._storage_version(t))
        self.record.metas[vid] = (tuple(t.shape), str(t.dtype))

    def _new_id(self) -> int:
        return len(self.record.metas)

    def add_data(self, t: Any, name: str) -> None:
        vid = self._new_id()
        self._name(t, vid)
        self.record.data.append((vid, name))

    def lookup(self, t: Any) -> int | None:
        vid = self._ids.get(id(t))
        if vid is None:
            vid = self._layouts.get(self._layout(t))
        return vid

    def value_id(self, t: Any) -> int:
        vid = self.lookup(t)
        if vid is not None:
            if self._written_storages:
                self._check_fresh(t, vid)
            return vid
        vid = self._new_id()
        name = self.param_names.get(id(t))
        if name is None and t.ndim == 0 and t.size == 1 and t.stop_gradient:
            # a Python scalar the call made a 0-d tensor of (or a 0-d tensor from outside)
            from hwport.tensor import _to_numpy

            self._name(t, vid)
            self.record.consts[vid] = (_to_numpy(t).item(), (), str(t.dtype))
            return vid
        if name is None and not t.is_leaf:
            self.fail(f"an op at {user_frame()} reads a tensor of shape {list(t.shape)} that "
                      "an unrecorded computation made (a result of ops inside another op's "
                      "call); the program could not recompute it")
        if name is None:  # a tensor from outside the function: bound by reference
            name = f"_captured_{self._captured}"
            self._captured += 1
        self._name(t, vid)
        self.record.params[vid] = name
        return vid

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Ops run eagerly and unrecorded (an optimizer making its buckets and states: tensors
        that outlive the program and that it binds as parameters)."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def on_write(self, target: Any, value: Any) -> None:
        """After Tensor.set_value(target, value): a write into a parameter (a tensor from
        outside the function) becomes a program output copied into it after each run."""
        from hwport.runtime import Tensor

        if self.error is not None or self.depth:
            return
        vid = self.lookup(target)
        if self._paused:
            if vid is not None:
                self._versions[vid] = (self._versions[vid][0],
                                       self._core._storage_version(target))
            return
        if vid is None:
            vid = self.value_id(target)
        param = self._written.get(id(target), vid)
        if param not in self.record.params:
            kind = "an input" if any(param == d for d, _ in self.record.data) else \
                "a tensor computed in the function"
            self.fail(f"an in-place write (Tensor.set_value) into {kind} of shape "
                      f"{list(target.shape)} at {user_frame()}: a program writes only "
                      "parameters and tensors from outside the function; write a new tensor "
                      "instead, or pass full_graph=False to run such calls eagerly")
            return
        if not isinstance(value, Tensor):
            self.fail(f"Tensor.set_value of a {type(value).__name__} into parameter "
                      f"{self.record.params[param]} at {user_frame()}: inside a capture the "
                      "value must be a tensor")
            return
        if value.dtype != target.dtype:  # set_value casts: the program's write is the cast
            value = value.astype(target.dtype)
        self.record.writes[param] = self.value_id(value)
        self._written[id(target)] = param
        self._ids[id(target)] = self.record.writes[param]  # later reads see the new value
        self._layouts[self._layout(target)] = self.record.writes[param]
        self._versions[param] = (target, self._core._storage_version(target))
        self._written_storages.add(self._core._storage_id(target))

    def _check_fresh(self, t: Any, vid: int) -> None:
        """A view recorded before a write into its storage (set_value into a parameter) and
        read after it: eager sees the new values, the record the old ones."""
        kept, version = self._versions[vid]
        if kept is t and self._core._storage_version(t) != version:
            self.fail(f"a tensor of shape {list(t.shape)} read at {user_frame()} shares memory "
                      "with a parameter written in place (set_value) after the tensor was "
                      "made; read the parameter itself, or pass full_graph=False")

    def traced(self, t: Any) -> bool:
        """Whether t's values depend on the program's inputs (data or a recorded call)."""
        vid = self.lookup(t)
        return vid is not None and vid not in self.record.params and \
            vid not in self.record.consts

    # -- the layer --
    def traced_value(self, v: Any) -> bool:
        from hwport.runtime import Tensor

        return isinstance(v, Tensor) and self.error is None and not self._paused and \
            self.traced(v)

    def on_call(self, call: Any, next: Any) -> Any:
        if self.depth or self.error is not None or self._paused:
            self.depth += 1
            try:
                return next(call)
            finally:
                self.depth -= 1
        op = call.op
        attrs = recorded_kwargs(op, dict(call.attrs))
        draw = (attrs.get("seed"), attrs.get("offset", 0))
        if op in RANDOM_OPS and draw in self.drawn:
            if op == "dropout":
                return next(call)  # recorded as its sub-ops: its uniform draws per run
            if op != "uniform":
                self.fail(f"the random op {op} at {user_frame()} draws from the global "
                          "generator; inside a program only uniform and dropout draw afresh "
                          "each run: call it outside the function, or give it a seed")
        raw = list(call.inputs)
        if self._through_decomposition(op, raw):
            return next(call)  # its sub-ops come back through this layer and are recorded
        inputs = [None if v is None else [self.value_id(t) for t in v]
                  if isinstance(v, list | tuple) else self.value_id(v) for v in raw]
        self.depth += 1
        try:
            out = next(call)
        finally:
            self.depth -= 1
        variadic = isinstance(out, list | tuple)
        outs = list(out) if variadic else [out]
        ids = []
        for t in outs:
            vid = self._new_id()
            self._name(t, vid)
            ids.append(vid)
        self._calls[-1].append(Call(op, inputs, attrs, ids))
        if op == "uniform" and draw in self.drawn:
            self._draw_each_run(draw)
        return out

    def on_collective(self, call: str, comm: Any, attrs: dict[str, int], src: Any,
                      dst: Any, rebind: bool = True) -> None:
        """After hwport.distributed ran `call` on communicator `comm`, reading `src` and writing
        `dst` (either None: a recv reads nothing, a send writes nothing): a dist.<call> op
        (pir/dialects/dist.py) whose result is what `dst` holds from now on (unless not
        `rebind`: a reduce's result on a rank other than the root, which keeps its value)."""
        if self.depth or self.error is not None or self._paused:
            return
        from hwport.pir.dialects.dist import register_comm

        inputs = [] if src is None else [self.value_id(src)]
        outputs = []
        if dst is not None and not rebind:
            vid = self._new_id()
            self.record.metas[vid] = (tuple(dst.shape), str(dst.dtype))
            outputs.append(vid)
        elif dst is not None:
            vid = self._new_id()
            self._name(dst, vid)
            self._layouts[self._layout(dst)] = vid  # the storage holds the new value now
            outputs.append(vid)
        self._calls[-1].append(Call(f"dist.{call}", inputs,
                                    {"comm_id": register_comm(comm), **attrs}, outputs))

    def alias(self, new: Any, old: Any) -> None:
        """`new` holds `old`'s value (a PyLayer's output, which the autograd record rewraps
        with its node): reads of either are the same program value."""
        if self.depth or self.error is not None or self._paused:
            return
        vid = self.value_id(old)
        self._keep.append(new)
        self._ids[id(new)] = vid

    def _through_decomposition(self, op: str, inputs: list[Any]) -> bool:
        """Whether autograd records this call as its decomposition's sub-ops: the backward
        then reads their results, so the record holds the sub-ops, not the op."""
        from hwport import autograd

        if not autograd.is_grad_enabled() or not any(
                not t.stop_gradient for v in inputs if v is not None
                for t in (v if isinstance(v, list | tuple) else [v])):
            return False
        known = self._decomposed.get(op)
        if known is None:
            known = self._decomposed[op] = self._core._grad_through_decomposition(op)
        return known

    def fail(self, reason: str) -> None:
        """Stops recording; raises under full_graph, else the run goes on eagerly (a graph
        break: the caller serves this guard eagerly)."""
        self.error = CaptureBreak(reason)
        if self.full_graph:
            raise self.error

    def _draw_each_run(self, draw: tuple[int, int]) -> None:
        """A uniform whose (seed, offset) the global generator gave: every run draws the same
        stretch of the generator again (as many counters, in capture order, as eager would)
        and patches it into the uniform's kernel; a second call with the same draw (dropout's
        backward regenerates its mask) reads the same run's draw."""
        from hwport.random import default_generator

        slot = self._draw_slots.get(draw)
        if slot is None:
            slot = self._draw_slots[draw] = {"counters": self.drawn[draw], "now": draw}

            def redraw(slot: dict[str, Any] = slot) -> None:
                slot["now"] = default_generator.draw(slot["counters"])
            self.before_run.append(redraw)
        nth = sum(1 for op, match, *_ in self.run_attrs
                  if op == "uniform" and match == {"seed": draw[0], "offset": draw[1]})
        def drawn_attrs(slot: dict[str, Any] = slot) -> dict[str, Any]:
            seed, offset = slot["now"]
            return {"seed": seed, "offset": offset}
        self.run_attrs.append(("uniform", {"seed": draw[0], "offset": draw[1]}, nth,
                               drawn_attrs))

    def attrs_at_each_run(self, fn: Any) -> None:
        """The call just recorded takes fn()'s attributes (over the ones it was built with) at
        every run of the program (its kernel's attributes are patched; the op must lower to
        its kernel)."""
        calls = self.record.calls
        if not calls or self._calls[-1] is not calls:
            raise RuntimeError("attrs_at_each_run: no top-level call was just recorded")
        op = calls[-1].op
        self.run_attrs.append((op, None, sum(c.op == op for c in calls) - 1, fn))

    def tensor_of(self, vid: int) -> Any:
        return self._versions[vid][0]

    # -- control flow (hwport.static.nn) --
    def _alias(self, t: Any) -> Any:
        """A new tensor object over t's memory, to be named apart from t."""
        alias = t._view(list(t.shape), list(t.strides), int(t._offset))
        vid = self._new_id()
        self._keep.append(alias)
        self._ids[id(alias)] = vid
        self._versions[vid] = (alias, self._core._storage_version(alias))
        self.record.metas[vid] = (tuple(t.shape), str(t.dtype))
        return alias

    def _region(self, fn: Any, *args: Any) -> tuple[list[Call], Any]:
        calls: list[Call] = []
        self._calls.append(calls)
        try:
            return calls, fn(*args)
        finally:
            self._calls.pop()

    def _tensor_leaves(self, fn: str, what: str, out: Any) -> tuple[Any, list[Any]]:
        from hwport.runtime import Tensor

        from .pytree import flatten

        leaves: list[Any] = []
        tree = flatten(out, leaves)
        if not all(isinstance(v, Tensor) for v in leaves):
            bad = next(type(v).__name__ for v in leaves if not isinstance(v, Tensor))
            self.fail(f"{fn}: {what} returned a {bad} inside a capture; a program's "
                      f"branches and loop variables are tensors (at {user_frame()})")
        return tree, leaves

    def record_cond(self, pred: Any, true_fn: Any, false_fn: Any) -> Any:
        from hwport.static.nn import _truth

        from .pytree import unflatten

        pred_id = self.value_id(pred)
        regions, outs = [], []
        for what, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
            calls, out = self._region(fn if fn is not None else (lambda: None))
            tree, leaves = self._tensor_leaves("cond", what, out)
            regions.append((calls, [self.value_id(t) for t in leaves]))
            outs.append((tree, leaves))
        (tree_t, then), (tree_f, other) = outs
        metas = [[(tuple(t.shape), str(t.dtype)) for t in ls] for ls in (then, other)]
        if tree_t != tree_f or metas[0] != metas[1]:
            self.fail(f"cond: true_fn and false_fn must return the same structure of tensors "
                      f"with the same shapes and dtypes inside a capture; got {metas[0]} and "
                      f"{metas[1]} (at {user_frame()})")
        tree, taken = outs[0] if _truth(pred, "cond") else outs[1]
        results = [self._alias(t) for t in taken]
        self._calls[-1].append(Call("cf.if", [pred_id], {},
                                    [self._ids[id(r)] for r in results], regions))
        return unflatten(tree, results)

    def record_while(self, cond: Any, body: Any, values: list[Any]) -> list[Any]:
        from hwport.static.nn import _truth

        _, leaves = self._tensor_leaves("while_loop", "loop_vars", values)
        inits = [self.value_id(t) for t in leaves]
        first = cond(*values)
        first_id = self.value_id(first)
        args = [self._alias(t) for t in leaves]

        def iteration(*carried: Any) -> tuple[Any, list[Any]]:
            out = body(*carried)
            out = list(out) if isinstance(out, list | tuple) else [out]
            return cond(*out), out

        calls, (nxt, out) = self._region(iteration, *args)
        _, out_leaves = self._tensor_leaves("while_loop", "body", out)
        before = [(tuple(t.shape), str(t.dtype)) for t in leaves]
        after = [(tuple(t.shape), str(t.dtype)) for t in out_leaves]
        if before != after:
            self.fail(f"while_loop: body must keep each loop variable's shape and dtype "
                      f"inside a capture; {before} became {after} (at {user_frame()})")
        yields = [self.value_id(nxt), *(self.value_id(t) for t in out_leaves)]
        final = list(values)
        if _truth(first, "while_loop"):  # the recorded iteration was the first one
            final, c = out, nxt
            self._paused += 1
            try:
                while _truth(c, "while_loop"):
                    c, final = iteration(*final)
            finally:
                self._paused -= 1
        results = [self._alias(t) for t in final]
        self._calls[-1].append(Call("cf.while", [first_id, *inits], {},
                                    [self._ids[id(r)] for r in results], [(calls, yields)],
                                    [self._ids[id(a)] for a in args]))
        return results

    def on_read(self, t: Any, what: str) -> None:
        # reads inside an op call, or by hwport's own functions (an index or label check
        # before the call) are the op's checks of this data, not control flow: the program
        # does not repeat them, as kernel lowering does not
        if self.error is None and not self.depth and not self._paused and self.traced(t) \
                and not _read_by_hwport():
            self.fail(f"{what} of a tensor computed from the inputs at {user_frame()}: its "
                      "value depends on the data, which the program does not see when it is "
                      "captured. Use hwport.static.nn.cond / while_loop for control flow on "
                      "tensors, move the read out of the function, or pass full_graph=False "
                      "to run such calls eagerly")

    def check_writes(self) -> None:
        """An in-place write (set_value) into a tensor the record holds: the record no longer
        says what the function computed."""
        for vid, (t, version) in self._versions.items():
            if self._core._storage_version(t) != version and \
                    self._core._storage_id(t) not in self._written_storages:
                kind = ("parameter " + self.record.params[vid] if vid in self.record.params
                        else "input" if any(vid == d for d, _ in self.record.data)
                        else "traced tensor")
                self.fail(f"an in-place write (Tensor.set_value) into a {kind} of shape "
                          f"{list(t.shape)} during the capture: a program holds no in-place "
                          "writes; write a new tensor instead, or pass full_graph=False to "
                          "run such calls eagerly")


@contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Puts `recorder` in the pipeline's trace slot and on the tensors' value reads."""
    from hwport import py_layer
    from hwport import tensor as tensor_mod
    from hwport.random import default_generator
    from hwport.runtime import _core

    if _core.registered_layer("trace") is not None:
        raise RuntimeError("to_static: the pipeline's trace layer is in use (a capture or a "
                           "kernel lowering is running on this thread)")
    _core.register_layer("trace", recorder)
    _core.layer_enter("trace")
    tensor_mod.value_read_hooks.append(recorder.on_read)
    tensor_mod.value_write_hooks.append(recorder.on_write)
    py_layer.output_hooks.append(recorder.alias)
    gen = default_generator
    draw, draw_for = gen.draw, gen.draw_for

    def noted_draw(counters: int) -> tuple[int, int]:
        seed, offset = draw(counters)
        recorder.drawn[(seed, offset)] = counters
        return seed, offset

    def noted_draw_for(counters: int, fn: Any) -> Any:
        def noted(seed: int, offset: int) -> Any:
            recorder.drawn[(seed, offset)] = counters
            return fn(seed, offset)
        return draw_for(counters, noted)

    gen.draw, gen.draw_for = noted_draw, noted_draw_for  # this generator's, while recording
    try:
        yield recorder
    finally:
        del gen.draw, gen.draw_for
        py_layer.output_hooks.remove(recorder.alias)
        tensor_mod.value_write_hooks.remove(recorder.on_write)
        tensor_mod.value_read_hooks.remove(recorder.on_read)
        _core.layer_leave("trace")
        _core.register_layer("trace", None)


def capturing() -> bool:
    """Whether a capture is recording on this thread."""
    return active_recorder() is not None


# ---- the program --------------------------------------------------------------------------

def build(record: Record, outputs: list[int],
          dims: dict[int, list[Any]] | None = None) -> Program:
    """The record as a PIR program: outputs named output_0.. in order; `dims` gives a data
    value's dims (symbol names for the symbolic ones) where they are not its traced shape."""
    program = Program()
    env: dict[int, Any] = {}
    with Builder(program) as b:
        for vid, name in record.data:
            shape, dtype = record.metas[vid]
            env[vid] = b.data(name, (dims or {}).get(vid, list(shape)), dtype)
        # parameters and constants first: a region may be the first to use one
        for vid in sorted(record.params):
            shape, dtype = record.metas[vid]
            env[vid] = b.parameter(record.params[vid], list(shape), dtype)
        for vid in sorted(record.consts):
            scalar, cshape, cdtype = record.consts[vid]
            env[vid] = b.constant(scalar, list(cshape), cdtype)

        def value(i: Any) -> Any:
            if i is None:
                return None
            return [env[j] for j in i] if isinstance(i, list) else env[i]

        def emit(calls: list[Call]) -> None:
            for c in calls:
                if c.op == "cf.if":
                    (then, y_then), (other, y_other) = c.regions
                    res = b.cf.if_(value(c.inputs[0]),
                                   lambda then=then, ys=y_then: (emit(then), value(ys))[1],
                                   lambda other=other, ys=y_other: (emit(other), value(ys))[1])
                elif c.op == "cf.while":
                    body, ys = c.regions[0]

                    def body_fn(*block_args: Any, c: Call = c, body: list[Call] = body,
                                ys: list[int] = ys) -> tuple[Any, list[Any]]:
                        env.update(zip(c.args, block_args, strict=True))
                        emit(body)
                        return env[ys[0]], value(ys[1:])

                    res = b.cf.while_(value(c.inputs[0]), value(c.inputs[1:]), body_fn)
                elif c.op.startswith("dist."):  # a collective (pir/dialects/dist.py)
                    types = [TensorType(*record.metas[o]) for o in c.outputs]
                    res = b.create(c.op, [value(i) for i in c.inputs], types, c.attrs).results
                else:
                    res = getattr(b.pd_op, c.op)(*(value(i) for i in c.inputs), **c.attrs)
                res = list(res) if isinstance(res, list | tuple) else [res]
                env.update(zip(c.outputs, res, strict=True))

        emit(record.calls)
        for k, vid in enumerate(outputs):
            b.output(env[vid], f"output_{k}")
    return program


def active_recorder() -> Recorder | None:
    """The capture recording on this thread, if any."""
    from hwport.runtime import _core

    layer = _core.registered_layer("trace")
    return layer if isinstance(layer, Recorder) else None
