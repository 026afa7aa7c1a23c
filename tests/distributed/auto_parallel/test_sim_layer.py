"""The simulated dist layer (rule -> reshard inputs -> local op -> placements) on the models
the issue names: Paddle 3.0's two-mesh pipeline example and a GPT block with data x tensor
parallelism, each equal to the same ops run on the global values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hwport.distributed.auto_parallel import ProcessMesh, ReduceType, TensorDistAttr
from hwport.distributed.auto_parallel.sim_layer import SimTensor, sim_call, sim_reshard, sim_shard
from phi_ops.reference import reference

A = TensorDistAttr
SUM = ReduceType.kRedSum


def call1(op: str, inputs: list, attrs: dict | None = None) -> SimTensor:
    (out,) = sim_call(op, inputs, attrs)
    return out


def test_paddle_two_mesh_pipeline_example() -> None:
    rng = np.random.default_rng(0)
    mesh0 = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    mesh1 = ProcessMesh([[4, 5], [6, 7]], dim_names=["x", "y"])
    x = rng.standard_normal((4, 6, 16)).astype(np.float32)
    w0 = rng.standard_normal((16, 32)).astype(np.float32)
    w1 = rng.standard_normal((32, 16)).astype(np.float32)
    dx = sim_shard(x, mesh0, A((0, -1, -1)))  # [Shard(0), Replicate()]
    dw0 = sim_shard(w0, mesh0, A((-1, 1)))  # [Replicate(), Shard(1)]
    dw1 = sim_shard(w1, mesh1, A((1, -1)))  # [Replicate(), Shard(0)]
    y = call1("matmul", [dx, dw0])
    assert y.attr == A((0, -1, 1))  # [Shard(0), Shard(2)]: no communication
    y1 = sim_reshard(y, mesh1, A((0, -1, 1)))  # to mesh1 as [Shard(0), Shard(2)]
    z = call1("matmul", [y1, dw1])
    assert z.mesh == mesh1 and z.attr == A((0, -1, -1), {1: SUM})  # row-parallel: Partial
    want = reference("matmul", [reference("matmul", [x, w0]), w1])
    np.testing.assert_allclose(z.value(), want, rtol=1e-5, atol=1e-5)


def _gpt_block(call: Callable[..., Any], x: Any, p: dict[str, Any]) -> Any:
    """Runs on SimTensors (dist_call) or numpy arrays (np_call) alike."""
    b, s, h = 4, 6, 16
    nh = 4
    ln1 = call("layer_norm", [x, p["g1"], p["b1"]])
    q = call("linear", [ln1, p["wq"], p["bq"]])
    k = call("linear", [ln1, p["wk"], p["bk"]])
    v = call("linear", [ln1, p["wv"], p["bv"]])

    def heads(t: Any) -> Any:
        t = call("reshape", [t], {"shape": [b, s, nh, h // nh]})
        return call("transpose", [t], {"perm": [0, 2, 1, 3]})

    att = call("scaled_dot_product_attention", [heads(q), heads(k), heads(v)],
               {"is_causal": True})
    att = call("reshape", [call("transpose", [att], {"perm": [0, 2, 1, 3]})], {"shape": [b, s, h]})
    o = call("linear", [att, p["wo"], p["bo"]])
    x2 = call("add", [o, x])
    ln2 = call("layer_norm", [x2, p["g2"], p["b2"]])
    f = call("gelu", [call("linear", [ln2, p["w1"], p["c1"]])])
    y = call("add", [call("linear", [f, p["w2"], p["c2"]]), x2])
    return call("mean", [call("multiply", [y, y])])


def test_gpt_block_data_x_tensor_parallel() -> None:
    rng = np.random.default_rng(1)
    h, ff = 16, 32
    shapes = {"g1": (h,), "b1": (h,), "wq": (h, h), "bq": (h,), "wk": (h, h), "bk": (h,),
              "wv": (h, h), "bv": (h,), "wo": (h, h), "bo": (h,), "g2": (h,), "b2": (h,),
              "w1": (h, ff), "c1": (ff,), "w2": (ff, h), "c2": (h,)}
    params = {k: rng.standard_normal(s) * 0.3 for k, s in shapes.items()}
    x = rng.standard_normal((4, 6, h))
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    # Megatron: column-parallel q/k/v/w1 (and their biases), row-parallel wo/w2
    col, row, rep = A((-1, 1)), A((1, -1)), A((-1,))
    layout = {"wq": col, "wk": col, "wv": col, "w1": col, "bq": A((1,)), "bk": A((1,)),
              "bv": A((1,)), "c1": A((1,)), "wo": row, "w2": row}
    dp = {k: sim_shard(v, mesh, layout.get(k, rep if v.ndim == 1 else A((-1, -1))))
          for k, v in params.items()}
    dx = sim_shard(x, mesh, A((0, -1, -1)))
    seen: list[tuple[str, TensorDistAttr]] = []

    def dist_call(op: str, inputs: list, attrs: dict | None = None) -> SimTensor:
        out = call1(op, inputs, attrs)
        seen.append((op, out.attr))
        return out

    def np_call(op: str, inputs: list, attrs: dict | None = None) -> Any:
        return reference(op, inputs, attrs or {})

    loss = _gpt_block(dist_call, dx, dp)
    want = _gpt_block(np_call, x, params)
    np.testing.assert_allclose(loss.value(), want, rtol=1e-9, atol=1e-12)
    attrs = dict.fromkeys([op for op, _ in seen])
    assert "scaled_dot_product_attention" in attrs
    # the attention runs on [dp-sharded batch, mp-sharded heads] and the row-parallel
    # projections give Partial outputs (reduced only where layer_norm needs the whole row)
    sdpa = next(a for op, a in seen if op == "scaled_dot_product_attention")
    assert sdpa.dims_mapping == (0, 1, -1, -1)
    rows = [a for op, a in seen if op == "linear"]
    assert rows[3].partial == {1: SUM} and rows[5].partial == {1: SUM}
