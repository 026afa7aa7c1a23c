"""Every op with an `spmd` spec, proven by simulation: for random meshes (1-D and 2-D) and
random input placements, the derived rule's required input placements and output placements,
executed rank by rank with the numpy reference, give the reference's global result."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from phi_ops.sample_inputs import cases_for
from phi_ops.schema import load_ops

from .sim_harness import random_attrs, run_case

OPS = load_ops()
SPECCED = [n for n, op in OPS.items() if op.spmd is not None]
MESHES = [(2,), (3,), (2, 2), (2, 3)]


def _dtype(op: str) -> str:
    dtypes = OPS[op].dtypes
    for d in ("float64", "int64", "bool"):
        if d in dtypes:
            return d
    return dtypes[0]


def _sweep(op: str, dtype: str, draws: int, meshes: list[tuple[int, ...]]) -> int:
    rng = np.random.default_rng(zlib.crc32(f"{op}/{dtype}".encode()))
    runs = 0
    for case in cases_for(op, dtype):
        if case.large:
            continue
        for mesh in meshes:
            for _ in range(draws):
                given = random_attrs(case.inputs, mesh, rng)
                run_case(op, case.inputs, case.attrs, mesh, given, rng)
                runs += 1
    return runs


@pytest.mark.parametrize("op", SPECCED)
def test_rule_matches_reference(op: str) -> None:
    assert _sweep(op, _dtype(op), draws=2, meshes=MESHES) > 0


@pytest.mark.slow
@pytest.mark.parametrize("op", SPECCED)
def test_rule_matches_reference_every_dtype(op: str) -> None:
    for dtype in OPS[op].dtypes:
        _sweep(op, dtype, draws=6, meshes=[*MESHES, (4,), (2, 2, 2)])
