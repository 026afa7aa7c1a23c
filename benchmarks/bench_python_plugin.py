"""Per-op overhead of a Python plugin: numpy_device (device_plugins/python/numpy_device.py,
through cffi callbacks) against the C CPU plugin, both measured in the same run on the same ops,
plus numpy itself (the work both do, without hwport) as the floor.

Ops on 1-element float32 tensors measure the per-op cost (dispatch, allocation, the launch and
for numpy_device the Python callbacks), each call timed until its work is done (device
synchronized); 64K elements show how much of it the kernel's work is.
Speed is not the point of a Python plugin (it is for prototyping a port), but its cost is known.

Run: .venv/bin/python benchmarks/bench_python_plugin.py [--quick]
(loads numpy_device through HWPORT_PLUGIN_PATH itself; the entry library is written to a
temporary cache)"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ["HWPORT_PLUGIN_PATH"] = str(ROOT / "device_plugins" / "python" / "numpy_device.py")
os.environ.setdefault("HWPORT_PYTHON_PLUGIN_CACHE", tempfile.mkdtemp(prefix="hwport_bench_"))

import numpy as np  # noqa: E402

import hwport  # noqa: E402

# name: (the op on a hwport tensor, the same on a numpy array)
OPS = {"add": (lambda x: x + x, lambda a: a + a),
       "multiply": (lambda x: x * x, lambda a: a * a),
       "subtract": (lambda x: x - x, lambda a: a - a),
       "exp": (lambda x: x.exp(), np.exp),
       "abs + sqrt": (lambda x: x.abs().sqrt(), lambda a: np.sqrt(np.abs(a)))}


def done(_result: object, place: str) -> None:
    """Each call is timed until its work has completed (the CPU plugin's stream is
    asynchronous; numpy_device's calls complete before they return)."""
    hwport.device.synchronize(place)


def per_op_us(fn, number: int, repeat: int) -> float:
    for _ in range(50):
        fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = ap.parse_args()
    number, repeat = (200, 3) if args.quick else (2000, 7)
    if not any(p["device_type"] == "numpy" for p in hwport.runtime.plugins()):
        print(f"numpy_device did not load: {hwport.runtime.plugin_errors()}", file=sys.stderr)
        return 1
    print(f"load average {os.getloadavg()[0]:.1f}; {number} calls x {repeat} repeats, best")
    for n in (1, 65536):
        a = np.random.default_rng(0).random(n, dtype=np.float32)
        cpu = hwport.to_tensor(a, place="cpu")
        dev = hwport.to_tensor(a, place="custom:numpy")
        print(f"\n{n} element(s), float32      numpy   cpu (C)   numpy_device   ratio dev/cpu")
        ratios = []
        for name, (op, np_op) in OPS.items():
            t_np = per_op_us(lambda f=np_op, x=a: f(x), number, repeat)
            t_cpu = per_op_us(lambda f=op, x=cpu: done(f(x), "cpu"), number, repeat)
            t_dev = per_op_us(lambda f=op, x=dev: done(f(x), "custom:numpy"), number, repeat)
            ratios.append(t_dev / t_cpu)
            print(f"  {name:<22} {t_np:7.2f}us {t_cpu:7.2f}us {t_dev:10.2f}us   {ratios[-1]:8.2f}x")
        print(f"  median ratio numpy_device / cpu: {statistics.median(ratios):.2f}x")
    assert hwport.runtime.fallback_stats().get(("add", "numpy", "float32"), 0) == 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
