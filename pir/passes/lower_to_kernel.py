"""lower_to_kernel{place=custom:cpu}: every pd_op op becomes the kernel-dialect ops eager
dispatch (phi_ops/dispatch.py `call`) runs for it on that place: the same argument
normalization, infer-meta plan, promotion casts, kernel key and kernel selection (the native
kernel, the op's decomposition for a composite without a fitting kernel, or the counted CPU
fallback for a primitive without one), the same kernel attributes (`_kernel_attrs`) and the
same strided views (broadcast, reshape, transpose of matmul operands, the views shape ops'
decompositions make) as `kernel.view` metadata ops.

A decomposition is lowered by tracing it: it runs once on zero-filled tensors of the operand
types while this pass sits in the pipeline's trace layer (runtime/src/layers.h) and records
the op calls it makes; each call is lowered in turn (so a composite inside a decomposition
decomposes again where the device lacks its kernel) and every tensor a call receives is named
by the storage it views. Static shapes only (a symbolic dim is refused, naming the op); the
data-dependent checks eager makes before a launch (index bounds, labels) are not repeated.

This pass is the one place PIR talks to the runtime (it asks which kernels a place has); it
imports it when it runs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from ..attributes import ArrayAttr, Attribute, DTypeAttr, StrAttr, attr
from ..core import Block, Operation, OpResult, Value
from ..eager_attrs import given_attrs, recorded_kwargs
from ..types import TensorType, VectorType
from .manager import Pass, register_pass

ATTR_PREFIX = "attr."  # kernel attributes travel as attr.<name> on kernel.phi_kernel

Layout = tuple[tuple[int, ...], tuple[int, ...], int]  # shape, strides, offset (elements)


class LoweringError(ValueError):
    """An op this pass cannot lower (a symbolic shape, a decomposition it cannot trace)."""


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, s = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = s
        s *= max(shape[i], 1)
    return tuple(strides)


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    if 0 in shape:
        return True
    expected = 1
    for d, s in zip(reversed(shape), reversed(strides), strict=True):
        if d != 1 and s != expected:
            return False
        expected *= d
    return True


def py_value(a: Attribute) -> Any:
    """The Python value eager dispatch would hold for an attribute."""
    return a.value


class _Meta:
    """What eager's dispatch reads of a tensor: shape and dtype (and is_floating_point)."""

    def __init__(self, t: TensorType) -> None:
        self.shape = tuple(t.shape)
        self.dtype = t.dtype


