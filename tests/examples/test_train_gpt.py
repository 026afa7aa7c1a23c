"""examples/train_gpt.py against the same GPT written in PyTorch, from the same initial weights
and batches, with the same AdamW, learning-rate schedule and clipping: the losses of the first
20 steps agree to 1e-4 relative (float32), on every place; and 200 steps make the loss fall."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import hwport

torch = pytest.importorskip("torch")
pytest.importorskip("hwport.optimizer")

SPEC = importlib.util.spec_from_file_location(
    "train_gpt", Path(__file__).resolve().parents[2] / "examples" / "train_gpt.py")
gpt = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(gpt)

PLACES = ["custom:cpu", "custom:opencl"]


def torch_losses(weights: dict[str, np.ndarray], vocab: int, steps: int, lrs: list[float],
                 batch: int = 8, block: int = 32, d: int = 64, heads: int = 4) -> list[float]:
    """The same model in PyTorch over the hwport state dict (Paddle's [in, out] Linear layout)."""
    torch.manual_seed(0)
    p = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    F = torch.nn.functional
    n_layers = len({k.split(".")[1] for k in p if k.startswith("blocks.")})

    def lin(x, name):
        return x @ p[f"{name}.weight"] + p[f"{name}.bias"]

    def ln(x, name):
        return F.layer_norm(x, [d], p[f"{name}.weight"], p[f"{name}.bias"], 1e-5)

    def forward(idx):
        b, t = idx.shape
        x = p["tok.weight"][idx] + p["pos.weight"][torch.arange(t)]
        for i in range(n_layers):
            pre = f"blocks.{i}"
            q, k, v = lin(ln(x, f"{pre}.ln1"), f"{pre}.qkv").split(d, dim=-1)

            def heads_of(z):
                return z.reshape(b, t, heads, d // heads).transpose(1, 2)

            a = F.scaled_dot_product_attention(heads_of(q), heads_of(k), heads_of(v),
                                               is_causal=True)
            x = x + lin(a.transpose(1, 2).reshape(b, t, d), f"{pre}.proj")
            x = x + lin(F.gelu(lin(ln(x, f"{pre}.ln2"), f"{pre}.fc1")), f"{pre}.fc2")
        return ln(x, "ln") @ p["tok.weight"].T

    params = list(p.values())
    opt = torch.optim.AdamW(params, lr=lrs[0], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.01)
    _, ids = gpt.vocabulary()
    out = []
    for step, (x, y) in enumerate(gpt.batches(ids, steps, batch, block, 0)):
        logits = forward(torch.tensor(x))
        loss = F.cross_entropy(logits.reshape(-1, vocab), torch.tensor(y.reshape(-1)))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        for g in opt.param_groups:
            g["lr"] = lrs[step]
        opt.step()
        opt.zero_grad()
        out.append(float(loss.detach()))
    return out


@pytest.mark.parametrize("place", PLACES)
def test_losses_match_pytorch_over_20_steps(place: str) -> None:
    if place.split(":")[1] not in hwport.device.get_all_custom_device_type():
        pytest.skip(f"{place} is not available")
    steps = 20
    weights = {}

    def capture(what, model):
        weights.update({k: v.numpy().copy() for k, v in model.state_dict().items()})

    ours = gpt.train(place, steps, log_every=0, on_step=capture)
    schedule, lrs = gpt.make_schedule(steps), []
    for _ in range(steps):
        lrs.append(schedule.get_lr())
        schedule.step()
    theirs = torch_losses(weights, len(gpt.vocabulary()[0]), steps, lrs)
    assert len(ours) == len(theirs) == steps
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    assert abs(ours[0] - math.log(len(gpt.vocabulary()[0]))) < 0.5


@pytest.mark.parametrize("place", PLACES)
def test_200_steps_make_the_loss_fall(place: str) -> None:
    if place.split(":")[1] not in hwport.device.get_all_custom_device_type():
        pytest.skip(f"{place} is not available")
    losses = gpt.train(place, 200, log_every=0)
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.5
