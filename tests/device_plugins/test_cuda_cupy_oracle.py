"""CuPy as a second, independent oracle for custom:cuda: the op-library cases
(phi_ops.sample_inputs) of every op that tests/device_plugins/xp_oracle.py expresses, computed
on the GPU by CuPy (in float64, cast to the op's output dtype) and compared with hwport's result
under the op's tolerance. The table itself is first checked against the numpy reference with
xp = numpy, here and in CI, so a GPU run fails only on the device's results."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
import hwport.runtime as rt
from hwport.phi_ops import sample_inputs as C
from hwport.phi_ops.reference import reference
from hwport.phi_ops.tolerance import assert_close
from tests.device_plugins import xp_oracle

DTYPES = ("bool", "int32", "int64", "float32", "float64")  # CuPy has no bfloat16
CASES = [c for d in DTYPES for op in sorted(xp_oracle.ORACLE)
         if d in C.OPS[op].dtypes for c in C.cases_for(op, d) if xp_oracle.covers(c)]
IDS = [c.id for c in CASES]


def _cuda_devices() -> int:
    found = [p for p in rt.plugins() if p["device_type"] == "cuda"]
    return found[0]["device_count"] if found else 0


def test_the_table_covers_the_bulk_of_the_primitives():
    assert len(xp_oracle.ORACLE) >= 60
    assert {c.op for c in CASES} == set(xp_oracle.ORACLE)
    assert len(CASES) > 1000


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_xp_table_agrees_with_the_numpy_reference(case):
    want = reference(case.op, case.inputs, case.attrs)
    got = xp_oracle.evaluate(np, case)
    try:
        assert_close(case.op, case.key_dtype(), got, want, tolerance=case.tolerance)
    except AssertionError as exc:
        raise AssertionError(f"{C.describe(case)}: {exc}") from None


@pytest.mark.gpu
@pytest.mark.skipif(_cuda_devices() == 0, reason="the CUDA plugin reports no device")
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gpu_matches_cupy(case):
    cp = pytest.importorskip("cupy")
    want = xp_oracle.evaluate(cp, case)
    got = C.to_numpy(C.run_op(case, "custom:cuda"))
    try:
        assert_close(case.op, case.key_dtype(), got, want, tolerance=case.tolerance)
    except AssertionError as exc:
        raise AssertionError(f"{C.describe(case)}; custom:cuda vs CuPy: {exc}") from None


def test_hwport_is_importable_without_cupy():
    assert hwport.device.get_all_places()