class Lowering:
    """Emits kernel-dialect ops for pd_op calls into `block`, tracking each value's layout
    (root value: the one owning the memory, contiguous from offset 0; and the view of it)."""

    def __init__(self, block: Block, place: Any) -> None:
        from hwport.runtime import _core

        self._core = _core
        self.block = block
        self.place = _core.resolve_place(place)
        self.device_type = self.place.device_type
        self.layout: dict[Value, tuple[Value, Layout]] = {}
        self.views: dict[tuple[Value, Layout], Value] = {}

    # ---- emission ---------------------------------------------------------------------
    def _add(self, name: str, operands: Sequence[Value], types: Sequence[TensorType],
             attrs: dict[str, Attribute]) -> Operation:
        op = Operation.create(name, list(operands), list(types), attrs)
        self.block.append(op)
        return op

    def root(self, v: Value) -> Value:
        t = v.type
        self.layout[v] = (v, (tuple(t.shape), contiguous_strides(t.shape), 0))
        return v

    def kernel(self, op_name: str, kernel_name: str, dtype: str, inputs: Sequence[Value],
               outputs: Sequence[tuple[tuple[int, ...], str]],
               attrs: dict[str, Any]) -> list[Value]:
        has = self._core.has_kernel(kernel_name, self.place, dtype)
        a: dict[str, Attribute] = {
            "op_name": StrAttr(op_name), "kernel_name": StrAttr(kernel_name),
            "device_type": StrAttr(self.device_type), "dtype": DTypeAttr(dtype),
            "path": StrAttr("native" if has else "fallback")}
        for k, v in attrs.items():
            a[ATTR_PREFIX + k] = attr(v)
        op = self._add("kernel.phi_kernel", inputs,
                       [TensorType(tuple(s), d) for s, d in outputs], a)
        return [self.root(r) for r in op.results]

    def view(self, v: Value, shape: Sequence[int], strides: Sequence[int],
             offset: int) -> Value:
        """v's root seen as (shape, strides, offset): the same value when nothing changes."""
        root, lay = self.layout[v]
        new: Layout = (tuple(shape), tuple(strides), int(offset))
        if new == lay:
            return v
        if (root, new) in self.views:
            return self.views[(root, new)]
        op = self._add("kernel.view", [root], [TensorType(new[0], root.type.dtype)],
                       {"shape": attr(list(new[0])), "strides": attr(list(new[1])),
                        "offset": attr(new[2])})
        out = op.result()
        self.layout[out] = (root, new)
        self.views[(root, new)] = out
        return out

    # ---- what dispatch's helpers do, on values ------------------------------------------
    def cast(self, op_name: str, v: Value, dtype: str) -> Value:
        """Tensor.astype: the core's cast kernel keyed by the source dtype, no attributes."""
        if v.type.dtype == dtype:
            return v
        return self.kernel(op_name, "cast", v.type.dtype, [v], [(tuple(v.type.shape), dtype)],
                           {})[0]

    def contiguous(self, op_name: str, v: Value) -> Value:
        _, (shape, strides, _) = self.layout[v]
        if is_contiguous(shape, strides):
            return v
        return self.kernel(op_name, "copy", v.type.dtype, [v], [(shape, v.type.dtype)], {})[0]

    def broadcast_view(self, v: Value, shape: Sequence[int]) -> Value:
        _, (vs, st, off) = self.layout[v]
        shape = tuple(shape)
        if vs == shape:
            return v
        lead = len(shape) - len(vs)
        strides = [0] * lead + [0 if d == 1 and shape[lead + i] != 1 else s
                                for i, (d, s) in enumerate(zip(vs, st, strict=True))]
        return self.view(v, shape, strides, off)

    def reshape_view(self, op_name: str, v: Value, shape: Sequence[int]) -> Value:
        v = self.contiguous(op_name, v)
        return self.view(v, shape, contiguous_strides(shape), self.layout[v][1][2])

    def swap_last(self, v: Value) -> Value:
        _, (shape, strides, off) = self.layout[v]
        shape, strides = list(shape), list(strides)
        shape[-1], shape[-2] = shape[-2], shape[-1]
        strides[-1], strides[-2] = strides[-2], strides[-1]
        return self.view(v, shape, strides, off)

    # ---- one pd_op call ----------------------------------------------------------------
    def call(self, name: str, inputs: list[Any], given: dict[str, Any]) -> list[Value]:
        """Lowers pd_op `name` on kernel-level values (a list for a variadic input, None for
        an absent optional one); returns its results as dispatch.call would (flattened)."""
        from hwport.phi_ops import dispatch, infer_meta
        from hwport.phi_ops.infer_meta import Meta

        op = dispatch.op_def(name)
        for v in _flat(inputs):
            if not v.type.is_static:
                raise LoweringError(f"{name}: lower_to_kernel needs static shapes, got "
                                    f"{v.type}")
        attrs = dispatch._attrs(op, given)
        metas = [[Meta(tuple(t.type.shape), t.type.dtype) for t in v] if isinstance(v, list)
                 else None if v is None else Meta(tuple(v.type.shape), v.type.dtype)
                 for v in inputs]
        key_index = op.key_input_index()
        inputs, metas = self._promote_unsupported(op, inputs, metas, key_index)
        plan = infer_meta.infer(op, metas, attrs)
        if key_index is None:
            key_dtype = plan.outputs[0].dtype
        else:
            key_meta = metas[key_index]
            key_meta = key_meta[0] if isinstance(key_meta, list) else key_meta
            key_dtype = plan.casts.get(key_index, key_meta.dtype)
        dispatch._check_dtype(op, key_dtype, metas, key_index)
        if not op.is_primitive and not self._fused_kernel_fits(op, inputs, key_dtype):
            return self.decompose(op, inputs, plan)
        special = _SPECIAL.get(op.infer_meta)
        if special is not None:
            return special(self, op, inputs, plan, key_dtype)
        tensors = []
        for i, v in enumerate(inputs):
            if v is None:
                continue
            dtype = plan.casts.get(i)
            for given_t in (v if isinstance(v, list) else [v]):
                t = given_t if dtype is None else self.cast(name, given_t, dtype)
                if plan.broadcast is not None:
                    t = self.broadcast_view(t, plan.broadcast)
                tensors.append(t)
        return self.kernel(name, name, key_dtype, tensors,
                           [(tuple(m.shape), m.dtype) for m in plan.outputs],
                           dispatch._kernel_attrs(plan))

    def _promote_unsupported(self, op: Any, inputs: list[Any], metas: list[Any],
                             key_index: int | None) -> tuple[list[Any], list[Any]]:
        """dispatch._promote_unsupported itself, its cast of the key input lowered."""
        from hwport.phi_ops import dispatch

        if key_index is None or not isinstance(inputs[key_index], Value):
            return inputs, metas
        given = list(inputs)
        given[key_index] = _Castable(self, op.name, inputs[key_index])
        out, metas = dispatch._promote_unsupported(op, given, metas, key_index)
        out = list(out)
        if isinstance(out[key_index], _Castable):
            out[key_index] = out[key_index].value
        return out, metas

    def _fused_kernel_fits(self, op: Any, inputs: list[Any], key_dtype: str) -> bool:
        if not self._core.has_kernel(op.name, self.place, key_dtype):
            return False
        floating = {"float16", "bfloat16", "float32", "float64"}
        return all(t.type.dtype == key_dtype for t in _flat(inputs)
                   if t.type.dtype in floating)

    # ---- decompositions, traced ----------------------------------------------------------
    def decompose(self, op: Any, inputs: list[Any], plan: Any) -> list[Value]:

        core = self._core
        sid = core._storage_id
        by_storage: dict[int, Value] = {}

        samples: dict[Value, Any] = {}

        def sample(v: Value) -> Any:
            """A zero-filled tensor laid out as v is (views of one root share its storage)."""
            root, (shape, strides, offset) = self.layout[v]
            if root not in samples:
                t = core.full(list(root.type.shape), 0, root.type.dtype, self.place)
                samples[root] = t
                by_storage[sid(t)] = root
            base = samples[root]
            if (shape, strides, offset) == _layout_of(base):
                return base
            return base._view(list(shape), list(strides), offset)

        traced = [[sample(t) for t in v] if isinstance(v, list) else None if v is None
                  else sample(v) for v in inputs]
        calls, result = trace_decomposition(op, traced, plan, self.place)

        def value_of(t: Any) -> Value:
            key = sid(t)
            if key not in by_storage:
                if t.size > 1:
                    raise LoweringError(
                        f"{op.name}: its decomposition makes a tensor of shape "
                        f"{list(t.shape)} outside the op API; lower_to_kernel cannot trace it")
                return self.constant(t)
            root = by_storage[key]
            shape, strides, offset = _layout_of(t)
            return self.view(root, shape, strides, offset)

        for name, args, attrs, out in calls:
            ins = [[value_of(t) for t in a] if isinstance(a, list) else None if a is None
                   else value_of(a) for a in args]
            got = self.call(name, ins, attrs)
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            if len(outs) != len(got):
                raise LoweringError(f"{op.name}: {name} gave {len(outs)} result(s) while "
                                    f"tracing, {len(got)} when lowered")
            for t, v in zip(outs, got, strict=True):
                root, lay = self.layout[v]
                if lay != _layout_of(t) or by_storage.setdefault(sid(t), root) is not root:
                    raise LoweringError(f"{op.name}: {name}'s result layout differs between "
                                        "the trace and its lowering")
        results = list(result) if isinstance(result, (list, tuple)) else [result]
        return [value_of(t) for t in results]

    def constant(self, t: Any) -> Value:
        """A tensor a decomposition made outside the op API (a Python scalar's 0-d tensor):
        its value, read back once."""
        value = t.numpy().reshape(-1)
        scalar = value[0].item() if value.size else 0
        op = self._add("builtin.constant", [], [TensorType(tuple(t.shape), str(t.dtype))],
                       {"value": attr(scalar)})
        return self.root(op.result())


