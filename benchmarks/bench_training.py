"""Training-step cost against PyTorch CPU (one thread) measured in the same run (issue 15's
targets, ratios hwport / torch):

- the MLP step (x @ W1 + b1 -> gelu -> @ W2 + residual -> layer_norm -> mean of squares:
  forward + backward, plus the optimizer step where hwport.optimizer has AdamW) at
  B=1 D=64 H=256 and B=8 D=128 H=512: target <= 1.0;
- the GPT step of examples/train_gpt.py (2 blocks, d=64, 4 heads, batch 8 x 32 tokens,
  forward + backward + clipping + AdamW) against the same model in PyTorch
  (examples/train_gpt_torch.py): target <= 1.0;
- the GPT step's peak memory: the most bytes of tensors live at once during one step
  (parameters, optimizer state, gradients, activations, saved tensors, temporaries), after
  warm-up steps, hwport's caching allocator (bytes as asked, `peak_requested_bytes`) against
  PyTorch's parameters + optimizer state + the peak its CPU allocator reports during the
  step (profiler, `profile_memory=True`): target <= 1.1. Also printed: the peak beyond what
  was live before the step (hwport keeps zeroed gradients between steps, as Paddle's
  clear_grad(set_to_zero=True) does; PyTorch's zero_grad() frees them);
- the backward engine's overhead per node on tiny tensors (a chain of N 1-element multiplies,
  backward only): target <= 1.0.

Run: .venv/bin/python benchmarks/bench_training.py [--quick] [--place custom:cpu]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from timing import best_of  # noqa: E402

import hwport  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover - the test command installs it
    torch = None


def _optimizers(params, tparams):
    opt = getattr(hwport, "optimizer", None)
    if opt is None or not hasattr(opt, "AdamW"):
        return None, None
    return (opt.AdamW(learning_rate=1e-3, parameters=params),
            torch.optim.AdamW(tparams, lr=1e-3, weight_decay=0.01))


def mlp_step(b: int, d: int, h: int, place: str, repeat: int) -> tuple[float, float, bool]:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.1
              for s in ((d, h), (h,), (h, d), (d,), (d,))]
    x_np = rng.standard_normal((b, d)).astype(np.float32)
    params = []
    for a in arrays:
        t = hwport.to_tensor(a, place=place)
        t.stop_gradient = False
        params.append(t)
    x = hwport.to_tensor(x_np, place=place)
    w1, b1, w2, g, beta = params
    F = hwport.nn.functional
    ours_opt, torch_opt = None, None
    tparams = [torch.tensor(a, requires_grad=True) for a in arrays]
    ours_opt, torch_opt = _optimizers(params, tparams)

    def ours() -> None:
        hdn = F.gelu(hwport.matmul(x, w1) + b1)
        y = F.layer_norm(hwport.matmul(hdn, w2) + x, [d], g, beta)
        loss = hwport.mean(y * y)
        loss.backward()
        if ours_opt is not None:
            ours_opt.step()
            ours_opt.clear_grad()
        else:
            for p in params:
                p.clear_gradient(False)

    xt = torch.tensor(x_np)
    tw1, tb1, tw2, tg, tbeta = tparams
    tF = torch.nn.functional

    def theirs() -> None:
        hdn = tF.gelu(xt @ tw1 + tb1)
        y = tF.layer_norm(hdn @ tw2 + xt, [d], tg, tbeta)
        (y * y).mean().backward()
        if torch_opt is not None:
            torch_opt.step()
            torch_opt.zero_grad()
        else:
            for p in tparams:
                p.grad = None

    return (best_of(ours, place, repeat), best_of(theirs, None, repeat), ours_opt is not None)


def _torch_peak_extra_bytes(fn) -> int:
    """The most bytes PyTorch's CPU allocator held at once during fn() beyond what it held
    before: the running sum of the profiler's allocation events ([memory], signed sizes)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == "[memory]")
    held = peak = 0
    for _, nbytes in events:
        held += nbytes
        peak = max(peak, held)
    return peak


def _hwport_peak_bytes(fn, place: str) -> tuple[int, int]:
    """(the most bytes hwport's caching allocator of `place` held at once during fn(), the
    bytes it held before), as asked, not rounded."""
    import gc

    gc.collect()
    hwport.device.synchronize(place)
    before = hwport.device.memory_stats(place)["requested_bytes"]
    hwport.device.reset_peak_memory_stats(place)
    fn()
    hwport.device.synchronize(place)
    return hwport.device.memory_stats(place)["peak_requested_bytes"], before


