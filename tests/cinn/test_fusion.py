"""The compiler's frontend on PIR: cinn_decompose + cinn_fusion make cinn.group regions of the
fusible ops (RMSNorm, softmax, layer_norm and an epilogue each become one group; matmul stays
outside; no group closes a cycle through an op outside it), the result verifies and round-trips
as text, and a group run as its ops (no compiler) gives the unfused program's bytes."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport import pir
from hwport.cinn_backends import register
from hwport.pir.passes import PassManager

register()


def _groups(program: pir.Program) -> list[pir.Operation]:
    return [op for op in program.block.ops if op.name == "cinn.group"]


def _inner(group: pir.Operation) -> list[str]:
    return [op.name.removeprefix("pd_op.") for op in group.regions[0].blocks[0].ops[:-1]]


def _fused(build, passes: str = "cinn_decompose,cse,dce,cinn_fusion,dce") -> pir.Program:
    p = pir.Program()
    with pir.Builder(p) as b:
        build(b)
    PassManager(passes).run(p)
    p.verify()
    assert str(pir.parse(str(p))) == str(p)  # regions print and parse back
    return p


def _rms(b):
    x = b.data("x", [8, 32], "float32")
    w = b.data("w", [32], "float32")
    b.output(b.pd_op.rms_norm(x, w, normalized_ndim=1, epsilon=1e-6), "y")


def test_rms_norm_becomes_one_group_holding_its_reduction():
    p = _fused(_rms)
    (g,) = _groups(p)
    names = _inner(g)
    assert "mean" in names or "sum" in names
    assert [op.name for op in p.block.ops if op.name.startswith("pd_op.")] == []
    # x and w, and the scalar constants (eps, ...) as 0-d inputs: one kernel for every eps
    assert [v.defining_op().name for v in g.operands].count("builtin.data") == 2
    assert all(v.defining_op().name in ("builtin.data", "builtin.constant")
               for v in g.operands)
    assert len(g.results) == 1


@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
def test_row_normalizations_become_one_group(op):
    def build(b):
        x = b.data("x", [4, 16], "float32")
        if op == "softmax":
            y = b.pd_op.softmax(x, axis=-1)
        else:
            w = b.data("w", [16], "float32")
            bias = b.data("b", [16], "float32")
            y = b.pd_op.layer_norm(x, w, bias, normalized_ndim=1, epsilon=1e-5)
        b.output(y, "y")

    p = _fused(build)
    groups = _groups(p)
    assert len(groups) == 1, str(p)
    reductions = [n for n in _inner(groups[0]) if n in ("max", "sum", "mean")]
    assert len(reductions) >= 2  # two row reductions share the group


def test_matmul_stays_outside_and_its_epilogue_fuses():
    def build(b):
        x = b.data("x", [4, 8], "float32")
        w = b.data("w", [8, 16], "float32")
        bias = b.data("b", [16], "float32")
        h = b.pd_op.matmul(x, w)
        y = b.pd_op.gelu(b.pd_op.add(h, bias))
        b.output(b.pd_op.add(y, h), "y")

    p = _fused(build)
    (g,) = _groups(p)
    assert "matmul" not in _inner(g)
    assert any(op.name == "pd_op.matmul" for op in p.block.ops)
    assert "erf" in _inner(g) or "tanh" in _inner(g)


def test_no_group_closes_a_cycle_through_an_outside_op():
    # a = exp(neg(x)); m = matmul(a, w); y = tanh(add(a, m)): add cannot join a's group
    # (m depends on that group through the matmul), so two groups, in dependency order
    def build(b):
        x = b.data("x", [4, 4], "float32")
        w = b.data("w", [4, 4], "float32")
        a = b.pd_op.exp(b.pd_op.neg(x))
        m = b.pd_op.matmul(a, w)
        b.output(b.pd_op.tanh(b.pd_op.add(a, m)), "y")

    p = _fused(build)
    g1, g2 = _groups(p)
    assert _inner(g1) == ["neg", "exp"] and _inner(g2) == ["add", "tanh"]
    order = [op.name for op in p.block.ops]
    assert order.index("pd_op.matmul") > order.index("cinn.group")
    assert order.index("pd_op.matmul") < len(order) - 1 - order[::-1].index("cinn.group")


def test_single_ops_stay_as_they_are():
    def build(b):
        x = b.data("x", [4, 4], "float32")
        b.output(b.pd_op.matmul(b.pd_op.exp(x), x), "y")

    assert _groups(_fused(build)) == []


@pytest.mark.parametrize("place", ["custom:cpu", "custom:opencl"])
def test_groups_run_unfused_give_the_unfused_programs_bytes(place, monkeypatch):
    monkeypatch.setenv("HWPORT_CINN", "0")  # the group lowers as its ops
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 32)).astype(np.float32)
    w = rng.standard_normal(32).astype(np.float32)

    def program(passes):
        p = pir.Program()
        with pir.Builder(p) as b:
            _rms(b)
        PassManager(passes).run(p)
        return p

    feeds = {"x": hwport.to_tensor(x, place=place), "w": hwport.to_tensor(w, place=place)}
    (ref,) = pir.Executor(program("cinn_decompose,cse,dce"), place).run(feeds)
    (got,) = pir.Executor(program("cinn_decompose,cse,dce,cinn_fusion,dce"), place).run(feeds)
    assert got.numpy().tobytes() == ref.numpy().tobytes()
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