class _Castable:
    """A value as dispatch's cast() sees a tensor: its dtype, and astype (a cast kernel)."""

    def __init__(self, lw: Lowering, op_name: str, value: Value) -> None:
        self.lw, self.op_name, self.value = lw, op_name, value
        self.dtype = value.type.dtype

    def astype(self, dtype: str) -> Value:
        return self.lw.cast(self.op_name, self.value, dtype)


def trace_decomposition(op: Any, inputs: list[Any], plan: Any,
                        place: Any) -> tuple[list[tuple[str, list[Any], dict[str, Any], Any]],
                                             Any]:
    """Runs op's decomposition (dispatch._decompose: the function eager runs) on `inputs`
    in the pipeline's trace layer: (the calls it made itself as (op, inputs, attrs as the op
    functions take them, result), its result)."""
    from hwport.phi_ops import dispatch
    from hwport.runtime import _core

    if _core.registered_layer("trace") is not None:
        raise LoweringError(f"{op.name}: the pipeline's trace layer is in use; tracing a "
                            "decomposition needs it")
    recorder = _Recorder()
    _core.register_layer("trace", recorder)
    _core.layer_enter("trace")
    try:
        result = dispatch._decompose(op, inputs, plan, place)
    finally:
        _core.layer_leave("trace")
        _core.register_layer("trace", None)
    calls = [(name, args, recorded_kwargs(name, recorded), out)
             for name, args, recorded, out in recorder.calls]
    return calls, result


