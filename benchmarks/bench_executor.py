"""The program executor (runtime/src/executor.h) against eager dispatch, measured in the same
run (issue 14's targets):

- per-op overhead on 1-element float32 tensors: a chain of ops (add, multiply, exp, neg,
  relu, tanh, maximum, ...) run by the executor vs the same calls made eagerly; target
  executor/eager <= 0.3x. Two figures: the time per op (with the wait for the device), and
  the overhead per op: the host time outside the plugins' kernel functions (the launch cost
  both share, timed inside run_kernel by _core._launch_timer_start/stop) and outside the
  wait for the device. On custom:cpu the launch is ~0.1 us; on custom:opencl PoCL's enqueue
  is ~4-5 us, the same in both, so only the second figure shows the executor's own cost.
- allocator calls per steady-state run (hwport.runtime.memory_stats num_allocs); target 0
- peak memory of an MLP forward (matmul, add, gelu, matmul, add, layer_norm) above what the
  inputs and parameters hold: executor vs eager; target <= 1.0x; and its time per forward
- the RMSNorm program (pow, mean, add eps, rsqrt, multiply x, multiply weight): the timings
  of the passes that fuse and lower it, and the fused program's executor time vs eager's

Run: .venv/bin/python benchmarks/bench_executor.py [--place custom:cpu] [--quick]"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

import hwport
from hwport import pir
from hwport.runtime import _core

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.pir.executor_cases import mlp_eager, mlp_params, mlp_program

UNARY = ["exp", "neg", "relu", "tanh", "abs", "sigmoid"]
BINARY = ["add", "multiply", "maximum", "subtract"]


def chain_program(n: int) -> pir.Program:
    p = pir.Program()
    with pir.Builder(p) as b:
        v = b.data("x", [1], "float32")
        y = b.data("y", [1], "float32")
        for i in range(n):
            if i % 2:
                v = getattr(b.pd_op, BINARY[(i // 2) % len(BINARY)])(v, y)
            else:
                v = getattr(b.pd_op, UNARY[(i // 2) % len(UNARY)])(v)
        b.output(v, "out")
    return p


def chain_eager(x: hwport.Tensor, y: hwport.Tensor, n: int) -> hwport.Tensor:
    v = x
    for i in range(n):
        if i % 2:
            v = getattr(hwport, BINARY[(i // 2) % len(BINARY)])(v, y)
        else:
            name = UNARY[(i // 2) % len(UNARY)]
            fn = getattr(hwport, name, None) or getattr(hwport.nn.functional, name)
            v = fn(v)
    return v


def best(fn: Callable[[], object], number: int, repeat: int) -> float:
    """Median of `repeat` timings of `number` calls, per call (seconds)."""
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def overhead(run: Callable[[], object], place: str, runs: int, repeat: int,
             ops: int) -> tuple[float, float, float, float]:
    """Per op, the round of median overhead of `repeat` rounds of `runs` calls of `run`
    (seconds): (host time outside the kernel functions and the wait for the device, time
    inside the kernel functions, launches, the wait for the device after the run)."""
    rounds = []
    for _ in range(repeat):
        host = wait = 0.0
        _core._launch_timer_start()
        for _ in range(runs):
            t0 = time.perf_counter()
            run()
            t1 = time.perf_counter()
            _core.synchronize(place)
            host += t1 - t0
            wait += time.perf_counter() - t1
        ns, launches = _core._launch_timer_stop()
        k = runs * ops
        rounds.append(((host - ns * 1e-9) / k, ns * 1e-9 / k, launches / k, wait / k))
    rounds.sort()
    return rounds[len(rounds) // 2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--place", default="custom:cpu")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    place = args.place
    number, repeat = (200, 5) if args.quick else (2000, 9)
    n = 64

    # ---- per-op overhead ----
    x = hwport.to_tensor(np.array([0.5], "float32"), place=place)
    y = hwport.to_tensor(np.array([0.25], "float32"), place=place)
    exe = pir.Executor(chain_program(n), place)
    feeds = {"x": x, "y": y}
    got = exe.run(feeds)[0].numpy()
    want = chain_eager(x, y, n).numpy()
    assert got.tobytes() == want.tobytes(), (got, want)
    # work is asynchronous on the place's stream: each timed run waits for its kernels
    t_exe = best(lambda: (exe.run(feeds), _core.synchronize(place)), number // 10, repeat) / n
    t_eager = best(lambda: (chain_eager(x, y, n), _core.synchronize(place)), number // 10,
                   repeat) / n
    print(f"place {place}; chain of {n} ops on 1-element float32 tensors")
    print(f"  per-op: executor {t_exe * 1e6:.2f} us, eager {t_eager * 1e6:.2f} us, "
          f"ratio {t_exe / t_eager:.3f}x (with the device's wait)")
    o_exe, l_exe, k_exe, w_exe = overhead(lambda: exe.run(feeds), place, number // 10, repeat,
                                          n)
    o_eager, l_eager, k_eager, w_eager = overhead(lambda: chain_eager(x, y, n), place,
                                                  number // 10, repeat, n)
    print(f"  inside the plugin's kernel functions: executor {l_exe * 1e6:.2f} us "
          f"({k_exe:.2f} launches), eager {l_eager * 1e6:.2f} us ({k_eager:.2f} launches) per op;"
          f" the wait for the device after a run: executor {w_exe * 1e6:.2f}, eager "
          f"{w_eager * 1e6:.2f} us per op")
    print(f"  per-op overhead (host time outside the kernel functions and the wait): executor "
          f"{o_exe * 1e6:.3f} us, eager {o_eager * 1e6:.3f} us, ratio {o_exe / o_eager:.3f}x "
          f"(target <= 0.3x)")

    # ---- allocator calls per steady-state run ----
    runs = 100
    exe.run(feeds)
    before = _core.memory_stats(place)["num_allocs"]
    for _ in range(runs):
        exe.run(feeds)
    calls = (_core.memory_stats(place)["num_allocs"] - before) / runs
    before = _core.memory_stats(place)["num_allocs"]
    for _ in range(runs):
        chain_eager(x, y, n)
    eager_calls = (_core.memory_stats(place)["num_allocs"] - before) / runs
    print(f"  allocator calls per run: executor {calls:g} (target 0), eager {eager_calls:g}")

    # ---- MLP forward: peak memory and time ----
    dims = (64, 256, 1024, 256)
    p = mlp_program(*dims)
    ps = mlp_params(place, p)
    rng = np.random.default_rng(0)
    xm = hwport.to_tensor(rng.standard_normal(dims[:2]).astype("float32"), place=place)
    mlp_eager(xm, ps)
    base = _core.memory_stats(place)["allocated_bytes"]
    _core.reset_peak_memory_stats(place)
    out = mlp_eager(xm, ps)
    eager_peak = _core.memory_stats(place)["peak_allocated_bytes"] - base
    want = out.numpy()
    del out
    base = _core.memory_stats(place)["allocated_bytes"]
    _core.reset_peak_memory_stats(place)
    mexe = pir.Executor(p, place, parameters=ps)
    (out,) = mexe.run({"x": xm})
    exe_peak = _core.memory_stats(place)["peak_allocated_bytes"] - base
    assert out.numpy().tobytes() == want.tobytes()
    del out
    print(f"MLP forward {dims}: peak memory executor {exe_peak / 2**20:.2f} MiB "
          f"(arena {mexe.arena_bytes / 2**20:.2f} MiB), eager {eager_peak / 2**20:.2f} MiB, "
          f"ratio {exe_peak / eager_peak:.3f}x (target <= 1.0x)")
    mfeeds = {"x": xm}
    t_exe = best(lambda: (mexe.run(mfeeds), _core.synchronize(place)), max(number // 100, 5),
                 repeat)
    t_eager = best(lambda: (mlp_eager(xm, ps), _core.synchronize(place)),
                   max(number // 100, 5), repeat)
    print(f"  time per forward: executor {t_exe * 1e6:.1f} us, eager {t_eager * 1e6:.1f} us, "
          f"ratio {t_exe / t_eager:.3f}x; results written in place: "
          f"{getattr(mexe, 'num_in_place', 'n/a')}")
    rms_section(place, number, repeat)


def rms_program(rows: int, cols: int) -> pir.Program:
    """tests/pir/test_drr.py's RMSNorm: pow -> mean -> add eps -> rsqrt -> multiply x ->
    multiply weight (the rms_norm_fusion pattern)."""
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [rows, cols], "float32")
        w = b.parameter("w", [cols], "float32")
        ms = b.pd_op.mean(b.pd_op.pow(x, b.constant(2.0, [], "float32")), axis=[-1],
                          keepdim=True)
        eps = b.pd_op.full(shape=[1], fill_value=1e-5, dtype="float32")
        y = b.pd_op.multiply(b.pd_op.multiply(x, b.pd_op.rsqrt(b.pd_op.add(ms, eps))), w)
        b.output(y, "y")
    return p


def rms_section(place: str, number: int, repeat: int) -> None:
    from hwport.pir.passes import PassManager

    rows, cols = 64, 1024
    pipeline = f"canonicalize,cse,fuse,dce,lower_to_kernel{{place={place}}}"
    p = rms_program(rows, cols)
    pm = PassManager(pipeline, timing=True)
    for _ in range(5):  # timings summed over 5 fresh programs
        pm.run(rms_program(rows, cols))
    print(f"RMSNorm program [{rows}, {cols}], '{pipeline}' x5:")
    print("  " + pm.timing.report().replace("\n", "\n  "))
    rng = np.random.default_rng(1)
    w = hwport.to_tensor(rng.standard_normal(cols).astype("float32"), place=place)
    x = hwport.to_tensor(rng.standard_normal((rows, cols)).astype("float32"), place=place)
    PassManager("fuse,dce").run(p)
    exe = pir.Executor(p, place, parameters={"w": w})
    feeds = {"x": x}
    (got,) = exe.run(feeds)

    def eager() -> hwport.Tensor:
        return hwport.nn.functional.rms_norm(x, [cols], w, 1e-5)

    assert got.numpy().tobytes() == eager().numpy().tobytes()
    t_exe = best(lambda: (exe.run(feeds), _core.synchronize(place)), max(number // 20, 5),
                 repeat)
    t_eager = best(lambda: (eager(), _core.synchronize(place)), max(number // 20, 5), repeat)
    print(f"  fused program: executor {t_exe * 1e6:.1f} us, eager rms_norm "
          f"{t_eager * 1e6:.1f} us, ratio {t_exe / t_eager:.3f}x")


if __name__ == "__main__":
    main()
