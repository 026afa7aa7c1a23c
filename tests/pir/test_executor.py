"""lower_to_kernel and the C++ program executor: one-op programs of every op against eager
dispatch bit for bit (the same kernels on the same place), an MLP, the memory plan (no
allocator call per steady-state run, peak memory at most eager's), views, errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hwport
from hwport import pir
from hwport.pir.passes import PassManager
from hwport.pir.passes.lower_to_kernel import LoweringError
from hwport.runtime import _core

from .executor_cases import (
    bits,
    eager,
    every_case,
    mlp_eager,
    mlp_params,
    mlp_program,
    one_op_program,
    representative_cases,
)

PLACES = ["custom:cpu", "custom:opencl"]
CASES = representative_cases()


def _run_case(case, place):
    p, feeds = one_op_program(case)
    want = eager(case, place)
    exe = pir.Executor(p, place)
    exe.program.verify()  # the lowered program is valid IR, and its text round-trips
    assert str(pir.parse(str(exe.program))) == str(exe.program)
    got = [o.numpy() for o in exe.run({k: hwport.to_tensor(v, place=place)
                                       for k, v in feeds.items()})]
    assert len(got) == len(want), case.id
    for g, w in zip(got, want, strict=True):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), case.id
        assert bits(g) == bits(w), f"{case.id}: executor {g} vs eager {w}"


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_one_op_program_equals_eager_bit_for_bit(case, place):
    _run_case(case, place)


def test_representative_cases_cover_every_op():
    from hwport.phi_ops.schema import load_ops

    assert {c.op for c in CASES} == set(load_ops())


@pytest.mark.slow
@pytest.mark.parametrize("place", PLACES)
def test_every_sample_case_equals_eager_bit_for_bit(place):
    for case in every_case():
        _run_case(case, place)


# ---- the lowered program -----------------------------------------------------------------

@pytest.mark.parametrize("place", PLACES)
def test_mlp_equals_eager_bit_for_bit(place):
    p = mlp_program()
    ps = mlp_params(place, p)
    x = hwport.to_tensor(np.random.default_rng(1).standard_normal((8, 16)).astype("float32"),
                         place=place)
    (got,) = pir.Executor(p, place, parameters=ps).run({"x": x})
    want = mlp_eager(x, ps).numpy()
    assert bits(got.numpy()) == bits(want)
    # and the oracle agrees within float32 rounding (the eager path is not the only judge)
    xs, pn = x.numpy().astype("float64"), {k: v.numpy().astype("float64") for k, v in ps.items()}
    from math import erf

    h = xs @ pn["w1"] + pn["b1"]
    h = h * 0.5 * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    y = h @ pn["w2"] + pn["b2"]
    y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got.numpy(), y * pn["g"] + pn["beta"], rtol=1e-4, atol=1e-4)


def test_lowering_binds_kernels_views_and_casts():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2, 3], "int32")
        w = b.data("w", [2, 4], "float32")
        y = b.pd_op.exp(x)  # a float-only op: int32 computes in float32, as eager
        b.output(b.pd_op.matmul(y, w, transpose_x=True), "out")
        b.output(b.pd_op.add(w, b.data("b", [4], "float32")), "sum")
    PassManager("lower_to_kernel{place=custom:cpu}").run(p)
    text = str(p)
    lines = [line.strip() for line in text.splitlines()]
    kernels = [line for line in lines if '"kernel.' in line]
    assert [k.split('"')[1] for k in kernels] == [
        "kernel.phi_kernel", "kernel.phi_kernel", "kernel.view", "kernel.phi_kernel",
        "kernel.view", "kernel.phi_kernel"]
    assert 'kernel_name:"cast",device_type:"cpu",dtype:(pd_op.DataType)int32' in kernels[0]
    assert 'kernel_name:"exp"' in kernels[1] and "float32" in kernels[1]
    # x^T as a view (strides swapped), then the plain matmul kernel without attributes
    assert "shape:[(Int64)3,(Int64)2],strides:[(Int64)1,(Int64)3]" in kernels[2]
    assert 'kernel_name:"matmul"' in kernels[3] and "attr." not in kernels[3]
    assert "strides:[(Int64)0,(Int64)1]" in kernels[4]  # b broadcast to [2, 4], stride 0
    p.verify()
    assert str(pir.parse(text)) == text


def test_a_composite_without_a_fitting_kernel_lowers_to_its_decomposition():
    # float16 x with a float32 weight: eager decomposes rms_norm to keep the weight's
    # precision (dispatch._fused_kernel_fits), so the lowering does too
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2, 8], "float16")
        b.output(b.pd_op.rms_norm(x, b.data("w", [8], "float32"), epsilon=1e-6), "out")
    exe = pir.Executor(p, "custom:cpu")
    names = [op.attr("kernel_name") for op in exe.program.ops
             if op.name == "kernel.phi_kernel"]
    assert names == ["cast", "multiply", "sum", "divide", "add", "sqrt", "divide", "multiply",
                     "cast"]  # in float32: x cast up, the result cast back to float16
    rng = np.random.default_rng(3)
    x = hwport.to_tensor(rng.standard_normal((2, 8)).astype("float16"), place="custom:cpu")
    w = hwport.to_tensor(rng.standard_normal(8).astype("float32"), place="custom:cpu")
    (got,) = exe.run({"x": x, "w": w})
    want = hwport.nn.functional.rms_norm(x, [8], w, 1e-6)
    assert bits(got.numpy()) == bits(want.numpy())


@pytest.mark.parametrize("place", PLACES)
def test_symbolic_batch_runs_bit_for_bit_per_shape_with_a_cached_plan(place):
    p = mlp_program(batch="s0")
    assert "builtin.tensor<s0x16xf32>" in str(p)
    ps = mlp_params(place, p)
    exe = pir.Executor(p, place, parameters=ps)
    rng = np.random.default_rng(3)
    xs = {n: hwport.to_tensor(rng.standard_normal((n, 16)).astype("float32"), place=place)
          for n in (1, 3, 8)}
    arenas = []
    for n, x in xs.items():
        (got,) = exe.run({"x": x})
        assert tuple(got.shape) == (n, 8)
        assert bits(got.numpy()) == bits(mlp_eager(x, ps).numpy()), n
        arenas.append(exe.arena_bytes)  # the plan of this batch size
    assert exe.num_plans == 3 and arenas == sorted(set(arenas)), arenas
    for n in (3, 1):  # a signature seen before: its plan, no new lowering nor allocation
        want = bits(mlp_eager(xs[n], ps).numpy())
        exe.run({"x": xs[n]})
        before = _core.memory_stats(place)["num_allocs"]
        out = exe.run({"x": xs[n]})
        got = bits(out[0].numpy())
        del out
        assert _core.memory_stats(place)["num_allocs"] == before
        assert got == want
    assert exe.num_plans == 3


def test_the_plan_cache_is_an_lru_bounded_by_max_plans():
    place = "custom:cpu"
    assert pir.executor.MAX_PLANS == 8
    assert pir.Executor(mlp_program(batch="s0"), place).max_plans == 8  # the default
    p = mlp_program(batch="s0")
    ps = mlp_params(place, p)
    exe = pir.Executor(p, place, parameters=ps, max_plans=2)
    rng = np.random.default_rng(4)
    xs = {n: hwport.to_tensor(rng.standard_normal((n, 16)).astype("float32"), place=place)
          for n in (200, 201, 202, 203, 204, 205)}
    base = _core.memory_stats(place)["allocated_bytes"]

    def run(n):
        out = exe.run({"x": xs[n]})
        assert bits(out[0].numpy()) == bits(mlp_eager(xs[n], ps).numpy()), n
        del out

    for n, built in ((200, 1), (201, 2), (202, 3), (201, 3), (200, 4), (201, 4), (203, 5)):
        run(n)  # 200 was dropped for 202, then 202 (the least recently run) for 203
        assert (exe.num_plans, exe.num_plans_built) == (min(built, 2), built), n
    held_by_two = _core.memory_stats(place)["allocated_bytes"] - base
    for n in (204, 205, 200, 202):
        run(n)
    assert exe.num_plans == 2 and exe.num_plans_built == 9
    # the dropped plans' arenas went back: two plans' worth of memory, not six
    grown = _core.memory_stats(place)["allocated_bytes"] - base - held_by_two
    assert grown <= exe.arena_bytes // 4, (grown, exe.arena_bytes)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=r"Executor: max_plans must be an int >= 1, got"):
            pir.Executor(p, place, max_plans=bad)


def test_symbols_bind_across_feeds_and_are_checked():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", ["s0", "s1"], "float32")
        y = b.data("y", ["s1"], "float32")
        z = b.data("z", ["s0+1", 2], "float32")
        b.output(b.pd_op.multiply(x, y), "xy")
        b.output(b.pd_op.exp(z), "ez")
    exe = pir.Executor(p, "custom:cpu")

    def t(*shape):
        return hwport.to_tensor(np.linspace(-1, 1, int(np.prod(shape)), dtype="float32")
                                .reshape(shape))

    for n, m in ((2, 3), (5, 1)):
        xy, ez = exe.run({"x": t(n, m), "y": t(m), "z": t(n + 1, 2)})
        assert bits(xy.numpy()) == bits(hwport.multiply(t(n, m), t(m)).numpy())
        assert bits(ez.numpy()) == bits(hwport.exp(t(n + 1, 2)).numpy())
    with pytest.raises(ValueError, match=r"feed 'y' dim 0 is s1, which is 3 \(feed 'x' dim "
                                         r"1\), got 4"):
        exe.run({"x": t(2, 3), "y": t(4), "z": t(3, 2)})
    with pytest.raises(ValueError, match=r"feed 'z' dim 0 is s0\+1 = 3 .*got 4"):
        exe.run({"x": t(2, 3), "y": t(3), "z": t(4, 2)})
    with pytest.raises(ValueError, match=r"feed 'z' expected shape .*x2xf32>, got \[3, 5\]"):
        exe.run({"x": t(2, 3), "y": t(3), "z": t(3, 5)})
    with pytest.raises(ValueError, match=r"feed 'y' expected 1 dim\(s\)"):
        exe.run({"x": t(2, 3), "y": t(3, 1), "z": t(3, 2)})
    assert exe.num_plans == 2
    q = pir.Program()  # symbols bind from the feeds only: a parameter's shape is static
    with pir.Builder(q) as b:
        b.output(b.pd_op.exp(b.parameter("w", ["s0"], "float32")), "y")
    with pytest.raises(LoweringError, match=r"builtin.parameter.*static shapes"):
        pir.Executor(q, "custom:cpu")


def test_split_tells_a_count_from_one_part_size_as_eager_does():
    """split(x, 2) is 2 equal parts, split(x, [4]) one part of size 4 (pd_op's num and
    sections); both lower and run as eager's calls."""
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [4, 3], "float32")
        halves = b.pd_op.split(x, sections=2)
        whole = b.pd_op.split(x, sections=[4])
        sizes = b.pd_op.split(x, sections=[1, -1])
        for i, v in enumerate([*halves, *whole, *sizes]):
            b.output(v, f"out{i}")
    text = str(p)
    assert "num:(Int64)2" in text and "sections:[(Int64)4]" in text
    assert str(pir.parse(text)) == text
    assert [len(v) for v in (halves, whole, sizes)] == [2, 1, 2]
    xs = np.arange(12, dtype="float32").reshape(4, 3)
    t = hwport.to_tensor(xs)
    got = [o.numpy() for o in pir.Executor(p, "custom:cpu").run({"x": t})]
    want = [*hwport.split(t, 2), *hwport.split(t, [4]), *hwport.split(t, [1, -1])]
    assert [g.tolist() for g in got] == [w.numpy().tolist() for w in want]
    with pytest.raises(pir.InferMetaError, match=r"sections \(part sizes\) or num .*not both"):
        b = pir.Builder(p)
        b.pd_op.split(x, sections=[2, 2], num=2)



