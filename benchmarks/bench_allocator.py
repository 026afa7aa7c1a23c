"""Caching allocator: a repeated workload must make zero calls into the plugin's allocator per
step after warm-up; also the allocation throughput against a plain numpy allocation.

Run: .venv/bin/python benchmarks/bench_allocator.py"""

from __future__ import annotations

import time

import numpy as np

import hwport

PLACE = "custom:cpu"


def step(x, y):
    return (x + y) * x + y


def main() -> None:
    x = hwport.to_tensor(np.ones((512, 512), np.float32), place=PLACE)
    y = hwport.to_tensor(np.full((512, 512), 2.0, np.float32), place=PLACE)
    out = None
    for _ in range(5):  # warm-up runs the same workload, previous result alive included
        out = step(x, y)
    hwport.device.synchronize(PLACE)
    before = hwport.device.memory_stats(PLACE)
    steps = 500
    t0 = time.perf_counter()
    for _ in range(steps):
        out = step(x, y)
    hwport.device.synchronize(PLACE)
    elapsed = time.perf_counter() - t0
    after = hwport.device.memory_stats(PLACE)
    calls = after["num_device_allocs"] - before["num_device_allocs"]
    served = after["num_allocs"] - before["num_allocs"]
    print(f"steps={steps} allocations served={served} plugin allocate calls={calls} "
          f"({calls / steps:.3f} per step; target 0)")
    print(f"step time {elapsed / steps * 1e6:.1f} us; result ok="
          f"{bool(np.all(out.numpy() == 5.0))}")
    na, ny = np.ones((512, 512), np.float32), np.full((512, 512), 2.0, np.float32)
    t0 = time.perf_counter()
    for _ in range(steps):
        (na + ny) * na + ny
    np_elapsed = time.perf_counter() - t0
    print(f"numpy step time {np_elapsed / steps * 1e6:.1f} us; hwport/numpy = "
          f"{elapsed / np_elapsed:.2f}x")


if __name__ == "__main__":
    main()
