"""Run under mpirun with 8 ranks: Paddle 3.0's two-mesh pipeline example trained with AdamW
through the normal API (shard_layer, shard_dataloader, shard_optimizer, hwport.matmul on
DistTensors, loss.backward()). mesh0 = [[0,1],[2,3]], mesh1 = [[4,5],[6,7]] (dims x, y);
w0 [H, F] on mesh0 as [Replicate, Shard(1)], w1 [F, H] on mesh1 as [Replicate, Shard(0)];
x [batch, seq, H] on mesh0 as [Shard(0), Replicate]; y = x @ w0 resharded to mesh1 as
[Shard(0), Shard(2)]; z = y @ w1; loss = mean((z - label)^2), label on mesh1.

Every step's loss (on mesh1's ranks) and, after the steps, every rank's weight shard equal a
single-process hwport run of the same model and AdamW (float32). Prints
"pipeline-train ok <rank> <seconds per step>" (the mean over the steps after the first).
Arguments: H F batch seq steps (default the CI sizes 64 256 4 8 10; the issue's are 1024
4096), then "static" to train through dist.to_static: each step one call of the DistModel,
served from the second step on by that rank's captured program (its forward, the reshard's
send/recv, the backward, AdamW); the first gradients are not visible there (clear_grad is
part of the step), so only losses and weights are compared."""

from __future__ import annotations

import sys
import time

import numpy as np

import hwport
import hwport.distributed as dist
from hwport.distributed import (
    ProcessMesh,
    Replicate,
    Shard,
    reshard,
    shard_dataloader,
    shard_layer,
    shard_optimizer,
    shard_tensor,
)

LR = 1e-3


class Mlp(hwport.nn.Layer):
    def __init__(self, w0: np.ndarray, w1: np.ndarray, mesh1: ProcessMesh | None) -> None:
        super().__init__()
        self.w0 = self.create_parameter(list(w0.shape))
        self.w1 = self.create_parameter(list(w1.shape))
        self.w0.set_value(hwport.to_tensor(w0))
        self.w1.set_value(hwport.to_tensor(w1))
        self.mesh1 = mesh1

    def forward(self, x: object) -> object:
        y = hwport.matmul(x, self.w0)
        if self.mesh1 is not None:
            y = reshard(y, self.mesh1, [Shard(0), Shard(2)])
        return y @ self.w1


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-5) -> bool:
    scale = float(np.abs(want).max()) or 1.0
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=rtol,
                                                        atol=rtol * scale))


