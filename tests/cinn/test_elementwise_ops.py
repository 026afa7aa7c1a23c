"""Every elementwise op with a C form in ops.yaml (c_expr primitives, native composites, where),
and the reductions, casts and index maps the lowering takes (arange, pad, gather,
take_along_axis), lowered alone for each of its dtypes and checked against the op library's
oracle with the op's tolerance, on the sample cases (NaN, infinities, integer edges, broadcasts) of
phi_ops/sample_inputs: compiled c99 and the interpreter; OpenCL for float32."""

from __future__ import annotations

import numpy as np
import pytest

from hwport import pir
from hwport.cinn_backends import op_exprs
from hwport.cinn_backends.interpret import interpret
from hwport.phi_ops import sample_inputs
from hwport.phi_ops.reference import reference
from hwport.phi_ops.schema import load_ops
from hwport.phi_ops.tolerance import assert_close
from tests.cinn import runners
from tests.cinn.helpers import CPU, SIMT, lower, opencl, out_specs

OPS = load_ops()
DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int8", "uint8", "int64",
          "bool")


INDEX_OPS = ["arange", "pad", "gather", "take_along_axis", "sum", "prod", "max", "min", "mean",
             "cast"]


def _cases() -> list:
    out = []
    for name in sorted(op_exprs.op_exprs()) + INDEX_OPS:
        for dtype in OPS[name].dtypes:
            if dtype not in DTYPES:
                continue
            cases = [c for c in sample_inputs.cases_for(name, dtype) if not c.large]
            if cases:
                out += [pytest.param(c, id=c.id) for c in cases[:1 if name not in INDEX_OPS
                                                                  else 3]]
    return out


def _program(case: sample_inputs.Case) -> pir.Program:
    p = pir.Program()
    with pir.Builder(p) as b:
        args = [b.data(f"x{i}", list(np.shape(v)), sample_inputs.dname(v))
                for i, v in enumerate(case.inputs)]
        b.output(getattr(b.pd_op, case.op)(*args, **case.attrs), "out0")
    return p


@pytest.mark.parametrize("case", _cases())
def test_op_matches_the_oracle(case):
    p = _program(case)
    want = reference(case.op, case.inputs, case.attrs)
    specs = out_specs(p)
    dtype = case.key_dtype()
    lowered = lower(p, CPU)
    if runners.have_cc():
        (got,) = runners.run_c99(lowered, list(case.inputs), specs)
        assert_close(case.op, dtype, got, want, tolerance=case.tolerance)
    if sum(np.size(a) for a in case.inputs) <= 4096:
        (got,) = interpret(lowered, case.inputs, specs)
        assert_close(case.op, dtype, got, want, tolerance=case.tolerance)
    env = opencl()
    if env is not None and dtype == "float32" and all(np.size(a) for a in case.inputs):
        (got,) = runners.run_opencl(env, lower(p, SIMT), list(case.inputs), specs)
        assert_close(case.op, dtype, got, want, tolerance=case.tolerance)
