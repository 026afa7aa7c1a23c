"""The hot composites with and without their native kernels, on custom:cpu, float32, 1 element
and 1M elements: per-op time of the native kernel (after), the decomposition (before: the same
dispatcher call with the native kernel ignored, as every plugin ran them before ops.yaml
`native`) and PyTorch CPU, measured in the same run; prints after/before and after/torch.

Run: .venv/bin/python benchmarks/bench_composites.py [--quick]"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

import hwport
from hwport.phi_ops import dispatch
from hwport.runtime import _core

PLACE = "custom:cpu"


def _ops() -> dict[str, tuple[Callable, dict]]:
    """op -> (the hwport call on (x, y), the attrs the dispatcher gets)."""
    F = hwport.nn.functional
    return {
        "sigmoid": (lambda x, y: hwport.sigmoid(x), {}),
        "gelu": (lambda x, y: F.gelu(x), {"approximate": False}),
        "silu": (lambda x, y: F.silu(x), {}),
        "relu": (lambda x, y: hwport.relu(x), {}),
        "clip": (lambda x, y: hwport.clip(x, -0.5, 0.5), {"min": -0.5, "max": 0.5}),
        "mean": (lambda x, y: hwport.mean(x), {"axis": [], "keepdim": False}),
        "greater_than": (lambda x, y: x > y, {}),
        "gelu_grad": (hwport.gelu_grad, {}),
        "gelu_tanh_grad": (hwport.gelu_tanh_grad, {}),
    }


def _torch_ops(torch) -> dict[str, Callable]:
    T = torch.nn.functional
    return {"sigmoid": lambda x, y: torch.sigmoid(x), "gelu": lambda x, y: T.gelu(x),
            "silu": lambda x, y: T.silu(x), "relu": lambda x, y: torch.relu(x),
            "clip": lambda x, y: torch.clamp(x, -0.5, 0.5), "mean": lambda x, y: torch.mean(x),
            "greater_than": torch.gt,
            "gelu_grad": lambda x, y: torch.ops.aten.gelu_backward(y, x),
            "gelu_tanh_grad": lambda x, y: torch.ops.aten.gelu_backward(y, x, approximate="tanh")}


def per_op_s(fn: Callable[[], object], number: int, repeat: int, sync: bool) -> float:
    """Best of `repeat` runs of `number` calls (the device synchronized after each run)."""
    fn()
    if sync:
        hwport.device.synchronize(PLACE)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if sync:
            hwport.device.synchronize(PLACE)
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def decomposed(op: str, x, y, attrs: dict) -> Callable[[], object]:
    """The dispatcher's call with the native kernel ignored: the decomposition runs."""
    args = (x, y) if op in ("greater_than", "gelu_grad", "gelu_tanh_grad") else (x,)

    def run():
        real = dispatch._fused_kernel_fits
        dispatch._fused_kernel_fits = lambda *a: False
        try:
            return dispatch.call(op, args, attrs)
        finally:
            dispatch._fused_kernel_fits = real

    return run


def main() -> None:
    quick = "--quick" in sys.argv
    try:
        import torch
    except ImportError:
        torch = None
    ops = _ops()
    tops = _torch_ops(torch) if torch is not None else {}
    rng = np.random.default_rng(0)
    print(f"per-op time on {PLACE}, float32; best of several runs (noisy under load)")
    print(f"{'op':>13} {'n':>8} {'native us':>10} {'decomp us':>10} {'torch us':>9} "
          f"{'after/before':>13} {'after/torch':>12}")
    for n in (1, 1 << 20):
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        x, y = hwport.to_tensor(a, place=PLACE), hwport.to_tensor(b, place=PLACE)
        tx = torch.from_numpy(a) if torch is not None else None
        ty = torch.from_numpy(b) if torch is not None else None
        number = (200 if quick else 2000) if n == 1 else (3 if quick else 10)
        repeat = 3 if quick else 7
        for op, (call, attrs) in ops.items():
            native = _core.has_kernel(op, PLACE, "float32")
            after = per_op_s(lambda c=call, a=x, b=y: c(a, b), number, repeat, True)
            before = per_op_s(decomposed(op, x, y, attrs), number, repeat, True)
            tcall = tops.get(op)
            tt = (per_op_s(lambda c=tcall, a=tx, b=ty: c(a, b), number, repeat, False)
                  if tcall is not None else float("nan"))
            note = "" if native else "  (no native kernel: both decompose)"
            print(f"{op:>13} {n:>8} {after * 1e6:>10.2f} {before * 1e6:>10.2f} {tt * 1e6:>9.2f} "
                  f"{after / before:>13.3f} {after / tt:>12.2f}{note}")


if __name__ == "__main__":
    main()
