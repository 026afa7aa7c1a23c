"""Kernel throughput on custom:cpu against PyTorch CPU and numpy (and a memcpy of the same bytes),
measured in one run.

The PyTorch table (issue 20, reference kernels at PyTorch speed) gives hwport time / torch time
(> 1: hwport is slower) for every case twice, in two child processes of this script: single-
threaded on both sides (HWPORT_CPU_THREADS=1, torch.set_num_threads(1)) and with the thread
pools (both libraries' defaults). Targets: every row <= 1.0; the geometric mean over the float32
unary primitives on 4M elements <= 0.8; float16/bfloat16 elementwise and norms within 1.2x of
float32 at the same element count (the "vs f32" column).

The numpy rows follow (the op library issue's targets):
  - elementwise add and a unary op (exp) on 16M float32: >= 0.9x numpy
  - sum / softmax / layer_norm on [4096, 4096] float32: >= 1.0x numpy (numpy has no fused
    softmax or layer_norm: compared with the usual numpy expressions)
  - matmul 1024 x 1024 x 1024 float32: >= 0.8x numpy
Ratios there are numpy_time / hwport_time (> 1 means hwport is faster).
Run: .venv/bin/python benchmarks/bench_kernels.py [--torch-only | --numpy-only]
  [--rows SUBSTR,...] (only the torch rows whose name contains one of them) [--single] (only the
  single-threaded worker)"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
import sys
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


def numpy_rows() -> None:
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
           best_of(lambda: hwport.nn.functional.layer_norm(x, [4096], w, bias)),
           best_of(np_layer_norm, sync=False), 1.0)

    m_np = rng.standard_normal((1024, 1024)).astype(np.float32)
    k_np = rng.standard_normal((1024, 1024)).astype(np.float32)
    m, k = hwport.to_tensor(m_np, place=PLACE), hwport.to_tensor(k_np, place=PLACE)
    report("matmul 1024^3 f32", best_of(lambda: m @ k), best_of(lambda: m_np @ k_np, sync=False),
           0.8)


# ---- against PyTorch ----------------------------------------------------------------------

N4M = 4 * 1024 * 1024
N16M = 16 * 1024 * 1024
# The float32 unary primitives of ops.yaml with a torch function of the same name (the geometric
# mean's set).
TORCH_UNARY_SKIP = {"isnan", "isinf", "isfinite", "logical_not", "bitwise_not"}


def _torch_cases() -> list[tuple[str, str, Callable[[], object], Callable[[], object]]]:
    """(group, name, hwport call, torch call) per row; inputs made once."""
    import torch

    from hwport import phi_ops

    rng = np.random.default_rng(0)
    F = hwport.nn.functional
    tF = torch.nn.functional
    cases: list = []

    def pair(shape: tuple[int, ...], dtype: str = "float32", positive: bool = False):
        a = rng.standard_normal(shape).astype(np.float32)
        if positive:
            a = np.abs(a) + 0.1
        t = torch.from_numpy(a).to(getattr(torch, dtype))
        return hwport.to_tensor(a, place=PLACE).astype(dtype), t

    def add(group: str, name: str, hw: Callable, th: Callable) -> None:
        cases.append((group, name, hw, th))

    # elementwise on 16M float32 (torch writing into a preallocated out=, as hwport's allocator
    # reuses its cached block)
    a, ta = pair((N16M,))
    b, tb = pair((N16M,))
    out16 = torch.empty(N16M)
    add("table", "add 16M f32", lambda: a + b, lambda: torch.add(ta, tb, out=out16))
    add("table", "exp 16M f32", lambda: hwport.exp(a), lambda: torch.exp(ta, out=out16))
    x, tx = pair((4096, 4096))
    w, tw = pair((4096,))
    bias, tbias = pair((4096,))
    add("table", "layer_norm [4096^2] f32", lambda: F.layer_norm(x, [4096], w, bias),
        lambda: tF.layer_norm(tx, (4096,), tw, tbias))
    add("table", "softmax [4096^2] f32", lambda: F.softmax(x), lambda: torch.softmax(tx, -1))
    add("table", "transpose+contiguous [4096^2]",
        lambda: hwport.transpose(x, [1, 0]).contiguous(), lambda: tx.t().contiguous())
    add("table", "sum all [4096^2] f32", x.sum, tx.sum)
    m, tm = pair((1024, 1024))
    k, tk = pair((1024, 1024))
    add("table", "matmul 1024^3 f32", lambda: m @ k, lambda: tm @ tk)
    v, tv = pair((1, 512))
    g, tg = pair((512, 2048))
    add("table", "matmul 1x512 @ 512x2048 (GEMV)", lambda: v @ g, lambda: tv @ tg)
    mb, tmb = pair((1024, 1024), "bfloat16")
    kb, tkb = pair((1024, 1024), "bfloat16")
    add("table", "matmul 1024^3 bf16", lambda: mb @ kb, lambda: tmb @ tkb)

    # 4M float32 math, and the same element count in float16/bfloat16
    u, tu = pair((N4M,))
    up, tup = pair((N4M,), positive=True)
    for name, hw, th in (("log", lambda: hwport.log(up), lambda: torch.log(tup)),
                         ("sqrt", lambda: hwport.sqrt(up), lambda: torch.sqrt(tup)),
                         ("sin", lambda: hwport.sin(u), lambda: torch.sin(tu)),
                         ("tanh", lambda: hwport.tanh(u), lambda: torch.tanh(tu)),
                         ("erf", lambda: hwport.erf(u), lambda: torch.erf(tu)),
                         ("gelu", lambda: F.gelu(u), lambda: tF.gelu(tu)),
                         ("sigmoid", lambda: F.sigmoid(u), lambda: torch.sigmoid(tu))):
        add("table", f"{name} 4M f32", hw, th)
    for dt, short in (("float16", "f16"), ("bfloat16", "bf16")):
        h, th_ = pair((N4M,), dt)
        h2, th2 = pair((N4M,), dt)
        r, tr = pair((1024, 4096), dt)
        wr, twr = pair((4096,), dt)
        br, tbr = pair((4096,), dt)
        add(short, f"add 4M {short}", lambda h=h, h2=h2: h + h2, lambda a=th_, b=th2: a + b)
        add(short, f"exp 4M {short}", lambda h=h: hwport.exp(h), lambda a=th_: torch.exp(a))
        add(short, f"layer_norm [1024,4096] {short}",
            lambda r=r, wr=wr, br=br: F.layer_norm(r, [4096], wr, br),
            lambda a=tr, w_=twr, b_=tbr: tF.layer_norm(a, (4096,), w_, b_))
    u2, tu2 = pair((N4M,))
    r, tr = pair((1024, 4096))
    wr, twr = pair((4096,))
    br, tbr = pair((4096,))
    add("f32ref", "add 4M f32", lambda: u + u2, lambda: tu + tu2)
    add("f32ref", "exp 4M f32", lambda: hwport.exp(u), lambda: torch.exp(tu))
    add("f32ref", "layer_norm [1024,4096] f32", lambda: F.layer_norm(r, [4096], wr, br),
        lambda: tF.layer_norm(tr, (4096,), twr, tbr))

    # the geometric mean's set: every float32 unary primitive with a torch namesake
    for op in phi_ops.load_ops().values():
        if (op.kind != "primitive" or op.category != "unary" or "float32" not in op.dtypes
                or op.out_dtype != "same" or op.name in TORCH_UNARY_SKIP
                or not hasattr(torch, op.name)):
            continue
        src, tsrc = (up, tup) if op.name in ("log", "log1p", "sqrt") else (u, tu)
        add("unary", f"{op.name} 4M f32", functools.partial(getattr(hwport, op.name), src),
            functools.partial(getattr(torch, op.name), tsrc))
    return cases


ROUNDS = 3  # rounds of best-of-5 per side and row, alternating hwport and torch


def _selected(name: str, rows: list[str]) -> bool:
    return not rows or any(r in name for r in rows)


def torch_worker(mode: str, rows_filter: list[str]) -> None:
    """Measures every case in this process (mode: 'single' or 'pool'); prints JSON rows."""
    import torch

    if mode == "single":
        torch.set_num_threads(1)
    rows = []
    for group, name, hw, th in _torch_cases():
        if not (_selected(name, rows_filter) or group == "f32ref"):
            continue
        # interleaved rounds: a burst of load or a dip in this VM's memory bandwidth hits
        # both sides instead of one
        t_hw = t_torch = float("inf")
        for _ in range(ROUNDS):
            t_hw = min(t_hw, best_of(hw, repeat=5))
            t_torch = min(t_torch, timing.best_of(th, None, 5))
        rows.append({"group": group, "name": name, "hw": t_hw, "torch": t_torch})
    print(json.dumps({"threads": torch.get_num_threads(), "rows": rows}))


def _run_worker(mode: str, rows_filter: list[str]) -> dict:
    env = dict(os.environ)
    if mode == "single":
        env["HWPORT_CPU_THREADS"] = "1"
    cmd = [sys.executable, __file__, "--torch-worker", mode]
    if rows_filter:
        cmd += ["--rows", ",".join(rows_filter)]
    proc = subprocess.run(cmd, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench_kernels: the {mode} worker failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def torch_table(rows_filter: list[str], single_only: bool) -> None:
    res = {mode: _run_worker(mode, rows_filter) for mode in ("single", "pool")
           if mode == "single" or not single_only}
    if single_only:
        res["pool"] = res["single"]  # the pool column repeats the single-threaded figure
    print(f"hwport / torch time (<= 1.0: hwport no slower); single: 1 thread each; pool: "
          f"torch {res['pool']['threads']} threads, hwport's pool "
          f"(os.cpu_count() = {os.cpu_count()}); load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':<36} {'single':>8} {'pool':>8}   {'hw ms 1t':>9} {'torch ms 1t':>11}"
          f"   vs f32 (1t)")
    single = {r["name"]: r for r in res["single"]["rows"]}
    pool = {r["name"]: r for r in res["pool"]["rows"]}
    # from the rows, not `single`: "exp 4M f32" is also a unary row of the same name
    f32 = {r["name"].replace(" f32", ""): r["hw"] for r in res["single"]["rows"]
           if r["group"] == "f32ref"}
    for group in ("table", "f16", "bf16", "unary"):
        if group == "unary":
            print("float32 unary primitives, 4M elements:")
        for name, r in single.items():
            if r["group"] != group:
                continue
            p = pool[name]
            extra = ""
            if group in ("f16", "bf16"):
                base = f32.get(name.rsplit(" ", 1)[0])
                extra = f"   {r['hw'] / base:5.2f}x" if base else ""
            flag = "ok " if r["hw"] <= r["torch"] and p["hw"] <= p["torch"] else "SLOW"
            print(f"{flag:<4}{name:<32} {r['hw'] / r['torch']:8.2f} {p['hw'] / p['torch']:8.2f}"
                  f"   {r['hw'] * 1e3:9.2f} {r['torch'] * 1e3:11.2f}{extra}")
    for mode in ("single", "pool"):
        ratios = [r["hw"] / r["torch"] for r in res[mode]["rows"] if r["group"] == "unary"]
        print(f"geometric mean over {len(ratios)} float32 unary primitives ({mode}): "
              f"{_geomean(ratios):.2f} (target <= 0.8)")


def main() -> None:
    ap = argparse.ArgumentParser(description="kernel throughput against PyTorch and numpy")
    ap.add_argument("--torch-worker", choices=("single", "pool"), help=argparse.SUPPRESS)
    ap.add_argument("--torch-only", action="store_true", help="only the PyTorch table")
    ap.add_argument("--numpy-only", action="store_true", help="only the numpy rows")
    ap.add_argument("--rows", default="", help="comma-separated substrings: only those torch rows")
    ap.add_argument("--single", action="store_true", help="only the single-threaded worker")
    args = ap.parse_args()
    rows_filter = [r for r in args.rows.split(",") if r]
    if args.torch_worker:
        torch_worker(args.torch_worker, rows_filter)
        return
    if not args.numpy_only:
        torch_table(rows_filter, args.single)
    if not args.torch_only:
        numpy_rows()


if __name__ == "__main__":
    main()
