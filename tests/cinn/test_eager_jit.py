"""The eager JIT (cinn_backends/eager_jit.py, runtime/src/dispatch.h): on the template plugin
(device_plugins/template: a device runtime, the copy kernel and the c99 codegen target, no
other kernels), op calls run through kernels the compiler generates, counted in
compiled_stats() and not in fallback_stats(); what the compiler cannot lower still takes the
counted CPU fallback. Each test runs in a fresh process: plugins and the provider are set up
at import."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_isolated

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


def run_json(code: str, so: Path, **env: str) -> dict:
    """Runs `code` (which prints one JSON line last) with the template plugin loaded."""
    proc = run_isolated(code, env={"HWPORT_PLUGIN_PATH": str(so), **env}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout.splitlines()[-1])
    doc["stderr"] = proc.stderr
    return doc


PRELUDE = """
import json, warnings
import numpy as np
import hwport
from hwport.runtime import _core
rt = hwport.runtime
P = "custom:mydev"
rng = np.random.default_rng(0)
def t(a):
    return hwport.to_tensor(a, place=P)
def stats():
    return {"compiled": sorted(k[0] for k in rt.compiled_stats() if k[1] == "mydev"),
            "cpu": sorted(k[0] for k in rt.fallback_stats() if k[1] == "mydev")}
"""


def test_elementwise_and_reductions_run_compiled(mydev: Path) -> None:
    doc = run_json(PRELUDE + """
a = rng.standard_normal((5, 7)).astype("float32")
b = rng.standard_normal((7,)).astype("float32")
c = rng.standard_normal((7, 5)).astype("float32")
x, y, xt = t(a), t(b), t(c).T  # xt: a strided view, made contiguous by the copy kernel
rt.reset_fallback_stats()
checks = {
    "add": np.allclose((x + y).numpy(), a + b),
    "multiply_strided": np.allclose((x * xt).numpy(), a * c.T),
    "exp": np.allclose(hwport.exp(x).numpy(), np.exp(a), rtol=1e-5),
    "where": np.array_equal(hwport.where(x > y, x, y).numpy(), np.where(a > b, a, b)),
    "cast": np.array_equal(x.astype("int32").numpy(), a.astype("int32")),
    "sum": np.allclose(hwport.sum(x, axis=1).numpy(), a.sum(1), rtol=1e-5, atol=1e-5),
    "mean_keepdim": np.allclose(hwport.mean(x, axis=0, keepdim=True).numpy(),
                                a.mean(0, keepdims=True), rtol=1e-5, atol=1e-6),
    "max": np.array_equal(hwport.max(x, axis=-1).numpy(), a.max(-1)),
}
from hwport.cinn_backends import eager_jit
print(json.dumps({"checks": checks, **stats(), "why": eager_jit.unsupported(),
                  "kind": sorted(k[0] for k in rt.fallback_stats(kind="compiled")),
                  "plugin": [p for p in rt.plugins() if p["device_type"] == "mydev"][0]}))
""", mydev)
    assert all(doc["checks"].values()), doc["checks"]
    assert doc["cpu"] == [], (doc["why"], doc["stderr"])
    # x > y runs as less_than(y, x); mean as sum and divide
    assert {"add", "multiply", "exp", "where", "cast", "sum", "max"} <= set(doc["compiled"])
    assert doc["kind"] == doc["compiled"]
    assert doc["plugin"]["has_codegen_target"] and doc["plugin"]["num_kernels"] == 10


def test_repeated_calls_compile_once_per_shape_class(mydev: Path) -> None:
    doc = run_json(PRELUDE + """
from hwport.cinn_backends import compile as cc, eager_jit
seen = []
for n in (3, 4, 5, 9):  # one shape class: [n, 6] + [6]
    a = rng.standard_normal((n, 6)).astype("float32")
    b = rng.standard_normal((6,)).astype("float32")
    ok = np.allclose((t(a) + t(b)).numpy(), a + b)
    # built once: compiled, or loaded from the disk cache an earlier process filled
    seen.append([ok, cc.STATS["compiled"] + cc.STATS["disk_hits"], eager_jit.STATS["lowered"]])
