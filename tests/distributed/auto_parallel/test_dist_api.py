"""The normal API on DistTensors and the training APIs in one process (one-rank meshes, so no
collective runs): the dispatch hook, gradients' placements, shard_layer / shard_optimizer /
shard_dataloader. The multi-rank proofs are in test_train_mpi.py."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
import hwport.nn.functional as F
from hwport.distributed import (
    DistTensor,
    Partial,
    ProcessMesh,
    Replicate,
    Shard,
    ShardingStage1,
    dist_call,
    shard_dataloader,
    shard_layer,
    shard_optimizer,
    shard_tensor,
)
from hwport.distributed.auto_parallel.dist_attr import TensorDistAttr
from hwport.distributed.auto_parallel.dist_autograd import dual, grad_attr, split_dims

MESH = ProcessMesh([0], dim_names=["x"])
MESH2 = ProcessMesh([[0]], dim_names=["dp", "mp"])
A = TensorDistAttr


def test_gradient_placements_are_the_duals() -> None:
    assert dual(A((0, -1), {1: 0})) == A((0, -1))
    assert dual(A((-1,), {0: 4})) == A((-1,))  # avg: Replicate, scaled by the backward
    assert grad_attr(A((-1,), {0: 4})) == A((-1,), {0: 0})
    with pytest.raises(NotImplementedError, match="Partial"):
        dual(A((-1,), {0: 1}))  # max


def test_replicated_inputs_of_split_work_get_their_gradient_summed() -> None:
    # column parallel: x Replicate over mp, output Shard over mp -> x's gradient is summed
    assert split_dims(A((0, -1)), [A((0, 1))], 2) == [1]
    # a weight replicated over dp next to a batch sharded over dp
    assert split_dims(A((-1, 1)), [A((0, 1))], 2) == [0]
    assert split_dims(A((-1, -1)), [A((-1, -1))], 2) == []
    assert split_dims(A((-1,)), [A((-1,), {0: 0})], 1) == [0]  # a Partial output


def test_the_normal_api_runs_dist_call_and_records_gradients() -> None:
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (4, 5), (5,)))
    dx = shard_tensor(x, MESH2, [Shard(0), Replicate()])
    dw = shard_tensor(w, MESH2, [Replicate(), Shard(1)], stop_gradient=False)
    db = shard_tensor(b, MESH2, [Replicate(), Shard(0)], stop_gradient=False)
    h = F.gelu(F.linear(dx, dw, db))
    assert isinstance(h, DistTensor) and h.placements == [Shard(0), Shard(2)]
    loss = (h * h).mean() + 2.0 * h.sum() - 1
    assert isinstance(loss, DistTensor) and not loss.stop_gradient
    loss.backward()
    tx = hwport.to_tensor(x)
    tw, tb = (hwport.to_tensor(v, stop_gradient=False) for v in (w, b))
    th = F.gelu(F.linear(tx, tw, tb))
    ((th * th).mean() + 2.0 * th.sum() - 1).backward()
    assert dw.grad.placements == [Replicate(), Shard(1)]
    np.testing.assert_allclose(dw.grad._local_value().numpy(), tw.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(db.grad._local_value().numpy(), tb.grad.numpy(), rtol=1e-5)
    # a plain Tensor next to a DistTensor is Replicate on its mesh; methods and operators
    z = hwport.to_tensor(w) @ dw.transpose([1, 0])
    assert isinstance(z, DistTensor) and z.shape == [4, 4]
    assert (-dx).T.shape == [4, 3, 2]
    # a call without DistTensors still raises its own message
    with pytest.raises(TypeError, match="expected a Tensor"):
        hwport.matmul(x, w)


def test_no_grad_and_stop_gradient_follow_the_inputs() -> None:
    dw = shard_tensor(np.ones((2, 2), np.float32), MESH, [Shard(0)], stop_gradient=False)
    assert not (dw * 2).stop_gradient
    with hwport.no_grad():
        assert (dw * 2).stop_gradient
    assert dist_call("argmax", [dw]).stop_gradient  # an integer output


class _Two(hwport.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.fc = hwport.nn.Linear(4, 6)
        self.out = hwport.nn.Linear(6, 2)

    def forward(self, x: object) -> object:
        return self.out(F.relu(self.fc(x)))


def test_shard_layer_places_what_shard_fn_says_and_replicates_the_rest() -> None:
    model = _Two()
    names = [p.name for p in model.parameters()]
    seen = []

    def shard_fn(name: str, layer: object, mesh: ProcessMesh) -> None:
        seen.append(name)
        if name == "fc":
            layer.weight = shard_tensor(layer.weight, mesh, [Replicate(), Shard(1)])

    shard_layer(model, MESH2, shard_fn)
    assert seen == ["", "fc", "out"]
    params = model.parameters()
    assert all(isinstance(p, DistTensor) and not p.stop_gradient for p in params)
    assert [p.name for p in params] == names
    assert model.fc.weight.placements == [Replicate(), Shard(1)]
    assert model.out.bias.placements == [Replicate(), Replicate()]
    with pytest.raises(TypeError, match="ProcessMesh"):
        shard_layer(_Two(), [0])


@pytest.mark.parametrize("zero", [False, True])
def test_shard_optimizer_updates_like_the_plain_optimizer(zero: bool) -> None:
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3)]
    ref = _Two()
    model = _Two()
    model.set_state_dict(ref.state_dict())
    shard_layer(model, MESH2)
    opt = hwport.optimizer.AdamW(learning_rate=0.1, parameters=model.parameters())
    opt = shard_optimizer(opt, ShardingStage1("dp") if zero else None)
    ref_opt = hwport.optimizer.AdamW(learning_rate=0.1, parameters=ref.parameters())
    loader = shard_dataloader([[x] for x in xs], MESH2, shard_dims="dp")
    for (x,), raw in zip(loader, xs, strict=True):
        assert isinstance(x, DistTensor) and x.placements == [Shard(0), Replicate()]
        model(x).mean().backward()
        ref(hwport.to_tensor(raw)).mean().backward()
        for o in (opt, ref_opt):
            o.step()
            o.clear_grad()
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p._local_value().numpy(), q.numpy(), rtol=1e-5, atol=1e-6)
        assert p.grad is None
    assert opt.get_lr() == 0.1


def test_shard_dataloader_dicts_and_split_datasets() -> None:
    batch = {"a": np.arange(8, dtype=np.float32).reshape(4, 2), "b": np.ones(4, np.float32)}
    (got,) = list(shard_dataloader([batch], [MESH, MESH], input_keys=["a", "b"],
                                   shard_dims=0))
    assert got["a"].placements == [Shard(0)] and got["b"].shape == [4]
    (local,) = list(shard_dataloader([[batch["a"]]], MESH, shard_dims="x",
                                     is_dataset_splitted=True))
    assert local[0].shape == [4, 2]
    with pytest.raises(TypeError, match="ProcessMesh"):
        shard_dataloader([], meshes=[0])


def test_partial_max_has_no_gradient() -> None:
    d = shard_tensor(np.ones(3, np.float32), MESH, [Partial("max")], stop_gradient=False)
    with pytest.raises(NotImplementedError, match="Partial"):
        (d * 1.0).sum().backward()


def test_to_static_runs_one_training_step_per_call() -> None:
    from hwport.distributed import to_static

    rng = np.random.default_rng(2)
    data = [[rng.standard_normal((3, 4)).astype(np.float32),
             rng.standard_normal((3, 2)).astype(np.float32)] for _ in range(3)]
    ref = _Two()
    model = _Two()
    model.set_state_dict(ref.state_dict())
    shard_layer(model, MESH2)
    loader = shard_dataloader(data, MESH2, shard_dims="dp")
    def mse(out: object, label: object) -> object:  # F.mse_loss checks for a plain Tensor
        d = out - label
        return (d * d).mean()

    dm = to_static(model, loader, mse,
                   hwport.optimizer.SGD(learning_rate=0.1, parameters=model.parameters()))
    ref_opt = hwport.optimizer.SGD(learning_rate=0.1, parameters=ref.parameters())
    dm.train()
    for (x, label), (rx, rl) in zip(loader, data, strict=True):
        got = dm(x, label)
        want = mse(ref(hwport.to_tensor(rx)), hwport.to_tensor(rl))
        want.backward()
        ref_opt.step()
        ref_opt.clear_grad()
        np.testing.assert_allclose(got._local_value().numpy(), want.numpy(), rtol=1e-5)
    # the steps after the first ran the captured program: forward, backward and SGD's update
    program = str(dm.dist_main_program("train"))
    assert "pd_op.matmul" in program or "pd_op.linear" in program, program
    assert "builtin.shadow_output" in program
    for p, rp in zip(model.parameters(), ref.parameters(), strict=True):
        np.testing.assert_allclose(p._local_value().numpy(), rp.numpy(), rtol=1e-5, atol=1e-6)
    dm.eval()
    x, label = next(iter(loader))
    before = model.fc.weight._local_value().numpy().copy()
    assert dm(x, label).stop_gradient
    np.testing.assert_array_equal(model.fc.weight._local_value().numpy(), before)
    dm.predict()
    assert dm(x).shape == [3, 2]
