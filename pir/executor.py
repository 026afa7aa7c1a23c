"""hwport.pir.Executor: runs a program on a place through the C++ program executor
(runtime/src/executor.h). A program with pd_op ops is lowered first (a copy:
lower_to_kernel{place=...}); the kernel-dialect program is then flattened once into value
slots and an instruction list (kernels, views, launches of compiled kernels:
kernel.codegen_launch), and the C++ side plans the memory.

    exe = pir.Executor(program, "custom:cpu", parameters={"w": w})
    (y,) = exe.run({"x": x})            # the outputs in builtin.shadow_output order

Parameters are bound by name (`parameters=`, or set later with `bind`, before the first run);
constants are materialized once on the place. A program with symbolic dims is lowered and
planned once per feed-shape signature; the plans are kept in an LRU cache of `max_plans`
entries (default MAX_PLANS = 8: each plan holds its arena, so the bound caps the memory a
stream of distinct shapes can pin)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from . import codegen_functions
from .attributes import ArrayAttr
from .core import Value
from .dialect import ELEMENTWISE, lookup_op
from .program import Program
from .symbolic import UNKNOWN, SymExpr
from .types import TensorType, VectorType

MAX_PLANS = 8  # plans kept per Executor (feed-shape signatures), least recently used out


class Executor:
    def __init__(self, program: Program, place: Any = None,
                 parameters: dict[str, Any] | None = None, *,
                 max_plans: int = MAX_PLANS, writes: dict[str, str] | None = None,
                 passes: str = "") -> None:
        from hwport.runtime import _core

        if not isinstance(max_plans, int) or isinstance(max_plans, bool) or max_plans < 1:
            raise ValueError(f"Executor: max_plans must be an int >= 1, got {max_plans!r}")
        self.max_plans = max_plans
        self.num_plans_built = 0  # plans lowered and planned so far (evicted ones included)

        self._core = _core
        self.place = _core.resolve_place(place)
        self._data = [(op.attr("name"), op.result().type) for op in program.block.ops
                      if op.name == "builtin.data"]
        # symbolic dims in the data: lowered and planned per distinct feed-shape signature
        self._symbolic = any(not t.is_static for _, t in self._data)
        # a pass pipeline run on each plan's program once its shapes are static, before the
        # lowering (to_static's compiler: decomposition and fusion need static shapes)
        self._passes = passes
        if not self._symbolic and any(op.name.startswith("pd_op.") for op in program.walk()):
            program = _lowered(program, self.place, {}, passes)
        self.program = program
        self._parameters = dict(parameters or {})
        # output name -> parameter name: after a run the parameter holds that output (not
        # returned by run(); computed in the parameter's memory where the plan allows)
        self._writes = dict(writes or {})
        self._impl: Any = None
        self._static: _Plan | None = None
        self._plans: OrderedDict[tuple[tuple[int, ...], ...], _Plan] = OrderedDict()
        self._feed_names = [n for n, _ in self._data]
        self.output_names: list[str] = []

    def bind(self, name: str, tensor: Any) -> None:
        """Binds parameter `name` (before the first run)."""
        if self._impl is not None:
            raise RuntimeError(f"Executor.bind({name!r}): the program is already built")
        self._parameters[name] = tensor

    def _build(self, program: Program) -> _Plan:
        from .passes.lower_to_kernel import kernel_attrs

        slots: dict[Value, int] = {}
        metas: list[tuple[list[int], str]] = []

        def slot(v: Value) -> int:
            if v not in slots:
                t = v.type
                if not isinstance(t, TensorType) or not t.is_static:
                    raise ValueError(f"Executor: value of type {t} is not a static tensor")
                slots[v] = len(metas)
                metas.append((list(t.shape), t.dtype))
            return slots[v]

        feeds: list[tuple[str, int]] = []
        bound: list[tuple[int, Any]] = []
        instrs: list[tuple[Any, ...]] = []
        served: dict[int, str] = {}  # kernel instruction -> the pd_op it serves
        param_slots: dict[str, int] = {}
        writes: list[tuple[int, int]] = []
        outputs: list[int] = []
        output_names: list[str] = []
        def emit(ops: list[Any]) -> None:
            for op in ops:
                emit_op(op)

        def region(op: Any, k: int) -> tuple[int, list[int]]:
            """Emits region k's ops (its cf.yield apart): (how many instructions, the slots
            it yields)."""
            block = op.regions[k].blocks[0]
            start = len(instrs)
            body = list(block.ops)
            yielded = body.pop() if body and body[-1].name == "cf.yield" else None
            emit(body)
            return len(instrs) - start, [] if yielded is None else [
                slot(v) for v in yielded.operands]

        def emit_op(op: Any) -> None:
            name = op.name
            if name == "builtin.data":
                feeds.append((op.attr("name"), slot(op.result())))
            elif name == "builtin.parameter":
                pname = op.attr("parameter_name")
                if pname not in self._parameters:
                    raise KeyError(f"Executor: parameter {pname!r} is not bound (pass "
                                   f"parameters={{{pname!r}: tensor}})")
                bound.append((slot(op.result()), self._parameters[pname]))
                param_slots[pname] = slot(op.result())
            elif name == "builtin.constant":
                bound.append((slot(op.result()), self._constant(op)))
            elif name == "builtin.shadow_output" and op.attr("output_name") in self._writes:
                target = self._writes[op.attr("output_name")]
                if target not in param_slots:  # written, never read: bound here
                    if target not in self._parameters:
                        raise KeyError(f"Executor: written parameter {target!r} is not bound")
                    t = self._parameters[target]
                    param_slots[target] = len(metas)
                    metas.append((list(t.shape), str(t.dtype)))
                    bound.append((param_slots[target], t))
                writes.append((slot(op.operand(0)), param_slots[target]))
            elif name == "builtin.shadow_output":
                outputs.append(slot(op.operand(0)))
                output_names.append(op.attr("output_name"))
            elif name == "kernel.phi_kernel":
                if op.attr("device_type") != self.place.device_type:
                    raise ValueError(f"Executor: the program was lowered for "
                                     f"{op.attr('device_type')!r} ({op.attr('op_name')}), it "
                                     f"cannot run on {self.place}")
                served[len(instrs)] = op.attr("op_name")
                instrs.append(("kernel", op.attr("kernel_name"), op.attr("dtype"),
                               [slot(v) for v in op.operands], [slot(r) for r in op.results],
                               kernel_attrs(op), _elementwise(op.attr("kernel_name")),
                               _own_inputs(op.attr("kernel_name"))))
            elif name == "kernel.codegen_launch":
                launch = codegen_functions.lookup(op.attr("function_id"))
                instrs.append(("launch", launch.function, list(launch.grid), list(launch.group),
                               [slot(v) for v in op.operands], [slot(r) for r in op.results],
                               [list(a) for a in launch.args]))
            elif name.startswith("dist."):
                from .dialects import dist

                instrs.append(dist.instruction(op, slot))
            elif name == "kernel.view":
                instrs.append(("view", slot(op.operand(0)), slot(op.result()),
                               op.attr("shape"), op.attr("strides"), op.attr("offset")))
            elif name == "cf.if":
                at = len(instrs)
                instrs.append(())
                results = [slot(r) for r in op.results]
                n_then, y_then = region(op, 0)
                n_else, y_else = region(op, 1)
                instrs[at] = ("if", slot(op.operand(0)), results, n_then, n_else, y_then,
                              y_else)
            elif name == "cf.while":
                at = len(instrs)
                instrs.append(())
                results = [slot(r) for r in op.results]
                args = [slot(a) for a in op.regions[0].blocks[0].args]
                n_body, yielded = region(op, 0)
                instrs[at] = ("while", slot(op.operand(0)), [slot(v) for v in op.operands[1:]],
                              results, args, n_body, yielded)
            else:
                raise ValueError(f"Executor: {name} is not an op of a lowered program")

        emit(list(program.block.ops))
        self.output_names = output_names
        impl = self._core.Executor(self.place, metas, feeds, bound, instrs, outputs, writes)
        self.num_plans_built += 1
        kernels: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
        for i, ins in enumerate(instrs):
            if ins and ins[0] == "kernel":
                kernels.setdefault(served[i], []).append((i, ins[1], ins[5]))
        return _Plan(program, impl, [n for n, _ in feeds], kernels)

    def _constant(self, op: Any) -> Any:
        t = op.result().type
        value = op.attributes["value"]
        if isinstance(value, ArrayAttr):
            from hwport.phi_ops.promotion import np_dtype

            return self._core.from_numpy(np.asarray(value.value, dtype=np_dtype(t.dtype)),
                                         self.place)
        return self._core.full(list(t.shape), value.value, t.dtype, self.place)

    def _plan_for(self, given: list[Any]) -> _Plan:
        """The plan of this feed-shape signature: the program with its symbols bound from the
        feeds' shapes, lowered and planned once (slots, arena), then cached (LRU: at most
        `max_plans`, the least recently run dropped first)."""
        key = tuple(tuple(t.shape) for t in given)
        plan = self._plans.get(key)
        if plan is None:
            shapes = bind_shapes(self._data, key)
            plan = self._build(_lowered(self.program, self.place, shapes, self._passes))
            self._plans[key] = plan
            while len(self._plans) > self.max_plans:
                self._plans.popitem(last=False)
        else:
            self._plans.move_to_end(key)
        self._impl = plan.impl
        return plan

    def kernel_ordinal(self, op_name: str, match: dict[str, Any], nth: int = 0) -> int:
        """The ordinal, among the kernels serving pd_op `op_name`, of the nth whose
        attributes include `match` (a static-shaped program's only plan)."""
        found = [k for k, (_, _, attrs) in enumerate(self._static_plan().kernels.get(op_name, []))
                 if all(attrs.get(a) == v for a, v in match.items())]
        if nth >= len(found):
            raise ValueError(f"Executor: the lowered program has {len(found)} kernel(s) "
                             f"serving {op_name} with {match}, not {nth + 1}")
        return found[nth]

    def kernel_attrs(self, op_name: str, ordinal: int) -> dict[str, Any]:
        """The attributes the kernel serving the `ordinal`-th pd_op `op_name` was built with."""
        at = self._static_plan().kernels.get(op_name, [])
        if ordinal >= len(at):
            raise ValueError(f"Executor: the lowered program has {len(at)} kernel(s) serving "
                             f"{op_name}, not {ordinal + 1}")
        return dict(at[ordinal][2])

    def set_kernel_attrs(self, op_name: str, ordinal: int, attrs: dict[str, Any]) -> None:
        """Replaces the attributes of the kernel that serves the `ordinal`-th pd_op `op_name`
        (in program order) before the next run: a static-shaped program's only plan."""
        plan = self._static_plan()
        at = plan.kernels.get(op_name, [])
        if ordinal >= len(at):
            raise ValueError(f"Executor.set_kernel_attrs: the lowered program has "
                             f"{len(at)} kernel(s) serving {op_name}, not {ordinal + 1}")
        index, kernel, _ = at[ordinal]
        plan.impl.set_kernel_attrs(index, kernel, attrs)

    def _static_plan(self) -> _Plan:
        if self._symbolic:
            raise RuntimeError("Executor: a program with symbolic shapes has a plan per "
                               "feed-shape signature")
        if self._static is None:
            self._static = self._build(self.program)
            self._impl = self._static.impl
        return self._static

    def run(self, feeds: dict[str, Any] | None = None) -> list[Any]:
        """The program's outputs for `feeds` (name -> Tensor of the data's shape and dtype;
        a symbolic dim takes the feed's size, the same symbol the same size everywhere)."""
        if not self._symbolic and self._impl is None:
            self._static_plan()
        feeds = feeds or {}
        unknown = set(feeds) - set(self._feed_names)
        if unknown:
            raise KeyError(f"Executor.run: unknown feed(s) {sorted(unknown)}; the program "
                           f"takes {self._feed_names}")
        missing = [n for n in self._feed_names if n not in feeds]
        if missing:
            raise KeyError(f"Executor.run: missing feed(s) {missing}")
        given = [feeds[n] for n in self._feed_names]
        if self._symbolic:
            return self._plan_for(given).impl.run(given)
        return self._impl.run(given)

    def _built(self) -> Any:
        if self._impl is None:
            if self._symbolic:
                raise RuntimeError("Executor: a program with symbolic shapes is planned per "
                                   "feed-shape signature; run it first")
            self._static_plan()
        return self._impl

    @property
    def num_plans(self) -> int:
        """How many feed-shape signatures have a plan now (1 for a static program once run;
        at most `max_plans`)."""
        return len(self._plans) if self._symbolic else int(self._impl is not None)

    @property
    def num_in_place(self) -> int:
        """How many kernel results the memory plan writes over a dying input (of the plan
        run last, for symbolic shapes)."""
        return self._built().num_in_place

    @property
    def arena_bytes(self) -> int:
        return self._built().arena_bytes

    def describe(self) -> str:
        """The flattened instruction list, one per line."""
        return self._built().describe()


class _Plan:
    def __init__(self, program: Program, impl: Any, feed_names: list[str],
                 kernels: dict[str, list[tuple[int, str, dict[str, Any]]]]) -> None:
        self.program, self.impl, self.feed_names = program, impl, feed_names
        # the pd_op a kernel serves -> (instruction index, kernel name, attributes) in
        # program order
        self.kernels = kernels


def bind_shapes(data: list[tuple[str, TensorType]],
                shapes: tuple[tuple[int, ...], ...]) -> dict[str, tuple[int, ...]]:
    """Each data's static shape from its feed's: symbols bound (the same symbol the same size
    in every feed), static dims checked, -1 taking any size, a dim expression (s0+1)
    evaluated once its symbols are bound."""
    values: dict[str, int] = {}
    where: dict[str, str] = {}
    later: list[tuple[str, int, SymExpr, int]] = []
    for (name, t), shape in zip(data, shapes, strict=True):
        if len(shape) != len(t.shape):
            raise ValueError(f"Executor.run: feed {name!r} expected {len(t.shape)} dim(s) "
                             f"({t}), got shape {list(shape)}")
        for k, (d, n) in enumerate(zip(t.shape, shape, strict=True)):
            if isinstance(d, SymExpr) and d.is_symbol():
                s = next(iter(d.symbols))
                if s not in values:
                    values[s], where[s] = n, f"feed {name!r} dim {k}"
                elif values[s] != n:
                    raise ValueError(f"Executor.run: feed {name!r} dim {k} is {s}, which is "
                                     f"{values[s]} ({where[s]}), got {n}")
            elif isinstance(d, SymExpr):
                later.append((name, k, d, n))
            elif d != UNKNOWN and d != n:
                raise ValueError(f"Executor.run: feed {name!r} expected shape {t}, got "
                                 f"{list(shape)}")
    for name, k, d, n in later:
        v = d.substitute(values)
        if v != n:
            raise ValueError(f"Executor.run: feed {name!r} dim {k} is {d} = {v} with "
                             f"{values}, got {n}")
    return {name: shape for (name, _), shape in zip(data, shapes, strict=True)}


def _lowered(program: Program, place: Any, shapes: dict[str, tuple[int, ...]],
             passes: str = "") -> Program:
    """A lowered copy of `program` for `place`, its data typed with `shapes` (name -> static
    shape; the lowering infers every other shape from them). With `passes`, every value is
    typed statically first and the pipeline runs before the lowering."""
    from .passes.lower_to_kernel import lower_program_block

    program = program.clone()
    for op in program.block.ops:
        if op.name == "builtin.data" and op.attr("name") in shapes:
            t = op.result().type
            op.result().type = TensorType(tuple(shapes[op.attr("name")]), t.dtype)
    if passes and _static_types(program):
        from .passes import PassManager

        PassManager(passes).run(program)
    lower_program_block(program.block, place)
    return program


def _static_types(program: Program) -> bool:
    """Types every result of the top-level block from its operands' (InferMeta), now that the
    data are static; False (nothing changed that matters) when an op cannot be retyped so:
    regions (control flow), an op without InferMeta, a shape that stays symbolic."""
    ops = list(program.block.ops)
    if any(op.regions for op in ops):
        return False
    new: list[tuple[Value, Any]] = []
    typed: dict[Value, Any] = {}
    for op in ops:
        if op.name.startswith("pd_op."):
            infer = op.info.interfaces.get("InferMeta") if op.info is not None else None
            if infer is None:
                return False
            types = infer(op.info, [None if v is None else typed.get(v, v.type)
                                    for v in op.operands], op.attributes)
        elif op.name == "builtin.combine":
            types = [VectorType(tuple(typed.get(v, v.type) for v in op.operands))]
        elif op.name == "builtin.split":
            types = list(typed.get(op.operand(0), op.operand(0).type).types)
        else:
            continue
        for r, t in zip(op.results, types, strict=True):
            if isinstance(t, TensorType) and not t.is_static:
                return False
            typed[r] = t
            new.append((r, t))
    for r, t in new:
        r.type = t
    return True


def _elementwise(kernel_name: str) -> bool:
    """Whether the kernel's result element i depends on its inputs' element i only (the
    Elementwise trait pd_op takes from ops.yaml's category): its result may be written over an
    input of its shape and dtype (the executor's in-place plan)."""
    info = lookup_op(f"pd_op.{kernel_name}")
    return info is not None and ELEMENTWISE in info.traits


def _own_inputs(kernel_name: str) -> list[int]:
    """An optimizer update's outputs `X_out` as the positions of their inputs `X`: its kernel
    writes them over those inputs, all of them at once or none (ops.yaml's kernel contract),
    which the executor may plan (empty: no such op)."""
    info = lookup_op(f"pd_op.{kernel_name}")
    if info is None or info.op_def.category != "optimizer":
        return []
    names = [i.name for i in info.op_def.inputs]
    outs = [o.name for o in info.op_def.outputs]
    if not all(o.endswith("_out") and o[:-4] in names for o in outs):
        return []
    return [names.index(o[:-4]) for o in outs]
