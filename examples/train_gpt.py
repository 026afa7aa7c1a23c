"""A small GPT trained with hwport as Paddle code (`import hwport as paddle`): 2 blocks, d=64,
4 heads, causal attention, tied embeddings, AdamW with linear warmup + cosine decay and
global-norm gradient clipping, on a bundled tiny text (character level).

    .venv/bin/python examples/train_gpt.py [--place custom:cpu] [--steps 200] [--static]
                                           [--save PATH]

prints the loss every 20 steps; it falls clearly (from ln(vocab) ~ 3.5 to below 2.5).
tests/examples/test_train_gpt.py runs the same model in PyTorch from the same initial weights
and batches and compares the losses.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import hwport as paddle
import hwport.nn as nn
import hwport.nn.functional as F

TEXT = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
    "the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it "
    "was the season of Light, it was the season of Darkness, it was the spring of hope, it was "
    "the winter of despair, we had everything before us, we had nothing before us, we were all "
    "going direct to Heaven, we were all going direct the other way. "
)


class Block(nn.Layer):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = paddle.split(self.qkv(self.ln1(x)), 3, axis=-1)

        def heads(z):
            return z.reshape([b, t, self.heads, d // self.heads]).transpose([0, 2, 1, 3])

        a = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        x = x + self.proj(a.transpose([0, 2, 1, 3]).reshape([b, t, d]))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Layer):
    def __init__(self, vocab: int, d: int = 64, heads: int = 4, layers: int = 2,
                 block: int = 32) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block, d)
        self.blocks = nn.LayerList([Block(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)

    def forward(self, idx):
        t = idx.shape[1]
        pos = paddle.arange(t, dtype="int64")
        x = self.tok(idx) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x)
        # tied embeddings: the output projection is the token embedding's transpose
        return paddle.matmul(self.ln(x), self.tok.weight, transpose_y=True)


def batches(ids: np.ndarray, steps: int, batch: int, block: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        starts = rng.integers(0, len(ids) - block - 1, size=batch)
        x = np.stack([ids[s:s + block] for s in starts])
        y = np.stack([ids[s + 1:s + block + 1] for s in starts])
        yield x.astype(np.int64), y.astype(np.int64)


def make_schedule(steps: int, lr: float = 3e-3, warmup: int = 10):
    """Linear warmup to lr over `warmup` steps, then cosine decay over the rest."""
    cosine = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=lr, T_max=steps - warmup)
    return paddle.optimizer.lr.LinearWarmup(learning_rate=cosine, warmup_steps=warmup,
                                            start_lr=0.0, end_lr=lr)


def make_optimizer(model: GPT, schedule):
    return paddle.optimizer.AdamW(learning_rate=schedule, parameters=model.parameters(),
                                  weight_decay=0.01,
                                  grad_clip=nn.ClipGradByGlobalNorm(clip_norm=1.0))


def vocabulary() -> tuple[list[str], np.ndarray]:
    chars = sorted(set(TEXT))
    return chars, np.array([chars.index(c) for c in TEXT], dtype=np.int64)


def train(place: str, steps: int, batch: int = 8, block: int = 32, seed: int = 0,
          log_every: int = 20, on_step=None, static: bool = False) -> list[float]:
    """The training loop; static=True runs each step (forward, backward, clipping, AdamW)
    as one captured program (paddle.jit.to_static)."""
    paddle.set_device(place)
    paddle.seed(seed)
    chars, ids = vocabulary()
    model = GPT(len(chars), block=block)
    if on_step is not None:
        on_step("init", model)
    schedule = make_schedule(steps)
    opt = make_optimizer(model, schedule)
    losses = []

    def train_step(x, y):
        logits = model(x)
        loss = F.cross_entropy(logits.reshape([-1, len(chars)]), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        return loss

    if static:
        train_step = paddle.jit.to_static(train_step)
    for step, (x, y) in enumerate(batches(ids, steps, batch, block, seed)):
        loss = train_step(paddle.to_tensor(x), paddle.to_tensor(y.reshape(-1)))
        schedule.step()
        losses.append(float(loss.item()))
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}  lr {schedule.last_lr:.2e}")
    return losses


def generate(model: GPT, prompt: np.ndarray, n: int, block: int = 32) -> list[int]:
    """n tokens by greedy decoding, each from the last `block` tokens (the model's context)."""
    ids = [int(i) for i in prompt]
    model.eval()
    with paddle.no_grad():
        for _ in range(n):
            logits = model(paddle.to_tensor(np.array([ids[-block:]], dtype=np.int64)))
            ids.append(int(np.argmax(logits.numpy()[0, -1])))
    return ids[len(prompt):]


def save(model: GPT, path: str, block: int = 32) -> None:
    """The model's forward for one context of `block` tokens as the inference artifact
    (path.pir + path.safetensors: paddle.jit.save)."""
    model.eval()
    paddle.jit.save(model, path, input_spec=[paddle.static.InputSpec([1, block], "int64", "idx")])


def generate_with_predictor(path: str, prompt: np.ndarray, n: int, place: str,
                            block: int = 32) -> list[int]:
    """generate()'s tokens from a saved model through paddle.inference on `place`."""
    config = paddle.inference.Config(path)
    config.set_place(place)
    predictor = paddle.inference.create_predictor(config)
    ids = [int(i) for i in prompt]
    for _ in range(n):
        (logits,) = predictor.run([np.array([ids[-block:]], dtype=np.int64)])
        ids.append(int(np.argmax(logits.numpy()[0, -1])))
    return ids[len(prompt):]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--place", default="custom:cpu")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--static", action="store_true",
                    help="run each training step as one captured program (jit.to_static)")
    ap.add_argument("--save", metavar="PATH",
                    help="after training, save the model (PATH.pir + PATH.safetensors) and "
                         "print greedy samples from it and from hwport.inference")
    args = ap.parse_args()
    models: list[GPT] = []
    losses = train(args.place, args.steps, static=args.static,
                   on_step=lambda _, m: models.append(m))
    if args.save:
        chars, ids = vocabulary()
        save(models[0], args.save)
        eager = generate(models[0], ids[:32], 40)
        served = generate_with_predictor(args.save, ids[:32], 40, args.place)
        print("eager:    ", "".join(chars[i] for i in eager))
        print("inference:", "".join(chars[i] for i in served))
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    print(f"loss {first:.3f} -> {last:.3f} (ln vocab = {math.log(len(vocabulary()[0])):.3f})")
    return 0 if last < first - 0.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
