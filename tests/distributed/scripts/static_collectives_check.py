"""Collectives inside jit.to_static programs, under mpirun (2 or 4 ranks): each function is
captured on its first call (which runs eagerly), then served by the program (the executor runs
the dist.* ops in order); every call's result must equal numpy's on the values every rank
holds. Prints "OK <rank>" at the end; any failure raises (the job then fails)."""

from __future__ import annotations

import sys

import numpy as np

import hwport
import hwport.distributed as dist
import hwport.nn as nn
from hwport.jit import StaticCaptureError

place = sys.argv[1] if len(sys.argv) > 1 else "custom:cpu"
dist.init_parallel_env()
if place != "custom:cpu":
    hwport.set_device(place)
rank, n = dist.get_rank(), dist.get_world_size()


def inputs(step: int, r: int, shape: tuple[int, ...] = (3, 4)) -> np.ndarray:
    return (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) * (r + 1) + step)


def tensor(a: np.ndarray) -> hwport.Tensor:
    return hwport.to_tensor(a)  # on the current device (init_parallel_env / set_device)


def program_text(fn: object) -> str:
    return str(next(iter(fn._cache.values())).program)  # type: ignore[attr-defined]


def runs_program(fn: object) -> bool:
    entry = next(iter(fn._cache.values()))  # type: ignore[attr-defined]
    return entry.executor is not None and entry.eager_reason is None


# 1. all_reduce (sum and max), all_gather, broadcast, reduce_scatter, alltoall in one program
@hwport.jit.to_static
def mixed(x: hwport.Tensor) -> tuple[hwport.Tensor, ...]:
    y = x * 2.0
    dist.all_reduce(y)
    m = x + 0.0
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    parts: list[hwport.Tensor] = []
    dist.all_gather(parts, x + 1.0)
    gathered = hwport.concat(parts, axis=0)
    b = x - 1.0
    dist.broadcast(b, src=n - 1)
    rs = hwport.zeros([3, 4])
    dist.reduce_scatter(rs, [x * float(k + 1) for k in range(n)])
    a2a: list[hwport.Tensor] = []
    dist.alltoall(a2a, [x + float(100 * k) for k in range(n)])
    red = x * 1.0
    dist.reduce(red, dst=0)  # the root gets the sum; the others keep their value
    return y + 1.0, m, gathered, b, rs, hwport.stack(a2a, axis=0), red


for step in range(4):
    x = inputs(step, rank)
    every = [inputs(step, r) for r in range(n)]
    got = [o.numpy() for o in mixed(tensor(x))]
    want = [sum(2 * e for e in every) + 1, np.max(every, axis=0),
            np.concatenate([e + 1 for e in every]), every[n - 1] - 1,
            sum(e * (rank + 1) for e in every),
            np.stack([e + 100 * rank for e in every]),
            sum(every) if rank == 0 else x]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=f"mixed output {k}, step {step}")
text = program_text(mixed)
for op in ("dist.all_reduce", "dist.all_gather", "dist.broadcast", "dist.reduce_scatter",
           "dist.all_to_all", "dist.reduce"):
    assert op in text, (op, text)
assert runs_program(mixed)


# 2. a ring of blocking sends and receives (even ranks send first: they pair in order)
@hwport.jit.to_static
def ring(x: hwport.Tensor) -> hwport.Tensor:
    got = hwport.zeros([3, 4])
    right, left = (rank + 1) % n, (rank - 1) % n
    if rank % 2 == 0:
        dist.send(x * 3.0, dst=right)
        dist.recv(got, src=left)
    else:
        dist.recv(got, src=left)
        dist.send(x * 3.0, dst=right)
    return got + 0.5


for step in range(3):
    got = ring(tensor(inputs(step, rank))).numpy()
    np.testing.assert_allclose(got, inputs(step, (rank - 1) % n) * 3 + 0.5, rtol=1e-6)
assert "dist.send" in program_text(ring) and "dist.recv" in program_text(ring)



# 3. a background send cannot join a program: a clear error, and nothing was sent
@hwport.jit.to_static
def background(x: hwport.Tensor) -> hwport.Tensor:
    dist.isend(x, dst=(rank + 1) % n).wait()
    return x


try:
    background(tensor(inputs(0, rank)))
    raise AssertionError("isend inside to_static did not fail")
except StaticCaptureError as e:
    assert "isend inside jit.to_static" in str(e), e

# 4. a data-parallel training step as one program: each rank's batch, gradients averaged
#    by all_reduce(AVG) before SGD; the weights must stay equal on every rank and equal one process
#    training on the whole batch
hwport.seed(3)
net = nn.Linear(4, 2)
start = [p.numpy().copy() for p in net.parameters()]
opt = hwport.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())


@hwport.jit.to_static
def train_step(x: hwport.Tensor, y: hwport.Tensor) -> hwport.Tensor:
    loss = ((net(x) - y) ** 2).mean()
    loss.backward()
    for p in net.parameters():
        dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
    opt.step()
    opt.clear_grad()
    return loss


rng = np.random.default_rng(0)
batches = [(rng.standard_normal((n * 2, 4)).astype(np.float32),
            rng.standard_normal((n * 2, 2)).astype(np.float32)) for _ in range(5)]
losses = []
for bx, by in batches:
    losses.append(float(train_step(tensor(bx[2 * rank:2 * rank + 2]),
                                   tensor(by[2 * rank:2 * rank + 2])).numpy()))
assert "dist.all_reduce" in program_text(train_step), program_text(train_step)
assert runs_program(train_step)

# the reference: one process, the whole batch (the mean of the ranks' mean losses' gradients)
w, b = (v.astype(np.float64) for v in start)
for bx, by in batches:
    pred = bx @ w + b
    d = 2 * (pred - by) / (2 * 2)  # d(mean over each rank's 2x2 block) / d pred
    gw, gb = bx.T @ d / n, d.sum(0) / n
    w, b = w - 0.1 * gw, b - 0.1 * gb
np.testing.assert_allclose(net.weight.numpy(), w, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(net.bias.numpy(), b, rtol=1e-5, atol=1e-6)
print(f"OK {rank}", flush=True)
