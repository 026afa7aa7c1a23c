"""Verifier negatives: each message names the op, its position and the mismatch."""

from __future__ import annotations

import pytest

from hwport import pir


def _mlp() -> tuple[pir.Program, dict[str, pir.Value]]:
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", ["s0", 4], "float32")
        w = b.parameter("w", [4, 8], "float32")
        h = b.pd_op.matmul(x, w)
        y = b.pd_op.relu(h)
    return p, {"x": x, "w": w, "h": h, "y": y}


def _errors(p: pir.Program) -> list[str]:
    with pytest.raises(pir.VerificationError) as info:
        p.verify()
    return info.value.errors


def test_a_valid_program_verifies():
    p, _ = _mlp()
    p.verify()


def test_wrong_result_type():
    p, v = _mlp()
    v["h"].type = pir.tensor(["s0", 9], "float32")
    assert _errors(p) == [
        'op 2 "pd_op.matmul": result 0 has type builtin.tensor<s0x9xf32> but InferMeta gives '
        "builtin.tensor<s0x8xf32>",
        # relu's own result no longer matches its (changed) operand
        'op 3 "pd_op.relu": result 0 has type builtin.tensor<s0x8xf32> but InferMeta gives '
        "builtin.tensor<s0x9xf32>"]


def test_wrong_operand_types():
    p, v = _mlp()
    v["x"].type = pir.tensor(["s0", 4], "int8")
    v["w"].type = pir.tensor([4, 8], "int8")
    assert _errors(p) == [
        'op 2 "pd_op.matmul": result 0 has type builtin.tensor<s0x8xf32> but InferMeta gives '
        "builtin.tensor<s0x8xi8>"]
    v["x"].type = pir.tensor(["s0", 5], "int8")
    (e,) = _errors(p)
    assert e == ('op 2 "pd_op.matmul": InferMeta refuses the operands: matmul: inner '
                 "dimensions differ: x [s0, 5], y [4, 8] (5 vs 4)")
    v["x"].type = pir.VectorType((pir.tensor([2], "int8"),))
    (e,) = _errors(p)
    assert e == ('op 2 "pd_op.matmul": operand 0 (x) must be a builtin.tensor, got '
                 "vec[builtin.tensor<2xi8>]")


def test_use_before_def():
    p, v = _mlp()
    relu = v["y"].defining_op()
    relu.move_before(v["h"].defining_op())
    (e,) = _errors(p)
    assert e == ('op 2 "pd_op.relu": operand 0 (result 0 of op 3 "pd_op.matmul") is used '
                 "before its definition")


def test_use_of_a_value_defined_inside_another_region():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        c = b.data("c", [], "bool")
        inner = []

        def then():
            inner.append(b.pd_op.exp(x))
            return inner

        b.cf.if_(c, then, lambda: [x])
        b.pd_op.neg(inner[0])
    (e,) = _errors(p)
    assert e.startswith('op 3 "pd_op.neg": operand 0 (result 0 of op 0 "pd_op.exp" (region 0 '
                        'of op 2 "cf.if")) is used before its definition')


def test_missing_terminator():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        c = b.data("c", [], "bool")
        b.cf.if_(c, lambda: [x], lambda: [x])
    if_op = p.ops[2]
    if_op.regions[1].blocks[0].ops[-1].erase()
    (e,) = _errors(p)
    assert e == ('op 2 "cf.if": block 0 of region 1 is empty; it must end with a terminator '
                 "(cf.yield)")


def test_terminator_not_last_and_yield_types():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        c = b.data("c", [], "bool")
        b.cf.if_(c, lambda: [x], lambda: [b.pd_op.cast(x, dtype="float64")])
    then_block = p.ops[2].regions[0].blocks[0]
    with pir.Builder(then_block) as b2:
        b2.pd_op.exp(x)
    errors = _errors(p)
    assert ('op 0 "cf.yield" (region 0 of op 2 "cf.if"): a terminator must end its block, '
            "but 1 op(s) follow it") in errors
    assert ('op 2 "cf.if": block 0 of region 0 ends with "pd_op.exp"; it must end with a '
            "terminator (cf.yield)") in errors
    assert ('op 2 "cf.if": the else region yields (builtin.tensor<2xf64>) but the results '
            "are (builtin.tensor<2xf32>)") in errors


def test_attribute_and_operand_specs():
    p, v = _mlp()
    mm = v["h"].defining_op()
    mm.set_attr("transpose_x", 1)
    mm.set_attr("alpha", 2.0)
    relu = v["y"].defining_op()
    relu.set_operands([v["h"], v["h"]])
    errors = _errors(p)
    assert 'op 2 "pd_op.matmul": attribute transpose_x must be a bool, got (Int64)1' in errors
    assert ('op 2 "pd_op.matmul": unknown attribute \'alpha\' (it takes transpose_x, '
            "transpose_y)") in errors
    assert 'op 3 "pd_op.relu": expects 1 operand(s) (x), got 2' in errors


def test_unregistered_op_erased_value_and_missing_required_attr():
    p, v = _mlp()
    with pir.Builder(p) as b:
        b.create("pd_op.no_such_op", [v["y"]], [v["y"].type])
        b.create("pd_op.reshape", [v["y"]], [pir.tensor([-1], "float32")])
    detached = pir.Operation.create("pd_op.exp", [v["x"]], [v["x"].type])
    with pir.Builder(p) as b:
        b.pd_op.neg(detached.result())
    errors = _errors(p)
    assert "op 4 \"pd_op.no_such_op\": unregistered op 'pd_op.no_such_op'" in errors
    assert 'op 5 "pd_op.reshape": attribute shape is required' in errors
    assert ('op 6 "pd_op.neg": operand 0 (a value) is not defined in the program (erased or '
            "never inserted)") in errors


def test_unknown_dims_match_any_dim():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [None, 4], "float32")
        y = b.pd_op.exp(x)
    y.type = pir.tensor([7, 4], "float32")  # more precise than InferMeta: accepted
    p.verify()
    y.type = pir.tensor([7, 5], "float32")
    (e,) = _errors(p)
    assert "result 0 has type builtin.tensor<7x5xf32> but InferMeta gives " \
           "builtin.tensor<-1x4xf32>" in e