class _Recorder:
    """The trace layer while a decomposition runs: records the calls it makes itself (the
    ones their own decompositions make pass through)."""

    def __init__(self) -> None:
        self.depth = 0
        self.calls: list[tuple[str, list[Any], dict[str, Any], Any]] = []

    def on_call(self, call: Any, next: Any) -> Any:
        top = self.depth == 0
        record = (call.op, list(call.inputs), dict(call.attrs))
        self.depth += 1
        try:
            out = next(call)
        finally:
            self.depth -= 1
        if top:
            self.calls.append((*record, out))
        return out


def _layout_of(t: Any) -> Layout:
    return tuple(t.shape), tuple(t.strides), int(t._offset)


def _flat(inputs: Sequence[Any]) -> list[Value]:
    return [t for v in inputs if v is not None for t in (v if isinstance(v, list) else [v])]


# ---- the launches dispatch special-cases (dispatch._SPECIAL) ------------------------------

def _reduce(lw: Lowering, op: Any, inputs: list[Any], plan: Any, key_dtype: str) -> list[Value]:
    from hwport.phi_ops import dispatch

    x = lw.cast(op.name, inputs[0], plan.casts[0]) if 0 in plan.casts else inputs[0]
    out = plan.outputs[0]
    if not plan.attrs["axis"]:  # 0-d input: nothing to reduce
        return [lw.reshape_view(op.name, lw.cast(op.name, x, out.dtype), out.shape)]
    return lw.kernel(op.name, op.name, x.type.dtype, [x], [(tuple(out.shape), out.dtype)],
                     dispatch._kernel_attrs(plan))


def _flattening(lw: Lowering, op: Any, inputs: list[Any], plan: Any,
                key_dtype: str) -> list[Value]:
    from hwport.phi_ops import dispatch

    x = inputs[0]
    if plan.attrs.get("flatten") or not x.type.shape:
        x = lw.reshape_view(op.name, x, [math.prod(x.type.shape)])
    axis = plan.attrs["axis"]
    shape = tuple(lw.layout[x][1][0])
    if op.infer_meta == "arg_reduce":
        shape = tuple(d for i, d in enumerate(shape) if i != axis)
    out = lw.kernel(op.name, op.name, key_dtype, [x], [(shape, plan.outputs[0].dtype)],
                    dispatch._kernel_attrs(plan))[0]
    return [lw.reshape_view(op.name, out, plan.outputs[0].shape)]


