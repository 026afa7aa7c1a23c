"""The dispatch order (DESIGN.md "Places and dispatch"): a composite runs the plugin's kernel when
the device has one and its decomposition otherwise; a primitive without a kernel runs on the
counted CPU fallback, which HWPORT_FALLBACK=error / set_fallback_mode("error") turns into
hwport.FallbackError; shape ops are views that share storage (a reshape of non-contiguous data
copies); phi_ops.primitives() and the decompositions of every composite exist."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

import hwport
from hwport.phi_ops import decompositions
from hwport.phi_ops.reference import reference
from hwport.phi_ops.sample_inputs import sample
from hwport.phi_ops.schema import load_ops
from hwport.phi_ops.tolerance import assert_close
from hwport.runtime import _core
from tests.conftest import run_isolated, zoo_plugin_path

OPS = load_ops()
PLACE = "custom:cpu"
FUSED_CANDIDATES = ["softmax", "log_softmax", "layer_norm", "rms_norm"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def _t(a):
    return hwport.to_tensor(np.asarray(a), place=PLACE)


@pytest.fixture
def launches(monkeypatch):
    """The op names the dispatcher launches (hwport.runtime._core.launch)."""
    seen: list[str] = []
    real = _core.launch

    def spy(op, *args, **kwargs):
        seen.append(op)
        return real(op, *args, **kwargs)

    monkeypatch.setattr(_core, "launch", spy)
    return seen


def _norm_inputs(op: str, dtype: str):
    rng = np.random.default_rng(7)
    x = sample(dtype, (4, 7, 10), rng, "wide")
    if op in ("softmax", "log_softmax"):
        return [x], {"axis": -1}
    w = sample(dtype, (10,), rng)
    if op == "layer_norm":
        return [x, w, sample(dtype, (10,), rng)], {"epsilon": 1e-5, "normalized_ndim": 1}
    return [x, w], {"epsilon": 1e-6, "normalized_ndim": 1}


def _public_call(op: str, inputs, attrs):
    """The op through its public function, in Paddle's form (layer_norm and rms_norm take
    normalized_shape; rms_norm's epsilon is eps)."""
    tensors = [_t(a) for a in inputs]
    if op not in ("layer_norm", "rms_norm"):
        return getattr(hwport, op)(*tensors, **attrs)
    shape = list(inputs[0].shape[inputs[0].ndim - attrs["normalized_ndim"]:])
    eps = {"epsilon" if op == "layer_norm" else "eps": attrs["epsilon"]}
    return getattr(hwport, op)(tensors[0], shape, *tensors[1:], **eps)


# ---- composites: the plugin's kernel when it has one, else the decomposition ------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", FUSED_CANDIDATES)
def test_composite_kernel_and_decomposition_agree(op, dtype, launches):
    inputs, attrs = _norm_inputs(op, dtype)
    want = reference(op, inputs, attrs)
    has = _core.has_kernel(op, PLACE, dtype)

    launches.clear()
    via_op = _public_call(op, inputs, attrs).numpy()
    if has:
        assert launches == [op], (
            f"custom:cpu registers a fused {op} kernel for {dtype}, so {op} must launch it "
            f"(once, and nothing else), but the dispatcher launched {launches}")
    else:
        assert op not in launches and launches, (
            f"custom:cpu has no {op} kernel for {dtype}: it must decompose into primitives, "
            f"launched {launches}")

    launches.clear()
    fn = getattr(decompositions, OPS[op].decompose)
    via_decomp = fn(*[_t(a) for a in inputs], **attrs).numpy()
    assert op not in launches, f"the decomposition of {op} calls its own kernel: {launches}"
    assert {"exp", "sum"} & set(launches) or op == "rms_norm", launches

    assert_close(op, dtype, via_op, want)
    assert_close(op, dtype, via_decomp, want)
    assert_close(op, dtype, via_op, via_decomp)


