"""constant_folding against the numpy oracle: constant subgraphs become builtin.constant ops
holding the oracle's values; anything with a non-constant input, a random op, or a result
above the size limit stays."""

from __future__ import annotations

import math

import numpy as np

from hwport import pir
from hwport.phi_ops.reference import reference
from hwport.pir.passes import PassManager
from hwport.pir.passes.constant_folding import constant_array, value_attr

from .programs import evaluate


def test_a_constant_subgraph_folds_to_the_oracles_values():
    p = pir.Program()
    with pir.Builder(p) as b:
        a = b.constant([[1.0, 2.0], [3.0, 4.0]], [2, 2], "float16")
        c = b.constant(0.5, [2], "float16")
        s = b.pd_op.sum(b.pd_op.exp(b.pd_op.add(a, c)), axis=[1], keepdim=True)
        x = b.data("x", [2, 2], "float16")
        b.output(b.pd_op.multiply(x, s), "y")
        parts = b.pd_op.split(b.pd_op.concat([a, a], axis=0), sections=2)
        b.output(parts[1], "second")
    feeds = {"x": np.arange(4, dtype=np.float16).reshape(2, 2)}
    expected = evaluate(pir.parse(str(p)), feeds)
    assert PassManager("constant_folding,dce").run(p)
    names = [op.name for op in p.ops]
    assert names.count("pd_op.multiply") == 1 and "pd_op.exp" not in names
    assert "pd_op.split" in names  # a vec result is not folded; its concat input is
    mul = next(op for op in p.ops if op.name == "pd_op.multiply")
    sums = reference("sum", [reference("exp", [reference(
        "add", [np.array([[1, 2], [3, 4]], np.float16), np.full(2, 0.5, np.float16)])])],
        {"axis": [1], "keepdim": True})
    np.testing.assert_array_equal(constant_array(mul.operand(1)), sums)
    got = evaluate(p, feeds)
    for k in expected:
        np.testing.assert_array_equal(got[k], expected[k])
    assert str(pir.parse(str(p))) == str(p)


def test_non_constant_random_and_large_ops_stay():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [3], "float32")
        b.output(b.pd_op.add(x, b.constant(1.0, [3], "float32")), "a")
        b.output(b.pd_op.uniform(shape=[3], seed=7), "u")
        b.output(b.pd_op.ones(shape=[40, 40], dtype="float32"), "big")
    text = str(p)
    assert not PassManager("constant_folding{max_elements=1024}").run(p)
    assert str(p) == text
    assert PassManager("constant_folding{max_elements=2000}").run(p)
    assert '"builtin.constant" () {value:(Double)1.0} : () -> builtin.tensor<40x40xf32>' in str(p)


def test_values_are_stored_bit_exactly():
    for arr, dtype in [(np.array([0.0, -0.0], np.float32), "float32"),
                       (np.array([math.nan, math.inf, -math.inf, 1e-45], np.float32), "float32"),
                       (np.array([[True, False]]), "bool"),
                       (np.array([-(2**63), 2**63 - 1], np.int64), "int64")]:
        attr = value_attr(arr, dtype)
        assert isinstance(attr, pir.ArrayAttr)
        p = pir.Program()
        with pir.Builder(p) as b:
            v = b.constant(attr, list(arr.shape), dtype)
        back = constant_array(pir.parse(str(p)).ops[0].result())
        assert back.dtype == arr.dtype and back.tobytes() == arr.tobytes()
    assert value_attr(np.full((2, 3), -0.0, np.float32), "float32") == pir.DoubleAttr(-0.0)
    assert isinstance(value_attr(np.array([0.0, -0.0], np.float64), "float64"), pir.ArrayAttr)
    assert v is not None