# ---- control flow ----------------------------------------------------------------------------

def _loop_program() -> pir.Program:
    """while i < n: acc = acc * x + x if i is even else acc - x; i += 1 — then exp or neg
    of acc by `flag` (a cf.if inside a cf.while, and one after it)."""
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [4], "float32")
        n = b.data("n", [], "int64")
        flag = b.data("flag", [], "bool")
        i0 = b.pd_op.zeros_like(n)

        def body(i, acc):
            even = b.pd_op.equal(b.pd_op.remainder(i, b.pd_op.full_like(i, fill_value=2)),
                                 b.pd_op.zeros_like(i))
            (acc2,) = b.cf.if_(even, lambda: [b.pd_op.add(b.pd_op.multiply(acc, x), x)],
                               lambda: [b.pd_op.subtract(acc, x)])
            i2 = b.pd_op.add(i, b.pd_op.ones_like(i))
            return b.pd_op.less_than(i2, n), [i2, acc2]

        i_end, acc = b.cf.while_(b.pd_op.less_than(i0, n), [i0, x], body)
        (r,) = b.cf.if_(flag, lambda: [b.pd_op.exp(acc)], lambda: [b.pd_op.neg(acc)])
        b.output(r, "r")
        b.output(i_end, "i")
    return p


def _loop_eager(x, n: int, flag: bool):
    acc = x
    for i in range(n):
        acc = acc * x + x if i % 2 == 0 else acc - x
    return hwport.exp(acc) if flag else hwport.neg(acc)


