"""canonicalize: algebraic identities that hold bit for bit, as rewrite patterns run by the
greedy driver (which also erases what became dead):
  reshape(reshape(x)) -> reshape(x); a reshape to x's own type -> x;
  transpose(transpose(x, p), q) -> transpose(x, p∘q), or x when that is the identity;
  cast(x) to x's dtype -> x;
  x * 1, 1 * x, x / 1, x - 0 (integers, or +0.0), x + 0 (integers; -0.0 for floats: x + 0.0
  turns -0.0 into +0.0) -> x, when the result has x's type (no broadcast, no promotion).
A splat constant is builtin.constant with a scalar value, or pd_op fill/full/zeros/ones."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from ..core import Operation, Value
from ..dialect import COMMUTATIVE
from ..types import TensorType
from .manager import Pass, register_pass
from .rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily


def splat_value(v: Value | None) -> Any:
    """The scalar every element of v holds when v is a splat constant, else None."""
    op = None if v is None else v.defining_op()
    if op is None:
        return None
    if op.name == "builtin.constant" and not isinstance(op.attr("value"), list):
        return op.attr("value")
    return {"pd_op.fill": lambda: op.attr("value"), "pd_op.full": lambda: op.attr("fill_value"),
            "pd_op.zeros": lambda: 0, "pd_op.ones": lambda: 1}.get(op.name, lambda: None)()


def _is(value: Any, target: float, dtype: str) -> bool:
    if value is None or isinstance(value, str):
        return False
    if target == 0 and dtype.startswith(("float", "bfloat")):
        return False  # the caller decides which zero is exact
    return value == target


class ReshapeOfReshape(RewritePattern):
    root = "pd_op.reshape"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        src = op.operand(0).defining_op()
        if src is None or src.name != "pd_op.reshape":
            return False
        op.set_operand(0, src.operand(0))
        rewriter.modify_op(op)
        return True


class FoldIdentity(RewritePattern):
    """reshape to the operand's own (fully known) type; cast to its own dtype."""

    benefit = 2

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        if op.name not in ("pd_op.reshape", "pd_op.cast"):
            return False
        x = op.operand(0)
        t = x.type
        if not isinstance(t, TensorType) or op.result().type != t or -1 in t.shape:
            return False
        rewriter.replace_op(op, [x])
        return True


def _perm(op: Operation, ndim: int) -> list[int]:
    p = op.attr("perm")
    return list(range(ndim))[::-1] if p is None else [a % max(ndim, 1) for a in p]


class TransposeOfTranspose(RewritePattern):
    root = "pd_op.transpose"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        src = op.operand(0).defining_op()
        if src is None or src.name != "pd_op.transpose":
            return False
        x = src.operand(0)
        ndim = x.type.ndim
        inner, outer = _perm(src, ndim), _perm(op, ndim)
        composed = [inner[j] for j in outer]
        if composed == list(range(ndim)):
            rewriter.replace_op(op, [x])
        else:
            op.set_operand(0, x)
            op.set_attr("perm", composed)
            rewriter.modify_op(op)
        return True


class ArithmeticIdentity(RewritePattern):
    """x * 1, x / 1, x - 0, x + 0 (see the module docstring for which zeros)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        if op.name not in ("pd_op.multiply", "pd_op.divide", "pd_op.add", "pd_op.subtract"):
            return False
        out = op.result().type
        order = [(0, 1), (1, 0)] if op.has_trait(COMMUTATIVE) else [(0, 1)]
        for keep, const in order:
            x, c = op.operand(keep), splat_value(op.operand(const))
            if x is None or x.type != out or c is None or (isinstance(c, bool) and \
                    op.name != "pd_op.multiply"):
                continue
            floating = out.dtype.startswith(("float", "bfloat"))
            if op.name in ("pd_op.multiply", "pd_op.divide"):
                hit = _is(c, 1, out.dtype)
            elif op.name == "pd_op.add":
                hit = (c == 0 and math.copysign(1.0, c) < 0) if floating and isinstance(
                    c, float) else (not floating and c == 0)
            else:  # x - (+0)
                hit = c == 0 and (not floating or (isinstance(c, int) or math.copysign(
                    1.0, c) > 0))
            if hit:
                rewriter.replace_op(op, [x])
                return True
        return False


CANONICALIZATION_PATTERNS: list[type[RewritePattern]] = [
    FoldIdentity, ReshapeOfReshape, TransposeOfTranspose, ArithmeticIdentity]


@register_pass
class Canonicalize(Pass):
    name = "canonicalize"
    options: ClassVar[dict[str, Any]] = {"max_iterations": 10}

    def run(self, op: Operation) -> bool:
        return apply_patterns_greedily(op, [p() for p in CANONICALIZATION_PATTERNS],
                                       self.opts["max_iterations"])
