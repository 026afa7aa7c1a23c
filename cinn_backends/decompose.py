"""cinn_decompose: the decomposition the fusion compiler starts from. Every composite becomes
the primitives of its decomposition (pir/passes/decompose.py, to a fixpoint), also where the
place has a hand-written kernel for it: the compiler fuses the primitives with their
neighbours instead. Optimizer updates stay whole: the executor writes them over the
parameters they update (their kernel contract), and they fuse with nothing.

Then pow(x, 2) with a constant exponent becomes multiply(x, x): a fused kernel reads scalar
constants as arguments (one kernel for every value), so it could not tell the square from a
general power, which does not vectorize."""

from __future__ import annotations

from typing import Any, ClassVar

from hwport.pir.core import Operation
from hwport.pir.passes.decompose import _decompose_op
from hwport.pir.passes.manager import Pass, register_pass

KEPT_CATEGORIES = frozenset({"optimizer", "random"})


@register_pass
class CinnDecompose(Pass):
    name = "cinn_decompose"
    options: ClassVar[dict[str, Any]] = {"max_iterations": 8}

    def run(self, op: Operation) -> bool:
        changed = False
        for _ in range(self.opts["max_iterations"]):
            round_changed = False
            for inner in list(op.walk())[1:]:
                if not inner.name.startswith("pd_op.") or inner.parent is None:
                    continue
                od = inner.info.op_def if inner.info is not None else None
                if od is None or od.category in KEPT_CATEGORIES:
                    continue
                round_changed |= _decompose_op(inner, "")
            changed |= round_changed
            if not round_changed:
                break
        for inner in list(op.walk())[1:]:
            if inner.name == "pd_op.pow" and inner.parent is not None:
                changed |= _square(inner)
        return changed


def _constant(v: object) -> float | None:
    d = getattr(v, "defining_op", lambda: None)()
    if d is None or d.name != "builtin.constant" or tuple(v.type.shape) not in ((), (1,)):
        return None
    value = d.attr("value")
    return float(value) if isinstance(value, int | float) else None


def _square(op: Operation) -> bool:
    x = op.operand(0)
    if _constant(op.operand(1)) != 2.0 or x.type != op.result().type:
        return False
    mul = Operation.create("pd_op.multiply", [x, x], [op.result().type])
    op.parent.insert(op.parent.index(op), mul)
    op.result().replace_all_uses_with(mul.result())
    op.erase()
    return True