@pytest.mark.parametrize("place", PLACES)
def test_while_and_if_run_as_the_same_python_loop_bit_for_bit(place):
    exe = pir.Executor(_loop_program(), place)
    exe.program.verify()
    assert str(pir.parse(str(exe.program))) == str(exe.program)
    xs = np.array([0.5, -0.25, 0.1, 1.0], "float32")
    x = hwport.to_tensor(xs, place=place)
    for n, flag in ((0, True), (1, False), (4, True), (7, False)):
        feeds = {"x": x, "n": hwport.to_tensor(np.array(n, "int64"), place=place),
                 "flag": hwport.to_tensor(np.array(flag), place=place)}
        r, i = exe.run(feeds)
        assert bits(r.numpy()) == bits(_loop_eager(x, n, flag).numpy()), (n, flag)
        assert int(i.numpy()) == n
    want = bits(_loop_eager(x, 7, False).numpy())
    exe.run(feeds)
    before = _core.memory_stats(place)["num_allocs"]
    out = exe.run(feeds)
    got = bits(out[0].numpy())
    del out
    assert _core.memory_stats(place)["num_allocs"] == before  # no allocation in a loop
    assert got == want


def test_a_loop_keeps_what_it_reads_from_before_it_alive():
    """x2 = x * 2 is read in every iteration: its bytes must not be reused by a body value
    (liveness to the loop's end), nor overwritten in place by the body's last use of it."""
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [8], "float32")
        n = b.data("n", [], "int64")
        x2 = b.pd_op.exp(x)

        def body(i, acc):
            i2 = b.pd_op.add(i, b.pd_op.ones_like(i))
            return b.pd_op.less_than(i2, n), [i2, b.pd_op.tanh(b.pd_op.add(acc, x2))]

        _, acc = b.cf.while_(b.pd_op.less_than(b.pd_op.zeros_like(n), n),
                             [b.pd_op.zeros_like(n), b.pd_op.sin(x)], body)
        b.output(acc, "acc")
    exe = pir.Executor(p, "custom:cpu")
    lines = exe.describe().splitlines()
    assert not any("add<float32>" in ln and "in place" in ln for ln in lines), lines
    x = hwport.to_tensor(np.linspace(-1, 1, 8, dtype="float32"))
    (got,) = exe.run({"x": x, "n": hwport.to_tensor(np.array(5, "int64"))})
    acc = hwport.sin(x)
    for _ in range(5):
        acc = hwport.tanh(acc + hwport.exp(x))
    assert bits(got.numpy()) == bits(acc.numpy())


