"""The derived SPMD rules on the cases that matter for training (data / tensor parallel
matmuls, the conflicts, the partial inputs), the replicate fallback for an op without a spec,
and schema.py's validation of the `spmd` field."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hwport.distributed.auto_parallel import (
    DistMeta,
    ReduceType,
    TensorDistAttr,
    infer_spmd,
    ops_without_spmd,
    reset_spmd_stats,
    spmd_stats,
)
from hwport.distributed.auto_parallel import spmd_rules as rules
from phi_ops.schema import OpsYamlError, _parse, load_ops, parse_spmd

from .sim_harness import run_case

A = TensorDistAttr
SUM = ReduceType.kRedSum


def rule(op: str, *inputs: tuple, attrs: dict | None = None, mesh=(2, 2)):
    metas = [DistMeta(shape, A(dm, part), dtype) for shape, dm, part, dtype in inputs]
    return infer_spmd(op, metas, attrs or {}, mesh)


def t(shape, dims, partial=None, dtype="float32"):
    return (shape, dims, partial or {}, dtype)


def test_column_then_row_parallel_matmul() -> None:
    # x [B, S, H] data parallel on mesh dim 0, w0 [H, F] column-parallel on mesh dim 1
    r = rule("matmul", t((4, 6, 8), (0, -1, -1)), t((8, 10), (-1, 1)))
    assert r.inputs == [A((0, -1, -1)), A((-1, 1))]
    assert r.outputs == [A((0, -1, 1))]
    # h [B, S, F] sharded on F, w1 [F, H] row-parallel: the contraction is sharded -> Partial
    r = rule("matmul", t((4, 6, 10), (0, -1, 1)), t((10, 8), (1, -1)))
    assert r.inputs == [A((0, -1, 1)), A((1, -1))]
    assert r.outputs == [A((0, -1, -1), {1: SUM})]


def test_transpose_and_vectors() -> None:
    # y [N, K] (transpose_y): its k follows x's k (mesh dim 0), the first input's
    r = rule("matmul", t((4, 6), (1, 0)), t((8, 6), (-1, 1)), attrs={"transpose_y": True})
    assert r.inputs == [A((1, 0)), A((-1, 0))]
    assert r.outputs == [A((1, -1), {0: SUM})]
    r = rule("matmul", t((6,), (0,)), t((6, 5), (-1, 1)))
    assert r.inputs == [A((0,)), A((0, 1))] and r.outputs == [A((1,), {0: SUM})]


def test_conflicts_keep_the_first_input() -> None:
    # both inputs shard the same logical dim on different mesh dims: x wins, y is resharded
    r = rule("add", t((4, 6), (0, -1)), t((4, 6), (1, -1)))
    assert r.inputs == [A((0, -1)), A((0, -1))] and r.outputs == [A((0, -1))]
    assert r.notes
    # two logical dims on one mesh dim: the first dim (in input order) keeps it
    r = rule("add", t((4, 6), (0, -1)), t((4, 6), (-1, 0)))
    assert r.inputs == [A((0, -1)), A((0, -1))]
    # deterministic
    assert rule("add", t((4, 6), (0, -1)), t((4, 6), (-1, 0))).inputs == r.inputs


def test_broadcast_dims_are_replicated() -> None:
    r = rule("add", t((4, 6), (-1, 0)), t((1, 6), (1, -1)))
    assert r.inputs == [A((-1, 0)), A((-1, 0))] and r.outputs == [A((-1, 0))]


def test_partial_inputs() -> None:
    # add: linear in (x, y) jointly: y becomes Partial for free, the output stays Partial
    r = rule("add", t((4, 6), (-1, -1), {0: SUM}), t((4, 6), (-1, 1)))
    assert r.inputs == [A((-1, 1), {0: SUM}), A((-1, 1), {0: SUM})]
    assert r.outputs == [A((-1, 1), {0: SUM})]
    # multiply: linear in each alone: two Partial inputs cannot both stay
    r = rule("multiply", t((4, 6), (-1, -1), {0: SUM}), t((4, 6), (-1, -1), {0: SUM}))
    assert r.inputs == [A((-1, -1)), A((-1, -1))] and r.outputs == [A((-1, -1))]
    # exp is not linear: reduced first
    assert rule("exp", t((4,), (-1,), {0: SUM})).inputs == [A((-1,))]
    # a max-partial is never kept by a sum-linear op; integers are not kept (sums may wrap)
    assert rule("add", t((4,), (-1,), {0: ReduceType.kRedMax}), t((4,), (-1,))).inputs == [
        A((-1,)), A((-1,))]
    assert rule("neg", t((4,), (-1,), {0: SUM}, "int32")).inputs == [A((-1,))]


def test_linear_bias_is_partial_where_the_contraction_is_sharded() -> None:
    r = rule("linear", t((4, 8), (0, 1)), t((8, 6), (1, -1)), t((6,), (-1,)))
    assert r.inputs == [A((0, 1)), A((1, -1)), A((-1,), {1: SUM})]
    assert r.outputs == [A((0, -1), {1: SUM})]


def test_reductions() -> None:
    assert rule("sum", t((4, 6), (0, 1)), attrs={"axis": [1]}).outputs == [A((0,), {1: SUM})]
    r = rule("max", t((4, 6), (0, 1)), attrs={"axis": [1], "keepdim": True})
    assert r.outputs == [A((0, -1), {1: ReduceType.kRedMax})]
    # mean needs even shards for an average of shard means; 5 does not split over 2
    assert rule("mean", t((4, 5), (0, 1)), attrs={"axis": [1]}).inputs == [A((0, -1))]
    assert rule("mean", t((4, 6), (0, 1)), attrs={"axis": [1]}).outputs == [
        A((0,), {1: ReduceType.kRedAvg})]
    # var: the reduced dims are replicated
    assert rule("var", t((4, 6), (0, 1)), attrs={"axis": [1]}).inputs == [A((0, -1))]


def test_softmax_axis_and_layer_norm_dims_are_replicated() -> None:
    assert rule("softmax", t((4, 6), (0, 1))).inputs == [A((0, -1))]
    assert rule("softmax", t((4, 6), (0, 1)), attrs={"axis": 0}).inputs == [A((-1, 1))]
    r = rule("layer_norm", t((2, 4, 6), (0, 1, -1)), t((4, 6), (-1, 0)), t((4, 6), (-1, -1)),
             attrs={"normalized_ndim": 2})
    assert r.inputs == [A((0, -1, -1)), A((-1, -1)), A((-1, -1))]


def test_reshape_splits_and_merges() -> None:
    r = rule("reshape", t((4, 6, 8), (0, 1, -1)), attrs={"shape": [4, 3, 2, 8]}, mesh=(2, 3))
    assert r.inputs == [A((0, 1, -1))] and r.outputs == [A((0, 1, -1, -1))]
    r = rule("reshape", t((4, 6, 8), (0, 1, -1)), attrs={"shape": [4, 3, 2, 8]}, mesh=(2, 2))
    assert r.inputs == [A((0, -1, -1))]  # 3 does not split over 2
    r = rule("reshape", t((4, 6, 8), (-1, 0, -1)), attrs={"shape": [4, 48]})
    assert r.outputs == [A((-1, 0))]
    r = rule("reshape", t((4, 6, 8), (-1, -1, 0)), attrs={"shape": [4, 48]})
    assert r.inputs == [A((-1, -1, -1))]  # an inner dim of a merge cannot stay sharded
    r = rule("reshape", t((6, 4), (0, -1)), attrs={"shape": [3, 8]}, mesh=(3,))
    assert r.outputs == [A((0, -1))]
    r = rule("reshape", t((6, 4), (0, -1)), attrs={"shape": [3, 8]}, mesh=(2,))
    assert r.inputs == [A((-1, -1))]  # 3 rows do not split over 2


def test_embedding_cross_entropy_attention() -> None:
    r = rule("embedding", t((4, 5), (0, -1), dtype="int64"), t((10, 8), (-1, 1)))
    assert r.outputs == [A((0, -1, 1))]
    r = rule("embedding", t((4,), (-1,), dtype="int64"), t((10, 8), (0, -1)), mesh=(2,))
    assert r.inputs[1] == A((-1, -1))  # vocab rows stay whole (a gather is not a sum)
    r = rule("cross_entropy", t((8, 5), (0, 1)), t((8,), (-1,), dtype="int64"),
             attrs={"reduction": "sum"})
    assert r.inputs == [A((0, -1)), A((0,))] and r.outputs == [A((), {0: SUM})]
    r = rule("cross_entropy", t((8, 5), (0, -1)), t((8,), (0,), dtype="int64"))
    assert r.inputs == [A((-1, -1)), A((-1,))]  # mean over the valid labels: whole batch
    q = t((2, 4, 6, 8), (0, 1, -1, -1))
    r = rule("scaled_dot_product_attention", q, q, q)
    assert r.outputs == [A((0, 1, -1, -1))]
    r = rule("scaled_dot_product_attention", t((2, 6, 8), (-1, 0, 1)), t((2, 6, 8), (-1, 0, 1)),
             t((2, 6, 8), (-1, 0, 1)), attrs={"is_causal": True})
    assert r.inputs[0] == A((-1, -1, -1))


def test_fallback_replicates_and_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    ops = dict(load_ops())
    ops["exp"] = dataclasses.replace(ops["exp"], spmd=None)
    monkeypatch.setattr(rules, "load_ops", lambda: ops)
    reset_spmd_stats()
    r = rule("exp", t((4, 6), (0, 1)))
    assert r.rule == "fallback" and r.inputs == [A((-1, -1))] and r.outputs == [A((-1, -1))]
    rule("exp", t((4, 6), (0, -1), {1: SUM}))
    rule("abs", t((4, 6), (0, 1)))
    assert spmd_stats() == {"fallback": {"exp": 2}, "derived": {"abs": 1}}
    assert spmd_stats("fallback") == {"exp": 2}
    with pytest.raises(ValueError):
        spmd_stats("cpu")
    assert "exp" in rules.ops_without_spmd()
    # and the fallback is correct
    x = np.random.default_rng(0).standard_normal((4, 6))
    run_case("exp", [x], {}, (2, 2), [A((0, 1))], np.random.default_rng(1))
    reset_spmd_stats()
    assert spmd_stats() == {"fallback": {}, "derived": {}}


def test_every_op_has_a_spec() -> None:
    assert ops_without_spmd() == []


BAD_SPECS = [
    ("...,...->...,...", "output operands"),
    ("...->...", "input operands"),
    ("..,...->...", "bad operand"),
    ("aa,...->...", "bad operand"),
    ("...,...->...; frobnicate(x)", "unknown clause"),
    ("...,...->...; replicate(axis:nope)", "selector"),
    ("...,...->...; replicate(q)", "selector"),
    ("...,...->...; reduce(axis:axis, sum)", "selector"),
    ("...,...->...; linear(z)", "names inputs"),
    ("...,...->...; swap(x)", ">= 2 letters"),
    ("...,...->...; linear(x) if missing", "bad condition"),
    ("...,...->...z", "no input has"),
    ("...,...", "einsum"),
]


@pytest.mark.parametrize(("spec", "why"), BAD_SPECS)
def test_schema_rejects_bad_specs(spec: str, why: str) -> None:
    op = load_ops()["add"]
    with pytest.raises(ValueError, match=why):
        parse_spmd(spec, op.inputs, op.attrs, op.outputs)


def test_schema_names_the_op() -> None:
    import yaml

    from phi_ops.schema import OPS_YAML

    raw = yaml.safe_load(OPS_YAML.read_text())
    for entry in raw["ops"]:
        if entry["name"] == "softmax":
            entry["spmd"] = "...->...; replicate(axis:dim)"
    with pytest.raises(OpsYamlError, match=r"op 'softmax'.*selector"):
        _parse(raw)
