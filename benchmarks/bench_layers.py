"""The pipeline layers' cost: per-op time of add, exp, matmul, softmax, layer_norm, reshape,
slicing and a scalar operand on 1-element (matmul: 2x2) float32 on custom:cpu with no layer
registered, with the profiler layer registered but not active (the issue's target: within 3%),
while a Profiler records, and with a C++ layer active (what a C++ layer such as autograd's
pays for the hop); plus the one check an inactive pipeline makes per call
(_core.layers_active()) on its own. The conditions are measured interleaved, best of several
rounds, so machine load affects them alike.

Run: .venv/bin/python benchmarks/bench_layers.py [--rounds 100] [--number 300]"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import hwport
from hwport.profiler import _LAYER, Profiler
from hwport.runtime import _core


def _ns_per_call(fn: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(number):
        fn()
    return (time.perf_counter_ns() - t0) / number


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--number", type=int, default=300, help="calls per timed batch")
    args = ap.parse_args()

    a = hwport.to_tensor(np.ones(1, np.float32), place="custom:cpu")
    b = hwport.to_tensor(np.ones(1, np.float32), place="custom:cpu")
    m = hwport.to_tensor(np.ones((2, 2), np.float32), place="custom:cpu")
    F = hwport.nn.functional
    ops = {"add": lambda: hwport.add(a, b), "exp": lambda: hwport.exp(a),
           "matmul": lambda: hwport.matmul(m, m), "softmax": lambda: F.softmax(a),
           "layer_norm": lambda: F.layer_norm(a, [1]), "reshape": lambda: hwport.reshape(m, [4]),
           "a[0:1]": lambda: a[0:1], "a - 2.0": lambda: a - 2.0}

    def unregistered(fn: Callable[[], object]) -> float:
        _core.register_layer("profiler", None)
        try:
            return _ns_per_call(fn, args.number)
        finally:
            _core.register_layer("profiler", _LAYER)

    def registered(fn: Callable[[], object]) -> float:
        return _ns_per_call(fn, args.number)

    def profiling(fn: Callable[[], object]) -> float:
        with Profiler():  # a fresh one per batch: its events are dropped after
            return _ns_per_call(fn, args.number)

    def cpp_layer(fn: Callable[[], object]) -> float:
        # A C++ layer (counts and continues): the hop a C++ layer such as autograd's pays.
        _core.register_passthrough_layer("autograd")
        _core.layer_enter("autograd")
        try:
            return _ns_per_call(fn, args.number)
        finally:
            _core.layer_leave("autograd")
            _core.register_layer("autograd", None)

    conditions = {"none registered": unregistered, "registered, inactive": registered,
                  "profiling": profiling, "C++ layer": cpp_layer}
    best = {(op, c): float("inf") for op in ops for c in conditions}
    check = float("inf")
    for fn in ops.values():  # warm-up (lazy imports, caches)
        for _ in range(200):
            fn()
    names = list(conditions)
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]  # no condition always first
        for op, fn in ops.items():
            for c in order:
                best[(op, c)] = min(best[(op, c)], conditions[c](fn))
                hwport.device.synchronize("custom:cpu")
        check = min(check, _ns_per_call(_core.layers_active, args.number * 10))

    print(f"per-op time, 1-element float32 on custom:cpu (best of {args.rounds} rounds of "
          f"{args.number} calls)")
    print(f"{'op':<11}{'none registered':>18}{'registered, inactive':>24}{'profiling':>14}"
          f"{'C++ layer':>14}{'inactive/none':>16}{'profiling/none':>16}{'C++ layer/none':>16}")
    for op in ops:
        base = best[(op, "none registered")]
        reg = best[(op, "registered, inactive")]
        prof = best[(op, "profiling")]
        cpp = best[(op, "C++ layer")]
        print(f"{op:<11}{base:>15.0f} ns{reg:>21.0f} ns{prof:>11.0f} ns{cpp:>11.0f} ns"
              f"{reg / base:>15.3f}x{prof / base:>15.2f}x{cpp / base:>15.2f}x")
    add = best[("add", "none registered")]
    print(f"the inactive check alone (_core.layers_active()): {check:.0f} ns per call, "
          f"{100 * check / add:.2f}% of hwport.add")
    print("target: registered-but-inactive within 3% of none registered (ratio <= 1.03)")


if __name__ == "__main__":
    main()