def test_a_condition_must_be_a_one_element_bool():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2], "float32")
        c = b.data("c", [2], "bool")
        op = pir.Operation.create("cf.if", [c], [x.type], None, 2)
        for region in op.regions:
            with b.at(region.add_block()):
                b.cf.yield_(x)
        b.insert(op)
        b.output(op.result(), "y")
    with pytest.raises(pir.VerificationError, match="bool tensor of one element"):
        p.verify()

# ---- memory ----------------------------------------------------------------------------------

@pytest.mark.parametrize("place", PLACES)
def test_no_allocator_call_in_a_steady_state_run(place):
    p = mlp_program()
    exe = pir.Executor(p, place, parameters=mlp_params(place, p))
    x = hwport.to_tensor(np.ones((8, 16), "float32"), place=place)
    first = exe.run({"x": x})[0].numpy()
    del first
    before = _core.memory_stats(place)
    for _ in range(3):
        out = exe.run({"x": x})
        del out
    after = _core.memory_stats(place)
    assert after["num_allocs"] == before["num_allocs"]


def test_kernel_workspaces_are_kept_across_runs():
    """OpenCL's row-split reduction asks for a workspace on every call (eager: the output and
    the workspace per call); the executor sizes it in its first run and keeps it."""
    place = "custom:opencl"
    p = pir.Program()
    with pir.Builder(p) as b:
        b.output(b.pd_op.sum(b.pd_op.exp(b.data("x", [4, 8192], "float32")), axis=[1]), "y")
    x = hwport.to_tensor(np.linspace(-1, 1, 4 * 8192, dtype="float32").reshape(4, 8192),
                         place=place)
    e = hwport.exp(x)
    before = _core.memory_stats(place)["num_allocs"]
    want = hwport.sum(e, axis=[1])
    assert _core.memory_stats(place)["num_allocs"] == before + 2  # the result, the workspace
    exe = pir.Executor(p, place)
    assert exe.arena_bytes > 0  # built (the arena allocated)
    counts = []
    for _ in range(3):
        before = _core.memory_stats(place)["num_allocs"]
        (got,) = exe.run({"x": x})
        assert bits(got.numpy()) == bits(want.numpy())
        del got
        counts.append(_core.memory_stats(place)["num_allocs"] - before)
    assert counts == [1, 0, 0], counts


