"""Eager dispatch of ops.yaml ops: normalize the arguments, infer meta (which validates), then
run the device's kernel for (op, dtype); for a composite without a kernel, its decomposition
into other ops; for a primitive without one, the runtime's counted CPU fallback."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from hwport.runtime import _core
from hwport.runtime._core import DType, Tensor

from . import infer_meta
from .infer_meta import Meta, Plan
from .promotion import check_scalar_fits, promotion_inputs, scalar_dtype
from .schema import REQUIRED, OpDef, load_ops

_OPS = load_ops()
_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)
# Float-only math ops accept integer/bool tensors by computing in float32 (as PyTorch does).
_INT_TO_FLOAT_CATEGORIES = {"unary"}


# Allocates the outputs of every kernel launch (shape, dtype, place, op name). hwcheck's guards
# suite swaps in one that places them inside larger, patterned buffers
# (conformance/suites/guards.py); a module global costs what _core.empty's lookup did.
output_allocator = _core.empty


def op_def(name: str) -> OpDef:
    return _OPS[name]


# ---- arguments --------------------------------------------------------------------------

_INT64 = (-(2**63), 2**63 - 1)
_EXPECTED = {"int": "an int", "ints": "an int or a list of ints", "float": "a number",
             "floats": "a list of numbers", "bool": "a bool", "str": "a str", "dtype": "a dtype"}


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _int64(op: OpDef, name: str, v: Any) -> int:
    """An int attribute crosses the kernel ABI as int64: a larger one is refused here."""
    v = int(v)
    if not _INT64[0] <= v <= _INT64[1]:
        raise ValueError(f"{op.name}: {name}={v} does not fit in int64 (range "
                         f"[{_INT64[0]}, {_INT64[1]}])")
    return v


def _number(op: OpDef, name: str, v: Any) -> bool | int | float:
    """A float attribute: bools stay bools, ints stay exact (the kernel reads them as INT64
    where it matters; infer-meta and the ABI conversion refuse what does not fit) but must
    be within the float range (every float attribute may be used as one)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if _is_int(v):
        v = int(v)
        if not _INT64[0] <= v <= _INT64[1]:
            try:
                float(v)
            except OverflowError:
                raise ValueError(f"{op.name}: {name}={v} is too large for any float dtype "
                                 "(at most about 1.8e308)") from None
        return v
    return float(v)


def _attr(op: OpDef, name: str, kind: str, value: Any) -> Any:
    def bad(expected: str) -> TypeError:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return TypeError(f"{op.name}: {name} expected {expected}, got "
                         f"{type(value).__name__} {shown}")

    if value is None:
        spec = op.attr_map[name]
        if spec.required:
            raise TypeError(f"{op.name}: {name} is required and cannot be None")
        if spec.default is not None and not (kind == "ints" and spec.default == []):
            raise bad(f"{_EXPECTED[kind]} (None is not allowed; default {spec.default!r})")
        return None
    if kind == "ints":
        if isinstance(value, Tensor):
            value = value.tolist()
        if _is_int(value):
            return [_int64(op, name, value)]
        if isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                if not _is_int(v):
                    raise bad(f"a list of ints ({name}[{i}] is {type(v).__name__} {v!r})")
            return [_int64(op, f"{name}[{i}]", v) for i, v in enumerate(value)]
        raise bad(_EXPECTED[kind])
    if kind == "int":
        if _is_int(value):
            return _int64(op, name, value)
        raise bad(_EXPECTED[kind])
    if kind == "float":
        if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
            return _number(op, name, value)
        raise bad(_EXPECTED[kind])
    if kind == "floats":
        if isinstance(value, (list, tuple)) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            try:
                return [float(v) for v in value]
            except OverflowError:
                raise ValueError(f"{op.name}: {name} holds an int too large for any float "
                                 "dtype") from None
        raise bad(_EXPECTED[kind])
    if kind == "bool":
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise bad(_EXPECTED[kind])
    if kind == "str":
        if isinstance(value, str):
            return value
        raise bad(_EXPECTED[kind])
    if kind == "dtype":  # validated by the core; carried as its name (the oracle's currency)
        return str(_core.parse_dtype(value, op.name, name))
    raise AssertionError(kind)