def main(h: int, f: int, batch: int, seq: int, steps: int, static: bool = False) -> int:
    dist.init_parallel_env()
    rank = dist.get_rank()
    mesh0 = ProcessMesh([[0, 1], [2, 3]], dim_names=["x", "y"])
    mesh1 = ProcessMesh([[4, 5], [6, 7]], dim_names=["x", "y"])
    rng = np.random.default_rng(2024)
    w0 = (rng.standard_normal((h, f)) / np.sqrt(h)).astype(np.float32)
    w1 = (rng.standard_normal((f, h)) / np.sqrt(f)).astype(np.float32)
    data = [(rng.standard_normal((batch, seq, h)).astype(np.float32),
             rng.standard_normal((batch, seq, h)).astype(np.float32)) for _ in range(steps)]

    def shard_fn(name: str, layer: object, mesh: ProcessMesh) -> None:
        if name == "":
            layer.w0 = shard_tensor(layer.w0, mesh0, [Replicate(), Shard(1)])
            layer.w1 = shard_tensor(layer.w1, mesh1, [Replicate(), Shard(0)])

    model = shard_layer(Mlp(w0, w1, mesh1), mesh0, shard_fn)
    opt = shard_optimizer(hwport.optimizer.AdamW(learning_rate=LR,
                                                 parameters=model.parameters()))
    loader = shard_dataloader(data, meshes=[mesh0, mesh1], shard_dims="x")
    ref = Mlp(w0, w1, None)
    ref_opt = hwport.optimizer.AdamW(learning_rate=LR, parameters=ref.parameters())
    want = []
    for x, label in data:
        d = ref(hwport.to_tensor(x)) - hwport.to_tensor(label)
        loss = (d * d).mean()
        loss.backward()
        if not want:
            ref_grads = (ref.w0.grad.numpy(), ref.w1.grad.numpy())
        ref_opt.step()
        ref_opt.clear_grad()
        want.append(float(loss.numpy()))
    def mse(z: object, label: object) -> object:
        d = z - label
        return (d * d).mean()

    dm = dist.to_static(model, loader, mse, opt) if static else None
    losses, took, grads = [], 0.0, None
    for x, label in loader:
        t0 = time.perf_counter()
        if dm is not None:
            loss = dm(x, label)
        else:
            loss = mse(model(x), label)
            loss.backward()
            if not losses:  # the first gradients, before any update: the autograd itself
                grads = [(g.placements, g._local_value().numpy()) for g in (model.w0.grad,
                                                                             model.w1.grad)
                         if g is not None]
            opt.step()
            opt.clear_grad()
        if losses:  # the first step captures (static) or warms up (eager)
            took += time.perf_counter() - t0
        whole = reshard(loss, mesh1, [Replicate(), Replicate()])._local_value()
        losses.append(None if whole is None else float(whole.numpy()))

    ok = True
    if dm is not None:
        programs = [p for p in dm._steps.values() if p.static._cache]
        entry = next(iter(programs[0].static._cache.values())) if programs else None
        if entry is None or entry.executor is None or entry.eager_reason is not None:
            print(f"rank {rank}: the step is not served by a program "
                  f"({getattr(entry, 'eager_reason', None)})", file=sys.stderr)
            ok = False
    elif grads is None or len(grads) != 1 or \
            grads[0][0] != [Replicate(), Shard(1 if mesh0.contains(rank) else 0)]:
        print(f"rank {rank}: gradients {grads}", file=sys.stderr)
        ok = False
    if mesh1.contains(rank):
        if not np.allclose(losses, want, rtol=1e-5, atol=0):
            print(f"rank {rank}: losses {losses}, single process {want}", file=sys.stderr)
            ok = False
        _, cy = mesh1.get_rank_coord(rank)
        part = ref.w1.numpy()[cy * f // 2:(cy + 1) * f // 2]
        got = model.w1._local_value().numpy()
        gpart = ref_grads[1][cy * f // 2:(cy + 1) * f // 2]
        assert model.w0._local_value() is None
    else:
        _, cy = mesh0.get_rank_coord(rank)
        part = ref.w0.numpy()[:, cy * f // 2:(cy + 1) * f // 2]
        got = model.w0._local_value().numpy()
        gpart = ref_grads[0][:, cy * f // 2:(cy + 1) * f // 2]
        assert model.w1._local_value() is None
    if ok and grads is not None and not close(grads[0][1], gpart):
        print(f"rank {rank}: gradient differs by {np.abs(grads[0][1] - gpart).max()}",
              file=sys.stderr)
        ok = False
    # Adam divides by the gradient's rms: an element whose gradient is mostly cancellation
    # turns rounding into a visible share of a step; allow 5% of one step (lr) per element.
    if got.shape != part.shape or not np.allclose(got, part, rtol=1e-5, atol=0.05 * LR):
        print(f"rank {rank}: weights differ by {np.abs(got - part).max()}", file=sys.stderr)
        ok = False
    if not ok:
        return 1
    print(f"pipeline-train ok {rank} {took / max(steps - 1, 1):.4f}")
    return 0


if __name__ == "__main__":
    static = "static" in sys.argv[1:]
    args = [int(a) for a in sys.argv[1:] if a != "static"] or [64, 256, 4, 8, 10]
    sys.exit(main(*args, static=static))
