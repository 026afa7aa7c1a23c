"""Helpers for the hwcheck tests: run the CLI in a fresh interpreter and read what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hwport.phi_ops import sample_inputs
from hwport.phi_ops.reference import reference


def hwcheck(*args: str, cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m hwport.conformance ARGS` in `cwd`; the test asserts on the outcome."""
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "hwport.conformance", *args], cwd=cwd,
                          env=full, capture_output=True, text=True, timeout=timeout)


def results_by_id(doc_path: Path) -> dict[str, dict[str, Any]]:
    """{case id: result record} of a JSON document written by --json."""
    doc = json.loads(doc_path.read_text())
    out = {r["id"]: r for r in doc["results"]}
    assert len(out) == len(doc["results"]), "a case ran more than once"
    return out


def add_cases(dtype: str = "float32", seed: int = 0) -> dict[str, sample_inputs.Case]:
    """The kernels suite's add/<dtype> shape cases for run seed `seed`, by case id."""
    from hwport.conformance.suites.op_common import group_seed

    return {f"kernels::add/{dtype}/{c.name}": c
            for c in sample_inputs.cases_for("add", dtype, group_seed(seed, "add", dtype))}


def output_size(case: sample_inputs.Case) -> int:
    return int(np.size(reference(case.op, case.inputs, case.attrs)))
