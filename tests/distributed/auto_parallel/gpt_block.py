"""A GPT block (pre-norm attention + MLP, mean square loss) written over an op-call function,
so the same code runs on numpy (the reference), on simulated DistTensors and on real ones;
with Megatron's data x tensor parallel layout of its parameters on a ("dp", "mp") mesh."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hwport.distributed.auto_parallel import TensorDistAttr

A = TensorDistAttr
B, S, H, FF, NH = 4, 6, 16, 32, 4
SHAPES = {"g1": (H,), "b1": (H,), "wq": (H, H), "bq": (H,), "wk": (H, H), "bk": (H,),
          "wv": (H, H), "bv": (H,), "wo": (H, H), "bo": (H,), "g2": (H,), "b2": (H,),
          "w1": (H, FF), "c1": (FF,), "w2": (FF, H), "c2": (H,)}
# column-parallel q/k/v/w1 (and their biases) over mesh dim 1, row-parallel wo/w2
LAYOUT = {"wq": A((-1, 1)), "wk": A((-1, 1)), "wv": A((-1, 1)), "w1": A((-1, 1)),
          "bq": A((1,)), "bk": A((1,)), "bv": A((1,)), "c1": A((1,)),
          "wo": A((1, -1)), "w2": A((1, -1))}
X_LAYOUT = A((0, -1, -1))  # the batch over mesh dim 0


def layout(name: str) -> TensorDistAttr:
    return LAYOUT.get(name, A((-1,) * len(SHAPES[name])))


def params_and_input(seed: int, dtype: Any = np.float64) -> tuple[dict[str, np.ndarray],
                                                                   np.ndarray]:
    rng = np.random.default_rng(seed)
    params = {k: (rng.standard_normal(s) * 0.3).astype(dtype) for k, s in SHAPES.items()}
    return params, rng.standard_normal((B, S, H)).astype(dtype)


def gpt_block(call: Callable[..., Any], x: Any, p: dict[str, Any]) -> Any:
    """The loss; `call(op, inputs, attrs=None)` runs one ops.yaml op."""
    ln1 = call("layer_norm", [x, p["g1"], p["b1"]])
    q = call("linear", [ln1, p["wq"], p["bq"]])
    k = call("linear", [ln1, p["wk"], p["bk"]])
    v = call("linear", [ln1, p["wv"], p["bv"]])

    def heads(t: Any) -> Any:
        t = call("reshape", [t], {"shape": [B, S, NH, H // NH]})
        return call("transpose", [t], {"perm": [0, 2, 1, 3]})

    att = call("scaled_dot_product_attention", [heads(q), heads(k), heads(v)],
               {"is_causal": True})
    att = call("reshape", [call("transpose", [att], {"perm": [0, 2, 1, 3]})], {"shape": [B, S, H]})
    o = call("linear", [att, p["wo"], p["bo"]])
    x2 = call("add", [o, x])
    ln2 = call("layer_norm", [x2, p["g2"], p["b2"]])
    f = call("gelu", [call("linear", [ln2, p["w1"], p["c1"]])])
    y = call("add", [call("linear", [f, p["w2"], p["c2"]]), x2])
    return call("mean", [call("multiply", [y, y])])
