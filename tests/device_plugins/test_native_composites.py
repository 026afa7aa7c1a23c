"""The composites the reference plugins run with their own kernels (ops.yaml `native`: relu,
sigmoid, silu, gelu, softplus, greater_than, greater_equal, mean, log_softmax), on custom:cpu
and custom:opencl: a kernel for every dtype the op lists (read from ops.yaml independently of
the generators), the same results as the decomposition (the second opinion: phi_ops/
decompositions.py called directly) with NaN and inf where it has them, and a plugin without
them (the zoo plugin `good`, only add) still decomposing, matching the numpy oracle."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

import hwport
from hwport.phi_ops import decompositions
from hwport.phi_ops.reference import reference
from hwport.phi_ops.sample_inputs import as_dtype, int_edges, np_dtype, sample, specials
from hwport.phi_ops.tolerance import assert_close
from hwport.runtime import _core
from tests.conftest import run_isolated, zoo_plugin_path

REPO = Path(__file__).resolve().parents[2]
OPS_YAML = REPO / "phi_ops" / "ops.yaml"
FLOATS = ("float16", "bfloat16", "float32", "float64")


def _native_ops() -> dict[str, dict]:
    """name -> {dtypes, native, n_inputs, category} of every composite with `native`."""
    doc = yaml.safe_load(OPS_YAML.read_text(encoding="utf-8"))
    groups = doc["dtype_groups"]
    out = {}
    for op in doc["ops"]:
        if op["kind"] == "composite" and op.get("native"):
            spec = op.get("kernel_dtypes", op["dtypes"])
            out[op["name"]] = {"dtypes": list(groups[spec] if isinstance(spec, str) else spec),
                               "native": op["native"], "n_inputs": len(op["inputs"]),
                               "category": op["category"]}
    return out


NATIVE = _native_ops()
ELEMENTWISE = [n for n, o in NATIVE.items() if o["native"] is not True]
PLACES = ["custom:cpu", "custom:opencl"]


def _place(place: str) -> str:
    if not any(p.startswith(place) for p in hwport.device.get_all_places()):
        pytest.skip(f"{place} is not available here")
    return place


def _dtypes(place: str, op: str) -> list[str]:
    """The op's dtypes, without float64 on a device without it (OpenCL without cl_khr_fp64
    registers no float64 kernel at all: exp stands for the plugin's float64 support)."""
    fp64 = _core.has_kernel("exp", place, "float64")
    return [d for d in NATIVE[op]["dtypes"] if fp64 or d != "float64"]


def test_the_hot_composites_are_native():
    assert {"relu", "sigmoid", "silu", "gelu", "softplus", "greater_than", "greater_equal",
            "mean", "log_softmax"} <= set(NATIVE)
    assert NATIVE["relu"]["dtypes"][0] == "int8" and NATIVE["greater_than"]["dtypes"][0] == "bool"


@pytest.mark.parametrize("place", PLACES)
def test_every_native_composite_has_a_kernel_for_every_listed_dtype(place):
    place = _place(place)
    missing = [(op, d) for op in NATIVE for d in _dtypes(place, op)
               if not _core.has_kernel(op, place, d)]
    assert not missing, f"{place}: no kernel for {missing}"
    # ... and nothing beyond what the op lists (relu has no bool kernel, sigmoid no int one)
    extra = [(op, d) for op in NATIVE for d in ("bool", "int32") if d not in NATIVE[op]["dtypes"]
             and _core.has_kernel(op, place, d)]
    assert not extra, extra


# ---- the native kernels against the decomposition -------------------------------------------

ATTRS = {
    "gelu": [{"approximate": False}, {"approximate": True}],
    "softplus": [{"beta": 1.0, "threshold": 20.0}, {"beta": 2.0, "threshold": 3.0},
                 {"beta": 0.5, "threshold": 1.0}, {"beta": 2, "threshold": 20.0}],
}
CASES = [(op, a) for op in ELEMENTWISE for a in ATTRS.get(op, [{}])]