count = rt.compiled_stats()[("add", "mydev", "float32")]
print(json.dumps({"seen": seen, **stats(), "count": count}))
""", mydev)
    assert all(ok for ok, _, _ in doc["seen"])
    assert {(c, lw) for _, c, lw in doc["seen"]} == {(1, 1)}, doc["seen"]
    assert doc["count"] == 4 and doc["cpu"] == []


TUNED = PRELUDE + """
from hwport.cinn_backends import autotune, eager_jit
runs = []
for shape in SHAPES:
    a = rng.standard_normal(shape).astype("float32")
    ok = bool(np.allclose(hwport.exp(t(a)).numpy(), np.exp(a), rtol=1e-5))
    runs.append([ok, autotune.STATS["tuned"], autotune.STATS["reused"],
                 eager_jit.STATS["lowered"]])
print(json.dumps({"runs": runs, **stats()}))
"""


def test_large_calls_are_autotuned_once_per_size_bucket(mydev: Path, tmp_path: Path) -> None:
    """Calls of at least HWPORT_CINN_TUNE_MIN elements get the group's schedule measured on
    the device (autotune.py), one search per power-of-two size bucket of a shape class, the
    winner on disk: a second process reuses it and searches nothing."""
    env = {"HWPORT_CINN_TUNE_MIN": "1000", "HWPORT_CINN_TUNE_BUDGET": "0.5",
           "HWPORT_CINN_CACHE_DIR": str(tmp_path)}
    # [64, 60] and [63, 60]: one shape class, one bucket; [128, 120]: a bigger bucket; [8, 6]:
    # below the minimum
    shapes = "SHAPES = [(64, 60), (63, 60), (128, 120), (8, 6)]\n"
    doc = run_json(shapes + TUNED, mydev, **env)
    assert [r[0] for r in doc["runs"]] == [True] * 4 and doc["cpu"] == []
    assert [r[1] for r in doc["runs"]] == [1, 1, 2, 2], doc["runs"]  # searches so far
    assert [r[3] for r in doc["runs"]] == [1, 1, 2, 3], doc["runs"]  # kernels lowered
    assert (tmp_path / "autotune.json").is_file()
    again = run_json("SHAPES = [(64, 60), (128, 120)]\n" + TUNED, mydev, **env)
    assert [r[0] for r in again["runs"]] == [True, True]
    assert [r[1:3] for r in again["runs"]] == [[0, 1], [0, 2]], again["runs"]


# the template's argsort, patched so that its launch plan refuses rows over 4096 (as the SIMT
# rank sort does): a call the eager JIT refuses
REFUSING_ARGSORT = """
from hwport.cinn_backends import sort_kernel
base = sort_kernel.LOWERINGS["argsort"]
def refusing(*args):
    low = base(*args)
    plan = low.plan
    low.plan = lambda shapes: None if shapes[("in", 0)][-1] > 4096 else plan(shapes)
    return low
