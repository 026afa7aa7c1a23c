"""Building programs by hand:

    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", ["s0", 4], "float32")
        w = b.parameter("w", [4, 8], "float32")
        y = b.pd_op.matmul(x, w, transpose_y=False)   # any op of ops.yaml, typed by InferMeta
        parts = b.pd_op.split(y, sections=2, axis=1)  # a variadic result: a list of values
        z = b.pd_op.concat(parts, axis=0)              # a list operand: builtin.combine
        r = b.cf.if_(c, lambda: [b.pd_op.exp(z)], lambda: [b.pd_op.neg(z)])

Ops go at the builder's insertion point (the end of the program's block, or what
`b.at(block, before=op)` sets); `locations=True` records the caller's file:line in each op."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .attributes import Attribute, attr
from .core import Block, Location, Operation, OpResult, Value
from .dialect import OpInfo, default_attr, lookup_op, to_attr
from .eager_attrs import builder_kwargs
from .infer import infer_result_types
from .program import Program
from .symbolic import Dim
from .types import TensorType, Type, VectorType, tensor

_PIR_DIR = os.path.dirname(os.path.abspath(__file__))
_CURRENT: list[Builder] = []


class Builder:
    def __init__(self, target: Program | Block, locations: bool = False) -> None:
        self.program = target if isinstance(target, Program) else None
        self.block = target.block if isinstance(target, Program) else target
        self.before: Operation | None = None  # insert before this op (None: at the end)
        self.locations = locations
        self.pd_op = _PdOpNamespace(self)
        self.cf = _CfNamespace(self)

    def __enter__(self) -> Builder:
        _CURRENT.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.pop()

    @staticmethod
    def current() -> Builder:
        if not _CURRENT:
            raise RuntimeError("no pir.Builder is active (use `with pir.Builder(program)`)")
        return _CURRENT[-1]

    @contextmanager
    def at(self, block: Block, before: Operation | None = None) -> Iterator[Builder]:
        """Insert into `block` (before `before`, or at its end) inside the with-block."""
        saved = self.block, self.before
        self.block, self.before = block, before
        try:
            yield self
        finally:
            self.block, self.before = saved

    # ---- generic creation ---------------------------------------------------------------
    def _loc(self) -> Location | None:
        if not self.locations:
            return None
        frame = sys._getframe(1)
        while frame is not None and os.path.dirname(
                os.path.abspath(frame.f_code.co_filename)).startswith(_PIR_DIR):
            frame = frame.f_back
        if frame is None:
            return None
        return Location(os.path.basename(frame.f_code.co_filename), frame.f_lineno)

    def insert(self, op: Operation) -> Operation:
        if self.before is None:
            self.block.append(op)
        else:
            self.block.insert(self.block.index(self.before), op)
        return op

    def create(self, name: str, operands: Sequence[Value | None] = (),
               result_types: Sequence[Type] = (), attributes: dict[str, Any] | None = None,
               num_regions: int = 0) -> Operation:
        return self.insert(Operation.create(name, operands, result_types, attributes,
                                            num_regions, self._loc()))

    # ---- builtin ----------------------------------------------------------------------------
    def data(self, name: str, shape: Sequence[Dim | str | None], dtype: str) -> Value:
        """A program input (symbolic dims as "s0"; None: unknown)."""
        return self.create("builtin.data", (), [tensor(shape, dtype)], {"name": name}).result()

    def output(self, value: Value, name: str) -> Operation:
        """Mark `value` as the program output `name` (builtin.shadow_output)."""
        return self.create("builtin.shadow_output", [value], [], {"output_name": name})

    def parameter(self, name: str, shape: Sequence[Dim | str], dtype: str) -> Value:
        return self.create("builtin.parameter", (), [tensor(shape, dtype)],
                           {"parameter_name": name}).result()

    def constant(self, value: Any, shape: Sequence[int] = (), dtype: str = "float32") -> Value:
        """A constant: a scalar fills `shape`; a nested list has it."""
        return self.create("builtin.constant", (), [TensorType(tuple(shape), dtype)],
                           {"value": attr(value)}).result()

    def combine(self, values: Sequence[Value]) -> Value:
        return self.create("builtin.combine", list(values),
                           [VectorType(tuple(v.type for v in values))]).result()

    def split(self, vec: Value) -> list[Value]:
        if not isinstance(vec.type, VectorType):
            raise TypeError(f"builtin.split: expected a vec[...] value, got {vec.type}")
        return list(self.create("builtin.split", [vec], list(vec.type.types)).results)


class _PdOp:
    def __init__(self, b: Builder, info: OpInfo) -> None:
        self.b = b
        self.info = info

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        info, b = self.info, self.b
        specs = info.operands
        if len(args) > len(specs):
            raise TypeError(f"{info.name}: takes {len(specs)} operand(s) "
                            f"({', '.join(s.name for s in specs)}), got {len(args)}")
        given = list(args) + [_MISSING] * (len(specs) - len(args))
        for i, s in enumerate(specs):
            if s.name in kwargs and s.name not in info.attr_map:
                if given[i] is not _MISSING:
                    raise TypeError(f"{info.name}: operand {s.name} given twice")
                given[i] = kwargs.pop(s.name)
        operands: list[Value | None] = []
        for s, v in zip(specs, given, strict=True):
            if v is _MISSING or v is None:
                if not s.optional:
                    raise TypeError(f"{info.name}: missing required operand {s.name!r}")
                operands.append(None)
            elif s.variadic and isinstance(v, (list, tuple)):
                operands.append(b.combine(v))
            elif isinstance(v, Value):
                operands.append(v)
            else:
                raise TypeError(f"{info.name}: operand {s.name} expected a pir Value"
                                f"{' or a list of them' if s.variadic else ''}, got "
                                f"{type(v).__name__}")
        kwargs = builder_kwargs(info.op_def.name, kwargs)  # split(x, sections=3): 3 parts
        unknown = set(kwargs) - set(info.attr_map)
        if unknown:
            raise TypeError(f"{info.name}: unexpected argument(s) {sorted(unknown)}; it takes "
                            f"{[a.name for a in info.attrs]}")
        attrs: dict[str, Attribute] = {}
        for spec in info.attrs:
            if spec.name in kwargs:
                attrs[spec.name] = to_attr(info.name, spec, kwargs[spec.name])
            elif spec.required:
                raise TypeError(f"{info.name}: missing required attribute {spec.name!r}")
            else:
                attrs[spec.name] = default_attr(spec)
        constraints = b.program.constraints if b.program is not None else None
        types = infer_result_types(info, [None if v is None else v.type for v in operands],
                                   attrs, constraints)
        op = b.create(info.name, operands, types, attrs)
        if info.op_def.outputs[0].variadic:
            return b.split(op.result())
        return op.result() if op.num_results == 1 else tuple(op.results)


_MISSING = object()


class _PdOpNamespace:
    def __init__(self, b: Builder) -> None:
        self._b = b

    def __getattr__(self, name: str) -> _PdOp:
        info = lookup_op(f"pd_op.{name}")
        if info is None:
            raise AttributeError(f"pd_op has no op {name!r} (ops come from phi_ops/ops.yaml)")
        return _PdOp(self._b, info)

    def __dir__(self) -> list[str]:
        from .dialect import all_dialects

        return [n.split(".", 1)[1] for n in all_dialects()["pd_op"].ops]


class _CfNamespace:
    def __init__(self, b: Builder) -> None:
        self._b = b

    def yield_(self, *values: Value) -> Operation:
        return self._b.create("cf.yield", list(values))

    def if_(self, cond: Value, then_fn: Callable[[], Sequence[Value]],
            else_fn: Callable[[], Sequence[Value]]) -> list[Value]:
        """cf.if: each function builds its region and returns the values it yields; the
        results take the then-region's types."""
        b = self._b
        op = Operation.create("cf.if", [cond], [], None, 2, b._loc())
        yielded = []
        for region, fn in zip(op.regions, (then_fn, else_fn), strict=True):
            with b.at(region.add_block()):
                values = list(fn())
                self.yield_(*values)
            yielded.append(values)
        op.results = [OpResult(v.type, op, i) for i, v in enumerate(yielded[0])]
        b.insert(op)
        return list(op.results)

    def while_(self, cond: Value, inits: Sequence[Value],
               body_fn: Callable[..., tuple[Value, Sequence[Value]]]) -> list[Value]:
        """cf.while: body_fn(*carried) builds the body and returns (next condition, next
        carried values); the results are the carried values after the last iteration."""
        b = self._b
        op = Operation.create("cf.while", [cond, *inits], [v.type for v in inits], None, 1,
                              b._loc())
        block = op.regions[0].add_block([v.type for v in inits])
        with b.at(block):
            nxt, values = body_fn(*block.args)
            self.yield_(nxt, *values)
        b.insert(op)
        return list(op.results)