def _matmul(lw: Lowering, op: Any, inputs: list[Any], plan: Any, key_dtype: str) -> list[Value]:
    from hwport.phi_ops import infer_meta

    x, y = (lw.cast(op.name, t, plan.casts[i]) if i in plan.casts else t
            for i, t in enumerate(inputs))
    xs, ys = tuple(x.type.shape), tuple(y.type.shape)
    x = lw.reshape_view(op.name, x, [1, xs[0]]) if len(xs) == 1 else x
    y = lw.reshape_view(op.name, y, [ys[0], 1]) if len(ys) == 1 else y
    if plan.attrs.get("transpose_x") and len(xs) >= 2:
        x = lw.swap_last(x)
    if plan.attrs.get("transpose_y") and len(ys) >= 2:
        y = lw.swap_last(y)
    xs, ys = lw.layout[x][1][0], lw.layout[y][1][0]
    batch = infer_meta.broadcast_shapes("matmul", [xs[:-2], ys[:-2]], ["x", "y"])
    x = lw.broadcast_view(x, tuple(batch) + tuple(xs[-2:]))
    y = lw.broadcast_view(y, tuple(batch) + tuple(ys[-2:]))
    shape = (*batch, xs[-2], ys[-1])
    if xs[-1] == 0 and math.prod(shape) > 0:  # eager: zeros_like of the output, no matmul
        out = lw.call("zeros", [], {"shape": list(shape), "dtype": key_dtype})[0]
        return [lw.reshape_view(op.name, out, plan.outputs[0].shape)]
    out = lw.kernel(op.name, "matmul", key_dtype, [x, y], [(shape, key_dtype)], {})[0]
    return [lw.reshape_view(op.name, out, plan.outputs[0].shape)]


_SPECIAL = {"reduce": _reduce, "arg_reduce": _flattening, "scan": _flattening,
            "matmul": _matmul}


# ---- the pass ------------------------------------------------------------------------------

def lower_program_block(block: Block, place: Any) -> None:
    """Rewrites `block` (a program's top-level block) into the kernel dialect."""
    old = list(block.ops)
    scratch = Block()
    lw = Lowering(scratch, place)
    _lower_ops(lw, old, {})
    for op in reversed(old):
        op.drop_all_references()
    for op in old:
        op.remove_from_parent()
    for op in list(scratch.ops):
        op.move_to_end(block)


def _lower_ops(lw: Lowering, ops: Sequence[Operation], mapped: dict[Value, Any]) -> None:
    """Lowers `ops` into lw.block; `mapped`: each value of the source program -> its lowered
    value (a list for a vec[...])."""

    def get(v: Value | None) -> Any:
        return None if v is None else mapped[v]

    for op in ops:
        name = op.name
        if name in ("builtin.data", "builtin.parameter", "builtin.constant"):
            new = Operation.create(name, [], [op.result().type], dict(op.attributes))
            lw.block.append(new)
            if not op.result().type.is_static:
                raise LoweringError(f"{name} {op.attributes}: lower_to_kernel needs static "
                                    f"shapes, got {op.result().type}")
            mapped[op.result()] = lw.root(new.result())
        elif name == "builtin.combine":
            mapped[op.result()] = [get(v) for v in op.operands]
        elif name == "builtin.split":
            for r, v in zip(op.results, get(op.operand(0)), strict=True):
                mapped[r] = v
        elif name == "builtin.shadow_output":
            lw.block.append(Operation.create(name, [get(op.operand(0))], [],
                                             dict(op.attributes)))
        elif name.startswith("pd_op."):
            given = given_attrs(name[len("pd_op."):],
                                {k: py_value(a) for k, a in op.attributes.items()})
            outs = lw.call(name[len("pd_op."):], [get(v) for v in op.operands], given)
            if len(op.results) == 1 and isinstance(op.result().type, VectorType):
                mapped[op.result()] = outs
            else:
                for r, v in zip(op.results, outs, strict=True):
                    mapped[r] = v
        elif name in ("cf.if", "cf.while"):
            _lower_cf(lw, op, mapped)
        elif name == "cinn.group":
            lower_group = GROUP_LOWERING[0] if GROUP_LOWERING else None
            if lower_group is None or not lower_group(lw, op, mapped):
                lower_group_ops(lw, op, mapped)
        elif name == "cf.yield":
            lw.block.append(Operation.create(name, [_tensor(op, get(v)) for v in op.operands]))
        elif name.startswith("dist."):  # a collective keeps its form (the executor gives it
            operands = [_tensor(op, get(v)) for v in op.operands]  # contiguous inputs)
            new = Operation.create(name, operands, [r.type for r in op.results],
                                   dict(op.attributes))
            lw.block.append(new)
            for r, v in zip(op.results, new.results, strict=True):
                mapped[r] = lw.root(v)
        elif name.startswith("kernel."):
            raise LoweringError(f"{name}: the program is already lowered")
        else:
            raise LoweringError(f"{name}: lower_to_kernel does not lower it")


