"""Kernel throughput on custom:cpu against numpy (and a memcpy of the same bytes), measured in
one run. Targets (issue: the op library):
  - elementwise add and a unary op (exp) on 16M float32: >= 0.9x numpy
  - sum / softmax / layer_norm on [4096, 4096] float32: >= 1.0x numpy (numpy has no fused
    softmax or layer_norm: compared with the usual numpy expressions)
  - matmul 1024 x 1024 x 1024 float32: >= 0.8x numpy
Ratios are numpy_time / hwport_time (> 1 means hwport is faster).
Run: .venv/bin/python benchmarks/bench_kernels.py"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import timing

import hwport

PLACE = "custom:cpu"


def best_of(fn: Callable[[], object], repeat: int = 7, sync: bool = True) -> float:
    return timing.best_of(fn, PLACE if sync else None, repeat)


def report(name: str, hw: float, ref: float, target: float, nbytes: int | None = None) -> None:
    ratio = ref / hw
    extra = f"  {nbytes / hw / 1e9:6.2f} GB/s" if nbytes else ""
    flag = "ok " if ratio >= target else "LOW"
    print(f"{flag} {name:<38} hwport {hw * 1e3:8.2f} ms  numpy {ref * 1e3:8.2f} ms  "
          f"ratio {ratio:5.2f}x (target >= {target}x){extra}")


def main() -> None:
    rng = np.random.default_rng(0)
    n = 16 * 1024 * 1024
    a_np = rng.standard_normal(n).astype(np.float32)
    b_np = rng.standard_normal(n).astype(np.float32)
    a, b = hwport.to_tensor(a_np, place=PLACE), hwport.to_tensor(b_np, place=PLACE)
    dst = np.empty_like(a_np)
    memcpy = best_of(lambda: np.copyto(dst, a_np), sync=False)
    print(f"memcpy of 64 MiB: {memcpy * 1e3:.2f} ms ({2 * a_np.nbytes / memcpy / 1e9:.2f} GB/s "
          "read+write)")
    hw = best_of(lambda: a + b)
    report("add 16M f32", hw, best_of(lambda: a_np + b_np, sync=False), 0.9, 3 * a_np.nbytes)
    print(f"    add vs memcpy: {memcpy / hw:.2f}x of memcpy's time")
    report("exp 16M f32", best_of(lambda: hwport.exp(a)),
           best_of(lambda: np.exp(a_np), sync=False), 0.9, 2 * a_np.nbytes)

    x_np = rng.standard_normal((4096, 4096)).astype(np.float32)
    x = hwport.to_tensor(x_np, place=PLACE)
    report("sum [4096,4096] f32 (all)", best_of(x.sum),
           best_of(x_np.sum, sync=False), 1.0)
    report("sum [4096,4096] f32 (axis=-1)", best_of(lambda: x.sum(axis=-1)),
           best_of(lambda: x_np.sum(axis=-1), sync=False), 1.0)

    def np_softmax():
        e = np.exp(x_np - x_np.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    report("softmax [4096,4096] f32", best_of(lambda: hwport.nn.functional.softmax(x)),
           best_of(np_softmax, sync=False), 1.0)
    w_np = rng.standard_normal(4096).astype(np.float32)
    bias_np = rng.standard_normal(4096).astype(np.float32)
    w, bias = hwport.to_tensor(w_np, place=PLACE), hwport.to_tensor(bias_np, place=PLACE)

    def np_layer_norm():
        m = x_np.mean(-1, keepdims=True)
        v = x_np.var(-1, keepdims=True)
        return (x_np - m) / np.sqrt(v + 1e-5) * w_np + bias_np

    report("layer_norm [4096,4096] f32",
           best_of(lambda: hwport.nn.functional.layer_norm(x, w, bias)),
           best_of(np_layer_norm, sync=False), 1.0)

    m_np = rng.standard_normal((1024, 1024)).astype(np.float32)
    k_np = rng.standard_normal((1024, 1024)).astype(np.float32)
    m, k = hwport.to_tensor(m_np, place=PLACE), hwport.to_tensor(k_np, place=PLACE)
    report("matmul 1024^3 f32", best_of(lambda: m @ k), best_of(lambda: m_np @ k_np, sync=False),
           0.8)


if __name__ == "__main__":
    main()