def _attrs(op: OpDef, given: dict[str, Any]) -> dict[str, Any]:
    unknown = set(given) - set(op.attr_map)
    if unknown:
        raise TypeError(f"{op.name}: unexpected argument(s) {sorted(unknown)}; it takes "
                        f"{[a.name for a in op.attrs]}")
    out = {}
    for a in op.attrs:
        if a.name in given:
            value = given[a.name]
        elif a.required:
            raise TypeError(f"{op.name}: missing required argument {a.name!r}")
        else:
            value = a.default
        out[a.name] = _attr(op, a.name, a.type, value)
        if a.type == "ints" and out[a.name] is None and a.default == []:
            out[a.name] = []
    if op.name == "split":  # a list means part sizes, an int that many equal parts
        out["_sizes"] = isinstance(given.get("sections"), (list, tuple))
    return out


def _as_tensor(op: OpDef, name: str, value: Any, like: Tensor | None, place: Any) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, _SCALARS):
        value = value.item() if isinstance(value, np.generic) else value
        dtype = scalar_dtype(value, str(like.dtype) if like is not None else None)
        check_scalar_fits(op.name, name, value, dtype)  # int8 tensor + 1000 raises (numpy 2)
        target = like.place if like is not None else place
        return _core.full([], value, dtype, target)
    raise TypeError(f"{op.name}: {name} expected a Tensor or a Python scalar, got "
                    f"{type(value).__name__}")


def _inputs(op: OpDef, args: Sequence[Any], place: Any) -> list[Any]:
    if len(args) > len(op.inputs):
        raise TypeError(f"{op.name}: takes {len(op.inputs)} tensor input(s), got {len(args)}")
    args = list(args) + [None] * (len(op.inputs) - len(args))
    # A Python scalar takes its dtype next to a tensor that decides the op's dtype (where's x
    # or y, not its bool condition), as a weak scalar of NEP 50 does.
    deciding = promotion_inputs(op)
    first = next((a for a, spec in zip(args, op.inputs, strict=True)
                  if isinstance(a, Tensor) and spec.name in deciding), None)
    if first is None:
        first = next((a for a in args if isinstance(a, Tensor)), None)
    if first is None:
        first = next((t for a in args if isinstance(a, (list, tuple)) for t in a
                      if isinstance(t, Tensor)), None)
    out: list[Any] = []
    for spec, value in zip(op.inputs, args, strict=True):
        if spec.variadic:
            if not isinstance(value, (list, tuple)):
                raise TypeError(f"{op.name}: {spec.name} expected a list of Tensors, got "
                                f"{type(value).__name__}")
            out.append([_as_tensor(op, f"{spec.name}[{i}]", v, first, place)
                        for i, v in enumerate(value)])
        elif value is None:
            if not spec.optional:
                raise TypeError(f"{op.name}: missing required input {spec.name!r}")
            out.append(None)
        else:
            out.append(_as_tensor(op, spec.name, value, first, place))
    tensors = [t for v in out for t in (v if isinstance(v, list) else [v]) if t is not None]
    if tensors:
        home = tensors[0].place
        for t, spec in zip(tensors, _names(op, out), strict=True):
            if t.place != home:
                raise ValueError(f"{op.name}: {spec} is on {t.place} but "
                                 f"{_names(op, out)[0]} is on {home}; move them to one place")
    return out


def _names(op: OpDef, inputs: list[Any]) -> list[str]:
    names = []
    for spec, v in zip(op.inputs, inputs, strict=True):
        if isinstance(v, list):
            names += [f"{spec.name}[{i}]" for i in range(len(v))]
        elif v is not None:
            names.append(spec.name)
    return names


def _meta(t: Tensor | None) -> Meta | None:
    return None if t is None else Meta(tuple(t.shape), str(t.dtype))


# ---- views and helpers the dispatcher itself needs ----------------------------------------

def broadcast_view(t: Tensor, shape: Sequence[int]) -> Tensor:
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    lead = len(shape) - t.ndim
    strides = [0] * lead + [0 if d == 1 and shape[lead + i] != 1 else s
                            for i, (d, s) in enumerate(zip(t.shape, t.strides, strict=True))]
    return t._view(list(shape), strides, t._offset)