# The fusion compiler's lowering of a cinn.group (cinn_backends/lowering.py registers it):
# fn(lw, group_op, mapped) -> True when it emitted the group's kernels, False to have its ops
# lowered one by one (no codegen target on the place, a group that failed to compile).
GROUP_LOWERING: list[Any] = []


def lower_group_ops(lw: Lowering, op: Operation, mapped: dict[Value, Any]) -> None:
    """A cinn.group run as the ops it holds: its block arguments are its operands, its
    results what its cinn.yield gives."""
    body = op.regions[0].blocks[0]
    for arg, v in zip(body.args, op.operands, strict=True):
        mapped[arg] = mapped[v]
    inner = list(body.ops)
    _lower_ops(lw, inner[:-1], mapped)
    for r, v in zip(op.results, inner[-1].operands, strict=True):
        mapped[r] = mapped[v]


def _tensor(op: Operation, v: Any) -> Value:
    if not isinstance(v, Value) or not isinstance(v.type, TensorType) or not v.type.is_static:
        raise LoweringError(f"{op.name}: lower_to_kernel takes static tensors across a region "
                            f"boundary, got {getattr(v, 'type', v)}")
    return v


def _lower_cf(lw: Lowering, op: Operation, mapped: dict[Value, Any]) -> None:
    """cf.if / cf.while keep their form; their regions' ops are lowered in place. Types come
    from the lowered values (a loop's carried values; the then-region's yields), so symbolic
    types bound by the executor need no rewrite. Results and a loop's block arguments are
    fresh roots (the executor copies the yielded values into them); a view made inside a
    region is not reused outside it (dominance)."""
    operands = [_tensor(op, mapped[v]) for v in op.operands]
    carried = [v.type for v in operands[1:]] if op.name == "cf.while" else []
    new = Operation.create(op.name, operands, carried, dict(op.attributes), len(op.regions))
    lw.block.append(new)
    outer, views = lw.block, lw.views
    try:
        for old_region, region in zip(op.regions, new.regions, strict=True):
            old_block = old_region.blocks[0]
            block = region.add_block(carried)
            for a, b in zip(old_block.args, block.args, strict=True):
                mapped[a] = lw.root(b)
            lw.block, lw.views = block, dict(views)
            _lower_ops(lw, list(old_block.ops), mapped)
    finally:
        lw.block, lw.views = outer, views
    if op.name == "cf.if":
        yields = new.regions[0].blocks[0].ops[-1].operands
        new.results = [OpResult(v.type, new, i) for i, v in enumerate(yields)]
    for r, v in zip(op.results, new.results, strict=True):
        mapped[r] = lw.root(v)


@register_pass
class LowerToKernel(Pass):
    name = "lower_to_kernel"
    options: ClassVar[dict[str, Any]] = {"place": "custom:cpu"}

    def run(self, op: Operation) -> bool:
        lower_program_block(op.regions[0].blocks[0], self.opts["place"])
        return True


def kernel_attrs(op: Operation) -> dict[str, Any]:
    """The attributes a kernel.phi_kernel op passes to its kernel, as Python values."""
    return {k[len(ATTR_PREFIX):]: _plain(a) for k, a in op.attributes.items()
            if k.startswith(ATTR_PREFIX)}


def _plain(a: Attribute) -> Any:
    if isinstance(a, ArrayAttr):
        return [_plain(e) for e in a.elements]
    return a.value
