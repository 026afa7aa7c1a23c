"""The dialects: pd_op mirrors ops.yaml (an op added there is in pd_op with no other edit),
traits follow each op's category, builtin/cf/kernel ops verify their structure."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hwport import pir
from hwport.phi_ops.schema import OPS_YAML, load_ops
from hwport.pir.dialect import REQUIRED, register_dialect
from hwport.pir.dialects import pd_op
from hwport.pir.eager_attrs import COUNT_ATTRS

from .programs import OPS


def test_pd_op_has_one_op_per_ops_yaml_entry_with_its_typed_attributes():
    ops = pir.all_dialects()["pd_op"].ops
    assert set(ops) == {f"pd_op.{n}" for n in OPS}
    for name, op in OPS.items():
        info = ops[f"pd_op.{name}"]
        assert [(s.name, s.optional, s.variadic) for s in info.operands] == [
            (i.name, i.optional, i.variadic) for i in op.inputs]
        assert [s.name for s in info.results] == [o.name for o in op.outputs]
        # an ints attribute eager also takes as a count: both optional, the count after them
        ints, count = COUNT_ATTRS.get(name, (None, None))
        extra = [(count, "int")] if count else []
        assert [(a.name, a.kind) for a in info.attrs] == [
            (a.name, a.type) for a in op.attrs] + extra
        assert [a.required for a in info.attrs] == [
            a.required and a.name != ints for a in op.attrs] + [False] * len(extra)
        assert info.interfaces["Decompose"] == op.decompose
        assert info.interfaces["VJP"] == op.backward


def _traits(name: str) -> set[str]:
    return set(pir.lookup_op(f"pd_op.{name}").traits)


def test_traits_follow_the_category():
    assert _traits("add") == {"Pure", "Elementwise", "Broadcast", "Commutative"}
    assert _traits("subtract") == {"Pure", "Elementwise", "Broadcast"}
    assert _traits("exp") == {"Pure", "Elementwise", "SameOperandsAndResultShape"}
    assert _traits("sum") == {"Pure", "Reduction"}
    assert _traits("reshape") == {"Pure", "Injective"}
    assert _traits("gather") == {"Pure", "Injective"}
    assert _traits("uniform") == set()
    assert _traits("matmul") == {"Pure"}
    commutative = {n for n in OPS if "Commutative" in _traits(n)}
    assert commutative == {"add", "multiply", "maximum", "minimum", "equal", "not_equal",
                           "logical_and", "logical_or", "logical_xor", "bitwise_and",
                           "bitwise_or", "bitwise_xor"}


def test_an_op_added_to_ops_yaml_is_in_pd_op(tmp_path: Path):
    raw = yaml.safe_load(Path(OPS_YAML).read_text())
    raw["ops"].append({
        "name": "hypot", "kind": "composite", "category": "binary", "inputs": ["x", "y"],
        "attrs": {"scale": {"type": "float", "default": 1.0}}, "dtypes": "float",
        "infer_meta": "binary", "reference": "np.hypot(x, y) * scale",
        "tolerance": "composite", "decompose": "hypot", "doc": "sqrt(x*x + y*y)."})
    path = tmp_path / "ops.yaml"
    path.write_text(yaml.safe_dump(raw))
    dialect = pd_op.generate(load_ops(str(path)))
    info = dialect.ops["pd_op.hypot"]
    assert info.traits == {"Pure", "Elementwise", "Broadcast", "Commutative"}
    assert [(a.name, a.kind, a.default) for a in info.attrs] == [("scale", "float", 1.0)]
    original = pir.all_dialects()["pd_op"]
    register_dialect(dialect)
    try:
        p = pir.Program()
        with pir.Builder(p) as b:
            x = b.data("x", ["s0", 1], "float32")
            y = b.data("y", [3], "float32")
            b.pd_op.hypot(x, y, scale=2.0)
        text = str(p)
        assert ('"pd_op.hypot" (%0, %1) {scale:(Double)2.0} : (builtin.tensor<s0x1xf32>, '
                "builtin.tensor<3xf32>) -> builtin.tensor<s0x3xf32>") in text
        p.verify()
        assert str(pir.parse(text)) == text
    finally:
        register_dialect(original)
    assert pir.lookup_op("pd_op.hypot") is None


def test_builtin_ops_verify_their_structure():
    p = pir.Program()
    with pir.Builder(p) as b:
        b.constant(1.5, [2, 2], "float32")
        b.constant([[1, 2], [3, 4]], [2, 2], "int64")
        bad = b.constant([1, 2, 3], [2], "int64")
        x = b.data("x", [2], "float32")
        vec = b.combine([x, x])
        parts = b.split(vec)
    parts[1].type = pir.tensor([3], "float32")
    with pytest.raises(pir.VerificationError) as info:
        p.verify()
    assert info.value.errors == [
        'op 2 "builtin.constant": value [(Int64)1,(Int64)2,(Int64)3] (shape [3]) does not fit '
        "builtin.tensor<2xi64> (a scalar fills it; a nested array must have its shape)",
        'op 5 "builtin.split": results must be the vector\'s 2 element types '
        "(builtin.tensor<2xf32>, builtin.tensor<2xf32>), got (builtin.tensor<2xf32>, "
        "builtin.tensor<3xf32>)"]
    assert bad.defining_op().attr("value") == [1, 2, 3]


def test_cf_ops_verify_conditions_and_carried_values():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        c = b.data("c", [2], "bool")
        b.cf.while_(c, [x], lambda a: (c, [b.pd_op.cast(a, dtype="float64")]))
    with pytest.raises(pir.VerificationError) as info:
        p.verify()
    assert info.value.errors == [
        'op 2 "cf.while": the condition (operand 0) must be a bool tensor of one element '
        "(shape [] or [1]), got builtin.tensor<2xb>",
        'op 2 "cf.while": the body\'s next condition (cf.yield operand 0) must be a bool tensor '
        "of one element (shape [] or [1]), got builtin.tensor<2xb>",
        'op 2 "cf.while": the body yields (builtin.tensor<2xf64>) after the condition, '
        "expected the carried types (builtin.tensor<2xf32>)"]


def test_kernel_phi_kernel_names_a_pd_op():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        b.create("kernel.phi_kernel", [x], [x.type],
                 {"op_name": "exp", "kernel_name": "exp", "device_type": "cpu",
                  "dtype": pir.DTypeAttr("float32")})
        b.create("kernel.phi_kernel", [x], [x.type],
                 {"op_name": "nope", "kernel_name": "nope", "device_type": "cpu",
                  "dtype": pir.DTypeAttr("float32")})
    with pytest.raises(pir.VerificationError) as info:
        p.verify()
    assert info.value.errors == [
        "op 2 \"kernel.phi_kernel\": op_name 'nope' is not an op of pd_op"]
    assert REQUIRED is not None