def _values(dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Special values (NaN, +-inf, +-0), magnitudes where exp overflows or underflows, and a
    random spread, as a [6, 11] array of dtype."""
    if dtype == "bool":
        return rng.integers(0, 2, size=(6, 11)).astype(bool)
    if dtype not in FLOATS:
        edges = int_edges(dtype)
        rest = sample(dtype, (66 - edges.size,), rng, "wide")
        return np.concatenate([edges, rest]).reshape(6, 11)
    big = [100.0, -100.0, 88.0, -88.0, 1e4, -1e4, 30.0, -30.0, 1e-30, -1e-30, 21.0]
    vals = np.concatenate([specials(dtype), as_dtype(np.array(big), dtype),
                           sample(dtype, (66 - 10 - len(big),), rng, "wide")])
    return vals.reshape(6, 11)


def _t(a: np.ndarray, place: str) -> hwport.Tensor:
    return hwport.to_tensor(a, place=place)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("op,attrs", CASES, ids=[f"{o}-{a}" for o, a in CASES])
def test_native_matches_the_decomposition(place, op, attrs):
    place = _place(place)
    fn = getattr(decompositions, op)
    rng = np.random.default_rng(13)
    for dtype in _dtypes(place, op):
        assert _core.has_kernel(op, place, dtype)  # the native kernel, not the decomposition
        x = _values(dtype, rng)
        if NATIVE[op]["n_inputs"] == 1:  # contiguous, and a transposed (strided) view
            calls = [[_t(x, place)], [_t(np.ascontiguousarray(x.T), place).transpose()]]
        else:  # x against a shuffled column of its own values (broadcast), and x against x.T
            y = rng.permutation(x.reshape(-1))[:6].reshape(6, 1)
            calls = [[_t(x, place), _t(y, place)],
                     [_t(x[:, :6], place), _t(np.ascontiguousarray(x[:, :6].T), place)
                      .transpose()]]
        for tensors in calls:
            got = getattr(hwport.ops, op)(*tensors, **attrs).numpy()
            want = fn(*tensors, **attrs).numpy()
            assert got.dtype == want.dtype and got.shape == want.shape, (op, dtype)
            # NaN where the decomposition has NaN, the same infinities, the rest within the
            # op's tolerance (relu and the comparisons: exactly)
            assert_close(op, dtype, got, want)


@pytest.mark.parametrize("place", PLACES)
def test_native_mean_matches_the_decomposition(place):
    place = _place(place)
    rng = np.random.default_rng(5)
    for dtype in _dtypes(place, "mean"):
        x = _values(dtype, rng)
        x[1, :] = sample(dtype, (11,), rng)  # rows without NaN/inf too
        x[4, :] = as_dtype(np.linspace(1e4, 2e4, 11), dtype)
        xs = np.ascontiguousarray(np.stack([x, x[::-1]]))  # [2, 6, 11]
        for axis, keepdim in (([0, 1, 2], False), ([2], False), ([1], True), ([0, 2], False)):
            for t in (_t(xs, place), _t(np.ascontiguousarray(xs.transpose(2, 1, 0)),
                                        place).transpose([2, 1, 0])):
                got = hwport.mean(t, axis=axis, keepdim=keepdim).numpy()
                want = decompositions.mean(t, axis=axis, keepdim=keepdim).numpy()
                assert_close("mean", dtype, got, want)
                assert_close("mean", dtype, got, reference("mean", [xs], {"axis": axis,
                                                                          "keepdim": keepdim}))
        empty = hwport.mean(_t(np.zeros((0, 3), np_dtype(dtype)), place), axis=[0]).numpy()
        assert empty.shape == (3,) and np.isnan(empty.astype(np.float64)).all()


@pytest.mark.parametrize("place", PLACES)
def test_nan_and_inf_follow_the_decomposition(place):
    """The cases the native expressions must not 'fix': what the decompositions give."""
    place = _place(place)
    x = _t(np.array([np.nan, np.inf, -np.inf, -0.0], np.float32), place)
    F = hwport.nn.functional

    def bits(t):
        return t.numpy().tolist()

    assert np.isnan(bits(hwport.relu(x))[0]) and bits(hwport.relu(x))[1:] == [np.inf, 0.0, -0.0]
    assert np.signbit(hwport.relu(x).numpy()[3])  # max(-0, 0) keeps -0, as maximum does
    s = bits(hwport.sigmoid(x))
    assert np.isnan(s[0]) and s[1:] == [1.0, 0.0, 0.5]
    si = F.silu(x).numpy()
    assert np.isnan(si[[0, 2]]).all() and si[1] == np.inf  # -inf * sigmoid(-inf) = -inf * 0
    g = F.gelu(x).numpy()
    assert np.isnan(g[[0, 2]]).all() and g[1] == np.inf
    sp = F.softplus(x).numpy()
    assert np.isnan(sp[0]) and sp[1] == np.inf and sp[2] == 0.0
    gt = (x > _t(np.array([0.0, np.inf, -np.inf, 0.0], np.float32), place)).numpy()
    assert gt.tolist() == [False, False, False, False]
    ge = hwport.greater_equal(x, _t(np.array([0.0, np.inf, -np.inf, 0.0], np.float32), place))
    assert ge.numpy().tolist() == [False, True, True, True]


# ---- a plugin without them: the decomposition, as before -------------------------------------

ZOO_SCRIPT = r"""
import json, numpy as np, hwport
from hwport.phi_ops.reference import reference
from hwport.runtime import _core, fallback_stats, reset_fallback_stats

P = "custom:test_good"
rng = np.random.default_rng(3)
xs = np.concatenate([np.array([np.nan, np.inf, -np.inf, 0.0, -30.0, 30.0]),
                     rng.standard_normal(14) * 4]).astype(np.float32)
ys = rng.standard_normal(20).astype(np.float32)
x, y = hwport.to_tensor(xs, place=P), hwport.to_tensor(ys, place=P)
F = hwport.nn.functional
calls = {"sigmoid": (lambda: hwport.sigmoid(x), [xs], {}),
         "relu": (lambda: hwport.relu(x), [xs], {}),
         "silu": (lambda: F.silu(x), [xs], {}),
         "gelu": (lambda: F.gelu(x, approximate=True), [xs], {"approximate": True}),
         "softplus": (lambda: F.softplus(x, beta=2.0), [xs], {"beta": 2.0, "threshold": 20.0}),
         "greater_than": (lambda: x > y, [xs, ys], {}),
         "mean": (lambda: hwport.mean(y), [ys], {"axis": [], "keepdim": False})}
out = {}
for op, (fn, inputs, attrs) in calls.items():
    reset_fallback_stats()
    got = fn()
    ran = sorted({k[0] for k in fallback_stats() if k[1] == "test_good"})
    out[op] = {"kernel": _core.has_kernel(op, P, "float32"), "place": str(got.place),
               "got": got.numpy().astype(np.float64).tolist(),
               "want": np.asarray(reference(op, inputs, attrs)).astype(np.float64).tolist(),
               "ran": ran}
print("RESULT " + json.dumps(out))
"""


def test_a_plugin_without_them_decomposes_and_matches_the_oracle():
    proc = run_isolated(ZOO_SCRIPT, {"HWPORT_PLUGIN_PATH": str(zoo_plugin_path("good")),
                                     "HWPORT_FALLBACK": "allow"})
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    out = json.loads(line[len("RESULT "):])
    assert set(out) == {"sigmoid", "relu", "silu", "gelu", "softplus", "greater_than", "mean"}
    for op, r in out.items():
        assert r["kernel"] is False, op  # the zoo plugin registers only add
        assert r["place"].startswith("custom:test_good"), (op, r["place"])
        # the decomposition ran: its primitives went to the counted CPU fallback, the
        # composite itself never did
        assert r["ran"] and op not in r["ran"], (op, r["ran"])
        dtype = "bool" if op == "greater_than" else "float32"
        got = np.array(r["got"]).astype(np_dtype(dtype))
        want = np.array(r["want"]).astype(np_dtype(dtype))
        assert_close(op, dtype, got, want)


# ---- the generator: attrs, float literals, inlining -------------------------------------------

def _generator():
    path = REPO / "phi_ops" / "codegen" / "gen_cpu_elementwise.py"
    spec = importlib.util.spec_from_file_location("gen_cpu_elementwise", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generator_translates_native_expressions():
    gen = _generator()
    assert gen.translate_expr("t", "x * 0.5 + beta", ["x"], ["beta"]) == \
        "((x) * ((ew_ct)0.5) + (ew_attr_beta))"
    inline = {"sq": (["x"], "x * x")}
    assert gen.translate_expr("t", "sq(x + 1) - sq(x)", ["x"], [], inline) == \
        "((((x) + 1) * ((x) + 1)) - ((x) * (x)))"
    with pytest.raises(gen.GenError, match="takes 1"):
        gen.translate_expr("t", "sq(x, x)", ["x"], [], inline)
    with pytest.raises(gen.GenError, match="unknown name 'beta'"):
        gen.translate_expr("t", "x * beta", ["x"])


def test_generator_selects_native_composites_with_their_attrs():
    gen = _generator()
    doc = gen.load(OPS_YAML)
    by_name = {o["name"]: o for o in gen.select_ops(doc)}
    assert set(ELEMENTWISE) <= set(by_name)
    assert not {"mean", "log_softmax", "logsumexp"} & set(by_name)  # not elementwise / native
    assert by_name["greater_than"]["out"] == "OUT_BOOL" and by_name["relu"]["out"] == "OUT_SAME"
    assert [a["name"] for a in by_name["softplus"]["attrs"]] == ["beta", "threshold"]
    assert by_name["gelu"]["attrs"] == [{"name": "approximate", "kind": "flag",
                                         "absent": "required"}]
    assert "CPU_EW_EXPR_sigmoid" not in by_name["silu"]["expr"]  # inlined, not a macro call
    # the mapping form: a value of x's dtype, None as the dtype's lowest/highest
    doc["ops"].append({"name": "clamp_like", "kind": "composite", "category": "unary",
                       "inputs": ["x"], "dtypes": "numeric",
                       "attrs": {"lo": {"type": "float", "default": None},
                                 "hi": {"type": "float", "default": None}},
                       "native": {"expr": "fmin_nan(fmax_nan(x, lo), hi)",
                                  "attrs": {"lo": {"as": "value", "absent": "lowest"},
                                            "hi": {"as": "value", "absent": "highest"}}}})
    op = {o["name"]: o for o in gen.select_ops(doc)}["clamp_like"]
    assert [(a["kind"], a["absent"]) for a in op["attrs"]] == [("value", "lowest"),
                                                               ("value", "highest")]
    assert '{"lo", HWPS_ATTR_VALUE, HWPS_ABSENT_LOWEST},' in gen.attr_specs(op)
    doc["ops"][-1]["native"]["attrs"]["lo"]["as"] = "bits"
    with pytest.raises(gen.GenError, match="as must be one of"):
        gen.select_ops(doc)
