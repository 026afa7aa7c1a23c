"""Run under mpirun with 4 ranks: the GPT block of gpt_block.py (pre-norm attention + MLP,
mean square loss) as an hwport.nn.Layer written with the normal API (F.layer_norm, F.linear,
reshape, transpose, F.scaled_dot_product_attention, F.gelu, operators), trained 10 AdamW
steps with data x tensor parallelism on a 2 x 2 ("dp", "mp") mesh: shard_layer with Megatron's
layout (gpt_block.LAYOUT), shard_dataloader over "dp", shard_optimizer (twice: states sharded
like the parameters, and ZeRO-1 over "dp" with ShardingStage1), each once eagerly and once
through dist.to_static (every step after the first one run of that rank's program).

Every step's loss and every rank's final parameter shards equal a single-process hwport run
of the same layer and AdamW (float32); so do the first step's gradients (Adam's steps alone
would not see a gradient off by a constant factor; not visible through to_static). Prints
"gpt-train ok <rank>"."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import hwport
import hwport.distributed as dist
import hwport.nn.functional as F
from hwport.distributed import (
    ProcessMesh,
    Replicate,
    ShardingStage1,
    reshard,
    shard_dataloader,
    shard_layer,
    shard_optimizer,
    shard_tensor,
)
from hwport.distributed.auto_parallel.simulate import shard_index
from tests.distributed.auto_parallel.gpt_block import NH, SHAPES, B, H, S, layout

STEPS = 10


class GptBlock(hwport.nn.Layer):
    def __init__(self, params: dict[str, np.ndarray]) -> None:
        super().__init__()
        for k, v in params.items():
            p = self.create_parameter(list(v.shape))
            p.set_value(hwport.to_tensor(v))
            # bk's gradient is 0 in exact arithmetic (a shift of every key's score by q.bk
            # leaves softmax as is): Adam would turn its rounding noise into lr-sized steps
            p.stop_gradient = k == "bk"
            self.add_parameter(k, p)

    def forward(self, x: Any) -> Any:
        p = self

        def heads(t: Any) -> Any:
            return t.reshape([B, S, NH, H // NH]).transpose([0, 2, 1, 3])

        ln1 = F.layer_norm(x, [H], p.g1, p.b1)
        q, k, v = (F.linear(ln1, w, b) for w, b in ((p.wq, p.bq), (p.wk, p.bk), (p.wv, p.bv)))
        att = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        att = att.transpose([0, 2, 1, 3]).reshape([B, S, H])
        x2 = F.linear(att, p.wo, p.bo) + x
        f = F.gelu(F.linear(F.layer_norm(x2, [H], p.g2, p.b2), p.w1, p.c1))
        y = F.linear(f, p.w2, p.c2) + x2
        return (y * y).mean()


def train(model: Any, opt: Any, batches: Any, grads: dict[str, Any],
          static: bool = False) -> list[float]:
    """Trains; `grads` gets the first step's gradients (name -> placements or None, numpy),
    except through dist.to_static (`static`: each step one program run, its gradients
    cleared inside it)."""
    losses = []
    # the block returns its loss: the DistModel's loss function passes it on (label unused)
    dm = dist.to_static(model, batches, lambda out, _label: out, opt) if static else None
    for batch in batches:
        x = batch[0]
        if dm is not None:
            loss = dm(x, x)
            losses.append(float(reshard(loss, loss.process_mesh, [Replicate(), Replicate()])
                                ._local_value().numpy()))
            continue
        loss = model(hwport.to_tensor(x) if isinstance(x, np.ndarray) else x)
        loss.backward()
        if not losses:
            for k in SHAPES:
                g = getattr(model, k).grad
                if g is not None:
                    grads[k] = (getattr(g, "placements", None), (g._local_value() if hasattr(
                        g, "_local_value") else g).numpy())
        opt.step()
        opt.clear_grad()
        if hasattr(loss, "process_mesh"):
            loss = reshard(loss, loss.process_mesh, [Replicate(), Replicate()])._local_value()
        losses.append(float(loss.numpy()))
    return losses


def main() -> int:
    dist.init_parallel_env()
    rank = dist.get_rank()
    mesh = ProcessMesh([[0, 1], [2, 3]], dim_names=["dp", "mp"])
    rng = np.random.default_rng(7)
    params = {k: (rng.standard_normal(s) * 0.3).astype(np.float32) for k, s in SHAPES.items()}
    data = [[rng.standard_normal((B, S, H)).astype(np.float32)] for _ in range(STEPS)]

    ref = GptBlock(params)
    ref_grads: dict[str, Any] = {}
    want = train(ref, hwport.optimizer.AdamW(learning_rate=1e-2, parameters=ref.parameters()),
                 data, ref_grads)

    def shard_fn(name: str, layer: Any, m: ProcessMesh) -> None:
        if name == "":
            for k in SHAPES:
                setattr(layer, k, shard_tensor(getattr(layer, k), m,
                                               layout(k).to_placements(2)))

    ok = True
    coord = mesh.get_rank_coord(rank)
    for zero, static in ((None, False), (ShardingStage1("dp", mesh), False), (None, True),
                         (ShardingStage1("dp", mesh), True)):
        model = shard_layer(GptBlock(params), mesh, shard_fn)
        opt = shard_optimizer(hwport.optimizer.AdamW(learning_rate=1e-2,
                                                     parameters=model.parameters()), zero)
        loader = shard_dataloader(data, meshes=mesh, shard_dims="dp")
        grads: dict[str, Any] = {}
        got = train(model, opt, loader, grads, static)
        what = ("ZeRO-1" if zero else "sharded states") + (", to_static" if static else "")
        if not np.allclose(got, want, rtol=1e-4, atol=0):
            print(f"rank {rank} ({what}): losses {got}, single process {want}", file=sys.stderr)
            ok = False
        if not static and sorted(grads) != sorted(ref_grads):
            print(f"rank {rank}: gradients of {sorted(grads)}", file=sys.stderr)
            ok = False
        for k, (placements, g) in grads.items():
            whole = ref_grads[k][1]
            part = whole[shard_index(whole.shape, layout(k), mesh.shape, coord)]
            if placements != layout(k).to_placements(2) or not np.allclose(
                    g, part, rtol=1e-4, atol=1e-5 * float(np.abs(whole).max())):
                print(f"rank {rank} ({what}): {k}'s gradient {placements} differs by "
                      f"{float(np.abs(g - part).max()) if g.shape == part.shape else g.shape}",
                      file=sys.stderr)
                ok = False
        for k in SHAPES:
            mine = getattr(model, k)._local_value().numpy()
            whole = getattr(ref, k).numpy()
            part = whole[shard_index(whole.shape, layout(k), mesh.shape, coord)]
            err = float(np.abs(mine - part).max())
            if mine.shape != part.shape or err > 1e-4 * max(float(np.abs(whole).max()), 1.0):
                print(f"rank {rank} ({what}): {k} differs by {err}", file=sys.stderr)
                ok = False
    if not ok:
        return 1
    print(f"gpt-train ok {rank}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
