"""The decompose pass: composites become the pd_op ops of the decomposition eager runs
(phi_ops/decompositions.py through the Decompose interface); executed, the decomposed program
gives that decomposition's eager result bit for bit."""

from __future__ import annotations

import numpy as np

import hwport
from hwport import pir
from hwport.phi_ops import decompositions
from hwport.pir.passes import PassManager


def _op_names(p: pir.Program) -> list[str]:
    return [op.name for op in p.ops if op.name.startswith("pd_op.")]


def _program() -> pir.Program:
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [4, 8], "float32")
        y = b.pd_op.reshape(b.pd_op.gelu(x), shape=[8, 4])  # reshape: a view, it stays
        b.output(b.pd_op.softmax(y, axis=-1), "out")
    return p


def test_composites_become_the_ops_of_their_decomposition():
    p = _program()
    PassManager("decompose", verify_each=True).run(p)
    assert _op_names(p) == [
        "pd_op.multiply", "pd_op.erf", "pd_op.add", "pd_op.multiply", "pd_op.multiply",
        "pd_op.reshape",
        "pd_op.max", "pd_op.subtract", "pd_op.exp", "pd_op.sum", "pd_op.divide"]
    consts = [op.attr("value") for op in p.ops if op.name == "builtin.constant"]
    assert consts == [float(np.float32(np.sqrt(0.5))), 1.0, 0.5]
    assert str(pir.parse(str(p))) == str(p)


def test_the_decomposed_program_runs_as_the_eager_decomposition():
    p = _program()
    PassManager("decompose").run(p)
    x = hwport.to_tensor(np.linspace(-3, 3, 32).reshape(4, 8).astype("float32"),
                         place="custom:cpu")
    (got,) = pir.Executor(p, "custom:cpu").run({"x": x})
    want = decompositions.softmax(
        decompositions.reshape(decompositions.gelu(x), shape=[8, 4]), axis=1)
    assert got.numpy().tobytes() == want.numpy().tobytes()


def test_with_a_place_only_what_eager_decomposes_there():
    p = _program()
    PassManager("decompose{place=custom:cpu}").run(p)
    assert _op_names(p) == ["pd_op.gelu", "pd_op.reshape", "pd_op.softmax"]  # native kernels
    q = pir.Program()
    with pir.Builder(q) as b:  # float16 x, float32 weight: eager decomposes rms_norm
        x = b.data("x", [2, 8], "float16")
        b.output(b.pd_op.rms_norm(x, b.data("w", [8], "float32"), epsilon=1e-6), "out")
    PassManager("decompose{place=custom:cpu}").run(q)
    assert "pd_op.rms_norm" not in _op_names(q) and "pd_op.sqrt" in _op_names(q)


def test_symbolic_shapes_stay():
    p = pir.Program()
    with pir.Builder(p) as b:
        b.output(b.pd_op.gelu(b.data("x", ["s0", 8], "float32")), "out")
    PassManager("decompose").run(p)
    assert _op_names(p) == ["pd_op.gelu"]
