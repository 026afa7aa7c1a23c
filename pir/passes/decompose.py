"""decompose{place=}: composites become the pd_op ops of their decomposition, through the
Decompose interface (the function of phi_ops/decompositions.py eager runs), to a fixpoint.
With a place, only the composites eager decomposes there (no kernel, or float inputs that
differ from the key dtype); without one, every composite that can be.

The decomposition is traced as kernel lowering traces it (pir/passes/lower_to_kernel.py): run
once on zero-filled tensors in the pipeline's trace layer, its op calls recorded. A
decomposition that hands a strided view to an op (the shape ops, whose decompositions are
views) has no pd_op form and its op stays, as does one on symbolic shapes or one whose key
input eager promotes first (an integer input of a float-only op)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..builder import Builder
from ..core import Block, Operation, Value
from ..dialect import lookup_op
from ..eager_attrs import given_attrs
from ..types import TensorType
from .lower_to_kernel import trace_decomposition
from .manager import Pass, register_pass


class _NotExpressible(Exception):
    pass


def _decompose_op(op: Operation, place: str) -> bool:
    from hwport.phi_ops import dispatch, infer_meta
    from hwport.phi_ops.infer_meta import Meta
    from hwport.runtime import _core

    info = lookup_op(op.name)
    od = info.op_def
    if od.is_primitive or not info.interfaces.get("Decompose"):
        return False
    values = [op.operand(i) for i in range(op.num_operands)]
    inputs: list[Any] = []
    for v in values:
        if v is not None and v.defining_op() is not None and \
                v.defining_op().name == "builtin.combine":
            inputs.append(list(v.defining_op().operands))
        else:
            inputs.append(v)
    flat = [t for v in inputs if v is not None for t in (v if isinstance(v, list) else [v])]
    if not all(isinstance(t.type, TensorType) and t.type.is_static for t in flat):
        return False
    attrs = dispatch._attrs(od, given_attrs(od.name, {k: a.value
                                                      for k, a in op.attributes.items()}))
    metas = [[Meta(tuple(t.type.shape), t.type.dtype) for t in v] if isinstance(v, list)
             else None if v is None else Meta(tuple(v.type.shape), v.type.dtype)
             for v in inputs]
    key = od.key_input_index()
    if key is not None and od.category in dispatch._INT_TO_FLOAT_CATEGORIES and \
            metas[key] is not None and not isinstance(metas[key], list) and \
            metas[key].dtype not in od.dtypes:
        return False  # eager casts first: decompose after lowering instead
    plan = infer_meta.infer(od, metas, attrs)
    target = _core.resolve_place(place or "custom:cpu")
    if place:
        key_dtype = plan.outputs[0].dtype if key is None else plan.casts.get(
            key, (metas[key][0] if isinstance(metas[key], list) else metas[key]).dtype)
        if dispatch._fused_kernel_fits(od, _Typed.wrap(inputs), key_dtype, target):
            return False
    by_storage: dict[int, Value] = {}
    sid = _core._storage_id

    def sample(v: Value) -> Any:
        t = _core.full(list(v.type.shape), 0, v.type.dtype, target)
        by_storage[sid(t)] = v
        return t

    traced = [[sample(t) for t in v] if isinstance(v, list) else None if v is None
              else sample(v) for v in inputs]
    calls, result = trace_decomposition(od, traced, plan, target)
    scratch = Block()
    b = Builder(scratch)

    def value_of(t: Any) -> Value:
        v = by_storage.get(sid(t))
        if v is None:
            if t.size > 1:
                raise _NotExpressible
            return b.constant(t.numpy().reshape(-1)[0].item() if t.size else 0,
                              list(t.shape), str(t.dtype))
        if tuple(t.shape) != tuple(v.type.shape) or not t.is_contiguous() or t._offset:
            raise _NotExpressible  # a strided view: no pd_op says that
        return v

    try:
        for name, args, call_attrs, out in calls:
            ins = [[value_of(t) for t in a] if isinstance(a, list) else None if a is None
                   else value_of(a) for a in args]
            res = getattr(b.pd_op, name)(*ins, **call_attrs)
            res = list(res) if isinstance(res, (list, tuple)) else [res]
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            for t, r in zip(outs, res, strict=True):
                by_storage.setdefault(sid(t), r)
        results = [value_of(t) for t in (list(result) if isinstance(result, (list, tuple))
                                         else [result])]
    except _NotExpressible:
        for new in reversed(list(scratch.ops)):
            new.drop_all_references()
        return False
    old = list(op.results)
    if info.op_def.outputs[0].variadic:  # the op's vec result feeds a builtin.split
        splits = [u for u in op.result().users if u.name == "builtin.split"]
        pairs = [(r, v) for s in splits for r, v in zip(s.results, results, strict=True)]
    else:
        pairs = list(zip(old, results, strict=True))
    if any(r.type != v.type for r, v in pairs):
        for new in reversed(list(scratch.ops)):
            new.drop_all_references()
        return False
    for new in list(scratch.ops):
        new.move_before(op)
    for r, v in pairs:
        r.replace_all_uses_with(v)
    if info.op_def.outputs[0].variadic:
        for s in [u for u in op.result().users if u.name == "builtin.split"]:
            s.erase()
    op.erase()
    return True


class _Typed:
    """What dispatch._fused_kernel_fits reads of a tensor: its dtype."""

    def __init__(self, v: Value) -> None:
        from hwport.runtime import _core

        self.dtype = _core.parse_dtype(v.type.dtype)

    @staticmethod
    def wrap(inputs: list[Any]) -> list[Any]:
        return [[_Typed(t) for t in v] if isinstance(v, list) else None if v is None
                else _Typed(v) for v in inputs]


@register_pass
class Decompose(Pass):
    name = "decompose"
    options: ClassVar[dict[str, Any]] = {"place": "", "max_iterations": 8}

    def run(self, op: Operation) -> bool:
        changed = False
        for _ in range(self.opts["max_iterations"]):
            round_changed = False
            for inner in list(op.walk())[1:]:
                if inner.name.startswith("pd_op.") and inner.parent is not None:
                    round_changed |= _decompose_op(inner, self.opts["place"])
            changed |= round_changed
            if not round_changed:
                break
        return changed
