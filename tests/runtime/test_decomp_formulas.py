"""The composites' C++ formulas (ops.yaml `formula`, runtime/src/decomp_formulas.*): on a device
without native kernels for them -- custom:cpu with its composite kernels hidden from the C++
kernel selection (`_pipeline_hide_native`, standing for a plugin that registers only
primitives) -- every sample case of every op with a formula runs the formula (its counter grows,
the Python decomposition is never called), gives bit for bit the Python decomposition's result
(phi_ops/decompositions.py called directly: the formulas replay its sub-op sequence, scalar
constants included, so nothing may differ) and the numpy reference's within the op's tolerance.
Forms the op family's C++ rule does not serve (the reduce family's 0-d and empty inputs) keep
the Python path, checked to stay there.
Malformed formulas are refused by phi_ops/schema.py with the op and the problem named."""

from __future__ import annotations

import copy
import sys

import numpy as np
import pytest
import yaml

import hwport
from hwport.phi_ops import decompositions, schema
from hwport.phi_ops import sample_inputs as C
from hwport.phi_ops.reference import reference
from hwport.phi_ops.tolerance import assert_close
from hwport.runtime import _core

PLACE = "custom:cpu"
RAW = yaml.safe_load(schema.OPS_YAML.read_text(encoding="utf-8"))
FORMULA_OPS = [e["name"] for e in RAW["ops"] if e.get("formula")]
CASES = [c for op in FORMULA_OPS for d in C.OPS[op].dtypes for c in C.cases_for(op, d)]
HOT = {"relu", "sigmoid", "silu", "gelu", "softplus", "clip", "greater_than", "greater_equal",
       "mean", "log_softmax"}


def _decomposition_modules() -> list:
    """phi_ops.decompositions under each name it is imported as (hwport.phi_ops, phi_ops)."""
    return [decompositions] + [m for n, m in sys.modules.items()
                               if n.endswith("phi_ops.decompositions") and m is not decompositions]


@pytest.fixture()
def primitives_only():
    if not any(p.startswith(PLACE) for p in hwport.device.get_all_places()):
        pytest.skip(f"{PLACE} is not available")
    composites = [e["name"] for e in RAW["ops"] if e["kind"] == "composite"]
    before = _core._pipeline_hide_native(composites)
    try:
        yield
    finally:
        _core._pipeline_hide_native(before)


def test_the_generated_table_has_every_formula_of_ops_yaml():
    assert set(_core._pipeline_formula_ops()) == set(FORMULA_OPS)
    assert HOT <= set(FORMULA_OPS)
    assert all(C.OPS[op].formula for op in FORMULA_OPS)  # schema.py keeps the field


def _python_decomposition(case: C.Case, inputs: list) -> np.ndarray:
    """decompositions.<op> called as phi_ops/dispatch.py calls it: every attr present, an
    ints attr as a list (the decompositions take infer-meta's normalized attrs)."""
    op = C.OPS[case.op]
    attrs = {a.name: case.attrs.get(a.name, a.default) for a in op.attrs}
    for a in op.attrs:
        if a.type == "ints" and not isinstance(attrs[a.name], list):
            v = attrs[a.name]
            attrs[a.name] = [] if v is None else [v]
    fn = getattr(decompositions, op.decompose)
    return fn(*inputs, **attrs).numpy()


def _metas(case: C.Case) -> list:
    return [(list(np.shape(v)), C.dname(v)) if isinstance(v, np.ndarray) else v
            for v in case.inputs]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_formula_matches_the_decomposition_and_the_reference(primitives_only, monkeypatch,
                                                             case):
    where = C.describe(case)
    inputs = C.device_inputs(case, PLACE)
    second_opinion = _python_decomposition(case, inputs)

    def boom(*args, **kwargs):
        raise AssertionError(f"{case.op}: the Python decomposition ran")

    # Forms the C++ rule of the op's family does not serve (the reduce family's 0-d and empty
    # inputs) take the Python path.
    served = _core._pipeline_infer(case.op, _metas(case), case.attrs) is not None
    if served:
        for m in _decomposition_modules():  # a formula must not need it
            monkeypatch.setattr(m, C.OPS[case.op].decompose, boom)
    calls, failures = _core._pipeline_formula_stats()
    got = C.to_numpy(C.run_op(case, PLACE))
    after = _core._pipeline_formula_stats()
    # (an unserved form may run the formula from _decompose, or a native kernel the Python
    # path does not hide)
    assert after[0] > calls or not served, f"{where}: the formula path was not taken"
    assert after[1] == failures, f"{where}: a formula failed and went to the Python path"
    # the same sub-ops in the same order on the same kernels: identical bytes (an unserved
    # form ran phi_ops/dispatch.py's choice: custom:cpu's native kernel where it has one)
    assert_close(case.op, case.key_dtype(), got, second_opinion, bitwise=served)
    try:
        assert_close(case.op, case.key_dtype(), got,
                     reference(case.op, case.inputs, case.attrs), tolerance=case.tolerance)
    except AssertionError as exc:
        raise AssertionError(f"{where}: {exc}") from None