sort_kernel.LOWERINGS["argsort"] = refusing
"""


def test_a_call_the_compiler_cannot_take_falls_back(mydev: Path) -> None:
    """A lowering whose launch plan refuses a call (as the SIMT rank sort refuses rows longer
    than sort_kernel.MAX_ROW; here the template's argsort, patched to refuse rows over 4096):
    the call runs on the counted CPU fallback, the lowering is kept for the rows it takes."""
    doc = run_json(PRELUDE + REFUSING_ARGSORT + """
from hwport.cinn_backends import eager_jit
a = rng.standard_normal((2, 5000)).astype("float32")
want = np.argsort(a, axis=1, kind="stable")
ok = all(np.array_equal(hwport.argsort(t(a), axis=1).numpy(), want) for _ in range(2))
n = rt.fallback_stats()[("argsort", "mydev", "float32")]
short = np.array_equal(hwport.argsort(t(a[:, :300]), axis=1).numpy(),
                       np.argsort(a[:, :300], axis=1, kind="stable"))
print(json.dumps({"ok": ok and short, **stats(), "n": n, "lowered": eager_jit.STATS["lowered"]}))
""", mydev)
    assert doc["ok"]
    assert "argsort" in doc["cpu"] and doc["n"] == 2
    assert "argsort" in doc["compiled"] and doc["lowered"] == 1  # one shape class, one lowering


def test_tiled_matmul_sorts_and_blocked_scatter_are_exact(mydev: Path) -> None:
    """matmul_kernel's register tiles (full and clipped edge tiles, several packed k blocks,
    batches, wrapping integers, a float16 output that takes the unpacked path), sort_kernel's
    CPU sorts (the merge sort of rows up to MERGE_ROW, the in-place heapsort of longer ones)
    with NaN, ties and both orders, and scatter_kernel's row blocks (rows longer than a block,
    repeated indices: the last assign wins, adds accumulate in order) against the CPU
    plugin's kernels."""
    doc = run_json(PRELUDE + """
from hwport.cinn_backends import eager_jit, sort_kernel
C = "custom:cpu"
def both(fn, *arrays):
    got = fn(*[t(a) for a in arrays]).numpy()
    want = fn(*[hwport.to_tensor(a, place=C) for a in arrays]).numpy()
    return got, want
checks = {}
for name, (b, m, k, n) in {"edges": ((), 37, 45, 51), "kblocks": ((2,), 9, 1300, 70),
                           "tiny": ((), 1, 1, 1), "square": ((), 128, 128, 128)}.items():
    x = rng.standard_normal((*b, m, k)).astype("float32")
    y = rng.standard_normal((*b, k, n)).astype("float32")
    got, _ = both(hwport.matmul, x, y)
    checks["matmul_" + name] = np.allclose(got, x @ y, rtol=1e-4, atol=1e-4)
xi = rng.integers(-2**20, 2**20, (19, 700)).astype("int32")
yi = rng.integers(-2**20, 2**20, (700, 21)).astype("int32")
got, want = both(hwport.matmul, xi, yi)
checks["matmul_int32_wraps"] = np.array_equal(got, want) and np.array_equal(
    got, (xi.astype("int64") @ yi.astype("int64")).astype("int32"))
xh = rng.standard_normal((6, 700)).astype("float16")
yh = rng.standard_normal((700, 5)).astype("float16")
got, _ = both(hwport.matmul, xh, yh)
checks["matmul_float16"] = np.allclose(got.astype("float32"), xh.astype("float32") @
                                       yh.astype("float32"), rtol=2e-2, atol=0.5)
for n in (1, 2, 3, 1000, sort_kernel.MERGE_ROW, sort_kernel.MERGE_ROW + 3):
    a = rng.integers(-4, 4, (2, n)).astype("float32")
    a[:, ::7] = np.nan
    a[:, 1::5] += rng.standard_normal(a[:, 1::5].shape).astype("float32")
    for desc in (False, True):
        got, want = both(lambda v, d=desc: hwport.argsort(v, axis=-1, descending=d), a)
        checks[f"argsort_{n}_{desc}"] = np.array_equal(got, want)
ai = rng.integers(-3, 3, (50, 3, 4)).astype("int64")
got, want = both(lambda v: hwport.argsort(v, axis=0, descending=True), ai)
checks["argsort_int_inner"] = np.array_equal(got, want) and np.array_equal(
    hwport.argsort(t(ai), axis=0).numpy(), np.argsort(ai, 0, kind="stable"))
from hwport.cinn_backends import scatter_kernel
for xs, axis, n in (((4, 6, scatter_kernel.BLOCK + 44), 1, 10), ((9, 5), 0, 30)):
    for dt in ("float32", "int32", "bool"):
        for red in ("assign", "add"):
            x = (rng.standard_normal(xs) * 3).astype(dt)
            us = list(xs)
            us[axis] = n
            u = (rng.standard_normal(us) * 3).astype(dt)
            idx = rng.integers(0, xs[axis], n).astype("int64")
            got, want = both(lambda a, i, v, r=red, ax=axis: hwport.ops.scatter(a, i, v, axis=ax,
                                                                            reduce=r), x, idx, u)
            checks[f"scatter_{xs}_{dt}_{red}"] = np.array_equal(got, want)
print(json.dumps({"checks": checks, **stats()}))
""", mydev)
    assert all(doc["checks"].values()), doc["checks"]
    assert doc["cpu"] == [] and {"matmul", "argsort", "scatter"} <= set(doc["compiled"])


