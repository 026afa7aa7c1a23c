"""One-op programs from phi_ops.sample_inputs for the executor tests: a representative case
per op of ops.yaml (float32 where the op lists it), its program (one builtin.data per input
tensor) and the same call run eagerly."""

from __future__ import annotations

from typing import Any

import numpy as np

from hwport import pir
from hwport.phi_ops import sample_inputs as si
from hwport.phi_ops.schema import load_ops

OPS = load_ops()


def representative_cases() -> list[si.Case]:
    out = []
    for name, op in OPS.items():
        dtypes = ["float32"] if "float32" in op.dtypes else list(op.dtypes)
        for d in dtypes:
            cases = [c for c in si.cases_for(name, d) if not c.large]
            if cases:
                out.append(cases[0])
                break
    return out


def every_case() -> list[si.Case]:
    """Every case of every op and dtype (the slow test's set)."""
    return [c for c in si.all_cases() if not c.large]


def one_op_program(case: si.Case) -> tuple[pir.Program, dict[str, np.ndarray]]:
    """The case's op on builtin.data inputs; its results are the outputs out0, out1, ..."""
    op = OPS[case.op]
    p = pir.Program()
    feeds: dict[str, np.ndarray] = {}
    with pir.Builder(p) as b:
        def data(name: str, a: Any) -> pir.Value:
            a = np.asarray(a)
            feeds[name] = a
            return b.data(name, list(a.shape), si.dname(a))

        args: list[Any] = []
        for spec, v in zip(op.inputs, case.inputs, strict=True):
            if v is None:
                args.append(None)
            elif spec.variadic:
                args.append([data(f"{spec.name}{i}", a) for i, a in enumerate(v)])
            else:
                args.append(data(spec.name, v))
        res = getattr(b.pd_op, case.op)(*args, **case.attrs)
        for i, r in enumerate(res if isinstance(res, (list, tuple)) else [res]):
            b.output(r, f"out{i}")
    return p, feeds


def eager(case: si.Case, place: Any) -> list[np.ndarray]:
    r = si.run_op(si.Case(case.op, case.dtype, case.name, case.inputs, case.attrs), place)
    return [np.asarray(a) for a in (si.to_numpy(r) if isinstance(r, (list, tuple))
                                    else (si.to_numpy(r),))]


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()
