"""examples/train_gpt.py's GPT in PyTorch, over the weights of an hwport state dict (Paddle's
[in, out] Linear layout): the side-by-side baseline of tests/examples/test_train_gpt.py (the
losses agree) and benchmarks/bench_training.py (the step time)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

F = torch.nn.functional


class TorchGPT:
    def __init__(self, weights: dict[str, np.ndarray], d: int = 64, heads: int = 4) -> None:
        self.p = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
        self.d, self.heads = d, heads
        self.layers = len({k.split(".")[1] for k in self.p if k.startswith("blocks.")})

    def parameters(self) -> list[torch.Tensor]:
        return list(self.p.values())

    def _lin(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return x @ self.p[f"{name}.weight"] + self.p[f"{name}.bias"]

    def _ln(self, x: torch.Tensor, name: str) -> torch.Tensor:
        return F.layer_norm(x, [self.d], self.p[f"{name}.weight"], self.p[f"{name}.bias"], 1e-5)

    def __call__(self, idx: torch.Tensor) -> torch.Tensor:
        p, d, h = self.p, self.d, self.heads
        b, t = idx.shape
        x = p["tok.weight"][idx] + p["pos.weight"][torch.arange(t)]
        for i in range(self.layers):
            pre = f"blocks.{i}"
            q, k, v = self._lin(self._ln(x, f"{pre}.ln1"), f"{pre}.qkv").split(d, dim=-1)

            def heads(z: torch.Tensor) -> torch.Tensor:
                return z.reshape(b, t, h, d // h).transpose(1, 2)

            a = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
            x = x + self._lin(a.transpose(1, 2).reshape(b, t, d), f"{pre}.proj")
            x = x + self._lin(F.gelu(self._lin(self._ln(x, f"{pre}.ln2"), f"{pre}.fc1")),
                              f"{pre}.fc2")
        return self._ln(x, "ln") @ p["tok.weight"].T  # tied embeddings


Step = Callable[[np.ndarray, np.ndarray, float], torch.Tensor]


def trainer(model: TorchGPT, vocab: int, lr: float = 3e-3) -> tuple[Step, torch.optim.Optimizer]:
    """One training step as train_gpt.py takes it: AdamW (weight decay 0.01), global-norm
    clipping to 1.0, the learning rate given per step."""
    params = model.parameters()
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)

    def step(x: np.ndarray, y: np.ndarray, step_lr: float) -> torch.Tensor:
        logits = model(torch.from_numpy(x))
        loss = F.cross_entropy(logits.reshape(-1, vocab), torch.from_numpy(y.reshape(-1)))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        for g in opt.param_groups:
            g["lr"] = step_lr
        opt.step()
        opt.zero_grad()
        return loss.detach()

    return step, opt
