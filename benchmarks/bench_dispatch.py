"""Eager dispatch overhead: `a + b` on 1-element float32 tensors on custom:cpu, against numpy and
torch.add (PyTorch CPU, when importable), measured in the same run.

Target (issue: foundation): hwport time per op <= 1.5x PyTorch's (stretch: <= 1.0x).
Run: .venv/bin/python benchmarks/bench_dispatch.py"""

from __future__ import annotations

import timeit

import numpy as np

import hwport


def per_op_ns(stmt, number: int = 200_000, repeat: int = 7) -> float:
    times = timeit.repeat(stmt, number=number, repeat=repeat)
    return min(times) / number * 1e9


def main() -> None:
    a = hwport.to_tensor(np.ones(1, np.float32), place="custom:cpu")
    b = hwport.to_tensor(np.ones(1, np.float32), place="custom:cpu")
    na, nb = np.ones(1, np.float32), np.ones(1, np.float32)
    for _ in range(1000):
        a + b
    hw = per_op_ns(lambda: a + b)
    hwport.device.synchronize("custom:cpu")
    npy = per_op_ns(lambda: na + nb)
    print(f"hwport  a + b (1 elem, custom:cpu): {hw:8.0f} ns/op")
    print(f"numpy   a + b (1 elem)            : {npy:8.0f} ns/op   hwport/numpy = {hw / npy:.2f}x")
    try:
        import torch
    except ImportError:
        print("torch not importable: PyTorch comparison skipped")
        return
    torch.set_num_threads(1)
    ta, tb = torch.ones(1), torch.ones(1)
    for _ in range(1000):
        torch.add(ta, tb)
    tt = per_op_ns(lambda: torch.add(ta, tb))
    print(f"torch   torch.add (1 elem, CPU)   : {tt:8.0f} ns/op   hwport/torch = {hw / tt:.2f}x "
          f"(target <= 1.5x, stretch <= 1.0x)")


if __name__ == "__main__":
    main()