@pytest.mark.parametrize("op", FUSED_CANDIDATES)
def test_composite_decomposes_when_the_device_has_no_kernel(op, monkeypatch, launches):
    """With the kernel hidden from the registry lookup, the op runs its decomposition (on the
    same device) and still matches the reference."""
    real = _core.has_kernel
    monkeypatch.setattr(_core, "has_kernel",
                        lambda name, place, dtype: False if name == op else real(name, place,
                                                                                   dtype))
    inputs, attrs = _norm_inputs(op, "float32")
    launches.clear()
    out = _public_call(op, inputs, attrs)
    assert op not in launches and launches, f"{op} did not decompose: launched {launches}"
    assert str(out.place) == "custom:cpu:0"
    assert_close(op, "float32", out.numpy(), reference(op, inputs, attrs))


def test_cpu_plugin_registers_the_fused_kernels_the_design_promises():
    missing = [(op, d) for op in FUSED_CANDIDATES for d in ("float32",)
               if not _core.has_kernel(op, PLACE, d)]
    assert not missing, f"custom:cpu is expected to register fused kernels for {missing}"


def test_composites_without_kernels_decompose(launches):
    """Composites the CPU plugin does not implement natively decompose into primitives."""
    x = np.linspace(-3, 3, 12).astype(np.float32)
    ops = [op for op in ("sigmoid", "gelu", "silu", "logsumexp", "var", "std", "mean")
           if not _core.has_kernel(op, PLACE, "float32")]
    assert len(ops) >= 3, f"expected most of these composites to decompose on custom:cpu: {ops}"
    for op in ops:
        launches.clear()
        got = getattr(hwport, op)(_t(x)).numpy()
        assert op not in launches and launches, f"{op}: launched {launches}"
        assert_close(op, "float32", got, reference(op, [x], {}))


# ---- the CPU fallback on a plugin that lacks a primitive ---------------------------------------

GOOD_PLUGIN_SCRIPT = r"""
import json, numpy as np, hwport
from hwport.runtime import fallback_stats, reset_fallback_stats, set_fallback_mode

out = {"types": hwport.device.get_all_custom_device_type()}
P = "custom:test_good"
xs = np.array([0.5, 1.0, -2.0, 3.25, 0.0], np.float32)
x = hwport.to_tensor(xs, place=P)

def stats():
    return sorted([list(k) + [v] for k, v in fallback_stats().items() if k[1] == "test_good"])

reset_fallback_stats()
y = hwport.add(x, x)
out["add"] = {"values": y.numpy().tolist(), "place": str(y.place), "stats": stats()}

reset_fallback_stats()
y = hwport.exp(x)
out["exp"] = {"values": y.numpy().tolist(), "place": str(y.place), "stats": stats()}

reset_fallback_stats()
y = hwport.softmax(x)
out["softmax"] = {"values": y.numpy().tolist(), "place": str(y.place), "stats": stats()}

set_fallback_mode("error")
try:
    hwport.exp(x)
    out["error_mode"] = {"raised": None}
except Exception as e:
    out["error_mode"] = {"raised": type(e).__name__,
                         "is_fallback_error": isinstance(e, hwport.FallbackError),
                         "message": str(e)}
try:
    out["error_mode"]["add_still_works"] = hwport.add(x, x).numpy().tolist()
except Exception as e:
    out["error_mode"]["add_still_works"] = repr(e)
set_fallback_mode("allow")
out["after_restore"] = hwport.exp(x).numpy().tolist()
print("RESULT " + json.dumps(out))
"""

ENV_ERROR_SCRIPT = r"""
import json, numpy as np, hwport
x = hwport.to_tensor(np.array([1.0, 2.0], np.float32), place="custom:test_good")
res = {}
try:
    hwport.exp(x)
    res["raised"] = None
except Exception as e:
    res = {"raised": type(e).__name__, "is_fallback_error": isinstance(e, hwport.FallbackError),
           "message": str(e)}
res["add"] = hwport.add(x, x).numpy().tolist()
print("RESULT " + json.dumps(res))
"""


def _run(code: str, extra_env: dict[str, str]) -> dict:
    env = {"HWPORT_PLUGIN_PATH": str(zoo_plugin_path("good")), **extra_env}
    proc = run_isolated(code, env)
    assert proc.returncode == 0, f"subprocess failed:\n{proc.stdout}\n{proc.stderr}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"no result:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1][len("RESULT "):])


