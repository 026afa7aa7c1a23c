"""hwport.pir.Executor: runs a program on a place through the C++ program executor
(runtime/src/executor.h). A program with pd_op ops is lowered first (a copy:
lower_to_kernel{place=...}); the kernel-dialect program is then flattened once into value
slots and an instruction list (kernels, views), and the C++ side plans the memory.

    exe = pir.Executor(program, "custom:cpu", parameters={"w": w})
    (y,) = exe.run({"x": x})            # the outputs in builtin.shadow_output order

Parameters are bound by name (`parameters=`, or set later with `bind`, before the first run);
constants are materialized once on the place."""

from __future__ import annotations

from typing import Any

import numpy as np

from .attributes import ArrayAttr
from .core import Value
from .dialect import ELEMENTWISE, lookup_op
from .program import Program
from .types import TensorType


class Executor:
    def __init__(self, program: Program, place: Any = None,
                 parameters: dict[str, Any] | None = None) -> None:
        from hwport.runtime import _core

        self._core = _core
        self.place = _core.resolve_place(place)
        if any(op.name.startswith("pd_op.") for op in program.walk()):
            from .passes.lower_to_kernel import lower_program_block

            program = program.clone()
            lower_program_block(program.block, self.place)
        self.program = program
        self._parameters = dict(parameters or {})
        self._impl: Any = None
        self.output_names: list[str] = []

    def bind(self, name: str, tensor: Any) -> None:
        """Binds parameter `name` (before the first run)."""
        if self._impl is not None:
            raise RuntimeError(f"Executor.bind({name!r}): the program is already built")
        self._parameters[name] = tensor

    def _build(self) -> None:
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
        outputs: list[int] = []
        for op in self.program.block.ops:
            name = op.name
            if name == "builtin.data":
                feeds.append((op.attr("name"), slot(op.result())))
            elif name == "builtin.parameter":
                pname = op.attr("parameter_name")
                if pname not in self._parameters:
                    raise KeyError(f"Executor: parameter {pname!r} is not bound (pass "
                                   f"parameters={{{pname!r}: tensor}})")
                bound.append((slot(op.result()), self._parameters[pname]))
            elif name == "builtin.constant":
                bound.append((slot(op.result()), self._constant(op)))
            elif name == "builtin.shadow_output":
                outputs.append(slot(op.operand(0)))
                self.output_names.append(op.attr("output_name"))
            elif name == "kernel.phi_kernel":
                if op.attr("device_type") != self.place.device_type:
                    raise ValueError(f"Executor: the program was lowered for "
                                     f"{op.attr('device_type')!r} ({op.attr('op_name')}), it "
                                     f"cannot run on {self.place}")
                instrs.append(("kernel", op.attr("kernel_name"), op.attr("dtype"),
                               [slot(v) for v in op.operands], [slot(r) for r in op.results],
                               kernel_attrs(op), _elementwise(op.attr("kernel_name"))))
            elif name == "kernel.view":
                instrs.append(("view", slot(op.operand(0)), slot(op.result()),
                               op.attr("shape"), op.attr("strides"), op.attr("offset")))
            else:
                raise ValueError(f"Executor: {name} is not an op of a lowered program")
        self._feed_names = [n for n, _ in feeds]
        self._impl = self._core.Executor(self.place, metas, feeds, bound, instrs, outputs)

    def _constant(self, op: Any) -> Any:
        t = op.result().type
        value = op.attributes["value"]
        if isinstance(value, ArrayAttr):
            from hwport.phi_ops.promotion import np_dtype

            return self._core.from_numpy(np.asarray(value.value, dtype=np_dtype(t.dtype)),
                                         self.place)
        return self._core.full(list(t.shape), value.value, t.dtype, self.place)

    def run(self, feeds: dict[str, Any] | None = None) -> list[Any]:
        """The program's outputs for `feeds` (name -> Tensor of the data's shape and dtype)."""
        if self._impl is None:
            self._build()
        feeds = feeds or {}
        unknown = set(feeds) - set(self._feed_names)
        if unknown:
            raise KeyError(f"Executor.run: unknown feed(s) {sorted(unknown)}; the program "
                           f"takes {self._feed_names}")
        missing = [n for n in self._feed_names if n not in feeds]
        if missing:
            raise KeyError(f"Executor.run: missing feed(s) {missing}")
        return self._impl.run([feeds[n] for n in self._feed_names])

    @property
    def num_in_place(self) -> int:
        """How many kernel results the memory plan writes over a dying input."""
        if self._impl is None:
            self._build()
        return self._impl.num_in_place

    @property
    def arena_bytes(self) -> int:
        if self._impl is None:
            self._build()
        return self._impl.arena_bytes

    def describe(self) -> str:
        """The flattened instruction list, one per line."""
        if self._impl is None:
            self._build()
        return self._impl.describe()


def _elementwise(kernel_name: str) -> bool:
    """Whether the kernel's result element i depends on its inputs' element i only (the
    Elementwise trait pd_op takes from ops.yaml's category): its result may be written over an
    input of its shape and dtype (the executor's in-place plan)."""
    info = lookup_op(f"pd_op.{kernel_name}")
    return info is not None and ELEMENTWISE in info.traits