def test_a_composite_asked_directly_lowers_as_one_fused_group(mydev: Path) -> None:
    """The provider takes a composite (softmax, layer_norm, rms_norm, relu, gelu) as its
    decomposition lowered as one group: one kernel launch per call, the CPU plugin's results.
    (The runtime asks the provider per primitive today; this is the provider's side of asking
    it for the composite first.)"""
    doc = run_json(PRELUDE + """
from hwport.cinn_backends import eager_jit
F = hwport.nn.functional
C = "custom:cpu"
x = rng.standard_normal((37, 300)).astype("float32")
w = rng.standard_normal(300).astype("float32")
b = rng.standard_normal(300).astype("float32")
cases = [("softmax", [x], {"axis": -1}, lambda a: F.softmax(a, axis=-1)),
         ("layer_norm", [x, w, b], {"normalized_ndim": 1, "epsilon": 1e-5},
          lambda a, w_, b_: F.layer_norm(a, [300], w_, b_, 1e-5)),
         ("rms_norm", [x, w], {"normalized_ndim": 1, "epsilon": 1e-6},
          lambda a, w_: F.rms_norm(a, [300], w_, 1e-6)),
         ("relu", [x], {}, F.relu), ("gelu", [x], {"approximate": False}, F.gelu)]
checks, kernels = {}, {}
for op, arrays, attrs, fn in cases:
    want = fn(*[hwport.to_tensor(a, place=C) for a in arrays]).numpy()
    out = t(np.zeros(want.shape, "float32"))
    ok = eager_jit.provide(op, "float32", P, [t(a) for a in arrays], [out], attrs)
    checks[op] = bool(ok) and np.allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    kernels[op] = [len(e.lowered.kernels) for k, e in eager_jit._entries.items() if k[0] == op]
print(json.dumps({"checks": checks, "kernels": kernels}))
""", mydev)
    assert all(doc["checks"].values()), doc["checks"]
    assert all(k == [1] for k in doc["kernels"].values()), doc["kernels"]


def test_fallback_error_mode_allows_compiled_runs(mydev: Path) -> None:
    doc = run_json(PRELUDE + REFUSING_ARGSORT + """
a = rng.standard_normal((4, 6)).astype("float32")
ok = np.allclose((t(a) * 2.0 + 1.0).numpy(), a * 2 + 1)
try:
    hwport.argsort(t(rng.standard_normal(5000).astype("float32"))).numpy()
    raised = None
except rt.FallbackError as exc:
    raised = str(exc)
print(json.dumps({"ok": ok, "raised": raised, **stats()}))
""", mydev, HWPORT_FALLBACK="error")
    assert doc["ok"] and doc["cpu"] == [] and "multiply" in doc["compiled"]
    assert doc["raised"] and "argsort" in doc["raised"]


