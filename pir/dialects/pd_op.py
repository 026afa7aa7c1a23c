"""pd_op: one op per entry of phi_ops/ops.yaml, generated when this module is imported (an op
added to ops.yaml is here with no other edit). Operands, results and typed attributes come
from the entry; traits from its category and infer-meta family (Commutative from the numpy
oracle: the reference gives the same result with x and y swapped); InferMeta through the op
library's rules (pir/infer.py); Decompose and VJP name the entry's functions for later passes."""

from __future__ import annotations

import warnings

import numpy as np

from hwport.phi_ops.schema import REQUIRED as YAML_REQUIRED
from hwport.phi_ops.schema import OpDef, load_ops

from ..dialect import (
    BROADCAST,
    COMMUTATIVE,
    ELEMENTWISE,
    INJECTIVE,
    PURE,
    REDUCTION,
    REQUIRED,
    SAME_SHAPE,
    AttrSpec,
    Dialect,
    OperandSpec,
    OpInfo,
    register_dialect,
)
from ..eager_attrs import COUNT_ATTRS
from ..infer import infer_result_types

_ELEMENTWISE_CATEGORIES = {"unary", "binary", "ternary"}
_INJECTIVE_RULES = {"gather", "take_along_axis"}  # index ops that pick one input element


def _commutative(op: OpDef) -> bool:
    """The oracle's answer: op(x, y) == op(y, x) on values where order matters for any
    non-commutative op of the library (differences, quotients, powers, comparisons)."""
    from hwport.phi_ops.reference import reference

    dtype = next((d for d in ("float64", "int32", "bool") if d in op.dtypes), op.dtypes[0])
    a = np.array([3, 2, 5, 1, 0, 1], dtype=dtype)
    b = np.array([2, 4, 1, 3, 1, 1], dtype=dtype)
    defaults = {k.name: k.default for k in op.attrs}

    def run(x: np.ndarray, y: np.ndarray) -> object:
        if op.reference.startswith("ref:"):
            return reference(op.name, [x, y], {})
        # the entry's numpy expression, as the oracle evaluates it (names: np, inputs, attrs)
        return eval(op.reference, {"np": np}, {**defaults, "x": x, "y": y})

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        xy, yx = run(a, b), run(b, a)
    return bool(np.array_equal(np.asarray(xy), np.asarray(yx)))


def traits_of(op: OpDef) -> frozenset[str]:
    traits = set()
    if op.category != "random":  # a draw is an effect a program states, not a value to merge
        traits.add(PURE)
    if op.category in _ELEMENTWISE_CATEGORIES:
        traits.add(ELEMENTWISE)
    if op.infer_meta in ("binary", "where"):
        traits.add(BROADCAST)
    if op.category == "reduction":
        traits.add(REDUCTION)
    if op.category == "shape" or op.infer_meta in _INJECTIVE_RULES:
        traits.add(INJECTIVE)
    if op.infer_meta == "unary" and len(op.inputs) == 1 and len(op.outputs) == 1:
        traits.add(SAME_SHAPE)
    if op.infer_meta == "binary" and len(op.inputs) == 2 and _commutative(op):
        traits.add(COMMUTATIVE)
    return frozenset(traits)


def _attr_specs(op: OpDef) -> tuple[AttrSpec, ...]:
    """ops.yaml's attributes; an ints attribute eager also takes as a count gets the count as
    a companion int attribute after them (pir/eager_attrs.py), either of the two optional."""
    ints, count = COUNT_ATTRS.get(op.name, (None, None))
    specs = [AttrSpec(a.name, a.type, [] if a.name == ints
                      else REQUIRED if a.default is YAML_REQUIRED else a.default)
             for a in op.attrs]
    return tuple(specs) + ((AttrSpec(count, "int", 0),) if count else ())


def op_info(op: OpDef) -> OpInfo:
    return OpInfo(
        name=f"pd_op.{op.name}",
        operands=tuple(OperandSpec(i.name, i.optional, i.variadic) for i in op.inputs),
        results=tuple(OperandSpec(o.name, o.optional, o.variadic) for o in op.outputs),
        attrs=_attr_specs(op),
        traits=traits_of(op),
        interfaces={"InferMeta": infer_result_types, "Decompose": op.decompose,
                    "VJP": op.backward},
        op_def=op,
    )


def generate(ops: dict[str, OpDef]) -> Dialect:
    """The pd_op dialect of a loaded ops.yaml."""
    dialect = Dialect("pd_op")
    for op in ops.values():
        dialect.register(op_info(op))
    return dialect


DIALECT = register_dialect(generate(load_ops()))