def reshape_view(t: Tensor, shape: Sequence[int]) -> Tensor:
    t = t if t.is_contiguous() else t.contiguous()
    shape = list(shape)
    strides, s = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = s
        s *= max(shape[i], 1)
    return t._view(shape, strides, t._offset)


def cast(t: Tensor, dtype: str | DType) -> Tensor:
    if str(t.dtype) == str(dtype):
        return t
    return t.astype(dtype)


def _check_index(op: OpDef, name: str, index: Tensor, bound: int,
                 axis: int | None = None) -> None:
    """Index values must lie in [0, bound): checked on the host before any kernel runs
    (this reads two scalars back, so it synchronizes)."""
    if index.size == 0:
        return
    lo = call("min", (index,), {})
    hi = call("max", (index,), {})
    lo_v, hi_v = int(lo.item()), int(hi.item())
    if lo_v < 0 or hi_v >= bound:
        bad = lo_v if lo_v < 0 else hi_v
        along = "" if axis is None else f" (axis {axis})"
        raise IndexError(f"{op.name}: {name} holds {bad}, out of bounds for a dimension of "
                         f"size {bound}{along} (expected 0 <= {name} < {bound})")


def _kernel_attrs(plan: Plan) -> dict[str, Any]:
    return {k: _kernel_attr(v) for k, v in plan.attrs.items()
            if not k.startswith("_") and k != "flatten"}


def _kernel_attr(v: Any) -> Any:
    """An int beyond int64 can only be a float attribute's value (int attributes are range-checked
    in _attr): it crosses the ABI as a double, which kernels saturate to the dtype as the
    decomposition's arithmetic does."""
    if type(v) is int and not _INT64[0] <= v <= _INT64[1]:
        return float(v)
    return v


# ---- dispatch ---------------------------------------------------------------------------

# The pipeline's dist layer (hwport.distributed.auto_parallel.dist_dispatch sets it):
# dist_layer(name, args, given_attrs) runs a call that has a DistTensor argument, or returns
# NotImplemented. Reached only where an argument is not a Tensor, so plain calls never pay.
dist_layer: Any = None


def call(name: str, args: Sequence[Any], attrs: dict[str, Any], place: Any = None,
         selecting: _core.OpCall | None = None) -> Any:
    """Runs op `name` on `args` (tensor inputs in ops.yaml order) with `attrs`.

    `selecting`: the C++ pipeline has run the call through the layers already (its OpCall):
    only kernel selection is left, which records its path there."""
    op = _OPS[name]
    given = attrs
    attrs = _attrs(op, attrs)
    try:
        inputs = _inputs(op, args, place)
    except TypeError:  # not a Tensor: a DistTensor goes to the dist layer (zero fast-path cost)
        if dist_layer is not None and (out := dist_layer(name, args, given)) is not NotImplemented:
            return out
        raise
    metas = [[_meta(t) for t in v] if isinstance(v, list) else _meta(v) for v in inputs]
    key_index = op.key_input_index()
    inputs, metas = _promote_unsupported(op, inputs, metas, key_index)
    plan = infer_meta.infer(op, metas, attrs)
    if key_index is None:
        key_dtype = plan.outputs[0].dtype
        target = _core.resolve_place(place)
    else:
        key_meta = metas[key_index]
        key_meta = key_meta[0] if isinstance(key_meta, list) else key_meta
        key_dtype = plan.casts.get(key_index, key_meta.dtype)
        target = _first_tensor(inputs).place
    _check_dtype(op, key_dtype, metas, key_index)
    if "_bound" in plan.attrs:
        index = inputs[[i.name for i in op.inputs].index("index")]
        _check_index(op, "index", index, plan.attrs["_bound"], plan.attrs.get("axis"))
    if "ignore_index" in plan.attrs:
        _check_labels(op, inputs[1], plan.attrs["ignore_index"], metas[0].shape[-1])
    try:
        if selecting is not None:
            return _select(op, inputs, plan, key_dtype, target, selecting)
        if _core.layers_active():  # the pipeline's layers (hwport.profiler, ...) on this thread
            return _layered(op, inputs, plan, key_dtype, target, attrs)
        if not op.is_primitive and not _fused_kernel_fits(op, inputs, key_dtype, target):
            return _decompose(op, inputs, plan, target)
        return _launch(op, inputs, plan, key_dtype, target)
    except (TypeError, ValueError, IndexError, MemoryError) as exc:
        # infer-meta validates fully; should an inner op of a decomposition still refuse, or
        # the device lack the memory, the error names the public call.
        renamed = _for_the_call(op, plan.attrs, exc)
        if renamed is None:
            raise
        try:
            raise renamed from exc
        finally:
            # This frame's references to the errors would form a cycle with their tracebacks
            # and keep the call's tensors allocated until a garbage collection.
            del exc, renamed


