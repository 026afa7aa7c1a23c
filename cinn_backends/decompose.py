"""cinn_decompose: the decomposition the fusion compiler starts from. Every composite becomes
the primitives of its decomposition (pir/passes/decompose.py, to a fixpoint), also where the
place has a hand-written kernel for it: the compiler fuses the primitives with their
neighbours instead. Optimizer updates stay whole: the executor writes them over the
parameters they update (their kernel contract), and they fuse with nothing."""

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
        return changed
