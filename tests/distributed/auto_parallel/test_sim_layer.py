"""The simulated dist layer (rule -> reshard inputs -> local op -> placements) on the models
the issue names: Paddle 3.0's two-mesh pipeline example and a GPT block with data x tensor
parallelism, each equal to the same ops run on the global values."""

from __future__ import annotations

from typing import Any

import numpy as np

from hwport.distributed.auto_parallel import ProcessMesh, ReduceType, TensorDistAttr
from hwport.distributed.auto_parallel.sim_layer import SimTensor, sim_call, sim_reshard, sim_shard
from phi_ops.reference import reference

from .gpt_block import X_LAYOUT, gpt_block, layout, params_and_input

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


def test_gpt_block_data_x_tensor_parallel() -> None:
    params, x = params_and_input(1)
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    dp = {k: sim_shard(v, mesh, layout(k)) for k, v in params.items()}
    dx = sim_shard(x, mesh, X_LAYOUT)
    seen: list[tuple[str, TensorDistAttr]] = []

    def dist_call(op: str, inputs: list, attrs: dict | None = None) -> SimTensor:
        out = call1(op, inputs, attrs)
        seen.append((op, out.attr))
        return out

    def np_call(op: str, inputs: list, attrs: dict | None = None) -> Any:
        return reference(op, inputs, attrs or {})

    loss = gpt_block(dist_call, dx, dp)
    want = gpt_block(np_call, x, params)
    np.testing.assert_allclose(loss.value(), want, rtol=1e-9, atol=1e-12)
    # the attention runs on [dp-sharded batch, mp-sharded heads] and the row-parallel
    # projections give Partial outputs (reduced only where layer_norm needs the whole row)
    sdpa = next(a for op, a in seen if op == "scaled_dot_product_attention")
    assert sdpa.dims_mapping == (0, 1, -1, -1)
    rows = [a for op, a in seen if op == "linear"]
    assert rows[3].partial == {1: SUM} and rows[5].partial == {1: SUM}