def test_cinn_off_means_no_compiled_runs(mydev: Path) -> None:
    doc = run_json(PRELUDE + """
a = rng.standard_normal((4, 6)).astype("float32")
ok = np.allclose((t(a) + t(a)).numpy(), a + a)
print(json.dumps({"ok": ok, "provider": _core.jit_provider() is not None, **stats()}))
""", mydev, HWPORT_CINN="0")
    assert doc["ok"] and not doc["provider"]
    assert doc["compiled"] == [] and "add" in doc["cpu"]


def test_a_raising_provider_warns_once_and_falls_back(mydev: Path) -> None:
    doc = run_json(PRELUDE + """
def broken(op, dtype, place, inputs, outputs, attrs):
    raise RuntimeError("the provider broke")
_core.set_jit_provider(broken)
a = rng.standard_normal((4, 6)).astype("float32")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ok = all(np.allclose((t(a) + t(a)).numpy(), a + a) for _ in range(3))
msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
with warnings.catch_warnings():
    warnings.simplefilter("error")  # a warning raised as an error must not escape either
    ok2 = np.allclose(hwport.exp(t(a)).numpy(), np.exp(a), rtol=1e-5)
print(json.dumps({"ok": ok and ok2, "msgs": msgs, **stats(),
                  "n": rt.fallback_stats()[("add", "mydev", "float32")]}))
""", mydev)
    assert doc["ok"]
    assert len(doc["msgs"]) == 1 and "the provider broke" in doc["msgs"][0]
    assert "add (float32) on custom:mydev:0" in doc["msgs"][0]
    assert doc["compiled"] == [] and doc["n"] == 3 and "exp" in doc["cpu"]


def test_fallback_stats_kind(mydev: Path) -> None:
    doc = run_json(PRELUDE + """
try:
    rt.fallback_stats(kind="gpu")
    bad = False
except ValueError:
    bad = True
print(json.dumps({"bad": bad, "cpu": rt.fallback_stats(kind="cpu") == rt.fallback_stats()}))
""", mydev)
    assert doc["bad"] and doc["cpu"]


