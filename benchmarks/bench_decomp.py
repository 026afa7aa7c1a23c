"""The composites with a C++ formula (ops.yaml `formula`) on a primitives-only device --
custom:cpu with its composite kernels hidden from the C++ kernel selection -- per op on
1-element float32: the Python decomposition (phi_ops/decompositions.py called directly, every
sub-op and scalar constant re-entering the dispatcher from Python; the old path also paid the
composite's own phi_ops.dispatch.call on top), the C++ formula (the public op function), and
PyTorch CPU (one thread), measured in the same run.

Run: .venv/bin/python benchmarks/bench_decomp.py [--quick] [--numel N]"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from collections.abc import Callable

import numpy as np

import hwport
from hwport.phi_ops import decompositions as D
from hwport.runtime import _core


def per_op_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    for _ in range(100):
        fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def cases(torch, x, tx) -> list[tuple[str, Callable, Callable, Callable]]:
    """(name, Python decomposition, C++ formula, torch)."""
    import torch.nn.functional as F

    h = hwport.ops
    return [
        ("relu", lambda: D.relu(x), lambda: h.relu(x), lambda: torch.relu(tx)),
        ("sigmoid", lambda: D.sigmoid(x), lambda: h.sigmoid(x), lambda: torch.sigmoid(tx)),
        ("silu", lambda: D.silu(x), lambda: h.silu(x), lambda: F.silu(tx)),
        ("gelu", lambda: D.gelu(x), lambda: h.gelu(x), lambda: F.gelu(tx)),
        ("gelu tanh", lambda: D.gelu(x, approximate=True), lambda: h.gelu(x, approximate=True),
         lambda: F.gelu(tx, approximate="tanh")),
        ("softplus", lambda: D.softplus(x), lambda: h.softplus(x), lambda: F.softplus(tx)),
        ("clip", lambda: D.clip(x, min=-1.0, max=1.0), lambda: h.clip(x, min=-1.0, max=1.0),
         lambda: torch.clamp(tx, -1.0, 1.0)),
        ("greater_than", lambda: D.greater_than(x, x), lambda: h.greater_than(x, x),
         lambda: torch.gt(tx, tx)),
        ("greater_equal", lambda: D.greater_equal(x, x), lambda: h.greater_equal(x, x),
         lambda: torch.ge(tx, tx)),
        ("log2", lambda: D.log2(x), lambda: h.log2(x), lambda: torch.log2(tx)),
        ("rsqrt", lambda: D.rsqrt(x), lambda: h.rsqrt(x), lambda: torch.rsqrt(tx)),
        ("tan", lambda: D.tan(x), lambda: h.tan(x), lambda: torch.tan(tx)),
        ("reciprocal", lambda: D.reciprocal(x), lambda: h.reciprocal(x),
         lambda: torch.reciprocal(tx)),
        ("square", lambda: D.square(x), lambda: h.square(x), lambda: torch.square(tx)),
        ("isfinite", lambda: D.isfinite(x), lambda: h.isfinite(x), lambda: torch.isfinite(tx)),
        ("mean", lambda: D.mean(x, axis=[0]), lambda: h.mean(x), lambda: torch.mean(tx)),
        ("any", lambda: D.any(x, axis=[0]), lambda: h.any(x), lambda: torch.any(tx)),
        ("softmax", lambda: D.softmax(x, axis=-1), lambda: h.softmax(x),
         lambda: torch.softmax(tx, -1)),
        ("log_softmax", lambda: D.log_softmax(x, axis=-1), lambda: h.log_softmax(x),
         lambda: torch.log_softmax(tx, -1)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--numel", type=int, default=1)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    number, repeat = (300, 3) if args.quick else (2000, 5)
    values = np.linspace(0.25, 0.75, args.numel).astype(np.float32)
    x = hwport.to_tensor(values, place="custom:cpu")
    tx = torch.from_numpy(values.copy())
    hidden = _core._pipeline_hide_native(_core._pipeline_formula_ops())
    try:
        rows = []
        for name, py_fn, cpp_fn, torch_fn in cases(torch, x, tx):
            before = _core._pipeline_formula_stats()[0]
            cpp_fn()
            assert _core._pipeline_formula_stats()[0] > before, f"{name}: no formula ran"
            rows.append((name, per_op_us(py_fn, number, repeat),
                         per_op_us(cpp_fn, number, repeat), per_op_us(torch_fn, number, repeat)))
    finally:
        _core._pipeline_hide_native(hidden)
    print(f"float32, {args.numel} element(s), custom:cpu without composite kernels; µs per call")
    print(f"{'op':<14} {'python':>8} {'formula':>8} {'torch':>8} {'py/formula':>11} "
          f"{'formula/torch':>14}")
    for name, py, cpp, th in rows:
        print(f"{name:<14} {py:8.2f} {cpp:8.2f} {th:8.2f} {py / cpp:11.2f} {cpp / th:14.2f}")
    print(f"median python/formula {statistics.median(r[1] / r[2] for r in rows):.2f}x, "
          f"median formula/torch {statistics.median(r[2] / r[3] for r in rows):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
