"""constant_folding: a Pure pd_op op whose operands are all constants (builtin.constant, or
builtin.combine of them) and whose results are static tensors of at most `max_elements`
elements becomes builtin.constant ops holding what the numpy oracle (phi_ops.reference)
computes — correctly rounded from float64 for most ops, so a device kernel's result may differ
within the op's ops.yaml tolerance. A result whose elements are all the same (bit for bit) is
stored as a scalar; others as a nested array. Random ops (not Pure) and ops with a vec[...]
result are left alone."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ..attributes import ArrayAttr, Attribute, BoolAttr, DoubleAttr, Int64Attr
from ..builder import Builder
from ..core import Operation, Value
from ..dialect import PURE
from ..eager_attrs import given_attrs
from ..types import TensorType
from .manager import Pass, register_pass


def constant_array(v: Value | None) -> np.ndarray | list[np.ndarray] | None:
    """The array a constant value holds (a list for builtin.combine of constants)."""
    from hwport.phi_ops.promotion import np_dtype

    op = None if v is None else v.defining_op()
    if op is None:
        return None
    if op.name == "builtin.combine":
        parts = [constant_array(x) for x in op.operands]
        return None if any(p is None or isinstance(p, list) for p in parts) else parts
    t = v.type
    if op.name != "builtin.constant" or not isinstance(t, TensorType) or not t.is_static:
        return None
    value = op.attr("value")
    dtype = np_dtype(t.dtype)
    if isinstance(value, list):
        return np.array(value, dtype=np.float64 if dtype.kind == "V" else None).astype(dtype)
    return np.full(t.shape, value).astype(dtype)


def _scalar(x: Any, dtype: str) -> Attribute:
    if dtype == "bool":
        return BoolAttr(bool(x))
    if dtype.startswith(("float", "bfloat")):
        return DoubleAttr(float(x))
    return Int64Attr(int(x))


def value_attr(arr: np.ndarray, dtype: str) -> Attribute:
    """A scalar when every element has the same bits, else a nested array."""
    flat = arr.reshape(-1)
    if flat.size and (flat.view(np.uint8).reshape(flat.size, -1) ==
                      flat[:1].view(np.uint8)).all():
        return _scalar(flat[0], dtype)

    def nest(a: np.ndarray) -> Attribute:
        if a.ndim == 0:
            return _scalar(a[()], dtype)
        return ArrayAttr(tuple(nest(a[i]) for i in range(a.shape[0])))

    return nest(arr)


def _foldable(op: Operation, limit: int) -> bool:
    if not op.name.startswith("pd_op.") or not op.has_trait(PURE) or op.regions:
        return False
    return all(isinstance(r.type, TensorType) and r.type.is_static
               and int(np.prod(r.type.shape)) <= limit for r in op.results)


@register_pass
class ConstantFolding(Pass):
    name = "constant_folding"
    options: ClassVar[dict[str, Any]] = {"max_elements": 1024}

    def run(self, op: Operation) -> bool:
        from hwport.phi_ops.reference import reference

        changed = False
        for inner in list(op.walk()):
            if inner is op or inner.erased or not _foldable(inner, self.opts["max_elements"]):
                continue
            inputs = [constant_array(v) for v in inner.operands]
            if any(a is None and v is not None for a, v in zip(inputs, inner.operands,
                                                               strict=True)):
                continue
            name = inner.name.split(".", 1)[1]
            attrs = given_attrs(name, {k: a.value for k, a in inner.attributes.items()})
            out = reference(name, inputs, attrs)
            arrays = out if isinstance(out, tuple) else (out,)
            b = Builder(inner.parent)
            b.before = inner
            for r, arr in zip(inner.results, arrays, strict=True):
                const = b.create("builtin.constant", [], [r.type],
                                 {"value": value_attr(np.asarray(arr), r.type.dtype)})
                r.replace_all_uses_with(const.result())
            inner.erase()
            changed = True
        return changed