FALLBACK_SCRIPT = r"""
import json, numpy as np, hwport
from hwport import pir
from hwport.runtime import _core, fallback_stats, reset_fallback_stats, set_fallback_mode

P = "custom:test_good"  # the zoo plugin has add but no exp: exp runs on the CPU fallback
p = pir.Program()
with pir.Builder(p) as b:
    x = b.data("x", [3, 5], "float32")
    b.output(b.pd_op.add(b.pd_op.exp(b.pd_op.add(x, x)), x), "y")
xs = np.linspace(-2, 2, 15, dtype="float32").reshape(3, 5)
x = hwport.to_tensor(xs, place=P)
reset_fallback_stats()
want = hwport.add(hwport.exp(hwport.add(x, x)), x).numpy()
eager_stats = {k[0]: v for k, v in fallback_stats().items()}
exe = pir.Executor(p, P)
exe.arena_bytes  # built
res = {"describe": exe.describe(), "allocs": [], "equal": [], "eager_stats": eager_stats}
for _ in range(3):
    reset_fallback_stats()
    before = [_core.memory_stats(q)["num_allocs"] for q in (P, "custom:cpu")]
    (y,) = exe.run({"x": x})
    res["equal"].append(y.numpy().tobytes() == want.tobytes())
    del y
    after = [_core.memory_stats(q)["num_allocs"] for q in (P, "custom:cpu")]
    res["allocs"].append([a - b for a, b in zip(after, before)])
    res["stats"] = {k[0]: v for k, v in fallback_stats().items()}
set_fallback_mode("error")
try:
    exe.run({"x": x})
except hwport.FallbackError as e:
    res["error"] = str(e)
print("RESULT " + json.dumps(res))
"""


def test_a_fallback_op_keeps_its_staging_buffers_across_runs():
    import json

    from tests.conftest import run_isolated, zoo_plugin_path

    proc = run_isolated(FALLBACK_SCRIPT, {"HWPORT_PLUGIN_PATH": str(zoo_plugin_path("good"))})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    r = json.loads(line[len("RESULT "):])
    assert "= exp<float32>(%1) cpu fallback" in r["describe"], r["describe"]
    assert r["equal"] == [True] * 3
    assert r["stats"] == r["eager_stats"] == {"exp": 1}  # counted as eager counts it
    # the first run stages the CPU copies (one input, one output); then none on either device
    assert r["allocs"] == [[0, 2], [0, 0], [0, 0]], r["allocs"]
    # HWPORT_FALLBACK=error: eager's error, with the instruction
    assert re.fullmatch(r"Executor.run: instruction 1 \(exp float32\): exp: no kernel for "
                        r"dtype float32 on custom:test_good:0, and HWPORT_FALLBACK=error "
                        r"forbids the CPU fallback", r["error"]), r["error"]


