"""The executor tests' programs (and benchmarks/bench_executor.py's MLP): one-op programs
from phi_ops.sample_inputs (a representative case per op of ops.yaml, float32 where the op
lists it; one builtin.data per input tensor) with the same call run eagerly, and an MLP."""

from __future__ import annotations

from typing import Any

import numpy as np

import hwport
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


def mlp_program(batch: int = 8, d_in: int = 16, hidden: int = 32, d_out: int = 8) -> pir.Program:
    """matmul -> add -> gelu -> matmul -> add -> layer_norm, weights as parameters."""
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [batch, d_in], "float32")
        h = b.pd_op.gelu(b.pd_op.add(b.pd_op.matmul(x, b.parameter("w1", [d_in, hidden],
                                                                    "float32")),
                                     b.parameter("b1", [hidden], "float32")))
        y = b.pd_op.add(b.pd_op.matmul(h, b.parameter("w2", [hidden, d_out], "float32")),
                        b.parameter("b2", [d_out], "float32"))
        out = b.pd_op.layer_norm(y, b.parameter("g", [d_out], "float32"),
                                 b.parameter("beta", [d_out], "float32"), epsilon=1e-5)
        b.output(out if isinstance(out, pir.Value) else out[0], "out")
    return p


def mlp_params(place: str, p: pir.Program, seed: int = 0) -> dict[str, hwport.Tensor]:
    rng = np.random.default_rng(seed)
    return {op.attr("parameter_name"): hwport.to_tensor(
        rng.standard_normal(op.result().type.shape).astype("float32"), place=place)
        for op in p.ops if op.name == "builtin.parameter"}


def mlp_eager(x: hwport.Tensor, ps: dict[str, hwport.Tensor]) -> hwport.Tensor:
    """The MLP's forward, eagerly."""
    h = hwport.nn.functional.gelu(hwport.matmul(x, ps["w1"]) + ps["b1"])
    y = hwport.matmul(h, ps["w2"]) + ps["b2"]
    return hwport.nn.functional.layer_norm(y, [y.shape[-1]], ps["g"], ps["beta"], 1e-5)
