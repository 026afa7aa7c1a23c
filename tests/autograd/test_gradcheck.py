"""Every differentiable op x the oracle suite's float64 shape cases: the engine's gradients
(ops.yaml `vjps`, or the decomposition) against central finite differences of the numpy oracle
(phi_ops.reference), so the two sides share no code. Also float32 against the same."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport.phi_ops import sample_inputs
from hwport.phi_ops.api_args import public_call
from hwport.phi_ops.reference import reference
from hwport.phi_ops.schema import load_ops

OPS = load_ops()
PLACE = "custom:cpu"
# Ops whose gradient is defined (ops.yaml: a `vjps` rule, or a composite with a `backward`).
import yaml  # noqa: E402

_RAW = yaml.safe_load(open(hwport.phi_ops.schema.OPS_YAML, encoding="utf-8"))
DIFFERENTIABLE = sorted(set(_RAW["vjps"]) | {n for n, o in OPS.items() if o.backward})
# Cases whose float inputs are not where the function is smooth, or that are not about
# gradients: NaN/Inf specials, rounding steps, clip bounds set by sampling.
SKIP_NAMES = ("special", "nan", "inf", "large", "huge")
EPS = 1e-6
ELEMENTS = 5  # finite-difference probes per input


def _cases(dtype: str) -> list[sample_inputs.Case]:
    out = []
    for op in DIFFERENTIABLE:
        for c in sample_inputs.cases_for(op, dtype):
            if c.large or any(s in c.name for s in SKIP_NAMES):
                continue
            out.append(c)
    return out


def _float_inputs(case: sample_inputs.Case) -> list[tuple[int, int | None]]:
    """(input index, list element or None) of every floating input with elements."""
    out = []
    for i, v in enumerate(case.inputs):
        items = v if isinstance(v, list) else [v]
        for j, a in enumerate(items):
            if a is not None and np.asarray(a).dtype.kind == "f" and np.asarray(a).size:
                out.append((i, j if isinstance(v, list) else None))
    return out


def _get(inputs: list, where: tuple[int, int | None]) -> np.ndarray:
    i, j = where
    return inputs[i] if j is None else inputs[i][j]


def _flat_outputs(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _wide(inputs):
    """Float32 inputs as float64 (the differences of a float32 case are taken in float64)."""
    def up(a):
        a = np.asarray(a)
        return a.astype(np.float64) if a.dtype == np.float32 else a
    return [None if v is None else [up(a) for a in v] if isinstance(v, list) else up(v)
            for v in inputs]


def _objective(case, inputs, cotangents) -> float:
    outs = _flat_outputs(reference(case.op, _wide(inputs), case.attrs))
    return float(sum(np.sum(np.asarray(o, dtype=np.float64) * v)
                     for o, v in zip(outs, cotangents, strict=True) if v is not None))


def _copy_inputs(inputs):
    return [None if v is None else [np.array(a) for a in v] if isinstance(v, list)
            else np.array(v) for v in inputs]


def _fd(case, where, index, cotangents, eps) -> tuple[float, bool]:
    """The central difference, and whether the function is smooth there (its one-sided
    differences agree: not a kink, a tie of a sort or max, a rounding step)."""
    # perturbed in float64 (a float32 input could not hold x + eps)
    plus, minus = _copy_inputs(_wide(case.inputs)), _copy_inputs(_wide(case.inputs))
    _get(plus, where).flat[index] += eps
    _get(minus, where).flat[index] -= eps
    f0 = _objective(case, case.inputs, cotangents)
    fp, fm = _objective(case, plus, cotangents), _objective(case, minus, cotangents)
    right, left = (fp - f0) / eps, (f0 - fm) / eps
    return (fp - fm) / (2 * eps), bool(np.isclose(right, left, rtol=1e-3, atol=1e-5))


def run_case(case: sample_inputs.Case) -> tuple[list, list, list]:
    """The case's op called on PLACE with its floating inputs as leaves that need gradients:
    (where each leaf is among the inputs, the leaves, the flat outputs); skips the cases
    without a floating input, and float32 cases of the ops mixed-precision by design."""
    if case.dtype == "float32" and case.op in ("cast", "scatter", "rotary_embedding"):
        pytest.skip("mixed precision by design (covered in float64)")
    wheres = _float_inputs(case)
    if not wheres:
        pytest.skip("no floating input with elements")
    dev = sample_inputs.device_inputs(case, PLACE)
    leaves = []
    for where in wheres:
        t = _get(dev, where)
        t.stop_gradient = False
        leaves.append(t)
    args, kwargs = public_call(OPS[case.op], dev, dict(case.attrs))
    return wheres, leaves, _flat_outputs(getattr(hwport, case.op)(*args, **kwargs))


def _check(case: sample_inputs.Case, rtol: float, atol: float) -> None:
    wheres, leaves, outs = run_case(case)
    rng = np.random.default_rng(7)
    cot, grads_out, used = [], [], []
    for o in outs:
        if o.dtype.is_floating_point and not o.stop_gradient:
            v = rng.standard_normal(o.shape).astype(np.float64)
            cot.append(v)
            grads_out.append(hwport.to_tensor(v.astype(o.numpy().dtype), place=PLACE))
            used.append(o)
        else:
            cot.append(None)
    if not used:
        pytest.skip("no differentiable output")
    if any(str(o.dtype) != case.dtype for o in used):
        pytest.skip("an output of another precision (finite differences would see rounding)")
    grads = hwport.grad(used, leaves, grad_outputs=grads_out, allow_unused=True)
    for where, g in zip(wheres, grads, strict=True):
        a = _get(case.inputs, where)
        if str(a.dtype) != case.dtype:
            continue  # a float32 input of a float64 case: differences would see its rounding
        got = np.zeros(a.shape) if g is None else g.numpy().astype(np.float64)
        assert got.shape == a.shape, f"{case.id}: gradient shape {got.shape} vs {a.shape}"
        probes = np.random.default_rng(3).choice(a.size, size=min(ELEMENTS, a.size),
                                                 replace=False)
        for k in probes:
            fd, smooth = _fd(case, where, int(k), cot, EPS)
            fd4, smooth4 = _fd(case, where, int(k), cot, 4 * EPS)
            if not (smooth and smooth4 and np.isclose(fd, fd4, rtol=1e-3, atol=1e-5)):
                continue  # a jump (sign at 0) looks smooth at one step, not at two
            assert np.isclose(got.flat[k], fd, rtol=rtol, atol=atol), (
                f"{case.id}: d/d{OPS[case.op].inputs[where[0]].name}[{k}] = {got.flat[k]}, "
                f"finite differences {fd} ({sample_inputs.describe(case)})")


@pytest.mark.parametrize("case", _cases("float64"), ids=lambda c: c.id)
def test_gradient_matches_finite_differences_float64(case: sample_inputs.Case) -> None:
    _check(case, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", _cases("float32"), ids=lambda c: c.id)
def test_gradient_matches_finite_differences_float32(case: sample_inputs.Case) -> None:
    """The float32 kernels and rules (their own code paths: native composites, fast paths)."""
    _check(case, rtol=2e-3, atol=2e-4)