REFUSED_SCRIPT = r"""
import json, numpy as np, hwport
from hwport import pir
from hwport.runtime import _core, fallback_stats, reset_fallback_stats, set_fallback_mode

P = "custom:test_runtime_not_supported"  # its add refuses (NOT_SUPPORTED) ranks above 2
p = pir.Program()
with pir.Builder(p) as b:
    x = b.data("x", [2, 3, 4], "float32")
    v = b.data("v", [2, 3], "float32")
    b.output(b.pd_op.add(b.pd_op.add(x, x), x), "y")  # two refused launches
    b.output(b.pd_op.add(v, v), "w")  # taken by the device
xs = np.linspace(-2, 2, 24, dtype="float32").reshape(2, 3, 4)
vs = np.arange(6, dtype="float32").reshape(2, 3)
x, v = hwport.to_tensor(xs, place=P), hwport.to_tensor(vs, place=P)

def allocs():
    return [_core.memory_stats(q)["num_allocs"] for q in (P, "custom:cpu")]

reset_fallback_stats()
before = allocs()
want = [hwport.add(hwport.add(x, x), x).numpy(), hwport.add(v, v).numpy()]
res = {"eager_allocs": [a - b for a, b in zip(allocs(), before)],
       "eager_stats": {k[0]: n for k, n in fallback_stats().items()},
       "describe": "", "allocs": [], "equal": []}
exe = pir.Executor(p, P)
res["describe"] = exe.describe()
for _ in range(3):
    reset_fallback_stats()
    before = allocs()
    out = exe.run({"x": x, "v": v})
    res["equal"].append([o.numpy().tobytes() == w.tobytes() for o, w in zip(out, want)])
    del out
    res["allocs"].append([a - b for a, b in zip(allocs(), before)])
    res["stats"] = {k[0]: n for k, n in fallback_stats().items()}
set_fallback_mode("error")
try:
    exe.run({"x": x, "v": v})
except hwport.FallbackError as e:
    res["error"] = str(e)
print("RESULT " + json.dumps(res))
"""


def test_a_kernel_refusing_a_call_falls_back_into_kept_staging_buffers():
    """A kernel that refuses a call at launch (HWP_ERROR_NOT_SUPPORTED) gets the CPU fallback
    as eager gives it (the same result, counted the same), but into the executor's staging
    buffers: after the first run no allocator call on either device."""
    import json

    from tests.conftest import run_isolated, zoo_plugin_path

    proc = run_isolated(REFUSED_SCRIPT,
                        {"HWPORT_PLUGIN_PATH": str(zoo_plugin_path("runtime_not_supported"))})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    r = json.loads(line[len("RESULT "):])
    assert "cpu fallback" not in r["describe"]  # the device has the kernel: it is launched
    assert r["equal"] == [[True, True]] * 3
    assert r["stats"] == r["eager_stats"] == {"add": 2}
    # eager allocates the CPU copies per call (2 refused calls: 2 inputs + 1 output each) and
    # its results; the executor stages once (first run), then allocates nothing
    assert r["eager_allocs"][1] == 6, r["eager_allocs"]
    assert r["allocs"][0][0] == 0 and r["allocs"][0][1] > 0, r["allocs"]
    assert r["allocs"][1:] == [[0, 0], [0, 0]], r["allocs"]
    assert re.fullmatch(r"Executor.run: instruction 0 \(add float32\): add \(float32\) on "
                        r"custom:test_runtime_not_supported:0: the kernel refused the call: .*"
                        r"rank 3 is not supported.*, and HWPORT_FALLBACK=error forbids the CPU "
                        r"fallback", r["error"]), r["error"]


def test_an_output_the_caller_holds_is_never_overwritten():
    place = "custom:cpu"
    p = pir.Program()
    with pir.Builder(p) as b:
        b.output(b.pd_op.exp(b.data("x", [4], "float32")), "y")
    exe = pir.Executor(p, place)
    (a,) = exe.run({"x": hwport.to_tensor(np.zeros(4, "float32"), place=place)})
    before = _core.memory_stats(place)["num_allocs"]
    (b2,) = exe.run({"x": hwport.to_tensor(np.ones(4, "float32"), place=place)})
    assert _core.memory_stats(place)["num_allocs"] == before + 2  # the feed and a new output
    np.testing.assert_array_equal(a.numpy(), np.ones(4, "float32"))  # exp(0), kept
    np.testing.assert_allclose(b2.numpy(), np.exp(np.ones(4, "float32")), rtol=1e-6)


def test_an_elementwise_chain_runs_in_place_in_one_buffer():
    p = pir.Program()
    with pir.Builder(p) as b:
        v = b.data("x", [64], "float32")
        for _ in range(10):
            v = b.pd_op.exp(v)
        b.output(b.pd_op.neg(v), "y")
    exe = pir.Executor(p, "custom:cpu")
    # the first exp reads the caller's feed (never overwritten); each later result takes the
    # bytes of the input dying at it: 10 intermediates of 256 bytes in one buffer
    assert (exe.arena_bytes, exe.num_in_place) == (256, 10)
    x = np.linspace(-1, 0, 64).astype("float32")
    (got,) = exe.run({"x": hwport.to_tensor(x, place="custom:cpu")})
    want = hwport.to_tensor(x, place="custom:cpu")
    for _ in range(10):
        want = hwport.exp(want)
    assert bits(got.numpy()) == bits(hwport.neg(want).numpy())


