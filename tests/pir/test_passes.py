"""The standard passes on small programs with expected printed IR (FileCheck-style: the
lines of the program after the pass), the greedy rewriter and the PassManager."""

from __future__ import annotations

import re

import pytest

from hwport import pir
from hwport.pir.passes import (
    Listener,
    Pass,
    PassError,
    PassManager,
    RewritePattern,
    apply_patterns_greedily,
    parse_pipeline,
    register_pass,
    registered_passes,
)


def _ops(p: pir.Program) -> list[str]:
    """Each op of the program as `name operands -> results` with %N names (nested ops
    indented): the FileCheck-style view the expectations compare."""
    out = []
    for line in str(p).splitlines()[1:-1]:
        m = re.match(r'(\s*)\((.*?)\) = "([\w.]+)" \((.*?)\) \{(.*?)\} :', line)
        if m:
            indent, res, name, args, attrs = m.groups()
            shown = attrs and name != "builtin.data"
            text = f"{indent[4:]}{name}({args})" + (f"{{{attrs}}}" if shown else "")
            out.append(text + (f" -> {res}" if res else ""))
    return out


def _run(p: pir.Program, pipeline: str) -> bool:
    return PassManager(pipeline).run(p)


def test_dce_erases_dead_chains_in_nested_regions_and_keeps_effects():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [4], "float32")
        c = b.data("c", [], "bool")
        b.pd_op.tanh(b.pd_op.exp(x))  # dead chain

        def then():
            b.pd_op.sin(x)  # dead inside the region
            return [b.pd_op.neg(x)]

        (r,) = b.cf.if_(c, then, lambda: [x])
        b.pd_op.uniform(shape=[2], seed=1)  # not Pure: kept
        b.output(r, "out")
    assert _run(p, "dce")
    assert _ops(p) == [
        "builtin.data() -> %0",
        "builtin.data() -> %1",
        "cf.if(%1) -> %2",
        "    pd_op.neg(%0) -> %3",
        "    cf.yield(%3)",
        "    cf.yield(%0)",
        "pd_op.uniform(){shape:[(Int64)2],low:(Double)0.0,high:(Double)1.0,seed:(Int64)1,"
        "offset:(Int64)0,dtype:(pd_op.DataType)float32} -> %4",
        'builtin.shadow_output(%2){output_name:"out"}']
    assert not _run(p, "dce")  # nothing left to do


def test_cse_merges_repeats_commutative_operands_and_respects_scopes():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [4], "float32")
        y = b.data("y", [4], "float32")
        c = b.data("c", [], "bool")
        a1 = b.pd_op.add(x, y)
        a2 = b.pd_op.add(y, x)  # commutative: the same value
        s1 = b.pd_op.subtract(x, y)
        s2 = b.pd_op.subtract(y, x)  # not commutative: kept
        m1 = b.pd_op.softmax(x, axis=0)
        m2 = b.pd_op.softmax(x, axis=-1)  # other attributes: kept
        u1 = b.pd_op.uniform(shape=[4], seed=3)
        u2 = b.pd_op.uniform(shape=[4], seed=3)  # not Pure: kept

        def then():
            inner = b.pd_op.add(x, y)  # repeats a1 from the enclosing block: merged
            return [b.pd_op.exp(inner)]

        (r,) = b.cf.if_(c, then, lambda: [b.pd_op.exp(a1)])
        for k, v in enumerate([a1, a2, s1, s2, m1, m2, u1, u2, r]):
            b.output(v, f"o{k}")
    assert _run(p, "cse")
    ops = _ops(p)
    assert ops[3:13] == [
        "pd_op.add(%0, %1) -> %3",
        "pd_op.subtract(%0, %1) -> %4",
        "pd_op.subtract(%1, %0) -> %5",
        "pd_op.softmax(%0){axis:(Int64)0} -> %6",
        "pd_op.softmax(%0){axis:(Int64)-1} -> %7",
        ops[8], ops[9],
        "cf.if(%2) -> %10",
        "    pd_op.exp(%3) -> %11",
        "    cf.yield(%11)"]
    assert ops[8].startswith("pd_op.uniform") and ops[9].startswith("pd_op.uniform")
    # the else region's exp(a1) is not merged with the then region's (sibling scopes)
    assert ops[13:15] == ["    pd_op.exp(%3) -> %12", "    cf.yield(%12)"]
    assert 'builtin.shadow_output(%3){output_name:"o1"}' in ops


def _canon(build) -> list[str]:
    p = pir.Program()
    with pir.Builder(p) as b:
        b.output(build(b, b.data("x", ["s0", 4], "float32")), "out")
    _run(p, "canonicalize")
    return _ops(p)


