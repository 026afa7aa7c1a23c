"""DRR: the fusion patterns fire on matching programs (and give the numbers the unfused ops
give, by the numpy oracle) and not on near-misses."""

from __future__ import annotations

import numpy as np
import pytest

from hwport import pir
from hwport.pir import drr
from hwport.pir.passes import PassManager
from hwport.pir.passes.fusions import FUSIONS

from .programs import evaluate


def _names(p: pir.Program) -> list[str]:
    return [op.name for op in p.ops]


def _fuse(p: pir.Program) -> pir.Program:
    before = pir.parse(str(p))
    PassManager("fuse,dce").run(p)
    return before


def _rms(b, x, w, *, exponent=2.0, axis=(-1,), eps=None, swap=False):
    two = b.constant(exponent, [], "float32")
    ms = b.pd_op.mean(b.pd_op.pow(x, two), axis=list(axis), keepdim=True)
    eps = b.pd_op.full(shape=[1], fill_value=1e-5, dtype="float32") if eps is None else eps
    inv = b.pd_op.rsqrt(b.pd_op.add(eps, ms) if swap else b.pd_op.add(ms, eps))
    y = b.pd_op.multiply(inv, x) if swap else b.pd_op.multiply(x, inv)
    return b.pd_op.multiply(y, w), ms


def _rms_program(**kw):
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [3, 8], "float32")
        w = b.parameter("w", [8], "float32")
        y, ms = _rms(b, x, w, **{k: v for k, v in kw.items() if k != "extra_use"})
        b.output(y, "y")
        if kw.get("extra_use"):
            b.output(ms, "ms")
    return p


FEEDS = {"x": np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32),
         "w": np.random.default_rng(1).standard_normal(8).astype(np.float32)}


@pytest.mark.parametrize("swap", [False, True])
def test_rms_norm_fusion_fires_and_keeps_the_numbers(swap):
    p = _rms_program(swap=swap)
    before = _fuse(p)
    assert _names(p) == ["builtin.data", "builtin.parameter", "pd_op.rms_norm",
                         "builtin.shadow_output"]
    fused = p.ops[2]
    assert fused.attr("epsilon") == pytest.approx(1e-5) and fused.attr("normalized_ndim") == 1
    p.verify()
    np.testing.assert_allclose(evaluate(p, FEEDS)["y"], evaluate(before, FEEDS)["y"],
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("near_miss", [
    {"exponent": 3.0},  # another exponent constant
    {"axis": (0,)},  # the mean over another axis
    {"extra_use": True},  # the mean is also a program output
])
def test_rms_norm_fusion_leaves_near_misses(near_miss):
    p = _rms_program(**near_miss)
    text = str(p)
    _fuse(p)
    assert "pd_op.rms_norm" not in str(p)
    assert str(p) == text  # nothing was dead, nothing changed


def _rms_eps_program(eps_value, eps_shape):
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [3, 8], "float32")
        eps = b.constant(eps_value, eps_shape, "float32")
        y, _ = _rms(b, x, b.parameter("w", [8], "float32"), eps=eps)
        b.output(y, "y")
    return p


def test_rms_norm_fusion_takes_the_programs_eps_value():
    p = _rms_eps_program(1e-3, [])  # another scalar eps: fused with that epsilon
    before = _fuse(p)
    (fused,) = [op for op in p.ops if op.name == "pd_op.rms_norm"]
    assert fused.attr("epsilon") == pytest.approx(1e-3)
    np.testing.assert_allclose(evaluate(p, FEEDS)["y"], evaluate(before, FEEDS)["y"],
                               rtol=1e-6, atol=1e-6)


def test_rms_norm_fusion_leaves_an_eps_that_is_not_one_scalar():
    # a per-column eps constant: no single epsilon attribute gives these numbers
    p = _rms_eps_program([1e-5] * 7 + [1e-1], [8])
    text = str(p)
    _fuse(p)
    assert "pd_op.rms_norm" not in str(p) and str(p) == text


def test_rms_norm_fusion_needs_a_constant_eps():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [3, 8], "float32")
        y, _ = _rms(b, x, b.parameter("w", [8], "float32"), eps=b.data("eps", [1], "float32"))
        b.output(y, "y")
    _fuse(p)
    assert "pd_op.rms_norm" not in str(p)