@pytest.mark.parametrize("place", PLACES)
def test_in_place_is_refused_where_it_would_change_a_result(place):
    """Near misses of the in-place rule: a value read again later (y below), a result of
    another dtype (less_than), another shape (a broadcast add), a non-elementwise kernel
    (cumsum), an operand viewing the dying input another way (t + t.T)."""
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [4, 4], "float32")
        e = b.pd_op.exp(x)
        y = b.pd_op.sin(e)                       # e dies here: in place
        z = b.pd_op.cos(y)                       # y is read again below: not in place
        c = b.pd_op.less_than(z, y)              # bool result
        big = b.pd_op.add(b.pd_op.tanh(z), b.data("w", [3, 4, 4], "float32"))
        s = b.pd_op.cumsum(b.pd_op.abs(y), axis=1)
        t = b.pd_op.sigmoid(s)
        u = b.pd_op.add(t, b.pd_op.transpose(t, perm=[1, 0]))
        for i, v in enumerate((c, big, u)):
            b.output(v, f"out{i}")
    exe = pir.Executor(p, place)
    rng = np.random.default_rng(1)
    xs = rng.standard_normal((4, 4)).astype("float32")
    ws = rng.standard_normal((3, 4, 4)).astype("float32")
    got = exe.run({"x": hwport.to_tensor(xs, place=place), "w": hwport.to_tensor(ws, place=place)})
    X, W = hwport.to_tensor(xs, place=place), hwport.to_tensor(ws, place=place)
    Y = hwport.sin(hwport.exp(X))
    Z = hwport.cos(Y)
    T = hwport.nn.functional.sigmoid(hwport.cumsum(hwport.abs(Y), axis=1))
    want = [hwport.less_than(Z, Y), hwport.add(hwport.tanh(Z), W), T + hwport.transpose(T, [1, 0])]
    for g, w in zip(got, want, strict=True):
        assert bits(g.numpy()) == bits(w.numpy())
    assert exe.num_in_place == 4  # sin, tanh, abs, sigmoid
    lines = {ln.split(" = ")[0]: ln for ln in exe.describe().splitlines()}
    assert lines["%2"].endswith("in place of %1") and "in place" not in lines["%13"]


@pytest.mark.parametrize("place", PLACES)
def test_mlp_peak_memory_is_at_most_eagers(place):
    p = mlp_program(batch=64, d_in=64, hidden=256, d_out=64)
    ps = mlp_params(place, p)
    x = hwport.to_tensor(np.ones((64, 64), "float32"), place=place)
    mlp_eager(x, ps)  # warm the caches
    base = _core.memory_stats(place)["allocated_bytes"]
    _core.reset_peak_memory_stats(place)
    out = mlp_eager(x, ps)
    eager_peak = _core.memory_stats(place)["peak_allocated_bytes"] - base
    del out
    base = _core.memory_stats(place)["allocated_bytes"]
    _core.reset_peak_memory_stats(place)
    exe = pir.Executor(p, place, parameters=ps)
    exe.run({"x": x})
    exe_peak = _core.memory_stats(place)["peak_allocated_bytes"] - base
    assert 0 < exe_peak <= eager_peak, (exe_peak, eager_peak)


# ---- errors --------------------------------------------------------------------------------

def test_run_errors_name_the_feed_and_the_parameter():
    p = mlp_program()
    with pytest.raises(KeyError, match="parameter 'w1' is not bound"):
        pir.Executor(p, "custom:cpu").run({})
    exe = pir.Executor(p, "custom:cpu", parameters=mlp_params("custom:cpu", p))
    with pytest.raises(KeyError, match=r"missing feed\(s\) \['x'\]"):
        exe.run({})
    with pytest.raises(ValueError, match=r"feed 'x' expected shape \[8, 16\] float32"):
        exe.run({"x": hwport.to_tensor(np.ones((8, 15), "float32"), place="custom:cpu")})