def test_canonicalize_folds_identities_bit_exactly():
    def chain(b, x):
        one = b.constant(1.0, [], "float32")
        nz = b.constant(-0.0, [], "float32")
        y = b.pd_op.multiply(one, x)  # 1 * x
        y = b.pd_op.add(y, nz)  # x + -0.0
        y = b.pd_op.divide(y, b.pd_op.ones(shape=[1], dtype="float32"))
        y = b.pd_op.subtract(y, b.pd_op.zeros(shape=[], dtype="float32"))
        y = b.pd_op.cast(y, dtype="float32")
        y = b.pd_op.transpose(b.pd_op.transpose(y, perm=[1, 0]), perm=[1, 0])
        return b.pd_op.reshape(b.pd_op.reshape(y, shape=[-1]), shape=[-1, 2])

    assert _canon(chain) == [
        "builtin.data() -> %0",
        "pd_op.reshape(%0){shape:[(Int64)-1,(Int64)2]} -> %1",
        'builtin.shadow_output(%1){output_name:"out"}']


def test_canonicalize_leaves_near_misses():
    # x + 0.0 would turn -0.0 into +0.0; x * 1 that broadcasts changes the type; x * 2
    def near(b, x):
        y = b.pd_op.add(x, b.constant(0.0, [], "float32"))
        y = b.pd_op.multiply(y, b.constant(1.0, [3, 1, 1], "float32"))
        y = b.pd_op.multiply(y, b.constant(2.0, [], "float32"))
        return b.pd_op.transpose(b.pd_op.transpose(y, perm=[0, 2, 1]), perm=[1, 0, 2])

    ops = _canon(near)
    assert [o.split("(")[0] for o in ops] == [
        "builtin.data", "builtin.constant", "pd_op.add", "builtin.constant", "pd_op.multiply",
        "builtin.constant", "pd_op.multiply", "pd_op.transpose", "builtin.shadow_output"]
    # transpose of transpose composes into one: [0,2,1] then [1,0,2] = [2,0,1]
    assert ops[7] == "pd_op.transpose(%6){perm:[(Int64)2,(Int64)0,(Int64)1]} -> %7"


class _ExpToNeg(RewritePattern):
    root = "pd_op.exp"
    benefit = 1

    def match_and_rewrite(self, op, rewriter):
        rewriter.replace_op(op, [rewriter.pd_op.neg(op.operand(0))])
        return True


class _ExpToSin(_ExpToNeg):
    benefit = 5

    def match_and_rewrite(self, op, rewriter):
        rewriter.replace_op(op, [rewriter.pd_op.sin(op.operand(0))])
        return True


class _Peel(RewritePattern):
    """neg(neg(x)) -> x: applies until no double negation is left."""

    root = "pd_op.neg"

    def match_and_rewrite(self, op, rewriter):
        src = op.operand(0).defining_op()
        if src is None or src.name != "pd_op.neg":
            return False
        rewriter.replace_op(op, [src.operand(0)])
        return True


def test_greedy_driver_benefit_order_fixpoint_and_notify_hook():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        y = x
        for _ in range(6):
            y = b.pd_op.neg(y)
        b.output(b.pd_op.exp(y), "out")

    class Log(Listener):
        def __init__(self):
            self.events = []

        def notify_op_inserted(self, op):
            self.events.append(("inserted", op.name))

        def notify_op_erased(self, op):
            self.events.append(("erased", op.name))

    log = Log()
    changed = apply_patterns_greedily(p.module, [_ExpToNeg(), _Peel(), _ExpToSin()],
                                      listeners=[log])
    assert changed
    assert _ops(p) == ["builtin.data() -> %0", "pd_op.sin(%0) -> %1",
                       'builtin.shadow_output(%1){output_name:"out"}']
    assert ("inserted", "pd_op.sin") in log.events and ("inserted", "pd_op.neg") not in \
        log.events
    assert log.events.count(("erased", "pd_op.neg")) == 6
    p.verify()


def test_pipeline_text_options_nesting_and_errors():
    passes = parse_pipeline("dce, cse,canonicalize{max_iterations=3},cf.if(dce,cse)")
    assert [repr(x) for x in passes] == ["dce", "cse", "canonicalize{max_iterations=3}",
                                         "cf.if(dce,cse)"]
    assert {"dce", "cse", "canonicalize"} <= set(registered_passes())
    with pytest.raises(PassError, match="unknown pass 'dse'; registered: ") as err:
        parse_pipeline("dce,dse")
    listed = str(err.value).split("registered: ")[1].split(", ")
    # PIR's own passes, in order, and any a higher layer registered (the compiler's cinn_*)
    assert listed == sorted(listed)
    assert {"canonicalize", "constant_folding", "cse", "dce", "decompose", "fuse",
            "lower_to_kernel"} <= set(listed)
    with pytest.raises(PassError, match=r"pass canonicalize: option max_iterations='x' is not "
                                        r"a int"):
        parse_pipeline("canonicalize{max_iterations=x}")
    with pytest.raises(PassError, match="pass dce: unknown option 'level'"):
        parse_pipeline("dce{level=2}")
    with pytest.raises(PassError, match=r"expected ',' between passes, found 'cse'"):
        parse_pipeline("dce cse")
    with pytest.raises(PassError, match=r"expected '\)'"):
        parse_pipeline("cf.if(dce")