def test_disable_native_kernels_keeps_only_copy() -> None:
    proc = run_isolated("""
import json
import numpy as np
import hwport
rt = hwport.runtime
(p,) = [p for p in rt.plugins() if p["device_type"] == "cpu"]
a = np.arange(6, dtype="float32").reshape(2, 3)
x = hwport.to_tensor(a, place="custom:cpu")
print(json.dumps({"p": p, "t": x.T.numpy().tolist(),
                  "copy": rt._core.has_kernel("copy", "custom:cpu", "float32"),
                  "add": rt._core.has_kernel("add", "custom:cpu", "float32")}))
""", env={"HWPORT_DISABLE_NATIVE_KERNELS": "opencl, cpu"})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.splitlines()[-1])
    assert doc["p"]["native_kernels_disabled"] and doc["p"]["num_kernels"] == 10
    assert doc["copy"] and not doc["add"]
    assert doc["t"] == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_opencl_without_its_kernels_runs_compiled() -> None:
    doc = json.loads(run_isolated("""
import json
import hwport
print(json.dumps([p["device_count"] for p in hwport.runtime.plugins()
                  if p["device_type"] == "opencl"]))
""").stdout.splitlines()[-1])
    if not doc or not doc[0]:
        pytest.skip("no OpenCL device")
    proc = run_isolated(PRELUDE.replace('"custom:mydev"', '"custom:opencl"').replace(
        '"mydev"', '"opencl"') + """
a = rng.standard_normal((33, 65)).astype("float32")
b = rng.standard_normal((65,)).astype("float32")
ok = np.allclose((t(a) * t(b) + 1.0).numpy(), a * b + 1, rtol=1e-5, atol=1e-6)
ok &= np.allclose(hwport.sum(t(a), axis=1).numpy(), a.sum(1), rtol=1e-4, atol=1e-4)
e = np.zeros((3, 0), "float32")  # an empty input has no buffer: another tensor stands in
ok &= np.array_equal(hwport.sum(t(e), axis=1).numpy(), np.zeros(3, "float32"))
print(json.dumps({"ok": bool(ok), **stats()}))
""", env={"HWPORT_DISABLE_NATIVE_KERNELS": "opencl"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout.splitlines()[-1])
    assert doc["ok"] and doc["cpu"] == []
    assert {"add", "multiply", "sum"} <= set(doc["compiled"])


def test_arange_concat_and_pad_run_compiled(mydev: Path) -> None:
    """cinn_backends/index_kernels.py: the primitives lower_group does not fuse."""
    doc = run_json(PRELUDE + """
from hwport.phi_ops.promotion import scalar_to_dtype
checks = {}
for dt in ("float32", "float16", "int16", "int64"):
    checks[f"arange-{dt}"] = np.array_equal(
        hwport.arange(-3, 40000, 7, dtype=dt, place=P).numpy(),
        np.arange(-3, 40000, 7).astype(dt))
checks["arange-frac"] = np.array_equal(hwport.arange(0.5, 2.0, 0.25, dtype="float64",
                                                     place=P).numpy(), np.arange(0.5, 2, 0.25))
for dt in ("float32", "bool", "int8", "bfloat16"):
    a = rng.standard_normal((3, 70, 5)).astype("float32").astype(hwport.DType.__members__[dt]
                                                                  .to_numpy())
    b = rng.standard_normal((3, 2, 5)).astype("float32").astype(a.dtype)
    got = hwport.ops.concat([t(a), t(b), t(a)], axis=1).numpy()
    checks[f"concat-{dt}"] = np.array_equal(got, np.concatenate([a, b, a], axis=1))
    got = hwport.ops.pad(t(a), [1, 0, 2, 3], value=2.5).numpy()
    want = np.pad(a, [(1, 0), (2, 3), (0, 0)], constant_values=scalar_to_dtype(2.5, dt))
    checks[f"pad-{dt}"] = np.array_equal(got, want)
print(json.dumps({"checks": checks, **stats()}))
""", mydev)
    assert all(doc["checks"].values()), doc["checks"]
    assert doc["cpu"] == []
    assert {"arange", "concat", "pad"} <= set(doc["compiled"])


def test_float_to_int_casts_saturate(mydev: Path) -> None:
    """cast_kernel.py: NaN -> 0, truncation toward zero, saturation (ops.yaml's cast), where
    lower_group's rendered C conversion would be undefined."""
    doc = run_json(PRELUDE + """
a = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3.7, -3.7, 200.5, -129.9], "float32")
got = {dt: t(a).astype(dt).numpy().tolist() for dt in ("int8", "uint8", "int32", "int64")}
got["f16-int16"] = t(a.astype("float16")).astype("int16").numpy().tolist()
print(json.dumps({"got": got, **stats()}))
""", mydev)
    big = 2**63 - 1
    assert doc["got"] == {
        "int8": [0, 127, -128, 127, -128, 3, -3, 127, -128],
        "uint8": [0, 255, 0, 255, 0, 3, 0, 200, 0],
        "int32": [0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 3, -3, 200, -129],
        "int64": [0, big, -big - 1, 10**10, -(10**10), 3, -3, 200, -129],
        "f16-int16": [0, 32767, -32768, 32767, -32768, 3, -3, 200, -129]}
    assert "cast" in doc["compiled"] and doc["cpu"] == []


def test_index_scan_and_matmul_primitives_run_compiled(mydev: Path) -> None:
    """gather_kernels.py, row_kernels.py, matmul_kernel.py."""
    doc = run_json(PRELUDE + """
a = rng.standard_normal((5, 6)).astype("float32")
a[1, 2] = np.nan
idx = np.array([4, 0, 2, 2], "int64")
ti = rng.integers(0, 6, (5, 3)).astype("int32")
ai = rng.integers(-5, 5, (4, 7)).astype("int8")
x3 = rng.standard_normal((2, 5, 6)).astype("float32")
y3 = rng.standard_normal((2, 6, 3)).astype("float32")
y2 = rng.standard_normal((6, 7)).astype("float64")
ops = hwport.ops
from hwport.phi_ops import philox
checks = {
    "gather0": np.array_equal(ops.gather(t(a), t(idx), axis=0).numpy(), np.take(a, idx, 0),
                              equal_nan=True),
    "gather1": np.array_equal(ops.gather(t(a), t(idx), axis=1).numpy(), np.take(a, idx, 1),
                              equal_nan=True),
    "take_along_axis": np.array_equal(ops.take_along_axis(t(a), t(ti), axis=1).numpy(),
                                      np.take_along_axis(a, ti, 1), equal_nan=True),
    "take_along_axis_bcast": np.array_equal(
        ops.take_along_axis(t(a[:1]), t(ti[:1].astype("int64")), axis=1).numpy(),
        np.take_along_axis(a[:1], ti[:1], 1), equal_nan=True) and np.array_equal(
        ops.take_along_axis(t(a), t(ti[:1]), axis=1).numpy(),
        np.take_along_axis(a, np.broadcast_to(ti[:1], (5, 3)), 1), equal_nan=True),
    "argmax": np.array_equal(ops.argmax(t(a), axis=1).numpy(), np.argmax(a, 1)),
    "argmin": np.array_equal(ops.argmin(t(a), axis=0).numpy(), np.argmin(a, 0)),
    "cumsum": np.allclose(ops.cumsum(t(a), axis=1).numpy(), np.cumsum(a, 1), equal_nan=True),
    "cumprod": np.array_equal(ops.cumprod(t(ai), 0).numpy(), np.cumprod(ai.astype("int64"), 0)),
    "matmul": np.allclose(hwport.matmul(t(x3), t(y3)).numpy(), x3 @ y3, rtol=1e-5, atol=1e-5),
    "uniform": all(np.array_equal(
        hwport.uniform([33, 65], dt, -2.0, 3.0, seed=-3, offset=2**63 - 5, place=P).numpy(),
        philox.uniform([33, 65], -2.0, 3.0, -3, 2**63 - 5, dt))
        for dt in ("float32", "float64", "float16", "bfloat16")),
    "argsort": np.array_equal(hwport.argsort(t(a), axis=1).numpy(),
                              np.argsort(a, axis=1, kind="stable")),
    "argsort_desc": np.array_equal(  # NaN first, then descending, ties in index order
        hwport.argsort(t(a), axis=0, descending=True).numpy()[:, 2],
        np.concatenate([[1], np.delete(np.argsort(-a[:, 2], kind="stable"), -1)])),
    "scatter_assign": np.array_equal(
        ops.scatter(t(a), t(idx), t(b4 := rng.standard_normal((4, 6)).astype("float32")),
                    axis=0).numpy(),
        np.array([b4[1], a[1], b4[3], a[3], b4[0]]), equal_nan=True),
    "scatter_add": np.allclose(
        ops.scatter(t(a), t(idx), t(b4), axis=0, reduce="add").numpy(),
        np.array([a[0] + b4[1], a[1], a[2] + b4[2] + b4[3], a[3], a[4] + b4[0]]),
        equal_nan=True),
    "matmul64": np.allclose(hwport.matmul(t(a.astype("float64")[:, :6]), t(y2)).numpy(),
                            a.astype("float64") @ y2, equal_nan=True),
}
print(json.dumps({"checks": checks, **stats()}))
""", mydev)
    assert all(doc["checks"].values()), doc["checks"]
    assert doc["cpu"] == []
    assert {"gather", "take_along_axis", "argmax", "argmin", "cumsum", "cumprod",
            "matmul", "argsort", "scatter", "uniform"} <= set(doc["compiled"])