def test_a_program_lowered_for_one_place_is_refused_on_another():
    p = pir.Program()
    with pir.Builder(p) as b:
        b.output(b.pd_op.exp(b.data("x", [4], "float32")), "y")
    PassManager("lower_to_kernel{place=custom:cpu}").run(p)
    with pytest.raises(ValueError, match=r"lowered for 'cpu' \(exp\).*custom:opencl"):
        pir.Executor(p, "custom:opencl").run({})


def test_a_strided_feed_is_taken_as_its_values():
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [3, 4], "float32")
        b.output(b.pd_op.multiply(x, x), "y")
    a = np.arange(12, dtype="float32").reshape(4, 3)
    t = hwport.to_tensor(a, place="custom:cpu").T  # a [3, 4] view with strides (1, 3)
    (got,) = pir.Executor(p, "custom:cpu").run({"x": t})
    np.testing.assert_array_equal(got.numpy(), a.T * a.T)


def test_the_launch_timer_counts_kernel_function_calls_on_this_thread():
    """benchmarks/bench_executor.py subtracts the plugins' launch time with it."""
    x = hwport.to_tensor(np.ones(3, "float32"), place="custom:cpu")
    exe = pir.Executor(_chain(), "custom:cpu")
    exe.run({"x": x})
    _core._launch_timer_start()
    exe.run({"x": x})
    hwport.exp(x)
    ns, launches = _core._launch_timer_stop()
    assert launches == 3 and ns > 0  # the program's two kernels, eager's exp
    hwport.exp(x)  # stopped: not counted
    _core._launch_timer_start()
    assert _core._launch_timer_stop() == (0, 0)  # a start begins from zero


def _chain() -> pir.Program:
    p = pir.Program()
    with pir.Builder(p) as b:
        b.output(b.pd_op.neg(b.pd_op.exp(b.data("x", [3], "float32"))), "y")
    return p


# ---- writes into bound tensors (to_static's training steps) -------------------------------

def _write_program(read_after: bool) -> pir.Program:
    """w_new = w * 2 + x, written into parameter w; with read_after, an output also reads the
    old w after the write's value is made (so it cannot be made in w's memory)."""
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [4], "float32")
        w = b.parameter("w", [4], "float32")
        new = b.pd_op.add(b.pd_op.multiply(w, b.constant(2.0, [], "float32")), x)
        b.output(b.pd_op.sum(new), "total")
        if read_after:
            b.output(b.pd_op.sum(b.pd_op.multiply(w, x)), "old")
        b.output(new, "w_new")
    return p


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("read_after", [False, True])
def test_a_write_lands_in_the_parameter_in_place_or_copied(place, read_after):
    w = hwport.to_tensor(np.array([1, 2, 3, 4], np.float32), place=place)
    version = _core._storage_version(w)
    exe = pir.Executor(_write_program(read_after), place, {"w": w}, writes={"w_new": "w"})
    x = hwport.to_tensor(np.array([0.5, 0.5, 0.5, 0.5], np.float32), place=place)
    want = np.array([1, 2, 3, 4], np.float32)
    for _ in range(3):
        outs = exe.run({"x": x})
        assert len(outs) == 1 + read_after  # the write is not returned
        if read_after:
            assert outs[1].numpy() == pytest.approx(float((want * 0.5).sum()))
        want = want * 2 + 0.5
        np.testing.assert_array_equal(w.numpy(), want)
        assert outs[0].numpy() == pytest.approx(float(want.sum()))
    assert exe._static.impl.num_written_in_place == (0 if read_after else 1)
    assert _core._storage_version(w) == version + 3  # as set_value: saved tensors see it


def test_a_write_target_must_be_a_bound_tensor_of_the_values_type():
    p = _write_program(False)
    w = hwport.to_tensor(np.zeros(4, np.float32))
    v = hwport.to_tensor(np.zeros(3, np.float32))  # written, never read, the wrong shape
    with pytest.raises(ValueError, match="bound tensor of the value's shape and dtype"):
        pir.Executor(p, "custom:cpu", {"w": w, "v": v}, writes={"w_new": "v"}).run(
            {"x": hwport.to_tensor(np.zeros(4, np.float32))})
    with pytest.raises(KeyError, match="'u' is not bound"):
        pir.Executor(p, "custom:cpu", {"w": w}, writes={"w_new": "u"}).run(
            {"x": hwport.to_tensor(np.zeros(4, np.float32))})