def _linear_program(transpose_y=False, bias_shape=(4,), swap=False, rows="s0"):
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [rows, 3], "float32")
        w = b.data("w", [4, 3] if transpose_y else [3, 4], "float32")
        bias = b.data("b", list(bias_shape), "float32")
        mm = b.pd_op.matmul(x, w, transpose_y=transpose_y)
        b.output(b.pd_op.add(bias, mm) if swap else b.pd_op.add(mm, bias), "y")
    return p


@pytest.mark.parametrize("swap", [False, True])
def test_matmul_add_becomes_linear(swap):
    p = _linear_program(swap=swap)
    _fuse(p)
    assert _names(p)[3:] == ["pd_op.linear", "builtin.shadow_output"]
    assert str(p.ops[3].result().type) == "builtin.tensor<s0x4xf32>"
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((5, 3)).astype(np.float32),
             "w": rng.standard_normal((3, 4)).astype(np.float32),
             "b": rng.standard_normal(4).astype(np.float32)}
    static = _linear_program(swap=swap, rows=5)
    static_before = pir.parse(str(static))
    _fuse(static)
    assert "pd_op.linear" in str(static)
    np.testing.assert_allclose(evaluate(static, feeds)["y"], evaluate(static_before, feeds)["y"],
                               rtol=1e-6)


@pytest.mark.parametrize("kw", [{"transpose_y": True}, {"bias_shape": (1, 4)},
                                {"bias_shape": (1,)}])
def test_matmul_add_near_misses_stay(kw):
    p = _linear_program(**kw)
    text = str(p)
    _fuse(p)
    assert str(p) == text


def _attention_program(axis=-1, extra_use=False, L="L", S="S"):
    p = pir.Program()
    with pir.Builder(p) as b:
        q = b.data("q", [2, L, 8], "float32")
        k = b.data("k", [2, S, 8], "float32")
        v = b.data("v", [2, S, 16], "float32")
        scores = b.pd_op.matmul(q, k, transpose_y=True)
        scaled = b.pd_op.multiply(scores, b.constant(0.125, [], "float32"))
        out = b.pd_op.matmul(b.pd_op.softmax(scaled, axis=axis), v)
        b.output(out, "out")
        if extra_use:
            b.output(scores, "scores")
    return p


def test_softmax_of_scaled_matmul_is_recognized_as_attention():
    p = _attention_program()
    before = _fuse(p)
    assert _names(p)[3:] == ["pd_op.scaled_dot_product_attention", "builtin.shadow_output"]
    attn = p.ops[3]
    assert attn.attr("scale") == 0.125 and attn.operands[3] is None
    assert str(attn.result().type) == "builtin.tensor<2xLx16xf32>"
    rng = np.random.default_rng(3)
    feeds = {n: rng.standard_normal(s).astype(np.float32)
             for n, s in (("q", (2, 5, 8)), ("k", (2, 6, 8)), ("v", (2, 6, 16)))}
    static = _attention_program(L=5, S=6)
    static_before = _fuse(static)
    assert "pd_op.scaled_dot_product_attention" in str(static) and before is not None
    np.testing.assert_allclose(evaluate(static, feeds)["out"],
                               evaluate(static_before, feeds)["out"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [{"axis": 1}, {"extra_use": True}])
def test_attention_near_misses_stay(kw):
    p = _attention_program(**kw)
    text = str(p)
    _fuse(p)
    assert str(p) == text


def test_the_fusion_patterns_are_short_and_the_pass_takes_one():
    import inspect

    for name, make in FUSIONS.items():
        assert len(inspect.getsource(make).splitlines()) <= 20, name
    p = _rms_program()
    PassManager("fuse{only=matmul_add_to_linear}").run(p)
    assert "pd_op.rms_norm" not in str(p)
    PassManager("fuse{only=rms_norm_fusion}").run(p)
    assert "pd_op.rms_norm" in str(p)


def test_a_pattern_needs_both_sides_and_a_refused_result_leaves_no_trace():
    with pytest.raises(ValueError, match=r"give src\.output"):
        drr.Pattern("empty").compile()
    # exp(x) => reshape(x, shape=[7]): InferMeta refuses, nothing changes
    pat = drr.Pattern("bad")
    pat.src.output(pat.src.pd_op.exp(pat.src.tensor("x")))
    pat.res.output(pat.res.pd_op.reshape(pat.res.tensor("x"), shape=[7]))
    p = pir.Program()
    with pir.Builder(p) as b:
        b.output(b.pd_op.exp(b.data("x", [2, 3], "float32")), "y")
    text = str(p)
    from hwport.pir.passes import apply_patterns_greedily

    assert not apply_patterns_greedily(p.module, [pat.compile()])
    assert str(p) == text
