"""Optimizer step cost: launches per step and time per step of hwport.optimizer (SGD,
Momentum, Adam, AdamW + ClipGradByGlobalNorm) against torch.optim on the same parameter sets,
ratios printed (hwport / torch; < 1 is faster). Parameter sets: the issue's MLPs (D=64 H=256,
D=128 H=512: two Linear layers), a 2-layer d=64 GPT's 30 parameters, and four 1M-element
float32 parameters. torch runs its default single-tensor loop and foreach=True.

Parameters are trainable tensors (stop_gradient=False) with a given .grad; the launches
include set_value's copy per parameter.

Run: .venv/bin/python benchmarks/bench_optimizer.py [--steps 20] [--rounds 5] [--place custom:cpu]
     [--torch-threads N]  (on a shared machine: HWPORT_CPU_THREADS=1 ... --torch-threads 1)"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import hwport
from hwport import optimizer as o
from hwport.nn.clip import ClipGradByGlobalNorm
from hwport.runtime import _core


def _param(array: np.ndarray, grad: np.ndarray, place: str) -> hwport.Tensor:
    p = hwport.to_tensor(array, place=place)
    p.stop_gradient = False
    p.grad = hwport.to_tensor(grad, place=place)
    return p


def _mlp(d: int, h: int) -> list[list[int]]:
    return [[d, h], [h], [h, d], [d]]


def _gpt(d: int = 64, layers: int = 2, vocab: int = 256, ctx: int = 64) -> list[list[int]]:
    shapes = [[vocab, d], [ctx, d]]
    for _ in range(layers):
        shapes += [[d], [d], [d, 3 * d], [3 * d], [d, d], [d], [d], [d], [d, 4 * d], [4 * d],
                   [4 * d, d], [d]]
    return shapes + [[d], [d]]


SETS = {"mlp D=64 H=256": _mlp(64, 256), "mlp D=128 H=512": _mlp(128, 512),
        "gpt d=64 L=2": _gpt(), "4 x 1M": [[1 << 20]] * 4}


def _ours(kind: str, ps: list[Any]) -> Any:
    return {"sgd": lambda: o.SGD(0.01, parameters=ps),
            "momentum": lambda: o.Momentum(0.01, parameters=ps),
            "adam": lambda: o.Adam(0.001, parameters=ps),
            "adamw+clip": lambda: o.AdamW(0.001, parameters=ps,
                                          grad_clip=ClipGradByGlobalNorm(1.0))}[kind]()


def _theirs(torch: Any, kind: str, ts: list[Any], foreach: bool) -> Callable[[], None]:
    opt = {"sgd": lambda: torch.optim.SGD(ts, lr=0.01, foreach=foreach),
           "momentum": lambda: torch.optim.SGD(ts, lr=0.01, momentum=0.9, foreach=foreach),
           "adam": lambda: torch.optim.Adam(ts, lr=0.001, foreach=foreach),
           "adamw+clip": lambda: torch.optim.AdamW(ts, lr=0.001, foreach=foreach)}[kind]()
    if kind != "adamw+clip":
        return opt.step

    def step() -> None:
        torch.nn.utils.clip_grad_norm_(ts, 1.0, foreach=foreach)
        opt.step()
    return step


def _time(step: Callable[[], None], steps: int, rounds: int, sync: Callable[[], None]) -> float:
    step()
    sync()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        best = min(best, (time.perf_counter() - t0) / steps)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--place", default="custom:cpu")
    ap.add_argument("--torch-threads", type=int, default=None)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    rng = np.random.default_rng(0)
    print(f"load: {os.getloadavg()[0]:.2f} (1 min), place {args.place}, torch "
          f"{torch.__version__ if torch else 'absent'} threads "
          f"{torch.get_num_threads() if torch else '-'}, HWPORT_CPU_THREADS="
          f"{os.environ.get('HWPORT_CPU_THREADS', 'default')}; times per step, "
          "ratio = hwport/torch")
    print(f"{'set':18} {'optimizer':11} {'params':>6} {'launches':>8} {'hwport us':>10} "
          f"{'torch us':>9} {'ratio':>6} {'foreach us':>10} {'ratio':>6}")
    for set_name, shapes in SETS.items():
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        grads = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in shapes]
        for kind in ("sgd", "momentum", "adam", "adamw+clip"):
            ps = [_param(a, g, args.place) for a, g in zip(arrays, grads, strict=True)]
            opt = _ours(kind, ps)
            opt.step()
            _core._launch_timer_start()
            opt.step()
            launches = _core._launch_timer_stop()[1]
            ours = _time(opt.step, args.steps, args.rounds,
                         lambda: hwport.device.synchronize(args.place))
            row = f"{set_name:18} {kind:11} {len(shapes):6d} {launches:8d} {ours * 1e6:10.1f}"
            if torch is not None:
                for foreach in (False, True):
                    ts = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
                    for t, g in zip(ts, grads, strict=True):
                        t.grad = torch.tensor(g)
                    theirs = _time(_theirs(torch, kind, ts, foreach), args.steps, args.rounds,
                                   lambda: None)
                    w = 9 if not foreach else 10
                    row += f" {theirs * 1e6:{w}.1f} {ours / theirs:6.2f}"
            print(row, flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
