"""Use-def chains stay exact after every kind of mutation; attributes and types are
immutable and hashable."""

from __future__ import annotations

import math

import pytest

from hwport import pir

from .programs import all_values, check_use_def


def _program():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", ["s0", 4], "float32")
        y = b.pd_op.exp(x)
        z = b.pd_op.add(x, y)
        c = b.data("c", [], "bool")
        (r,) = b.cf.if_(c, lambda: [b.pd_op.multiply(z, y)], lambda: [z])
        out = b.pd_op.tanh(r)
    return p, dict(x=x, y=y, z=z, c=c, r=r, out=out)


def _check(p: pir.Program, *extra: pir.Value) -> None:
    check_use_def(all_values(p) + list(extra), list(p.walk()))
    p.verify()


def _users(v: pir.Value) -> list[tuple[str, int]]:
    return [(u.owner.name, u.index) for u in v.uses]


def test_uses_after_building():
    p, v = _program()
    _check(p)
    assert _users(v["x"]) == [("pd_op.exp", 0), ("pd_op.add", 0)]
    assert _users(v["z"]) == [("pd_op.multiply", 0), ("cf.yield", 0)]
    assert [o.name for o in v["y"].users] == ["pd_op.add", "pd_op.multiply"]


def test_set_operand_and_set_operands():
    p, v = _program()
    add = v["z"].defining_op()
    add.set_operand(1, v["x"])  # add(x, x)
    assert _users(v["x"]) == [("pd_op.exp", 0), ("pd_op.add", 0), ("pd_op.add", 1)]
    assert _users(v["y"]) == [("pd_op.multiply", 1)]
    _check(p)
    add.set_operands([v["y"], v["y"]])
    assert _users(v["x"]) == [("pd_op.exp", 0)]
    assert _users(v["y"]) == [("pd_op.multiply", 1), ("pd_op.add", 0), ("pd_op.add", 1)]
    _check(p)


def test_replace_all_uses_with_reaches_nested_regions():
    p, v = _program()
    v["y"].replace_all_uses_with(v["x"])
    assert not v["y"].has_uses()
    assert _users(v["x"]) == [("pd_op.exp", 0), ("pd_op.add", 0), ("pd_op.add", 1),
                              ("pd_op.multiply", 1)]
    _check(p)
    v["z"].replace_uses_with_if(v["x"], lambda use: use.owner.name == "cf.yield")
    assert _users(v["z"]) == [("pd_op.multiply", 0)]
    _check(p)


def test_erase_refuses_a_used_value_then_succeeds():
    p, v = _program()
    exp = v["y"].defining_op()
    with pytest.raises(pir.IRError, match=r"cannot erase pd_op.exp: result 0 of pd_op.exp is "
                                          r"still used by pd_op.add \(operand 1\)"):
        exp.erase()
    _check(p)
    v["y"].replace_all_uses_with(v["x"])
    exp.erase()
    assert exp.erased and exp.parent is None and not v["x"].uses[0].owner.erased
    assert [o.name for o in p.ops][:2] == ["builtin.data", "pd_op.add"]
    _check(p)


def test_erase_an_op_with_regions_drops_the_uses_inside():
    p, v = _program()
    if_op = v["r"].defining_op()
    v["out"].defining_op().erase()
    if_op.erase()
    assert _users(v["y"]) == [("pd_op.add", 1)]
    assert _users(v["z"]) == []
    _check(p)


def test_clone_maps_operands_and_nested_values():
    p, v = _program()
    if_op = v["r"].defining_op()
    mapper = {v["z"]: v["x"]}
    copy = if_op.clone(mapper)
    p.block.append(copy)
    inner_mul = copy.regions[0].blocks[0].ops[0]
    assert inner_mul.operand(0) is v["x"] and inner_mul.operand(1) is v["y"]
    assert copy.regions[1].blocks[0].ops[0].operand(0) is v["x"]  # else-yield of z -> x
    assert mapper[v["r"]] is copy.result()
    assert str(copy.result().type) == str(v["r"].type)
    _check(p)
    q = p.clone()
    assert str(q) == str(p)
    _check(q)
    check_use_def(all_values(p), list(p.walk()))  # the original is untouched


def test_move_before_after_to_end_and_remove():
    p, v = _program()
    tanh = v["out"].defining_op()
    c_op = v["c"].defining_op()
    c_op.move_before(v["y"].defining_op())
    assert [o.name for o in p.ops][:3] == ["builtin.data", "builtin.data", "pd_op.exp"]
    _check(p)
    c_op.move_after(v["z"].defining_op())
    _check(p)
    tanh.remove_from_parent()
    assert tanh.parent is None and _users(v["r"]) == [("pd_op.tanh", 0)]
    check_use_def(all_values(p) + [v["r"]], [*p.walk(), tanh])
    tanh.move_to_end(p.block)
    _check(p)
    if_op = v["r"].defining_op()
    with pytest.raises(pir.IRError, match=r"cannot move cf\.if into one of its own regions"):
        if_op.move_before(if_op.regions[0].blocks[0].ops[0])


def test_insert_twice_and_erased_ops_are_refused():
    p, v = _program()
    exp = v["y"].defining_op()
    with pytest.raises(pir.IRError, match="already in a block"):
        p.block.append(exp)
    tanh = v["out"].defining_op()
    tanh.erase()
    with pytest.raises(pir.IRError, match="was erased"):
        p.block.append(tanh)
    _check(p)


def test_block_arguments():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        c = b.data("c", [], "bool")
        (w,) = b.cf.while_(c, [x], lambda a: (c, [b.pd_op.exp(a)]))
    body = w.defining_op().regions[0].blocks[0]
    arg = body.args[0]
    assert _users(arg) == [("pd_op.exp", 0)]
    with pytest.raises(pir.IRError, match="cannot erase block argument 0"):
        body.erase_argument(0)
    extra = body.add_argument(pir.tensor([3], "int8"))
    body.erase_argument(1)
    assert extra not in body.args
    _check(p)


def test_attributes_are_immutable_and_hashable():
    a = pir.attr([1, 2.5, "s", None, True])
    assert hash(a) == hash(pir.attr([1, 2.5, "s", None, True]))
    assert pir.attr(1) != pir.attr(True) and pir.attr(1) != pir.attr(1.0)
    assert pir.DoubleAttr(math.nan) == pir.DoubleAttr(math.nan)
    assert pir.DoubleAttr(0.0) != pir.DoubleAttr(-0.0)
    with pytest.raises(AttributeError):
        a.elements = ()  # type: ignore[misc]
    with pytest.raises(ValueError, match="does not fit in int64"):
        pir.Int64Attr(2**63)
    assert {pir.tensor(["s0", 2], "float32"), pir.tensor(["s0", 2], "float32")} == {
        pir.tensor([pir.sym("s0"), 2], "float32")}
