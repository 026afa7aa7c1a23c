"""The OpenCL plugin on this machine's OpenCL device (PoCL on the CPU here), against the CPU
plugin and numpy in the same run (issue: the OpenCL reference plugin):
  - launch overhead per op: a 1-element add, enqueued back to back (asynchronous) and as a
    round trip (op + synchronize);
  - throughput: add and exp on 16M float32, sum and max over all of 16M float32, sum over each
    axis of [4096, 4096], softmax on [2048, 2048], matmul 512^3 and 1024^3 (issue 20's targets:
    sum and softmax within 1.5x of the CPU plugin's time, elementwise within 1.2x);
  - start-up: a fresh process running a small model-like op mix with empty program caches
    (hwport's and PoCL's: every program compiled) and again with the caches it left (warm).
Ratios are other_time / opencl_time (> 1 means the OpenCL plugin is faster). The throughput rows
also give the process CPU time of each (best of the runs; PoCL's and the CPU plugin's worker
threads included), steadier than wall time on a machine shared with other jobs.
Run: .venv/bin/python benchmarks/bench_opencl.py [--rows SUBSTR,...] (only the throughput rows
whose name contains one of them; no launch-overhead or start-up rows) [--rounds N] (interleaved
rounds of the opencl and cpu-plugin timings, the best kept; default 1)"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import timing

import hwport

OCL = "custom:opencl"
CPU = "custom:cpu"


def opencl_available() -> bool:
    return any(d.startswith("opencl") for d in hwport.device.get_all_custom_device_type())


def row(name: str, ocl: float, cpu: float, ref: float, unit: float = 1e3,
        suffix: str = "ms") -> None:
    print(f"{name:<34} opencl {ocl * unit:9.2f} {suffix}  cpu-plugin {cpu * unit:9.2f} {suffix}  "
          f"numpy {ref * unit:9.2f} {suffix}  vs cpu {cpu / ocl:5.2f}x  vs numpy {ref / ocl:5.2f}x")


def per_op(fn: Callable[[], object], place: str | None, n: int) -> float:
    """Seconds per call of fn over n back-to-back calls (synchronized once at the end)."""

    def burst() -> None:
        for _ in range(n):
            fn()

    return timing.best_of(burst, place, repeat=3) / n


def launch_overhead() -> None:
    one = np.ones(1, np.float32)
    ta = {p: hwport.to_tensor(one, place=p) for p in (OCL, CPU)}
    enq = {p: per_op(lambda p=p: ta[p] + ta[p], p, 2000) for p in ta}
    row("add 1 elem, enqueue (per op)", enq[OCL], enq[CPU], per_op(lambda: one + one, None, 2000),
        1e6, "us")

    def round_trip(p: str) -> Callable[[], object]:
        def go() -> None:
            ta[p] + ta[p]
            hwport.device.synchronize(p)
        return go

    rt = {p: per_op(round_trip(p), None, 500) for p in ta}
    row("add 1 elem, op + synchronize", rt[OCL], rt[CPU], per_op(lambda: one + one, None, 500),
        1e6, "us")


def best_wall_cpu(fn: Callable[[], object], place: str, repeat: int) -> tuple[float, float]:
    """(best wall, best process CPU time) in seconds of `repeat` calls, synchronized."""
    fn()
    hwport.device.synchronize(place)
    wall = cpu = float("inf")
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        hwport.device.synchronize(place)
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu


def throughput(rows: list[str], rounds: int) -> None:
    rng = np.random.default_rng(0)

    def compare(name: str, op: Callable[..., object], ref: Callable[..., object],
                *arrays: np.ndarray) -> None:
        if rows and not any(r in name for r in rows):
            return
        args = {p: [hwport.to_tensor(a, place=p) for a in arrays] for p in (OCL, CPU)}
        wall = {p: float("inf") for p in args}
        cpu = dict(wall)
        for _ in range(rounds):  # interleaved: both see the same background load
            for p in (OCL, CPU):
                w, c = best_wall_cpu(lambda p=p: op(*args[p]), p, 5)
                wall[p], cpu[p] = min(wall[p], w), min(cpu[p], c)
        row(name, wall[OCL], wall[CPU], timing.best_of(lambda: ref(*arrays), None, repeat=5))
        print(f"{'':<34} cpu time: opencl {cpu[OCL] * 1e3:9.2f} ms  cpu-plugin "
              f"{cpu[CPU] * 1e3:9.2f} ms  opencl/cpu-plugin {cpu[OCL] / cpu[CPU]:5.2f}")

    n = 16 * 1024 * 1024
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    compare("add 16M f32", lambda x, y: x + y, np.add, a, b)
    compare("exp 16M f32", hwport.exp, np.exp, a)
    compare("sum 16M f32", hwport.sum, np.sum, a)
    compare("max 16M f32", hwport.max, np.max, a)
    r = rng.standard_normal((4096, 4096)).astype(np.float32)
    compare("sum [4096,4096] axis 1 f32", lambda x: hwport.sum(x, axis=1),
            lambda x: np.sum(x, axis=1), r)
    compare("sum [4096,4096] axis 0 f32", lambda x: hwport.sum(x, axis=0),
            lambda x: np.sum(x, axis=0), r)

    def np_softmax(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    x = rng.standard_normal((2048, 2048)).astype(np.float32)
    compare("softmax [2048,2048] f32", hwport.nn.functional.softmax, np_softmax, x)
    for m in (512, 1024):
        p_ = rng.standard_normal((m, m)).astype(np.float32)
        q_ = rng.standard_normal((m, m)).astype(np.float32)
        compare(f"matmul {m}^3 f32", lambda u, v: u @ v, np.matmul, p_, q_)


_START_SCRIPT = """
import json, time
t0 = time.perf_counter()
import numpy as np, hwport, hwport.runtime as rt
x = hwport.to_tensor(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32),
                     place="custom:opencl")