@pytest.fixture(scope="module")
def good_plugin_run() -> dict:
    return _run(GOOD_PLUGIN_SCRIPT, {"HWPORT_FALLBACK": "allow"})


def test_good_plugin_is_loaded(good_plugin_run):
    assert "test_good" in good_plugin_run["types"], good_plugin_run["types"]


def test_native_kernel_is_not_a_fallback(good_plugin_run):
    r = good_plugin_run["add"]
    assert r["stats"] == [], f"add/float32 is the good plugin's own kernel: {r['stats']}"
    assert r["place"].startswith("custom:test_good")
    np.testing.assert_array_equal(np.float32(r["values"]),
                                  2 * np.array([0.5, 1.0, -2.0, 3.25, 0.0], np.float32))


def test_missing_primitive_falls_back_counted_and_correct(good_plugin_run):
    r = good_plugin_run["exp"]
    assert r["stats"] == [["exp", "test_good", "float32", 1]], (
        f"exp on custom:test_good must be counted once as ('exp', 'test_good', 'float32'): "
        f"{r['stats']}")
    assert r["place"].startswith("custom:test_good"), "the result comes back to the device"
    xs = np.array([0.5, 1.0, -2.0, 3.25, 0.0], np.float32)
    assert_close("exp", "float32", np.float32(r["values"]), reference("exp", [xs], {}))


def test_composite_on_a_bare_plugin_decomposes_into_fallen_back_primitives(good_plugin_run):
    r = good_plugin_run["softmax"]
    ops = {s[0] for s in r["stats"]}
    assert "softmax" not in ops, "a composite decomposes; only its primitives fall back"
    assert {"exp", "max", "sum"} <= ops, f"softmax's primitives should fall back: {r['stats']}"
    assert all(s[2] == "float32" for s in r["stats"]), r["stats"]
    assert r["place"].startswith("custom:test_good")
    xs = np.array([0.5, 1.0, -2.0, 3.25, 0.0], np.float32)
    assert_close("softmax", "float32", np.float32(r["values"]), reference("softmax", [xs], {}))


def test_fallback_mode_error_raises_fallback_error(good_plugin_run):
    r = good_plugin_run["error_mode"]
    assert r["raised"] == "FallbackError" and r["is_fallback_error"], r
    assert "exp" in r["message"] and "test_good" in r["message"], r["message"]
    assert isinstance(r["add_still_works"], list), (
        f"native kernels still run in error mode: {r['add_still_works']}")
    xs = np.array([0.5, 1.0, -2.0, 3.25, 0.0], np.float32)
    assert_close("exp", "float32", np.float32(good_plugin_run["after_restore"]),
                 reference("exp", [xs], {}))


def test_hwport_fallback_env_var_error():
    r = _run(ENV_ERROR_SCRIPT, {"HWPORT_FALLBACK": "error"})
    assert r["raised"] == "FallbackError" and r["is_fallback_error"], r
    assert "exp" in r["message"], r["message"]
    assert r["add"] == [2.0, 4.0]


def test_error_mode_on_the_cpu_plugin_is_harmless():
    """The CPU plugin implements every primitive: error mode never triggers there."""
    previous = _core.fallback_mode()
    hwport.runtime.set_fallback_mode("error")
    try:
        x = _t(np.linspace(-2, 2, 9).astype(np.float32))
        for op in ("exp", "log1p", "tanh", "erf", "sin"):
            got = getattr(hwport, op)(hwport.abs(x) if op == "log1p" else x).numpy()
            assert got.shape == (9,)
        assert_close("softmax", "float32", hwport.softmax(x).numpy(),
                     reference("softmax", [np.linspace(-2, 2, 9).astype(np.float32)], {}))
    finally:
        hwport.runtime.set_fallback_mode(previous)
    assert _core.fallback_mode() == previous


def test_every_primitive_has_a_cpu_kernel():
    """Per the kernel contracts: every primitive, every listed dtype (divide's integer inputs
    are cast to float32 by the host, so only its float kernels exist)."""
    missing = []
    for name, op in OPS.items():
        if not op.is_primitive:
            continue
        for d in op.dtypes:
            if name == "divide" and d not in FLOATS:
                continue
            if not _core.has_kernel(name, PLACE, d):
                missing.append((name, d))
    assert not missing, f"custom:cpu lacks kernels for {missing}"