def _layered(op: OpDef, inputs: list[Any], plan: Plan, key_dtype: str, target: Any,
             attrs: dict[str, Any]) -> Any:
    """The call through this thread's active layers (runtime/src/layers.h, outermost first),
    then kernel selection, which records the path it took in the OpCall."""
    def select(c: _core.OpCall) -> Any:
        return _select(op, list(c.inputs), plan, key_dtype, target, c)

    return _core.run_layers(_core.OpCall(op.name, inputs, attrs, target, key_dtype), select)


def _select(op: OpDef, inputs: list[Any], plan: Plan, key_dtype: str, target: Any,
            c: _core.OpCall) -> Any:
    """Kernel selection after the layers; records the path it took in the OpCall."""
    if not op.is_primitive and not _fused_kernel_fits(op, inputs, key_dtype, target):
        c.path = "decomposition"
        return _decompose(op, inputs, plan, target)
    c.path = "native" if _core.has_kernel(op.name, target, key_dtype) else "fallback"
    return _launch(op, inputs, plan, key_dtype, target)


def layer_inputs(name: str, args: Sequence[Any]) -> list[Any]:
    """A call's inputs as the layers see them, Python scalars as their 0-d tensors: for the
    C++ pipeline's OpCall of a call with a scalar operand."""
    return _inputs(_OPS[name], args, None)


def decompose_for_grad(name: str, inputs: list[Any], attrs: dict[str, Any]) -> Any:
    """A composite without a VJP rule, run as its decomposition so that autograd records its
    sub-ops (runtime/src/autograd_record.cpp): `inputs` and `attrs` as the layers saw them."""
    op = _OPS[name]
    metas = [[_meta(t) for t in v] if isinstance(v, list) else _meta(v) for v in inputs]
    inputs, metas = _promote_unsupported(op, list(inputs), metas, op.key_input_index())
    plan = infer_meta.infer(op, metas, attrs)
    return _decompose(op, inputs, plan, _first_tensor(inputs).place)


def layer_error(name: str, exc: BaseException, given: dict[str, Any]) -> BaseException | None:
    """An error raised in the C++ pipeline's layers or kernel selection as `call` raises it
    (prefixed with the public op's name); None: leave it as it is."""
    if not isinstance(exc, (TypeError, ValueError, IndexError, MemoryError)):
        return None
    op = _OPS[name]
    return _for_the_call(op, _attrs(op, given), exc)


def layer_attrs(name: str, given: dict[str, Any]) -> dict[str, Any]:
    """The attributes of a call as the layers see them (every one, defaults filled, normalized
    as `call` does): for the C++ pipeline's OpCall, when a layer first reads them."""
    return _attrs(_OPS[name], given)


def _fused_kernel_fits(op: OpDef, inputs: list[Any], key_dtype: str, target: Any) -> bool:
    """A composite runs its plugin kernel when there is one and every floating input has the
    key dtype (a float32 weight next to float16 x keeps its precision in the decomposition)."""
    if not _core.has_kernel(op.name, target, key_dtype):
        return False
    if op.infer_meta == "embedding":  # keyed by the index: the weight may have any dtype
        return True
    # linear's kernel takes every input in the key dtype (an int16 weight next to float64 x
    # promotes in the decomposition instead)
    every = op.infer_meta == "linear"
    return all(str(t.dtype) == key_dtype for v in inputs if v is not None
               for t in (v if isinstance(v, list) else [v]) if every or t.dtype.is_floating_point)