t1 = time.perf_counter()
y = hwport.nn.functional.softmax(hwport.exp(x) * x + x) @ x
z = float(y.sum().numpy()) + float(hwport.ops.max(y).numpy())
t2 = time.perf_counter()
msgs = [m for (_t, _l, m) in rt._core.plugin_log() if m.startswith("opencl:")]
print(json.dumps({"import_s": t1 - t0, "first_ops_s": t2 - t1,
                  "compiled": sum("compiled program" in m for m in msgs)}))
"""


def start_up() -> None:
    with tempfile.TemporaryDirectory() as cache:
        # PoCL keeps its own kernel cache too: a cold start empties both.
        env = {**os.environ, "HWPORT_CACHE_DIR": cache, "POCL_CACHE_DIR": f"{cache}/pocl"}
        runs = []
        for _ in range(2):
            proc = subprocess.run([sys.executable, "-c", _START_SCRIPT], env=env,
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr)
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    print(f"start-up, first ops (cold cache)   {cold['first_ops_s'] * 1e3:9.1f} ms, "
          f"{cold['compiled']} programs compiled")
    print(f"start-up, first ops (warm cache)   {warm['first_ops_s'] * 1e3:9.1f} ms, "
          f"{warm['compiled']} programs compiled  -> cold/warm "
          f"{cold['first_ops_s'] / warm['first_ops_s']:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description="the OpenCL plugin against the CPU plugin and numpy")
    ap.add_argument("--rows", default="",
                    help="comma-separated substrings: only those throughput rows")
    ap.add_argument("--rounds", type=int, default=1,
                    help="interleaved opencl/cpu-plugin timing rounds per row (best kept)")
    ns = ap.parse_args()
    rows = [r for r in ns.rows.split(",") if r]
    if not opencl_available():
        print("bench_opencl: no OpenCL device (custom:opencl) on this machine; skipped")
        return
    props = hwport.device.get_device_properties(OCL)
    print(f"OpenCL device: {props['name']} ({props.get('vendor', '?')})")
    t0 = time.perf_counter()
    if not rows:
        launch_overhead()
    throughput(rows, max(1, ns.rounds))
    if not rows:
        start_up()
    fb = {k: v for k, v in hwport.runtime.fallback_stats().items() if "opencl" in str(k)}
    print(f"CPU fallbacks taken by the opencl runs: {fb or 'none'}")
    print(f"(bench_opencl ran in {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
