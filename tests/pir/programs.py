"""Programs the PIR tests build: one per sample case of the op library (phi_ops/sample_inputs)
with its inputs as builtin.data of the case's shapes (or symbolic ones), and a checker of the
use-def chains."""

from __future__ import annotations

from typing import Any

import numpy as np

from hwport import pir
from hwport.phi_ops import sample_inputs
from hwport.phi_ops.schema import load_ops
from hwport.pir.eager_attrs import given_attrs

OPS = load_ops()


def first_case(op: str) -> sample_inputs.Case:
    return sample_inputs.cases_for(op, OPS[op].dtypes[0])[0]


def _dtype(a: np.ndarray) -> str:
    return sample_inputs.dname(a)


def build_case(case: sample_inputs.Case, shape_of: Any = None,
               locations: bool = False) -> tuple[pir.Program, Any]:
    """The program `data inputs -> pd_op.<op>(...)`; shape_of(name, shape) may rename dims
    (symbols). Returns the program and the op's result(s)."""
    p = pir.Program()
    shape_of = shape_of or (lambda name, shape: list(shape))
    with pir.Builder(p, locations=locations) as b:
        args: list[Any] = []
        for spec, v in zip(OPS[case.op].inputs, case.inputs, strict=False):
            if v is None:
                args.append(None)
            elif isinstance(v, list):
                args.append([b.data(f"{spec.name}{i}", shape_of(f"{spec.name}{i}", a.shape),
                                    _dtype(a)) for i, a in enumerate(v)])
            else:
                args.append(b.data(spec.name, shape_of(spec.name, v.shape), _dtype(v)))
        out = getattr(b.pd_op, case.op)(*args, **case.attrs)
    return p, out


def check_use_def(values: list[pir.Value], ops: list[pir.Operation]) -> None:
    """Every operand of `ops` is in its value's use list exactly once; every use of `values`
    is an operand slot that names the value, of an op that is not erased."""
    expected: dict[int, list[pir.OpOperand]] = {}
    for op in ops:
        for o in op.op_operands:
            assert o.owner is op
            if o.value is not None:
                expected.setdefault(id(o.value), []).append(o)
    for op in ops:
        for o in op.op_operands:
            if o.value is not None:
                uses = o.value._uses
                assert sum(u is o for u in uses) == 1, (op.name, o.index)
    for v in values:
        for u in v._uses:
            assert u.value is v
            assert not u.owner.erased, f"{u.owner.name} is erased but still uses a value"
            assert any(u is o for o in u.owner.op_operands)
        seen = expected.get(id(v), [])
        assert all(any(u is s for u in v._uses) for s in seen)


def all_values(p: pir.Program) -> list[pir.Value]:
    out: list[pir.Value] = []
    for op in p.walk():
        out += op.results
        for r in op.regions:
            for blk in r.blocks:
                out += blk.args
    return out


def evaluate(p: pir.Program, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The outputs of a program of pd_op and builtin ops, each pd_op op run by the numpy
    oracle (phi_ops.reference): an interpreter independent of the passes under test."""
    from hwport.phi_ops.reference import reference

    env: dict[int, Any] = {}
    outputs: dict[str, np.ndarray] = {}
    for op in p.ops:
        ins = [None if v is None else env[id(v)] for v in op.operands]
        if op.name in ("builtin.data", "builtin.parameter"):
            out: Any = feeds[op.attr("name") or op.attr("parameter_name")]
        elif op.name == "builtin.constant":
            t = op.result().type
            out = np.full(t.shape, op.attr("value"), dtype=sample_inputs.np_dtype(t.dtype))
        elif op.name == "builtin.combine":
            out = list(ins)
        elif op.name == "builtin.shadow_output":
            outputs[op.attr("output_name")] = ins[0]
            continue
        elif op.name == "builtin.split":
            out = tuple(ins[0])
        else:
            attrs = given_attrs(op.name.split(".", 1)[1],
                                {k: a.value for k, a in op.attributes.items()})
            out = reference(op.name.split(".", 1)[1], ins, attrs)
        results = (out if isinstance(out, tuple) and op.name != "pd_op.split" else
                   (list(out),) if op.name == "pd_op.split" else (out,))
        for r, value in zip(op.results, results, strict=True):
            env[id(r)] = value
    return outputs