def _check_labels(op: OpDef, label: Tensor, ignore_index: int, classes: int) -> None:
    """Labels other than ignore_index must lie in [0, classes)."""
    values = label.numpy()  # labels are one per row: reading them back is cheap
    values = values[values != ignore_index]
    if values.size and (values.min() < 0 or values.max() >= classes):
        bad = int(values.min()) if values.min() < 0 else int(values.max())
        raise IndexError(f"{op.name}: label holds {bad}, out of bounds for {classes} classes "
                         f"(expected 0 <= label < {classes}, or ignore_index={ignore_index})")


def _first_tensor(inputs: list[Any]) -> Tensor:
    for v in inputs:
        if isinstance(v, list) and v:
            return v[0]
        if isinstance(v, Tensor):
            return v
    raise AssertionError("no tensor input")


def _promote_unsupported(op: OpDef, inputs: list[Any], metas: list[Any],
                         key_index: int | None) -> tuple[list[Any], list[Any]]:
    if key_index is None or op.category not in _INT_TO_FLOAT_CATEGORIES:
        return inputs, metas
    m = metas[key_index]
    if m is None or isinstance(m, list) or m.dtype in op.dtypes:
        return inputs, metas
    float_only = all(d.startswith(("float", "bfloat")) for d in op.dtypes)
    if float_only and m.dtype in ("bool", "int8", "uint8", "int16", "int32", "int64"):
        inputs = list(inputs)
        metas = list(metas)
        inputs[key_index] = cast(inputs[key_index], "float32")
        metas[key_index] = Meta(m.shape, "float32")
    return inputs, metas


def _check_dtype(op: OpDef, dtype: str, metas: list[Any], key_index: int | None) -> None:
    if dtype in op.kernel_dtypes:
        return
    arg = "dtype" if key_index is None else op.inputs[key_index].name
    raise TypeError(f"{op.name}: {arg} has dtype {dtype}, which {op.name} does not support; "
                    f"supported: {', '.join(op.dtypes)}")


def _for_the_call(op: OpDef, attrs: dict[str, Any],
                  exc: BaseException) -> BaseException | None:
    """An error raised while running `op` (by an inner op of its decomposition, or the device
    out of memory) as the user's call: prefixed with the public op's name, the call's
    arguments named. None: it already names the op (and, for MemoryError, the arguments)."""
    msg = str(exc)
    named = msg.startswith(f"{op.name}:")
    given = infer_meta.shape_args(op, attrs)
    if named and (not isinstance(exc, MemoryError) or not given or "was called with" in msg):
        return None
    called = f" ({op.name} was called with {given})" if given else ""
    try:
        return type(exc)(f"{msg if named else f'{op.name}: {msg}'}{called}")
    except TypeError:  # an exception type whose constructor takes other arguments
        return None


def _decompose(op: OpDef, inputs: list[Any], plan: Plan, target: Any) -> Any:
    from . import decompositions

    fn = getattr(decompositions, op.decompose)
    attrs = {k: v for k, v in plan.attrs.items() if not k.startswith("_")
             and not k.startswith("has_") and k != "flatten"}
    for a in op.attrs:
        if a.type == "dtype" and isinstance(attrs.get(a.name), str):
            attrs[a.name] = _core.parse_dtype(attrs[a.name], op.name, a.name)
    if op.category in ("creation", "random") and not op.inputs:
        attrs["place"] = target
    elif op.name.endswith("_like"):
        attrs["place"] = target
    elif op.formula is not None:
        # Here only while a layer is active (the C++ pipeline runs formulas itself otherwise):
        # the same sub-ops as fn, from C++, each coming back through the layers.
        out = _core._pipeline_formula(op.name, tuple(inputs), attrs)
        if out is not None:
            return out
    return fn(*inputs, **attrs)


def _prepared_inputs(op: OpDef, inputs: list[Any], plan: Plan) -> list[Tensor]:
    flat: list[Tensor] = []
    for i, v in enumerate(inputs):
        if v is None:
            continue
        dtype = plan.casts.get(i)
        for given in (v if isinstance(v, list) else [v]):
            t = given if dtype is None else cast(given, dtype)
            if plan.broadcast is not None:
                t = broadcast_view(t, plan.broadcast)
            flat.append(t)
    return flat


