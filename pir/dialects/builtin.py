"""builtin: the module, program inputs (data), outputs (shadow_output) and parameters,
constants, and combine/split of variadic values (a vec[...] operand of concat, the vec[...]
result of split)."""

from __future__ import annotations

from ..attributes import ArrayAttr, BoolAttr, DoubleAttr, Int64Attr
from ..core import Operation
from ..dialect import NO_TERMINATOR, PURE, AttrSpec, Dialect, OperandSpec, OpInfo, register_dialect
from ..types import TensorType, VectorType

DIALECT = register_dialect(Dialect("builtin"))
_ONE = (OperandSpec("out"),)


def _verify_combine(op: Operation) -> list[str]:
    expected = VectorType(tuple(v.type if v is not None else None for v in op.operands))
    got = op.results[0].type if op.num_results == 1 else None
    if op.num_results != 1 or got != expected:
        return [f"expects one result of type {expected}, got "
                f"{', '.join(str(r.type) for r in op.results) or 'none'}"]
    return []


def _verify_split(op: Operation) -> list[str]:
    if op.num_operands != 1 or not isinstance(getattr(op.operand(0), "type", None), VectorType):
        return ["expects one vec[...] operand"]
    elements = op.operand(0).type.types
    got = tuple(r.type for r in op.results)
    if got != elements:
        return [f"results must be the vector's {len(elements)} element types "
                f"({', '.join(map(str, elements))}), got ({', '.join(map(str, got))})"]
    return []


def _shape_of(a: object) -> tuple[int, ...] | None:
    if isinstance(a, ArrayAttr):
        inner = [_shape_of(e) for e in a.elements]
        if any(s is None for s in inner) or len(set(inner)) > 1:
            return None
        return (len(a.elements), *(inner[0] if inner else ()))
    if isinstance(a, (BoolAttr, Int64Attr, DoubleAttr)):
        return ()
    return None


def _verify_constant(op: Operation) -> list[str]:
    t = op.results[0].type
    value = op.attributes.get("value")
    shape = _shape_of(value)
    if not isinstance(t, TensorType) or not t.is_static:
        return [f"the result must be a static builtin.tensor, got {t}"]
    if shape is None or (shape != () and shape != t.shape):
        return [f"value {value} (shape {list(shape) if shape is not None else '?'}) does not "
                f"fit {t} (a scalar fills it; a nested array must have its shape)"]
    return []


for _info in (
    OpInfo("builtin.module", operands=(), results=(), num_regions=1,
           traits=frozenset({NO_TERMINATOR})),
    OpInfo("builtin.data", results=_ONE, attrs=(AttrSpec("name", "str"),)),
    OpInfo("builtin.parameter", results=_ONE, attrs=(AttrSpec("parameter_name", "str"),)),
    # a program output (it keeps its operand alive: dce and friends never erase it)
    OpInfo("builtin.shadow_output", operands=(OperandSpec("x"),), results=(),
           attrs=(AttrSpec("output_name", "str"),)),
    OpInfo("builtin.constant", results=_ONE, attrs=(AttrSpec("value", "any"),),
           traits=frozenset({PURE}), verify=_verify_constant),
    OpInfo("builtin.combine", operands=None, results=_ONE, traits=frozenset({PURE}),
           verify=_verify_combine),
    OpInfo("builtin.split", operands=(OperandSpec("x", variadic=True),), results=None,
           traits=frozenset({PURE}), verify=_verify_split),
):
    DIALECT.register(_info)