def gpt_step(place: str, repeat: int) -> tuple[float, float, tuple[int, int],
                                                tuple[int, int]]:
    import importlib.util

    def example(name: str):
        spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    gpt, gpt_torch = example("train_gpt"), example("train_gpt_torch")
    hwport.set_device(place)
    hwport.seed(0)
    chars, ids = gpt.vocabulary()
    model = gpt.GPT(len(chars))
    weights = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    opt = gpt.make_optimizer(model, gpt.make_schedule(1000))
    x, y = next(gpt.batches(ids, 1, 8, 32))
    xt, yt = hwport.to_tensor(x), hwport.to_tensor(y.reshape(-1))
    F = hwport.nn.functional

    def ours() -> None:
        logits = model(xt)
        F.cross_entropy(logits.reshape([-1, len(chars)]), yt).backward()
        opt.step()
        opt.clear_grad()

    torch_model = gpt_torch.TorchGPT(weights)
    step, torch_opt = gpt_torch.trainer(torch_model, len(chars))

    def theirs() -> None:
        step(x, y, 1e-3)

    times = best_of(ours, place, repeat), best_of(theirs, None, repeat)
    # after the timed steps: both optimizers hold their state
    our_peak, our_before = _hwport_peak_bytes(ours, place)
    torch_state = sum(p.nbytes for p in torch_model.parameters()) + sum(
        v.nbytes for st in torch_opt.state.values() for v in st.values() if torch.is_tensor(v))
    their_extra = _torch_peak_extra_bytes(theirs)
    return (*times, (our_peak, our_peak - our_before),
            (torch_state + their_extra, their_extra))


def backward_per_node(n: int, place: str, repeat: int) -> tuple[float, float]:
    x = hwport.to_tensor(np.ones(1, np.float32), place=place)
    x.stop_gradient = False
    xt = torch.ones(1, requires_grad=True)

    def chain(t):
        for _ in range(n):
            t = t * 1.0001
        return t.sum()

    def ours() -> None:
        chain(x).backward()

    def theirs() -> None:
        chain(xt).backward()

    def ours_fwd() -> None:
        chain(x)

    def theirs_fwd() -> None:
        chain(xt)

    # backward alone: the step minus its forward
    o = best_of(ours, place, repeat) - best_of(ours_fwd, place, repeat)
    t = best_of(theirs, None, repeat) - best_of(theirs_fwd, None, repeat)
    return o / n, t / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--place", default="custom:cpu")
    args = ap.parse_args()
    if torch is None:
        print("torch is not installed: no baseline (bash scripts/install_torch.sh)")
        return 1
    torch.set_num_threads(1)
    repeat = 5 if args.quick else 30
    print(f"place {args.place}; ratios hwport / torch (best of {repeat})")
    print(f"{'MLP step (fwd+bwd[+AdamW])':<34}{'hwport ms':>11}{'torch ms':>11}{'ratio':>8}")
    for b, d, h in ((1, 64, 256), (8, 128, 512)):
        ours, theirs, with_opt = mlp_step(b, d, h, args.place, repeat)
        name = f"B={b} D={d} H={h}{' +AdamW' if with_opt else ''}"
        print(f"{name:<34}{ours * 1e3:>11.3f}{theirs * 1e3:>11.3f}{ours / theirs:>8.2f}")
    ours, theirs, our_bytes, their_bytes = gpt_step(args.place, max(3, repeat // 3))
    print(f"{'GPT step (train_gpt.py)':<34}{ours * 1e3:>11.3f}{theirs * 1e3:>11.3f}"
          f"{ours / theirs:>8.2f}")
    for name, o, t in (("GPT step peak memory", our_bytes[0], their_bytes[0]),
                       ("  beyond what lived before it", our_bytes[1], their_bytes[1])):
        print(f"{name:<34}{o / 2**20:>10.2f}M{t / 2**20:>10.2f}M{o / t:>8.2f}")
    n = 64
    ours, theirs = backward_per_node(n, args.place, repeat)
    print(f"{'backward per node (chain of 64)':<34}{ours * 1e6:>10.2f}u{theirs * 1e6:>10.2f}u"
          f"{ours / theirs:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