def _launch(op: OpDef, inputs: list[Any], plan: Plan, key_dtype: str, target: Any) -> Any:
    special = _SPECIAL.get(op.infer_meta)
    if special is not None:
        return special(op, inputs, plan, key_dtype, target)
    tensors = _prepared_inputs(op, inputs, plan)
    outs = [output_allocator(list(m.shape), m.dtype, target, op.name) for m in plan.outputs]
    if all(math.prod(m.shape) > 0 for m in plan.outputs):
        _core.launch(op.name, key_dtype, tensors, outs, _kernel_attrs(plan))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _launch_reduce(op: OpDef, inputs: list[Any], plan: Plan, key_dtype: str,
                   target: Any) -> Tensor:
    x = cast(inputs[0], plan.casts[0]) if 0 in plan.casts else inputs[0]
    out_meta = plan.outputs[0]
    if not plan.attrs["axis"]:  # 0-d input: nothing to reduce
        return reshape_view(cast(x, out_meta.dtype).contiguous(), out_meta.shape)
    out = output_allocator(list(out_meta.shape), out_meta.dtype, target, op.name)
    if math.prod(out_meta.shape) > 0:
        _core.launch(op.name, str(x.dtype), [x], [out], _kernel_attrs(plan))
    return out


def _launch_flattening(op: OpDef, inputs: list[Any], plan: Plan, key_dtype: str,
                       target: Any) -> Tensor:
    """arg_reduce and scan: axis=None works on the flattened tensor, a 0-d one as [1]."""
    x = inputs[0]
    if plan.attrs.get("flatten") or x.ndim == 0:
        x = reshape_view(x, [x.size])
    axis = plan.attrs["axis"]
    if op.infer_meta == "arg_reduce":
        shape = [d for i, d in enumerate(x.shape) if i != axis]
    else:
        shape = list(x.shape)
    out = output_allocator(shape, plan.outputs[0].dtype, target, op.name)
    if x.size > 0:
        _core.launch(op.name, key_dtype, [x], [out], _kernel_attrs(plan))
    return reshape_view(out, plan.outputs[0].shape)


def _launch_matmul(op: OpDef, inputs: list[Any], plan: Plan, key_dtype: str,
                   target: Any) -> Tensor:
    x, y = (cast(t, plan.casts[i]) for i, t in enumerate(inputs))
    if inputs[0].ndim >= 3 and inputs[1].ndim <= 2 and not plan.attrs.get("transpose_x"):
        # x [batch.., m, k] @ y [k, n] as one [batch * m, k] product (the C++ family's form)
        rows = x.size // x.shape[-1] if x.shape[-1] else math.prod(x.shape[:-1])
        x = reshape_view(x, [rows, x.shape[-1]])
    x = reshape_view(x, [1, x.shape[0]]) if x.ndim == 1 else x
    y = reshape_view(y, [y.shape[0], 1]) if y.ndim == 1 else y
    if plan.attrs.get("transpose_x") and inputs[0].ndim >= 2:
        x = _swap_last(x)
    if plan.attrs.get("transpose_y") and inputs[1].ndim >= 2:
        y = _swap_last(y)
    batch = infer_meta.broadcast_shapes("matmul", [x.shape[:-2], y.shape[:-2]], ["x", "y"])
    x = broadcast_view(x, batch + tuple(x.shape[-2:]))
    y = broadcast_view(y, batch + tuple(y.shape[-2:]))
    out = output_allocator(list(batch) + [x.shape[-2], y.shape[-1]], key_dtype, target,
                      op.name)
    if out.size > 0:
        if x.shape[-1] == 0:
            out = call("zeros_like", (out,), {})
        else:
            _core.launch("matmul", key_dtype, [x, y], [out], {})
    return reshape_view(out, plan.outputs[0].shape)


def _swap_last(t: Tensor) -> Tensor:
    shape, strides = list(t.shape), list(t.strides)
    shape[-1], shape[-2] = shape[-2], shape[-1]
    strides[-1], strides[-2] = strides[-2], strides[-1]
    return t._view(shape, strides, t._offset)


_SPECIAL = {
    "reduce": _launch_reduce,
    "arg_reduce": _launch_flattening,
    "scan": _launch_flattening,
    "matmul": _launch_matmul,
}


def required_attrs(op: OpDef) -> list[str]:
    return [a.name for a in op.attrs if a.default is REQUIRED]