def test_nested_pipeline_runs_on_the_anchor_ops_only():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        c = b.data("c", [], "bool")
        b.pd_op.exp(x)  # dead, outside any cf.if

        def then():
            b.pd_op.sin(x)  # dead, inside
            return [x]

        (r,) = b.cf.if_(c, then, lambda: [x])
        b.output(r, "out")
    assert _run(p, "cf.if(dce)")
    names = [o.strip().split("(")[0] for o in _ops(p)]
    assert "pd_op.exp" in names and "pd_op.sin" not in names


@register_pass
class _Breaker(Pass):
    name = "test-breaker"

    def run(self, op):
        first = op.regions[0].blocks[0].ops[0]
        first.results[0].type = pir.tensor([9], "int8")
        return True


def test_manager_prints_times_and_verifies_after_each_pass():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        b.pd_op.exp(x)
        b.output(b.pd_op.exp(x), "out")
    printed: list[str] = []
    pm = PassManager("cse,dce", timing=True, print_before=["dce"], print_after=True,
                     output=printed.append)
    assert pm.run(p)
    assert [t.splitlines()[0] for t in printed] == [
        "// ----- IR after cse -----", "// ----- IR before dce -----",
        "// ----- IR after dce -----"]
    assert printed[0].count('"pd_op.exp"') == 1 and printed[2].count('"pd_op.exp"') == 1
    assert set(pm.timing.seconds) == {"cse", "dce"} and pm.timing.runs["dce"] == 1
    assert re.search(r"ms +\d+\.\d% +cse \(x1\)", pm.timing.report())
    expected = ('the IR does not verify after pass test-breaker:\n  op 1 "pd_op.exp": result 0 '
                "has type builtin.tensor<2xf32> but InferMeta gives builtin.tensor<9xi8>")
    with pytest.raises(PassError, match=re.escape(expected)):
        PassManager("test-breaker").run(p)
    PassManager("test-breaker", verify_each=False).run(pir.parse(str(p)))


# ---- FileCheck-style expectations for the other standard passes -------------------------------

def _one_input(build, shape=(2, 3)) -> pir.Program:
    p = pir.Program()
    with pir.Builder(p) as b:
        b.output(build(b, b.data("x", list(shape), "float32")), "y")
    return p


def test_decompose_prints_the_primitives():
    p = _one_input(lambda b, x: b.pd_op.square(b.pd_op.rsqrt(x)))
    assert _run(p, "decompose")
    assert _ops(p) == [
        "builtin.data() -> %0",
        "pd_op.sqrt(%0) -> %1",
        "builtin.constant(){value:(Double)1.0} -> %2",
        "pd_op.divide(%2, %1) -> %3",
        "pd_op.multiply(%3, %3) -> %4",
        'builtin.shadow_output(%4){output_name:"y"}']


def test_constant_folding_prints_the_folded_constant():
    import numpy as np

    def build(b, x):
        a = b.constant([1.0, 2.0], [2], "float32")
        return b.pd_op.multiply(x, b.pd_op.exp(b.pd_op.neg(a)))

    p = _one_input(build, (2,))
    assert _run(p, "constant_folding,dce")
    from hwport.phi_ops.reference import reference

    # the oracle's float32 values (exp computed exactly, then rounded: numpy's float32 exp is
    # one ulp off for exp(-1))
    v = [float(f) for f in reference("exp", [-np.array([1.0, 2.0], np.float32)], {})]
    assert _ops(p) == [
        "builtin.data() -> %0",
        f"builtin.constant(){{value:[(Double){v[0]!r},(Double){v[1]!r}]}} -> %1",
        "pd_op.multiply(%0, %1) -> %2",
        'builtin.shadow_output(%2){output_name:"y"}']


def test_lower_to_kernel_prints_views_and_bound_kernels():
    p = _one_input(lambda b, x: b.pd_op.relu(b.pd_op.transpose(x, perm=[1, 0])))
    assert _run(p, "lower_to_kernel{place=custom:cpu}")
    assert _ops(p) == [
        "builtin.data() -> %0",
        "kernel.view(%0){shape:[(Int64)3,(Int64)2],strides:[(Int64)1,(Int64)3],"
        "offset:(Int64)0} -> %1",
        'kernel.phi_kernel(%1){op_name:"relu",kernel_name:"relu",device_type:"cpu",'
        'dtype:(pd_op.DataType)float32,path:"native"} -> %2',
        'builtin.shadow_output(%2){output_name:"y"}']
