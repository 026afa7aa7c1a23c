"""Per-op eager overhead on 1-element float32 tensors on custom:cpu, and MLP forward steps,
against PyTorch CPU (one thread) measured in the same run (issue 13's targets: per-op median
<= 1.0x PyTorch, every op <= 1.5x; MLP steps <= 1.0x); and the enqueue cost per op on
custom:opencl against custom:cpu (target <= 2x), where an OpenCL device is present.

Run: .venv/bin/python benchmarks/bench_dispatch.py [--before] [--quick] [--only SECTION]
                                                  [--mlp-runs N]
  --before  the op functions and Tensor operators of phi_ops/functional.py as they were before
            the C++ op pipeline (commit BEFORE: every op through phi_ops.dispatch.call) on this
            build: the pipeline's baseline, measured in the same way
  --quick   fewer repeats (a smoke run)
  --only    one section: ops, families, mlp or enqueue (families: the slicing, index,
            arg_reduce, scan and creation ops of the later C++ families; not part of the
            targets' median)
  --families  the same as --only families
  --mlp-runs  the MLP section N times (default 1), each B, D, H row then lists every run's
            ratio and their median and max: a step's latency is bimodal when a thread's
            wake-up lands inside it, which one run can miss"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

import hwport

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "c428439^1"  # main before the C++ op pipeline was merged


def use_main_python_path() -> None:
    """Replaces the op functions, hwport's re-exports, Tensor methods and operators by those of
    BEFORE (every op through phi_ops.dispatch.call, a + b and a * b through bind_tensor.cpp)."""
    from hwport import tensor
    from hwport.nn import functional as nn_functional
    from hwport.ops import __dict__ as ops_dict
    from hwport.phi_ops import functional

    src = subprocess.check_output(["git", "show", f"{BEFORE}:phi_ops/functional.py"], cwd=ROOT)
    functional.__dict__.pop("PIPELINE_OPERATORS", None)
    exec(compile(src, f"{BEFORE}:phi_ops/functional.py", "exec"), functional.__dict__)
    functional.PIPELINE_OPERATORS = {}
    for name in functional.OP_NAMES:
        fn = getattr(functional, name)
        for namespace in (hwport.__dict__, ops_dict, nn_functional.__dict__):
            if name in namespace:
                namespace[name] = fn
    tensor._bind_ops()


def per_op_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    for _ in range(200):
        fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def op_cases(torch) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    import torch.nn.functional as F

    import hwport.nn.functional as hf

    place = "custom:cpu"
    one = np.ones(1, np.float32)
    a = hwport.to_tensor(one * 0.5, place=place)
    b = hwport.to_tensor(one * 2.0, place=place)
    a2 = hwport.to_tensor(np.ones((1, 1), np.float32), place=place)
    m = hwport.to_tensor(np.ones((2, 2), np.float32), place=place)
    cond = hwport.to_tensor(np.ones(1, bool), place=place)
    ta, tb = torch.tensor(one * 0.5), torch.tensor(one * 2.0)
    ta2, tm, tcond = torch.ones(1, 1), torch.ones(2, 2), torch.ones(1, dtype=torch.bool)
    return [
        ("add", lambda: hwport.add(a, b), lambda: torch.add(ta, tb)),
        ("subtract", lambda: hwport.subtract(a, b), lambda: torch.sub(ta, tb)),
        ("multiply", lambda: hwport.multiply(a, b), lambda: torch.mul(ta, tb)),
        ("divide", lambda: hwport.divide(a, b), lambda: torch.div(ta, tb)),
        ("a + b", lambda: a + b, lambda: ta + tb),
        ("a - b", lambda: a - b, lambda: ta - tb),
        ("a * b", lambda: a * b, lambda: ta * tb),
        ("a / b", lambda: a / b, lambda: ta / tb),
        ("add scalar", lambda: hwport.add(a, 2.0), lambda: torch.add(ta, 2.0)),
        ("subtract scalar", lambda: hwport.subtract(a, 2.0), lambda: torch.sub(ta, 2.0)),
        ("multiply scalar", lambda: hwport.multiply(a, 2.0), lambda: torch.mul(ta, 2.0)),
        ("divide scalar", lambda: hwport.divide(a, 2.0), lambda: torch.div(ta, 2.0)),
        ("a - 2.0", lambda: a - 2.0, lambda: ta - 2.0),
        ("a / 2.0", lambda: a / 2.0, lambda: ta / 2.0),
        ("exp", lambda: hwport.exp(a), lambda: torch.exp(ta)),
        ("log", lambda: hwport.log(a), lambda: torch.log(ta)),
        ("tanh", lambda: hwport.tanh(a), lambda: torch.tanh(ta)),
        ("relu", lambda: hf.relu(a), lambda: F.relu(ta)),
        ("sigmoid", lambda: hf.sigmoid(a), lambda: torch.sigmoid(ta)),
        ("gelu", lambda: hf.gelu(a), lambda: F.gelu(ta)),
        ("silu", lambda: hf.silu(a), lambda: F.silu(ta)),
        ("matmul 2x2", lambda: hwport.matmul(m, m), lambda: torch.matmul(tm, tm)),
        ("sum all", lambda: hwport.sum(a), lambda: torch.sum(ta)),
        ("sum axis", lambda: hwport.sum(a2, axis=0), lambda: torch.sum(ta2, dim=0)),
        ("mean", lambda: hwport.mean(a), lambda: torch.mean(ta)),
        ("max", lambda: hwport.max(a), lambda: torch.max(ta)),
        ("softmax", lambda: hf.softmax(a), lambda: F.softmax(ta, dim=-1)),
        ("layer_norm", lambda: hf.layer_norm(a, [1]), lambda: F.layer_norm(ta, (1,))),
        ("reshape", lambda: hwport.reshape(a, [1, 1]), lambda: torch.reshape(ta, (1, 1))),
        ("transpose", lambda: hwport.transpose(a2, [1, 0]), lambda: torch.permute(ta2, (1, 0))),
        ("slicing", lambda: a[0:1], lambda: ta[0:1]),
        ("concat", lambda: hwport.concat([a, b]), lambda: torch.cat([ta, tb])),
        ("cast", lambda: hwport.cast(a, "float64"), lambda: ta.to(torch.float64)),
        ("where", lambda: hwport.where(cond, a, b), lambda: torch.where(tcond, ta, tb)),
        ("greater_than", lambda: hwport.greater_than(a, b), lambda: torch.gt(ta, tb)),
        ("a > b", lambda: a > b, lambda: ta > tb),
        ("clip", lambda: hwport.clip(a, 0.0, 1.0), lambda: torch.clamp(ta, 0.0, 1.0)),
    ]


def family_cases(torch) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """The slicing, index, arg_reduce, scan, creation, random and nn ops on tiny float32
    tensors (the composites among them without a CPU kernel, zeros, index_select, tile, roll,
    eye, linspace, normal, dropout and rotary_embedding, still decompose on the Python path
    after the C++ checks; topk decomposes in C++)."""
    import hwport.nn.functional as hf

    place = "custom:cpu"
    v = np.arange(4, dtype=np.float32)
    x, tx = hwport.to_tensor(v, place=place), torch.from_numpy(v.copy())
    i, ti = hwport.to_tensor(np.array([1]), place=place), torch.tensor([1])
    x2 = hwport.to_tensor(v.reshape(2, 2), place=place)
    tx2 = torch.from_numpy(v.reshape(2, 2).copy())
    i2, ti2 = hwport.to_tensor(np.array([[1], [0]]), place=place), torch.tensor([[1], [0]])
    return [
        ("slice", lambda: hwport.slice(x, [0], [1], [3]), lambda: tx[1:3]),
        ("split", lambda: hwport.split(x, 2), lambda: torch.chunk(tx, 2)),
        ("gather", lambda: hwport.gather(x, i), lambda: torch.index_select(tx, 0, ti)),
        ("index_select", lambda: hwport.index_select(x, i),
         lambda: torch.index_select(tx, 0, ti)),
        ("take_along_axis", lambda: hwport.take_along_axis(x2, i2, 1),
         lambda: torch.take_along_dim(tx2, ti2, 1)),
        ("argmax", lambda: hwport.argmax(x), lambda: torch.argmax(tx)),
        ("argmin axis", lambda: hwport.argmin(x2, axis=1), lambda: torch.argmin(tx2, dim=1)),
        ("cumsum", lambda: hwport.cumsum(x, axis=0), lambda: torch.cumsum(tx, dim=0)),
        ("fill", lambda: hwport.fill([4], 1.5), lambda: torch.full((4,), 1.5)),
        ("zeros", lambda: hwport.zeros([4]), lambda: torch.zeros(4)),
        ("arange", lambda: hwport.arange(4), lambda: torch.arange(4)),
        ("tile", lambda: hwport.tile(x, [2]), lambda: torch.tile(tx, (2,))),
        ("roll", lambda: hwport.roll(x, 1), lambda: torch.roll(tx, 1)),
        ("topk", lambda: hwport.topk(x, 2), lambda: torch.topk(tx, 2)),
        ("eye", lambda: hwport.eye(3), lambda: torch.eye(3)),
        ("linspace", lambda: hwport.linspace(0.0, 1.0, 4), lambda: torch.linspace(0.0, 1.0, 4)),
        ("uniform", lambda: hwport.uniform([4], seed=7), lambda: torch.rand(4)),
        ("normal", lambda: hwport.normal(shape=[4], seed=7), lambda: torch.randn(4)),
        ("dropout", lambda: hf.dropout(x, 0.5, seed=7),
         lambda: torch.nn.functional.dropout(tx, 0.5)),
        ("rotary_embedding", lambda: hf.rotary_embedding(x2, x2, x2),
         lambda: tx2 * tx2 + torch.cat([-tx2[..., 1:], tx2[..., :1]], -1) * tx2),
        ("scatter", lambda: hwport.scatter(x, i, x[:1]),
         lambda: tx.index_copy(0, ti, tx[:1])),
        ("sdpa", lambda: hf.scaled_dot_product_attention(x2, x2, x2),
         lambda: torch.nn.functional.scaled_dot_product_attention(tx2, tx2, tx2)),
        ("cross_entropy", lambda: hf.cross_entropy(x2, i2[:, 0]),
         lambda: torch.nn.functional.cross_entropy(tx2, ti2[:, 0])),
    ]


def mlp_case(torch, batch: int, d: int, h: int):
    import hwport.nn.functional as hf

    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) * 0.1
                 for s in ((batch, d), (d, h), (h, d)))
    hx, hw1, hw2 = (hwport.to_tensor(v, place="custom:cpu") for v in (x, w1, w2))
    tx, tw1, tw2 = (torch.from_numpy(v.copy()) for v in (x, w1, w2))

    def hw_step():
        return hf.layer_norm(hwport.matmul(hf.gelu(hwport.matmul(hx, hw1)), hw2) + hx, [d])

    def torch_step():
        return torch.nn.functional.layer_norm(
            torch.nn.functional.gelu(tx @ tw1) @ tw2 + tx, (d,))

    np.testing.assert_allclose(hw_step().numpy(), torch_step().numpy(), rtol=2e-3, atol=2e-3)
    return hw_step, torch_step


def mlp_section(torch, number: int, repeat: int, runs: int) -> None:
    print("\n# MLP forward: x @ W1 -> gelu -> @ W2 -> + x -> layer_norm (float32)"
          + (f", {runs} runs" if runs > 1 else ""))
    print(f"{'B, D, H':<18}{'hwport us':>10}{'torch us':>10}{'ratio':>8}"
          + ("  ratio per run" if runs > 1 else ""))
    for batch, d, h in ((1, 64, 256), (8, 128, 512), (64, 512, 2048)):
        hw, th = mlp_case(torch, batch, d, h)
        n = max(number // (10 if batch < 64 else 400), 20)

        def hw_done(hw=hw):  # a step is done when its work is (the CPU plugin's stream is async)
            hw()
            hwport.device.synchronize("custom:cpu")

        rows = []
        for _ in range(runs if batch < 64 else 1):  # the kernel-bound size: once
            t_hw = per_op_us(hw_done, n, repeat)
            t_th = per_op_us(th, n, repeat)
            rows.append((t_hw / t_th, t_hw, t_th))
        ratio, t_hw, t_th = sorted(rows)[len(rows) // 2]  # the median run
        line = f"{f'{batch}, {d}, {h}':<18}{t_hw:>10.1f}{t_th:>10.1f}{ratio:>8.2f}"
        if len(rows) > 1:
            line += "  " + " ".join(f"{r[0]:.2f}" for r in rows)
            line += f"  (median {ratio:.2f}, max {max(r[0] for r in rows):.2f})"
        print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("ops", "families", "mlp", "enqueue"))
    parser.add_argument("--families", action="store_true")
    parser.add_argument("--mlp-runs", type=int, default=1)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch not importable: the PyTorch comparison is the benchmark; skipped")
        return 0
    torch.set_num_threads(1)
    if args.before:
        use_main_python_path()
    number, repeat = (2000, 3) if args.quick else (20000, 5)
    label = "main's Python path (--before)" if args.before else "this branch"
    only = "families" if args.families else args.only
    if only in (None, "ops"):
        ops_section(torch, number, repeat, label)
    if only in (None, "families"):
        family_table(torch, number, repeat, label)
    if only in (None, "mlp"):
        mlp_section(torch, number, repeat, max(args.mlp_runs, 1))
    if only in (None, "enqueue"):
        enqueue_cost(number)
    return 0


def ops_section(torch, number: int, repeat: int, label: str) -> None:
    print(f"# per-op time, 1-element float32, custom:cpu vs torch CPU (1 thread): {label}")
    ratios = ratio_table(op_cases(torch), number, repeat)
    print(f"median ratio {statistics.median(ratios):.2f}, max ratio {max(ratios):.2f} "
          "(targets: median <= 1.0, max <= 1.5)")


def ratio_table(cases, number: int, repeat: int) -> list[float]:
    """Prints op -> hwport us, torch us, ratio for each case; returns the ratios."""
    print(f"{'op':<18}{'hwport us':>10}{'torch us':>10}{'ratio':>8}")
    ratios = []
    for name, hw, th in cases:
        t_hw = per_op_us(hw, number, repeat)
        t_th = per_op_us(th, number, repeat)
        ratios.append(t_hw / t_th)
        print(f"{name:<18}{t_hw:>10.2f}{t_th:>10.2f}{t_hw / t_th:>8.2f}")
    return ratios


def family_table(torch, number: int, repeat: int, label: str) -> None:
    print(f"\n# slicing, index, arg_reduce, scan and creation ops, tiny float32: {label}")
    ratios = ratio_table(family_cases(torch), number, repeat)
    print(f"median ratio {statistics.median(ratios):.2f}, max ratio {max(ratios):.2f}")


def enqueue_cost(number: int) -> None:
    """Per-op time of back-to-back calls (one synchronize per burst) on custom:opencl against
    custom:cpu: what a device's launch path costs the host."""
    places = [p for p in ("custom:opencl", "custom:cpu")
              if p.split(":")[1] in hwport.device.get_all_custom_device_type()]
    if len(places) < 2:
        print("\n# enqueue cost: no OpenCL device here; skipped")
        return
    import hwport.nn.functional as hf

    def cases(place: str) -> dict[str, Callable[[], object]]:
        a = hwport.to_tensor(np.ones(1, np.float32), place=place)
        m = hwport.to_tensor(np.ones((2, 2), np.float32), place=place)
        return {"add": lambda: hwport.add(a, a), "exp": lambda: hwport.exp(a),
                "a * 2.0": lambda: a * 2.0, "sum": lambda: hwport.sum(a),
                "matmul 2x2": lambda: hwport.matmul(m, m), "softmax": lambda: hf.softmax(a),
                "layer_norm": lambda: hf.layer_norm(a, [1]), "gelu": lambda: hf.gelu(a)}

    burst = max(number // 10, 200)
    times: dict[str, dict[str, float]] = {}
    for place in places:
        for name, fn in cases(place).items():
            def run(fn=fn, place=place):
                for _ in range(burst):
                    fn()
                hwport.device.synchronize(place)
            times.setdefault(name, {})[place] = per_op_us(run, 1, 5) / burst
    print(f"\n# enqueue cost per op, 1-element float32, bursts of {burst} calls + one "
          "synchronize (target: opencl <= 2x cpu)")
    print(f"{'op':<18}{'opencl us':>10}{'cpu us':>10}{'ratio':>8}")
    ratios = []
    for name, t in times.items():
        ratios.append(t["custom:opencl"] / t["custom:cpu"])
        print(f"{name:<18}{t['custom:opencl']:>10.2f}{t['custom:cpu']:>10.2f}{ratios[-1]:>8.2f}")
    print(f"max ratio {max(ratios):.2f}")


if __name__ == "__main__":
    sys.exit(main())
