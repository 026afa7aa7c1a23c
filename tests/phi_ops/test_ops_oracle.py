"""The oracle suite: every op of phi_ops/ops.yaml, for every dtype it lists, over shape cases
(0-d, zero-size, broadcasting, non-contiguous views: transposed, stepped and negative-stride,
odd sizes, >= 1M elements for a few), on every place of every loaded plugin, against the numpy
reference (`phi_ops.reference.reference`) with the op's tolerance
(`phi_ops.tolerance.assert_close`). Random ops are bit-exact against phi_ops.philox.

PLACES is built from the loaded plugins, so a new plugin (OpenCL, CUDA, ...) runs this suite
unchanged. On a place of the reference CPU plugin every primitive must run natively: a case
that makes `hwport.runtime.fallback_stats()` grow fails (composites without a kernel decompose,
which is not a fallback).
"""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport.phi_ops import sample_inputs as C
from hwport.phi_ops.reference import reference
from hwport.phi_ops.tolerance import assert_close

# ---- places ---------------------------------------------------------------------------------


def _places() -> list[str]:
    """custom:<type> (its default device) and custom:<type>:<i> for its other devices, for
    every loaded plugin that has a device (a plugin may load with zero devices, e.g. the CUDA
    plugin without a driver)."""
    out: list[str] = []
    all_places = hwport.device.get_all_places()
    for t in hwport.device.get_all_custom_device_type():
        if f"custom:{t}:0" not in all_places:
            continue
        out.append(f"custom:{t}")
        for p in all_places:
            prefix = f"custom:{t}:"
            if p.startswith(prefix) and p != f"{prefix}0":
                out.append(p)
    return out


PLACES = _places()
CASES = C.all_cases()


def plugin_of(place: str) -> str:
    return place.split(":")[1]


# ---- fallback accounting ------------------------------------------------------------------------

def _fallbacks(device_type: str) -> dict[tuple[str, str, str], int]:
    return {k: v for k, v in hwport.runtime.fallback_stats().items() if k[1] == device_type}


def _grown(before: dict, after: dict) -> dict:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] > before.get(k, 0)}


# ---- the oracle test --------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@pytest.mark.parametrize("place", PLACES)
def test_op_matches_reference(place: str, case: C.Case) -> None:
    where = f"{C.describe(case)}; place {place}"
    want = reference(case.op, case.inputs, case.attrs)
    device_type = plugin_of(place)
    before = _fallbacks(device_type)

    result = C.run_op(case, place)
    got = C.to_numpy(result)

    outs = result if isinstance(result, tuple | list) else [result]
    expected_place = str(hwport.runtime._core.resolve_place(place))
    for i, r in enumerate(outs):
        assert str(r.place) == expected_place, (
            f"{where}: output {i} is on {r.place}, expected {expected_place}")
    try:
        assert_close(case.op, case.key_dtype(), got, want, tolerance=case.tolerance)
    except AssertionError as exc:
        raise AssertionError(f"{where}: {exc}") from None

    if case.check == "dropout_mask":  # the kept/dropped pattern is bit-exact (Philox)
        dropped_got, dropped_want = np.asarray(got) == 0, np.asarray(want) == 0
        assert np.array_equal(dropped_got, dropped_want), (
            f"{where}: dropped positions differ from phi_ops.philox's stream at "
            f"{np.argwhere(dropped_got != dropped_want)[:5].tolist()}")

    if device_type == "cpu":
        grown = _grown(before, _fallbacks(device_type))
        assert not grown, (
            f"{where}: the CPU plugin must run every primitive natively, but these ran on the "
            f"CPU fallback (op, device type, dtype): count: {grown}")


# ---- coverage of the suite itself ---------------------------------------------------------------

def test_every_op_and_dtype_has_cases() -> None:
    covered = {(c.op, c.dtype) for c in CASES}
    missing = [(name, d) for name, op in C.OPS.items() for d in op.dtypes
               if (name, d) not in covered]
    assert not missing, f"ops.yaml (op, dtype) pairs without an oracle case: {missing}"


def test_every_attr_is_exercised_with_a_non_default_value() -> None:
    missing = []
    for name, op in C.OPS.items():
        mine = [c for c in CASES if c.op == name]
        for a in op.attrs:
            used = [c.attrs[a.name] for c in mine if a.name in c.attrs]
            if a.required:
                ok = bool(used)
            else:
                ok = any(v != a.default for v in used)
            if not ok:
                missing.append(f"{name}.{a.name}")
    assert not missing, f"attributes no oracle case sets to a non-default value: {missing}"


def test_shape_cases_cover_the_hard_layouts() -> None:
    """Per op category, the suite has 0-d, zero-size, non-contiguous and special-value cases."""
    problems = []
    for name, op in C.OPS.items():
        mine = [c for c in CASES if c.op == name]
        if op.inputs:
            if not any(c.layouts and set(c.layouts) - {"c"} for c in mine):
                problems.append(f"{name}: no non-contiguous input")
            if not any(np.size(a) == 0 for c in mine for v in c.inputs if v is not None
                       for a in (v if isinstance(v, list) else [v])):
                problems.append(f"{name}: no zero-size input")
        if op.category in ("unary", "binary", "reduction") and any(
                d in C.FLOATS for d in op.dtypes) and name != "cast":
            if not any(c.name.startswith("special") for c in mine):
                problems.append(f"{name}: no NaN/Inf case")
    assert not problems, "\n".join(problems)


def test_large_cases_exist() -> None:
    large = {c.op for c in CASES if c.large}
    assert {"exp", "add", "sum", "max", "argmax", "softmax"} <= large, large
    for c in CASES:
        if c.large:
            assert max(np.size(v) for v in c.inputs if isinstance(v, np.ndarray)) >= 2**20


def test_places_cover_every_plugin() -> None:
    types = hwport.device.get_all_custom_device_type()
    assert "cpu" in types, (
        f"the reference CPU plugin is not loaded: {hwport.runtime.plugin_errors()}")
    all_places = hwport.device.get_all_places()
    for t in types:
        assert (f"custom:{t}" in PLACES) == (f"custom:{t}:0" in all_places), t
    assert "custom:cpu:1" in PLACES, (
        f"tests/conftest.py sets HWPORT_CPU_DEVICES=2, so custom:cpu:1 should exist: {PLACES}")


@pytest.mark.parametrize("layout", ["T", "step", "flip"])
@pytest.mark.parametrize("dtype", C.ALL_DTYPES)
def test_layouts_build_the_intended_views(layout, dtype):
    """The harness itself: each layout is a non-contiguous view holding exactly the values."""
    arr = C.sample(dtype, (3, 5), C.rng_for("layout", dtype, layout))
    t = C.to_device(arr, PLACES[0], layout)
    assert not t.is_contiguous(), f"{layout}: expected a non-contiguous view"
    if layout == "flip":
        assert all(s < 0 for s in t.strides), t.strides
    if layout == "step":
        assert list(t.strides) == [20, 2], t.strides
    got = t.numpy()
    assert got.dtype == arr.dtype and got.shape == arr.shape
    np.testing.assert_array_equal(got.view(np.uint8), np.ascontiguousarray(arr).view(np.uint8))