def test_integer_input_of_a_float_only_composite_computes_in_float32(primitives_only):
    x = hwport.to_tensor(np.array([-3, 0, 2, 40], np.int32), place=PLACE)
    calls = _core._pipeline_formula_stats()[0]
    got = hwport.ops.sigmoid(x).numpy()
    assert _core._pipeline_formula_stats()[0] > calls
    assert got.dtype == np.float32
    want = 1.0 / (1.0 + np.exp(-np.array([-3, 0, 2, 40], np.float64)))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_python_scalar_operands_and_attrs_by_position(primitives_only):
    x = hwport.to_tensor(np.array([-1.5, 0.0, 2.5], np.float32), place=PLACE)
    assert hwport.ops.greater_than(x, 0).numpy().tolist() == [False, False, True]
    assert hwport.ops.greater_equal(0.0, x).numpy().tolist() == [True, True, False]
    got = hwport.ops.softplus(x, 2.0, 1.0).numpy()  # beta, threshold by position
    z = 2.0 * np.array([-1.5, 0.0, 2.5])
    np.testing.assert_allclose(got, np.where(z > 1.0, [-1.5, 0.0, 2.5], np.log1p(np.exp(z)) / 2),
                               rtol=1e-6)


def test_errors_still_name_the_composite(primitives_only):
    x = hwport.to_tensor(np.array([1.0], np.float32), place=PLACE)
    with pytest.raises(ValueError, match="softplus"):
        hwport.ops.softplus(x, beta=0.0)
    with pytest.raises(TypeError, match="relu"):
        hwport.ops.relu(hwport.to_tensor(np.array([True]), place=PLACE))


# ---- schema.py refuses malformed formulas ----------------------------------------------------

BAD = [
    ("relu", "maximum(x)", "maximum takes 2 inputs (x, y), got 1"),
    ("relu", "maximun(x, 0)", "unknown op 'maximun'"),
    ("relu", "maximum(x, 0, axis=1)", "maximum has no attr 'axis'"),
    ("relu", "relu(x)", "calls its own op"),
    ("relu", "maximum(x, y)", "unknown name 'y'"),
    ("relu", "z = 1; 2", "the result: expected a tensor, got a scalar"),
    ("relu", "exp(x", "syntax error"),
    ("relu", "x[0]", "unsupported syntax"),
    ("gelu", "x if approximate > 1 else x", "only `attr is None`"),
    ("gelu", "x if beta else x", "unknown name 'beta'"),
    ("softplus", "exp(beta)", "an input of exp: expected a tensor, got a scalar"),
    ("softplus", "x if beta else x", "condition: expected a cond"),
    ("sigmoid", "up(x, x)", "up() takes 1 positional arguments, got 2"),
    ("sigmoid", "xc = up(x); xc = exp(xc); xc", "'xc' is bound twice"),
    ("relu", "x if min is None else x", "'min' is not an attr of relu (its attrs: none)"),
    ("softmax", "if empty(x): x; y = 1; exp(x) if y == 1 else x", ""),
    ("softmax", "if empty(x): 1; x", "an early result: expected a tensor"),
    ("softmax", "if empty(x): x\nelse: x; x", "only `if cond: expr`"),
    ("exp", "x", "only for composites"),
]


@pytest.mark.parametrize("op,formula,message", BAD, ids=[f"{o}:{f}" for o, f, _ in BAD])
def test_a_malformed_formula_names_the_op_and_the_problem(op, formula, message):
    raw = copy.deepcopy(RAW)
    for e in raw["ops"]:
        if e["name"] == op:
            e["formula"] = formula
    if not message:  # a well-formed one (the grammar's other forms)
        schema._parse(raw)
        return
    with pytest.raises(schema.OpsYamlError) as info:
        schema._parse(raw)
    assert f"op {op!r}" in str(info.value) and message in str(info.value), str(info.value)


def test_the_python_path_entry_runs_the_formula_with_sub_ops_seen_by_the_profiler(
        primitives_only):
    # _core._pipeline_formula is what phi_ops.dispatch._decompose would call before the Python
    # decomposition: with a layer active its sub-ops go through the layers, one event each.
    x = hwport.to_tensor(np.array([-2.0, 0.5], np.float32), place=PLACE)
    assert _core._pipeline_formula("log", (x,), {}) is None  # a primitive: no formula
    with hwport.profiler.Profiler() as prof:
        got = _core._pipeline_formula("softplus", (x,), {"beta": 2.0, "threshold": 0.5})
    names = [e.name for e in prof.events if e.kind == "op"]
    assert names == ["multiply", "maximum", "abs", "neg", "exp", "log1p", "add", "multiply",
                     "less_than", "where"], names
    z = 2.0 * np.array([-2.0, 0.5])
    want = np.where(z > 0.5, [-2.0, 0.5], np.log1p(np.exp(z)) / 2.0)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
