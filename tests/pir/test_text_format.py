"""The text format round-trips: parse(str(p)) prints identically and verifies, for a program
of every op of ops.yaml (static and symbolic shapes), every attribute kind, nested regions and
locations."""

from __future__ import annotations

import math

import pytest

from hwport import pir
from hwport.phi_ops import sample_inputs

from .programs import OPS, build_case, first_case


def _round_trip(p: pir.Program) -> str:
    text = str(p)
    q = pir.parse(text)
    assert str(q) == text
    q.verify()
    return text


def _symbolic_case(op: str) -> sample_inputs.Case | None:
    """A case whose first tensor input has a leading dim >= 2 (it becomes s0)."""
    for case in sample_inputs.cases_for(op, OPS[op].dtypes[0]):
        first = next((a[0] if isinstance(a, list) else a for a in case.inputs
                      if a is not None), None)
        if first is not None and first.ndim and first.shape[0] >= 2 and not case.large:
            return case
    return None


def test_every_op_of_ops_yaml_round_trips():
    covered = set()
    for name in OPS:
        p, _ = build_case(first_case(name))
        text = _round_trip(p)
        assert f'"pd_op.{name}"' in text
        p.verify()
        covered.add(name)
    assert covered == set(OPS)


def test_every_op_with_a_tensor_input_round_trips_with_a_symbolic_dim():
    symbolic = []
    for name, op in OPS.items():
        case = _symbolic_case(name)
        if case is None:
            assert not op.inputs or op.name in ("embedding",), name  # creation ops only
            continue
        first = next(a[0] if isinstance(a, list) else a for a in case.inputs if a is not None)
        lead = first.shape[0]
        p, _ = build_case(case, lambda _n, shape, lead=lead: [
            "s0" if d == lead else d for d in shape])
        text = _round_trip(p)
        assert "s0" in text
        symbolic.append(name)
    assert len(symbolic) >= len([o for o in OPS.values() if o.inputs]) - 1


def test_every_attribute_kind_round_trips():
    values = {
        "b": True, "b2": False, "i": -(2**63), "i2": 2**63 - 1, "f": 0.1, "nan": math.nan,
        "inf": math.inf, "ninf": -math.inf, "negzero": -0.0, "tiny": 5e-324,
        "s": 'quote " backslash \\ newline \n unicode é', "empty": "",
        "ints": [1, -2, 3], "floats": [0.5, 1e300], "nested": [[1, 2], [3]], "none": [],
        "null": None,
    }
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        attrs = {k: pir.attr(v) for k, v in values.items()}
        attrs.update(op_name="exp", kernel_name="exp", device_type="cpu",
                     dtype=pir.DTypeAttr("bfloat16"), place=pir.PlaceAttr("custom:cpu:0"))
        b.create("kernel.phi_kernel", [x], [x.type], attrs)
    text = _round_trip(p)
    q = pir.parse(text)
    got = q.ops[1].attributes
    assert got == p.ops[1].attributes
    assert got["nan"] == pir.DoubleAttr(math.nan) and got["negzero"] != pir.DoubleAttr(0.0)
    assert got["s"].value == values["s"] and got["i"].value == -(2**63)
    for kind in ("(Int64)", "(Double)", "(pd_op.DataType)bfloat16",
                 "(pd_op.Place)Place(custom:cpu:0)", "true", "false", "null", "[]"):
        assert kind in text


def test_nested_regions_symbolic_shapes_and_locations_round_trip():
    p = pir.Program()
    with pir.Builder(p, locations=True) as b:
        x = b.data("x", ["s0", "s1"], "float32")
        c = b.data("c", [], "bool")
        y = b.pd_op.concat([x, x], axis=0)  # (2*s0) x s1

        def then():
            inner = b.cf.if_(c, lambda: [b.pd_op.exp(y)], lambda: [b.pd_op.neg(y)])
            return [b.pd_op.tanh(inner[0])]

        (z,) = b.cf.if_(c, then, lambda: [y])

        def body(v):
            return c, [b.pd_op.add(v, v)]

        (w,) = b.cf.while_(c, [z], body)
        b.pd_op.reshape(w, shape=[-1, 2])
    text = _round_trip(p)
    assert "builtin.tensor<(2*s0)xs1xf32>" in text
    assert 'loc("test_text_format.py":' in text
    assert text.count("^bb0") == 5
    assert text.count('"cf.yield"') == 5


def test_parse_errors_name_line_column_and_expectation():
    with pytest.raises(pir.ParseError, match=r"line 2, column .*%9 is used before"):
        pir.parse('{\n    (%0) = "pd_op.exp" (%9) {} : (builtin.tensor<f32>) -> '
                  'builtin.tensor<f32>\n}\n')
    with pytest.raises(pir.ParseError, match="unknown dtype 'f7'"):
        pir.parse('{\n    (%0) = "builtin.data" () {name:"x"} : () -> builtin.tensor<2xf7>\n}')
    with pytest.raises(pir.ParseError, match="expected an attribute"):
        pir.parse('{\n    (%0) = "builtin.data" () {name:x} : () -> builtin.tensor<2xf32>\n}')


def test_dims_print_as_paddle_does():
    assert str(pir.tensor([None, None], "float32")) == "builtin.tensor<-1x-1xf32>"
    assert str(pir.tensor([], "bool")) == "builtin.tensor<b>"
    assert str(pir.tensor(["s0", "s0*s1+3", 4], "bfloat16")) == \
        "builtin.tensor<s0x(s0*s1+3)x4xbf16>"
    assert str(pir.tensor(["max_len"], "int64")) == "builtin.tensor<(max_len)xi64>"
    t = pir.tensor(["s0-2", "max_len", 7], "uint8")
    assert pir.types.parse_tensor_body(str(t)[len("builtin.tensor<"):-1]) == t


def test_block_arguments_of_the_program_and_multi_block_regions_round_trip():
    p = pir.Program()
    arg = p.block.add_argument(pir.tensor(["s0"], "float32"))
    with pir.Builder(p) as b:
        y = b.pd_op.exp(arg)
        op = b.create("kernel.phi_kernel", [y], [y.type],
                      {"op_name": "exp", "kernel_name": "exp", "device_type": "cpu",
                       "dtype": pir.DTypeAttr("float32")}, num_regions=1)
    op.regions[0].add_block([pir.tensor([], "int64")])
    op.regions[0].add_block()
    text = str(p)
    assert text.startswith("{\n^bb0(%0: builtin.tensor<s0xf32>):\n")
    assert "^bb0(%3: builtin.tensor<i64>):" in text and "^bb1:" in text
    assert str(pir.parse(text)) == text
