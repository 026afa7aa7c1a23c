"""The Builder on small programs: printed IR checked line by line (FileCheck-style), result
types from InferMeta, variadic operands/results, optional operands, insertion points,
locations, and errors that name the op and the argument."""

from __future__ import annotations

import pytest

from hwport import pir


def _lines(p: pir.Program) -> list[str]:
    return [line.strip() for line in str(p).splitlines()]


def test_mlp_with_a_symbolic_batch():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", ["batch", 16], "float32")
        w1 = b.parameter("w1", [16, 32], "float32")
        b1 = b.parameter("b1", [32], "float32")
        w2 = b.parameter("w2", [32, 4], "float32")
        h = b.pd_op.relu(b.pd_op.linear(x, w1, b1))
        logits = b.pd_op.matmul(h, w2)
        probs = b.pd_op.softmax(logits, axis=-1)
        b.pd_op.mean(probs, axis=[0])
    p.verify()
    assert _lines(p)[5:] == [
        '(%4) = "pd_op.linear" (%0, %1, %2) {} : (builtin.tensor<batchx16xf32>, '
        "builtin.tensor<16x32xf32>, builtin.tensor<32xf32>) -> builtin.tensor<batchx32xf32>",
        '(%5) = "pd_op.relu" (%4) {} : (builtin.tensor<batchx32xf32>) -> '
        "builtin.tensor<batchx32xf32>",
        '(%6) = "pd_op.matmul" (%5, %3) {transpose_x:false,transpose_y:false} : '
        "(builtin.tensor<batchx32xf32>, builtin.tensor<32x4xf32>) -> "
        "builtin.tensor<batchx4xf32>",
        '(%7) = "pd_op.softmax" (%6) {axis:(Int64)-1} : (builtin.tensor<batchx4xf32>) -> '
        "builtin.tensor<batchx4xf32>",
        '(%8) = "pd_op.mean" (%7) {axis:[(Int64)0],keepdim:false} : '
        "(builtin.tensor<batchx4xf32>) -> builtin.tensor<4xf32>",
        "}"]
    assert len(p.constraints) == 0


def test_multiple_and_variadic_results_and_optional_operands():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [6, "s0"], "float16")
        values, indices = b.pd_op.topk(x, k=2, axis=0)
        parts = b.pd_op.split(x, sections=3)
        joined = b.pd_op.concat([values, *parts], axis=0)
        normed = b.pd_op.layer_norm(joined, None, None, epsilon=1e-3)
    assert (str(values.type), str(indices.type)) == ("builtin.tensor<2xs0xf16>",
                                                     "builtin.tensor<2xs0xi64>")
    assert [str(t.type) for t in parts] == ["builtin.tensor<2xs0xf16>"] * 3
    assert str(joined.type) == "builtin.tensor<8xs0xf16>"
    assert ('(%9) = "pd_op.layer_norm" (%8, <<NULL VALUE>>, <<NULL VALUE>>) '
            "{normalized_ndim:(Int64)1,epsilon:(Double)0.001} : (builtin.tensor<8xs0xf16>, "
            "<<NULL TYPE>>, <<NULL TYPE>>) -> builtin.tensor<8xs0xf16>") in _lines(p)
    assert normed.defining_op().operands[1:] == [None, None]
    p.verify()
    assert str(pir.parse(str(p))) == str(p)


def test_insertion_point_and_current_builder():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [3], "float32")
        y = b.pd_op.exp(x)
        assert pir.Builder.current() is b
        with b.at(p.block, before=y.defining_op()):
            z = b.pd_op.neg(x)
        y.defining_op().set_operand(0, z)
    assert [op.name for op in p.ops] == ["builtin.data", "pd_op.neg", "pd_op.exp"]
    p.verify()
    with pytest.raises(RuntimeError, match=r"no pir\.Builder is active"):
        pir.Builder.current()


def test_locations_are_the_callers_file_and_line():
    p = pir.Program()
    with pir.Builder(p, locations=True) as b:
        x = b.data("x", [3], "float32")
        line = __import__("inspect").currentframe().f_lineno + 1
        y = b.pd_op.exp(x)
    assert y.defining_op().loc == pir.Location("test_builder.py", line)
    assert f'loc("test_builder.py":{line})' in str(p)
    assert "loc(" not in pir.print_program(p, locations=False)


def test_errors_name_the_op_and_the_argument():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2, 3], "float32")
        with pytest.raises(AttributeError, match="pd_op has no op 'nope'"):
            b.pd_op.nope(x)
        with pytest.raises(TypeError, match=r"pd_op\.matmul: missing required operand 'y'"):
            b.pd_op.matmul(x)
        with pytest.raises(TypeError, match=r"pd_op.reshape: attribute shape expected a list "
                                            r"of int64, got str 'abc'"):
            b.pd_op.reshape(x, shape="abc")
        with pytest.raises(TypeError, match=r"pd_op\.reshape: missing required attribute"):
            b.pd_op.reshape(x)
        with pytest.raises(TypeError, match=r"pd_op.exp: unexpected argument\(s\) \['axis'\]"):
            b.pd_op.exp(x, axis=1)
        with pytest.raises(pir.InferMetaError, match=r"reshape: cannot reshape x of shape "
                                                     r"\[2, 3\]"):
            b.pd_op.reshape(x, shape=[4, 2])
        with pytest.raises(TypeError, match="operand x expected a pir Value, got int"):
            b.pd_op.exp(3)
        with pytest.raises(pir.InferMetaError, match="is larger than any device can hold"):
            b.pd_op.fill(shape=[2**31, 2**31], value=1.0)
    assert [op.name for op in p.ops] == ["builtin.data"]  # nothing half-built was left


def test_builder_records_constraints_in_the_program():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", ["s0", 4], "float32")
        y = b.data("y", ["s1", 4], "float32")
        b.pd_op.add(x, y)
        b.pd_op.reshape(x, shape=[3, -1])
    assert [str(c) for c in p.constraints] == ["s0 == s1 (add)", "4*s0 % 3 (reshape)"]

