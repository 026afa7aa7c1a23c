"""The CUDA plugin on custom:cuda, measured in one run (scripts/gpu_check.sh runs it on a GPU):

  - the device's copy bandwidth: a device-to-device copy of 256 MiB (CuPy's memcpy when CuPy
    is present, and hwport's own copy kernel; the faster one is the reference)
  - elementwise add / exp on 64M float32, softmax / rms_norm on [8192, 8192] float32: bytes
    moved (each input read once, the output written once) per second, as a fraction of the
    copy bandwidth (target >= 0.8 for the elementwise ops, >= 0.6 for the fused rows)
  - matmul 4096^3 in float32, float16, bfloat16: TFLOP/s against CuPy's matmul (cuBLAS) when
    CuPy is present (target >= 0.9x)
  - per-op launch overhead: a tiny add, many times, async then one synchronize, against
    PyTorch on CUDA when it is present
  - DLPack exchange with CuPy of 256 MiB each way (zero-copy: the time must not grow with the
    size), against CuPy copying the same array on the device

Without a CUDA device it prints why and exits 0.
Run: .venv/bin/python benchmarks/bench_cuda.py"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

import hwport
import hwport.runtime as rt

PLACE = "custom:cuda"


def cuda_devices() -> tuple[int, str]:
    found = [p for p in rt.plugins() if p["device_type"] == "cuda"]
    if not found:
        errors = [e["reason"] for e in rt.plugin_errors() if "cuda" in e["path"]]
        return 0, f"the CUDA plugin is not loaded ({errors or 'not built: no nvcc'})"
    return found[0]["device_count"], found[0]["device_count_note"]


def sync() -> None:
    hwport.device.synchronize(PLACE)


def best_of(fn: Callable[[], object], repeat: int = 10, sync_fn: Callable[[], None] = sync
            ) -> float:
    fn()
    sync_fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync_fn()
        best = min(best, time.perf_counter() - t0)
    return best


def line(flag: str, name: str, text: str) -> None:
    print(f"{flag:<4}{name:<34}{text}")


def copy_bandwidth(cp) -> float:
    n = 64 * 1024 * 1024  # float32: 256 MiB
    x = hwport.fill([n], 1.0, dtype="float32", place=PLACE)
    hw = best_of(lambda: hwport.copy(x))
    bw = 2 * 4 * n / hw
    line("", "copy kernel 256 MiB", f"{hw * 1e3:8.3f} ms  {bw / 1e9:8.1f} GB/s (read+write)")
    if cp is not None:
        a, b = cp.ones(n, cp.float32), cp.empty(n, cp.float32)
        t = best_of(lambda: cp.copyto(b, a), sync_fn=cp.cuda.Device().synchronize)
        cbw = 2 * 4 * n / t
        line("", "CuPy memcpy 256 MiB", f"{t * 1e3:8.3f} ms  {cbw / 1e9:8.1f} GB/s")
        bw = max(bw, cbw)
    return bw


def bandwidth_checks(copy_bw: float) -> None:
    rng = np.random.default_rng(0)
    n = 64 * 1024 * 1024
    a = hwport.to_tensor(rng.standard_normal(n, dtype=np.float32), place=PLACE)
    b = hwport.to_tensor(rng.standard_normal(n, dtype=np.float32), place=PLACE)
    rows = hwport.to_tensor(rng.standard_normal((8192, 8192), dtype=np.float32), place=PLACE)
    w = hwport.to_tensor(np.ones(8192, np.float32), place=PLACE)
    cases = [
        ("add 64M f32", lambda: hwport.add(a, b), 3 * 4 * n, 0.8),
        ("exp 64M f32", lambda: hwport.exp(a), 2 * 4 * n, 0.8),
        ("softmax [8192, 8192] f32", lambda: hwport.softmax(rows, axis=-1), 2 * 4 * 8192**2, 0.6),
        ("rms_norm [8192, 8192] f32", lambda: hwport.rms_norm(rows, [8192], w),
         2 * 4 * 8192**2, 0.6),
        ("sum [8192, 8192] f32 axis=1", lambda: hwport.sum(rows, axis=1), 4 * 8192**2, 0.6),
    ]
    for name, fn, nbytes, target in cases:
        t = best_of(fn)
        frac = nbytes / t / copy_bw
        line("ok" if frac >= target else "LOW", name,
             f"{t * 1e3:8.3f} ms  {nbytes / t / 1e9:8.1f} GB/s  {frac:5.2f} of copy "
             f"(target >= {target})")


def matmul_checks(cp) -> None:
    n = 4096
    flops = 2 * n**3
    rng = np.random.default_rng(1)
    for dt in ("float32", "float16", "bfloat16"):
        x_np = rng.standard_normal((n, n), dtype=np.float32)
        x = hwport.cast(hwport.to_tensor(x_np, place=PLACE), dt)
        t = best_of(lambda x=x: hwport.matmul(x, x), repeat=5)
        text = f"{t * 1e3:8.3f} ms  {flops / t / 1e12:7.1f} TFLOP/s"
        flag = ""
        if cp is not None and dt != "bfloat16":
            c = cp.asarray(x_np.astype(dt))
            tc = best_of(lambda c=c: c @ c, repeat=5, sync_fn=cp.cuda.Device().synchronize)
            ratio = tc / t
            flag = "ok" if ratio >= 0.9 else "LOW"
            text += f"  CuPy {flops / tc / 1e12:7.1f} TFLOP/s  ratio {ratio:5.2f}x (target >= 0.9)"
        line(flag, f"matmul {n}^3 {dt}", text)


def launch_overhead() -> None:
    x = hwport.to_tensor(np.ones(16, np.float32), place=PLACE)
    reps = 2000

    def loop():
        for _ in range(reps):
            hwport.add(x, x)

    t = best_of(loop, repeat=3) / reps
    text = f"{t * 1e6:8.2f} us per op"
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        tx = torch.ones(16, device="cuda")

        def tloop():
            for _ in range(reps):
                torch.add(tx, tx)

        tt = best_of(tloop, repeat=3, sync_fn=torch.cuda.synchronize) / reps
        text += f"  torch {tt * 1e6:8.2f} us  ratio {tt / t:5.2f}x"
    else:
        text += "  (no PyTorch with CUDA to compare)"
    line("", "launch overhead add[16] f32", text)


def dlpack_exchange(cp) -> None:
    if cp is None:
        return
    n = 64 * 1024 * 1024  # float32: 256 MiB
    c = cp.ones(n, cp.float32)
    t_copy = best_of(c.copy, sync_fn=cp.cuda.Device().synchronize)
    t_in = best_of(lambda: hwport.from_dlpack(c))
    x = hwport.from_dlpack(c)
    t_out = best_of(lambda: cp.from_dlpack(x))
    for name, t in (("from_dlpack(cupy) 256 MiB", t_in), ("cupy.from_dlpack(t) 256 MiB", t_out)):
        line("ok" if t_copy / t >= 10 else "LOW", name,
             f"{t * 1e6:8.2f} us  CuPy device copy {t_copy * 1e6:8.1f} us  ratio "
             f"{t_copy / t:7.1f}x (zero-copy: target >= 10)")


def main() -> int:
    count, note = cuda_devices()
    if count == 0:
        print(f"bench_cuda: skipped, no CUDA device: {note}")
        return 0
    try:
        import cupy as cp
    except ImportError:
        cp = None
        print("bench_cuda: CuPy not installed: no CuPy comparisons")
    props = next(p for p in rt.plugins() if p["device_type"] == "cuda")
    print(f"bench_cuda: {count} device(s), {props['num_kernels']} kernels")
    copy_bw = copy_bandwidth(cp)
    bandwidth_checks(copy_bw)
    matmul_checks(cp)
    launch_overhead()
    dlpack_exchange(cp)
    fallbacks = {k: v for k, v in rt.fallback_stats().items() if k[1] == "cuda"}
    print(f"CPU fallbacks during the benchmark: {fallbacks or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
