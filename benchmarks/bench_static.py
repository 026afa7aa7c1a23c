"""A training step as one captured program (jit.to_static) against the same step run eagerly,
measured in the same run (issue 16's targets):

- overhead-bound training steps (forward + backward + AdamW; the GPT also clips): the MLP
  (x @ W1 + b1 -> gelu -> @ W2 + residual -> layer_norm -> mean of squares) at B=1 D=64
  H=256, and examples/train_gpt.py's GPT at batch 1: static / eager time, target <= 0.5;
- allocator calls per steady-state static step (hwport.device.memory_stats num_allocs):
  target 0;
- the GPT step's peak memory beyond what lives between steps (parameters, optimizer state):
  static, the executor's arena plus what a run asks for beyond it; eager, the
  peak_requested_bytes a step adds: target <= 1.0;
- the GPT step's capture (one eager run recorded, the program built, its passes, the
  executor's lowering and plan on the first run): target <= 2 s; a cached re-run makes no
  capture.

Run: .venv/bin/python benchmarks/bench_static.py [--place custom:cpu] [--repeat 30]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples"))
from timing import best_of  # noqa: E402

import hwport  # noqa: E402
import hwport.nn as nn  # noqa: E402

F = hwport.nn.functional


def mlp_steps(place: str, d: int = 64, h: int = 256, b: int = 1):
    """(eager step, static step, inputs) of two identical MLPs with AdamW."""
    def make():
        hwport.seed(0)
        model = nn.Sequential(nn.Linear(d, h), nn.GELU(), nn.Linear(h, d))
        norm = nn.LayerNorm(d)
        model.to(place)
        norm.to(place)
        params = model.parameters() + norm.parameters()
        opt = hwport.optimizer.AdamW(learning_rate=1e-3, parameters=params)

        def step(x):
            y = norm(model(x) + x)
            loss = (y * y).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    x = hwport.to_tensor(np.random.default_rng(0).standard_normal((b, d)).astype(np.float32),
                         place=place)
    return make(), hwport.jit.to_static(make()), (x,)


def gpt_steps(place: str, batch: int = 1, block: int = 32):
    import train_gpt

    def make():
        hwport.set_device(place)
        hwport.seed(0)
        chars, _ = train_gpt.vocabulary()
        model = train_gpt.GPT(len(chars), block=block)
        opt = train_gpt.make_optimizer(model, train_gpt.make_schedule(200))

        def step(x, y):
            loss = F.cross_entropy(model(x).reshape([-1, len(chars)]), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    _, ids = train_gpt.vocabulary()
    x, y = next(train_gpt.batches(ids, 1, batch, block, 0))
    inputs = (hwport.to_tensor(x, place=place), hwport.to_tensor(y.reshape(-1), place=place))
    return make(), hwport.jit.to_static(make()), inputs


def peak_bytes(fn, place: str) -> int:
    fn()
    hwport.device.synchronize(place)
    before = hwport.device.memory_stats(place)["requested_bytes"]
    hwport.device.reset_peak_memory_stats(place)
    fn()
    hwport.device.synchronize(place)
    return hwport.device.memory_stats(place)["peak_requested_bytes"] - before


def allocs_per_step(fn, place: str, steps: int = 10) -> float:
    fn()
    before = hwport.device.memory_stats(place)["num_allocs"]
    for _ in range(steps):
        fn()
    return (hwport.device.memory_stats(place)["num_allocs"] - before) / steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--place", default="custom:cpu")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    place = args.place
    print(f"place {place}; ratios static / eager (best of {args.repeat})")
    print(f"{'training step':34s}{'static ms':>10s}{'eager ms':>10s}{'ratio':>8s}")
    for name, (eager, static, inputs) in (("MLP B=1 D=64 H=256 +AdamW", mlp_steps(place)),
                                           ("GPT batch 1 (train_gpt.py)", gpt_steps(place))):
        t0 = time.perf_counter()
        static(*inputs)  # the capture
        capture = time.perf_counter() - t0
        t_static = best_of(lambda s=static, i=inputs: s(*i), place, args.repeat)
        t_eager = best_of(lambda e=eager, i=inputs: e(*i), place, args.repeat)
        print(f"{name:34s}{t_static * 1e3:10.3f}{t_eager * 1e3:10.3f}"
              f"{t_static / t_eager:8.2f}   (target <= 0.5)")
        print(f"  first call (capture + passes + first plan): {capture:.3f} s"
              f"{'   (target <= 2 s)' if 'GPT' in name else ''}; captures after "
              f"{args.repeat + 2} calls: {static.num_captures}")
        print(f"  allocator calls per static step: "
              f"{allocs_per_step(lambda s=static, i=inputs: s(*i), place):g} (target 0), "
              f"eager: {allocs_per_step(lambda e=eager, i=inputs: e(*i), place):g}")
        if "GPT" in name:
            # the static step's memory is its executor's arena (planned once, held between
            # steps) plus what the run asks for beyond it (the write-back's temporaries)
            arena = next(iter(static._cache.values())).executor.arena_bytes
            ps = arena + peak_bytes(lambda s=static, i=inputs: s(*i), place)
            pe = peak_bytes(lambda e=eager, i=inputs: e(*i), place)
            print(f"  peak memory of a step: static {ps / 2**20:.2f} MiB, eager "
                  f"{pe / 2**20:.2f} MiB, ratio {ps / pe:.2f} (target <= 1.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
