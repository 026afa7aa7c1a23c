"""fuse: DRR fusion patterns (pir/drr.py), each a source pattern, constraints and a result.
  rms_norm_fusion   x * rsqrt(mean(pow(x, 2), [-1], keepdim) + eps) * w  =>  rms_norm(x, w)
  matmul_add_to_linear   matmul(x, w) + b  =>  linear(x, w, b)
  attention_recognition  matmul(softmax(matmul(q, k^T) * scale, -1), v)
                         =>  scaled_dot_product_attention(q, k, v, scale=scale)"""

from __future__ import annotations

from typing import ClassVar

from .. import drr
from ..core import Operation
from .manager import Pass, register_pass
from .rewrite import apply_patterns_greedily


def _last_axis(axis: list[int], ndim: int) -> bool:
    return axis in ([-1], [ndim - 1])


def rms_norm_fusion() -> drr.Pattern:
    p = drr.Pattern("rms_norm_fusion")
    s, r = p.src, p.res
    x = s.tensor("x")
    ms = s.pd_op.mean(s.pd_op.pow(x, s.constant("two")), axis=s.attr("axis"), keepdim=True)
    inv = s.pd_op.rsqrt(s.pd_op.add(ms, s.constant("eps")))
    s.output(s.pd_op.multiply(s.pd_op.multiply(x, inv), s.tensor("w")))
    p.constrain(lambda m: m["two"] == 2 and _last_axis(m["axis"], m.type("x").ndim))
    p.constrain(lambda m: m.type("w").shape == m.type("x").shape[-1:])
    r.output(r.pd_op.rms_norm(r.tensor("x"), r.tensor("w"), normalized_ndim=1,
                              epsilon=r.attr(lambda m: float(m["eps"]))))
    return p


def matmul_add_to_linear() -> drr.Pattern:
    p = drr.Pattern("matmul_add_to_linear")
    s, r = p.src, p.res
    mm = s.pd_op.matmul(s.tensor("x"), s.tensor("w"), transpose_x=False, transpose_y=False)
    s.output(s.pd_op.add(mm, s.tensor("b")))
    p.constrain(lambda m: m.type("w").ndim == 2 and m.type("b").ndim == 1)
    r.output(r.pd_op.linear(r.tensor("x"), r.tensor("w"), r.tensor("b")))
    return p


def attention_recognition() -> drr.Pattern:
    p = drr.Pattern("attention_recognition")
    s, r = p.src, p.res
    scores = s.pd_op.matmul(s.tensor("q"), s.tensor("k"), transpose_x=False, transpose_y=True)
    probs = s.pd_op.softmax(s.pd_op.multiply(scores, s.constant("scale")), axis=s.attr("axis"))
    s.output(s.pd_op.matmul(probs, s.tensor("v"), transpose_x=False, transpose_y=False))
    p.constrain(lambda m: _last_axis([m["axis"]], m.type("q").ndim))
    r.output(r.pd_op.scaled_dot_product_attention(
        r.tensor("q"), r.tensor("k"), r.tensor("v"), None,
        scale=r.attr(lambda m: float(m["scale"]))))
    return p


FUSIONS = {"rms_norm_fusion": rms_norm_fusion, "matmul_add_to_linear": matmul_add_to_linear,
           "attention_recognition": attention_recognition}


@register_pass
class Fuse(Pass):
    """Applies the DRR fusions (all, or the comma-free `only` one) to a fixpoint."""

    name = "fuse"
    options: ClassVar[dict[str, object]] = {"only": ""}

    def run(self, op: Operation) -> bool:
        names = [self.opts["only"]] if self.opts["only"] else list(FUSIONS)
        return apply_patterns_greedily(op, [FUSIONS[n]().compile() for n in names])