# ---- views share storage -----------------------------------------------------------------------

def _base():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = _t(arr)
    return t, np.from_dlpack(t)


def test_transpose_is_a_view():
    t, mem = _base()
    v = t.T
    assert list(v.shape) == [4, 3] and list(v.strides) == [1, 4] and not v.is_contiguous()
    mem[1, 2] = 100.0
    assert v.numpy()[2, 1] == 100.0, "x.T must share x's storage"
    v2 = hwport.transpose(t, [1, 0])
    assert v2.numpy()[2, 1] == 100.0


def test_slices_are_views():
    t, mem = _base()
    r = t[1:]
    assert r._offset == 4 and list(r.shape) == [2, 4]
    s = t[:, ::-2]
    assert list(s.strides) == [4, -2]
    mem[2, 3] = -7.0
    assert r.numpy()[1, 3] == -7.0, "x[1:] must share x's storage"
    assert s.numpy()[2, 0] == -7.0, "x[:, ::-2] must share x's storage"
    op_slice = hwport.slice(t, [0], [1], [3])
    mem[1, 0] = 55.0
    assert op_slice.numpy()[0, 0] == 55.0, "the slice op is a view"


def test_reshape_of_contiguous_is_a_view():
    t, mem = _base()
    r = hwport.reshape(t, [6, 2])
    m = t.reshape([2, 6])
    f = hwport.flatten(t)
    mem[0, 3] = 42.0
    assert r.numpy()[1, 1] == 42.0 and m.numpy()[0, 3] == 42.0 and f.numpy()[3] == 42.0, (
        "reshape/flatten of a contiguous tensor must be views")


def test_reshape_of_non_contiguous_copies():
    t, mem = _base()
    r = hwport.reshape(t.T, [12])
    np.testing.assert_array_equal(r.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4).T
                                  .reshape(12))
    assert r.is_contiguous()
    mem[0, 1] = 1000.0
    assert 1000.0 not in r.numpy(), "reshape of a non-contiguous view must copy"


def test_other_shape_ops_are_views():
    t, mem = _base()
    views = {
        "expand": hwport.expand(hwport.reshape(t, [3, 1, 4]), [3, 2, 4]),
        "unsqueeze": hwport.unsqueeze(t, [0]),
        "squeeze": hwport.squeeze(hwport.unsqueeze(t, [1])),
        "flip": hwport.flip(t, [1]),
    }
    mem[0, 0] = 77.0
    assert views["expand"].numpy()[0, 1, 0] == 77.0 and views["expand"].strides[1] == 0
    assert views["unsqueeze"].numpy()[0, 0, 0] == 77.0
    assert views["squeeze"].numpy()[0, 0] == 77.0
    assert views["flip"].numpy()[0, 3] == 77.0 and views["flip"].strides[1] == -1


def test_ops_write_fresh_contiguous_outputs():
    t, mem = _base()
    out = hwport.exp(t.T)
    assert out.is_contiguous()
    before = out.numpy().copy()
    mem[0, 0] = 5.0
    np.testing.assert_array_equal(out.numpy(), before)


# ---- the op library's lists ---------------------------------------------------------------------

def test_primitives_lists_the_primitive_ops():
    prims = hwport.phi_ops.primitives()
    want = [n for n, op in OPS.items() if op.kind == "primitive"]
    assert list(prims) == want
    assert {"add", "exp", "matmul", "sum", "cast", "copy", "fill"} <= set(prims)
    assert not {"softmax", "relu", "reshape", "mean"} & set(prims)


@pytest.mark.parametrize("name", sorted(n for n, op in OPS.items() if op.kind == "composite"))
def test_every_composite_has_its_decomposition(name):
    fn = getattr(decompositions, OPS[name].decompose, None)
    assert callable(fn), f"{name}: phi_ops.decompositions.{OPS[name].decompose} is missing"
    params = [p.name for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert params == [i.name for i in OPS[name].inputs], (name, params)
