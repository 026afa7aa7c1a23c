"""The composites with a C++ formula (ops.yaml `formula`) on a primitives-only device --
custom:cpu with its composite kernels hidden from the C++ kernel selection -- per op on
1-element float32: the Python decomposition (phi_ops/decompositions.py called directly, every
sub-op and scalar constant re-entering the dispatcher from Python; the old path also paid the
composite's own phi_ops.dispatch.call on top), the C++ formula (the public op function), and
PyTorch CPU (one thread), measured in the same run; and, for the composites custom:cpu has no
kernel for, the whole old path (phi_ops.dispatch.call of the composite, then its decomposition).

Run: .venv/bin/python benchmarks/bench_decomp.py [--quick] [--numel N]"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from collections.abc import Callable
from functools import partial

import numpy as np

import hwport
from hwport.phi_ops import decompositions as D
from hwport.phi_ops import dispatch
from hwport.runtime import _core


def per_op_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    for _ in range(100):
        fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def cases(torch, x, tx) -> list[tuple[str, str, list, dict, dict, Callable]]:
    """(label, op, inputs, attrs of the public call, attrs of the decomposition, torch)."""
    import torch.nn.functional as F

    every = {"axis": [0], "keepdim": False}
    return [
        ("relu", "relu", [x], {}, {}, lambda: torch.relu(tx)),
        ("sigmoid", "sigmoid", [x], {}, {}, lambda: torch.sigmoid(tx)),
        ("silu", "silu", [x], {}, {}, lambda: F.silu(tx)),
        ("gelu", "gelu", [x], {}, {"approximate": False}, lambda: F.gelu(tx)),
        ("gelu tanh", "gelu", [x], {"approximate": True}, {"approximate": True},
         lambda: F.gelu(tx, approximate="tanh")),
        ("softplus", "softplus", [x], {}, {"beta": 1.0, "threshold": 20.0},
         lambda: F.softplus(tx)),
        ("clip", "clip", [x], {"min": -1.0, "max": 1.0}, {"min": -1.0, "max": 1.0},
         lambda: torch.clamp(tx, -1.0, 1.0)),
        ("greater_than", "greater_than", [x, x], {}, {}, lambda: torch.gt(tx, tx)),
        ("greater_equal", "greater_equal", [x, x], {}, {}, lambda: torch.ge(tx, tx)),
        ("log2", "log2", [x], {}, {}, lambda: torch.log2(tx)),
        ("rsqrt", "rsqrt", [x], {}, {}, lambda: torch.rsqrt(tx)),
        ("tan", "tan", [x], {}, {}, lambda: torch.tan(tx)),
        ("reciprocal", "reciprocal", [x], {}, {}, lambda: torch.reciprocal(tx)),
        ("square", "square", [x], {}, {}, lambda: torch.square(tx)),
        ("isfinite", "isfinite", [x], {}, {}, lambda: torch.isfinite(tx)),
        ("mean", "mean", [x], {}, every, lambda: torch.mean(tx)),
        ("any", "any", [x], {}, every, lambda: torch.any(tx)),
        ("softmax", "softmax", [x], {}, {"axis": -1}, lambda: torch.softmax(tx, -1)),
        ("log_softmax", "log_softmax", [x], {}, {"axis": -1},
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
        for label, op, inputs, attrs, dattrs, torch_fn in cases(torch, x, tx):
            decomposition, public = getattr(D, op), getattr(hwport.ops, op)
            before = _core._pipeline_formula_stats()[0]
            public(*inputs, **attrs)
            assert _core._pipeline_formula_stats()[0] > before, f"{label}: no formula ran"
            # the whole old path (the composite's phi_ops.dispatch.call, then the Python
            # decomposition) only where custom:cpu has no kernel dispatch.py would take instead
            old = None if _core.has_kernel(op, "custom:cpu", "float32") else per_op_us(
                partial(dispatch.call, op, inputs, attrs), number, repeat)
            rows.append((label, old,
                         per_op_us(partial(decomposition, *inputs, **dattrs), number, repeat),
                         per_op_us(partial(public, *inputs, **attrs), number, repeat),
                         per_op_us(torch_fn, number, repeat)))
    finally:
        _core._pipeline_hide_native(hidden)
    print(f"float32, {args.numel} element(s), custom:cpu without composite kernels; µs per call "
          "(old path: dispatch.call + decomposition, where dispatch.py would not take a kernel)")
    print(f"{'op':<14} {'old path':>9} {'python':>8} {'formula':>8} {'torch':>8} "
          f"{'python/formula':>15} {'formula/torch':>14}")
    for label, old_us, py, cpp, th in rows:
        old_text = f"{old_us:9.2f}" if old_us is not None else f"{'-':>9}"
        print(f"{label:<14} {old_text} {py:8.2f} {cpp:8.2f} {th:8.2f} {py / cpp:15.2f} "
              f"{cpp / th:14.2f}")
    print(f"median python/formula {statistics.median(r[2] / r[3] for r in rows):.2f}x, "
          f"median formula/torch {statistics.median(r[3] / r[4] for r in rows):.2f}x")
    olds = [r[1] / r[3] for r in rows if r[1] is not None]
    if olds:
        print(f"median old path/formula {statistics.median(olds):.2f}x over {len(olds)} ops")
    return 0


if __name__ == "__main__":
    sys.exit(main())
