"""Bad input never crashes and never returns wrong data: every case below raises a clear Python
exception that names the op, the argument and what was expected, BEFORE any kernel runs (the
only launches allowed are the min/max reads of the dispatcher's index-range check), and leaks
nothing (the caching allocator's allocated_bytes is unchanged after synchronize).

Also: float-only unary math on integer/bool tensors is NOT an error (it computes in float32)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import hwport
from hwport.phi_ops import dispatch
from hwport.phi_ops.infer_meta import AxisError
from hwport.phi_ops.reference import reference
from hwport.phi_ops.schema import load_ops
from hwport.phi_ops.tolerance import assert_close
from hwport.runtime import _core

OPS = load_ops()
P0, P1 = "custom:cpu:0", "custom:cpu:1"


def _t(a: Any, place: str = P0):
    return hwport.to_tensor(np.asarray(a), place=place)


def make_tensors() -> dict[str, Any]:
    """The inputs the cases pick from (made before the allocator is measured)."""
    rng = np.random.default_rng(0)
    f34 = rng.standard_normal((3, 4)).astype(np.float32)
    return {
        "f": _t(f34),                                        # float32 [3, 4]
        "g": _t(rng.standard_normal((2, 5)).astype(np.float32)),  # float32 [2, 5]
        "f1": _t(f34, P1),                                   # float32 [3, 4] on custom:cpu:1
        "f3": _t(rng.standard_normal((2, 3, 4)).astype(np.float32)),
        "f345": _t(rng.standard_normal((3, 4, 5)).astype(np.float32)),
        "v3": _t(np.ones(3, np.float32)),                    # float32 [3]
        "v4": _t(np.ones(4, np.float32)),                    # float32 [4]
        "s": _t(np.float32(2.0)),                            # float32 0-d
        "b": _t(rng.integers(0, 2, (3, 4)).astype(bool)),    # bool [3, 4]
        "i32": _t(rng.integers(-5, 5, (3, 4)).astype(np.int32)),
        "u8": _t(np.arange(4, dtype=np.uint8)),
        "i8": _t(np.array([1, -2, 3], np.int8)),
        "idx_ok": _t(np.array([0, 2], np.int64)),
        "idx_big": _t(np.array([0, 3], np.int64)),           # 3 is out of range for dim 3
        "idx_neg": _t(np.array([1, -1], np.int64)),
        "idx_big4": _t(np.array([1, 4], np.int32)),          # 4: out of range for dim 4
        "idx_ok1": _t(np.array([0, 2], np.int64), P1),
        "idx2d_big": _t(np.array([[0], [4], [1]], np.int64)),
        "idx2d_neg": _t(np.array([[0], [-2], [1]], np.int64)),
        "upd24": _t(np.ones((2, 4), np.float32)),
        "lab3": _t(np.array([0, 1, 2], np.int64)),
        "lab3_32": _t(np.array([0, 1, 2], np.int32)),
        "lab2": _t(np.array([0, 1], np.int64)),
        "lab_big": _t(np.array([0, 7, 1], np.int64)),
        "lab_neg": _t(np.array([0, -5, 1], np.int64)),
        "emb_idx_big": _t(np.array([[1, 3]], np.int64)),
        "emb_idx_neg": _t(np.array([[-1, 0]], np.int64)),
        "empty": _t(np.zeros((0, 3), np.float32)),
        "empty1": _t(np.zeros((0,), np.float32)),
        "q": _t(np.ones((4, 8), np.float32)),
        "k5": _t(np.ones((6, 5), np.float32)),
        "k8": _t(np.ones((6, 8), np.float32)),
        "mask": _t(np.ones((4, 6), bool)),
        "odd": _t(np.ones((2, 5), np.float32)),
        "cos5": _t(np.ones((2, 5), np.float32)),
        "d16": _t(np.ones((1,) * 16, np.float32)),
        "d17": _t(np.ones((1,) * 17, np.float32)),
    }


@dataclass
class Bad:
    id: str
    exc: type[BaseException] | tuple[type[BaseException], ...]
    call: Callable[[dict[str, Any]], Any]
    says: tuple[str, ...]  # substrings the message must contain (op, argument, expectation)
    index_check: bool = False  # the dispatcher may read min/max of an index first
    axis_error: bool = False  # must be an AxisError (both ValueError and IndexError)


def dtype_list(op: str) -> tuple[str, ...]:
    return OPS[op].dtypes


BAD: list[Bad] = [
    # ---- broadcasting
    Bad("add-broadcast", ValueError, lambda t: hwport.add(t["f"], t["g"]),
        ("add", "[3, 4]", "[2, 5]")),
    Bad("maximum-broadcast", ValueError, lambda t: hwport.maximum(t["g"], t["f"]),
        ("maximum", "[3, 4]", "[2, 5]")),
    Bad("where-broadcast", ValueError, lambda t: hwport.where(t["b"], t["f"], t["g"]),
        ("where", "[3, 4]", "[2, 5]")),
    Bad("operator-broadcast", ValueError, lambda t: t["f"] + t["g"], ("add", "[3, 4]", "[2, 5]")),
    Bad("operator-sub-broadcast", ValueError, lambda t: t["f"] - t["g"],
        ("subtract", "[3, 4]", "[2, 5]")),
    Bad("operator-mul-broadcast", ValueError, lambda t: t["f"] * t["g"],
        ("multiply", "[3, 4]", "[2, 5]")),
    # ---- axes out of range
    *[Bad(f"axis-{name}", AxisError, fn, (name, arg), axis_error=True) for name, arg, fn in [
        ("sum", "axis", lambda t: hwport.sum(t["f"], axis=2)),
        ("mean", "axis", lambda t: hwport.mean(t["f"], axis=[0, -3])),
        ("max", "axis", lambda t: hwport.max(t["f"], axis=[5])),
        ("logsumexp", "axis", lambda t: hwport.logsumexp(t["f"], axis=[-3])),
        ("var", "axis", lambda t: hwport.var(t["f"], axis=[2])),
        ("softmax", "axis", lambda t: hwport.softmax(t["f"], axis=-3)),
        ("log_softmax", "axis", lambda t: hwport.log_softmax(t["f"], axis=2)),
        ("argmax", "axis", lambda t: hwport.argmax(t["f"], axis=2)),
        ("cumsum", "axis", lambda t: hwport.cumsum(t["f"], axis=5)),
        ("concat", "axis", lambda t: hwport.concat([t["f"], t["f"]], axis=2)),
        ("stack", "axis", lambda t: hwport.stack([t["f"], t["f"]], axis=4)),
        ("gather", "axis", lambda t: hwport.gather(t["f"], t["idx_ok"], axis=2)),
        ("index_select", "axis", lambda t: hwport.index_select(t["f"], t["idx_ok"], axis=-3)),
        ("take_along_axis", "axis",
         lambda t: hwport.take_along_axis(t["f"], t["idx2d_big"], axis=2)),
        ("scatter", "axis", lambda t: hwport.scatter(t["f"], t["idx_ok"], t["upd24"], axis=2)),
        ("topk", "axis", lambda t: hwport.topk(t["f"], 2, axis=2)),
        ("sort", "axis", lambda t: hwport.sort(t["f"], axis=2)),
        ("argsort", "axis", lambda t: hwport.argsort(t["f"], axis=-3)),
        ("flip", "axis", lambda t: hwport.flip(t["f"], [3])),
        ("roll", "axis", lambda t: hwport.roll(t["f"], [1], [2])),
        ("squeeze", "axis", lambda t: hwport.squeeze(t["f"], [2])),
        ("unsqueeze", "axis", lambda t: hwport.unsqueeze(t["f"], [4])),
        ("transpose", "perm", lambda t: hwport.transpose(t["f"], [0, 2])),
        ("flatten", "start_axis", lambda t: hwport.flatten(t["f"], start_axis=3)),
        ("split", "axis", lambda t: hwport.split(t["f"], 2, axis=2)),
        ("slice", "axes", lambda t: hwport.slice(t["f"], [2], [0], [1])),
    ]],
    Bad("sum-repeated-axis", ValueError, lambda t: hwport.sum(t["f"], axis=[0, -2]),
        ("sum", "axis")),
    # ---- matmul / linear / shapes
    Bad("matmul-inner", ValueError, lambda t: hwport.matmul(t["f"], t["f"]),
        ("matmul", "[3, 4]", "K=4", "K=3")),
    Bad("matmul-operator-inner", ValueError, lambda t: t["f"] @ t["g"],
        ("matmul", "[3, 4]", "[2, 5]")),
    Bad("matmul-batch", ValueError, lambda t: hwport.matmul(t["f3"], t["f345"]),
        ("matmul", "batch", "[2]", "[3]")),
    Bad("matmul-0d", ValueError, lambda t: hwport.matmul(t["s"], t["f"]), ("matmul", "[]")),
    Bad("linear-weight", ValueError, lambda t: hwport.linear(t["f"], t["g"]),
        ("linear", "weight", "[2, 5]")),
    Bad("reshape-size", ValueError, lambda t: hwport.reshape(t["f"], [5, 3]),
        ("reshape", "[3, 4]", "[5, 3]")),
    Bad("reshape-two-minus-one", ValueError, lambda t: hwport.reshape(t["f"], [-1, -1]),
        ("reshape", "-1")),
    Bad("expand", ValueError, lambda t: hwport.expand(t["f"], [5, 4]),
        ("expand", "[3, 4]", "[5, 4]")),
    Bad("transpose-not-permutation", ValueError, lambda t: hwport.transpose(t["f"], [0, 0]),
        ("transpose", "perm")),
    Bad("tril-1d", ValueError, lambda t: hwport.tril(t["v3"]), ("tril", "[3]", "2 dims")),
    Bad("pad-negative", ValueError, lambda t: hwport.pad(t["f"], [-1, 1]), ("pad", "-1")),
    Bad("pad-too-long", ValueError, lambda t: hwport.pad(t["f"], [1, 1, 1, 1, 1, 1]),
        ("pad",)),
    Bad("roll-lengths", ValueError, lambda t: hwport.roll(t["f"], [1, 2], [0]),
        ("roll", "shifts", "axis")),
    Bad("slice-stride-0", ValueError, lambda t: hwport.slice(t["f"], [0], [0], [2], [0]),
        ("slice", "strides")),
    # ---- dtypes the op does not support (TypeError listing the supported ones)
    *[Bad(f"dtype-{name}-{dt}", TypeError, fn, (name, dt, *dtype_list(name)))
      for name, dt, fn in [
          ("bitwise_and", "float32", lambda t: hwport.bitwise_and(t["f"], t["f"])),
          ("bitwise_not", "float32", lambda t: hwport.bitwise_not(t["f"])),
          ("bitwise_xor", "float32", lambda t: t["f"] ^ t["i32"]),
          ("neg", "uint8", lambda t: hwport.neg(t["u8"])),
          ("neg", "bool", lambda t: -t["b"]),
          ("subtract", "bool", lambda t: hwport.subtract(t["b"], t["b"])),
          ("remainder", "bool", lambda t: hwport.remainder(t["b"], t["b"])),
          ("matmul", "bool", lambda t: hwport.matmul(t["b"], hwport.transpose(t["b"]))),
          ("mean", "int32", lambda t: hwport.mean(t["i32"])),
          ("var", "int32", lambda t: hwport.var(t["i32"])),
          ("logsumexp", "int32", lambda t: hwport.logsumexp(t["i32"])),
          ("softmax", "int32", lambda t: hwport.softmax(t["i32"])),
          ("layer_norm", "int32", lambda t: hwport.layer_norm(t["i32"], [4])),
          ("sort", "bool", lambda t: hwport.sort(t["b"])),
          ("topk", "bool", lambda t: hwport.topk(t["b"], 1)),
          ("clip", "bool", lambda t: hwport.clip(t["b"], 0, 1)),
          ("arange", "bool", lambda t: hwport.arange(0, 3, dtype="bool", place=P0)),
          ("linspace", "int32", lambda t: hwport.linspace(0.0, 1.0, 3, dtype="int32",
                                                          place=P0)),
          ("uniform", "int64", lambda t: hwport.uniform([2], seed=0, dtype="int64", place=P0)),
          ("dropout", "int32", lambda t: hwport.dropout(t["i32"])),
      ]],
    Bad("gather-float-index", TypeError, lambda t: hwport.gather(t["f"], t["v3"]),
        ("gather", "index", "int32", "int64", "float32")),
    Bad("embedding-float-index", TypeError, lambda t: hwport.embedding(t["v3"], t["f"]),
        ("embedding", "x", "int32", "int64")),
    Bad("cross_entropy-float-label", TypeError, lambda t: hwport.cross_entropy(t["f"], t["v3"]),
        ("cross_entropy", "label", "int32", "int64")),
    # ---- negative sizes
    Bad("zeros-negative", ValueError, lambda t: hwport.zeros([2, -1], place=P0),
        ("zeros", "[2, -1]", "negative")),
    Bad("ones-negative", ValueError, lambda t: hwport.ones(-3, place=P0), ("ones", "-3")),
    Bad("full-negative", ValueError, lambda t: hwport.full([-2], 1.0, place=P0),
        ("full", "[-2]")),
    Bad("fill-negative", ValueError, lambda t: hwport.fill([3, -4], 0.0, place=P0),
        ("fill", "[3, -4]")),
    Bad("uniform-negative", ValueError, lambda t: hwport.uniform([-1], seed=0, place=P0),
        ("uniform", "[-1]")),
    Bad("reshape-negative", ValueError, lambda t: hwport.reshape(t["f"], [-2, -6]),
        ("reshape", "-2")),
    Bad("eye-negative", ValueError, lambda t: hwport.eye(-1, place=P0), ("eye", "-1")),
    Bad("tile-negative", ValueError, lambda t: hwport.tile(t["f"], [-1, 2]), ("tile", "-1")),
    Bad("linspace-negative-num", ValueError, lambda t: hwport.linspace(0.0, 1.0, -1, place=P0),
        ("linspace", "num", "-1")),
    Bad("arange-step-0", ValueError, lambda t: hwport.arange(0, 5, 0, place=P0),
        ("arange", "step")),
    # ---- index values out of bounds (IndexError naming the op and the bound)
    # (the index argument by its public name: embedding's x, take_along_axis's indices)
    *[Bad(f"oob-{name}", IndexError, fn,
          (name, {"embedding": "x", "take_along_axis": "indices"}.get(name, "index"), bound, val),
          index_check=True)
      for name, bound, val, fn in [
          ("gather", "3", "3", lambda t: hwport.gather(t["f"], t["idx_big"])),
          ("gather", "3", "-1", lambda t: hwport.gather(t["f"], t["idx_neg"])),
          ("gather", "4", "4", lambda t: hwport.gather(t["f"], t["idx_big4"], axis=1)),
          ("index_select", "3", "3", lambda t: hwport.index_select(t["f"], t["idx_big"])),
          ("index_select", "3", "-1", lambda t: hwport.index_select(t["f"], t["idx_neg"])),
          ("embedding", "3", "3", lambda t: hwport.embedding(t["emb_idx_big"], t["f"])),
          ("embedding", "3", "-1", lambda t: hwport.embedding(t["emb_idx_neg"], t["f"])),
          ("take_along_axis", "4", "4",
           lambda t: hwport.take_along_axis(t["f"], t["idx2d_big"], axis=1)),
          ("take_along_axis", "4", "-2",
           lambda t: hwport.take_along_axis(t["f"], t["idx2d_neg"], axis=-1)),
          ("scatter", "3", "3", lambda t: hwport.scatter(t["f"], t["idx_big"], t["upd24"])),
          ("scatter", "3", "-1",
           lambda t: hwport.scatter(t["f"], t["idx_neg"], t["upd24"], reduce="add")),
      ]],
    Bad("oob-cross_entropy-label", IndexError,
        lambda t: hwport.cross_entropy(t["f"], t["lab_big"]),
        ("cross_entropy", "label", "4"), index_check=True),
    Bad("oob-cross_entropy-negative-label", IndexError,
        lambda t: hwport.cross_entropy(t["f"], t["lab_neg"], reduction="none"),
        ("cross_entropy", "label", "4"), index_check=True),
    # ---- wrong attribute types (TypeError naming the attribute)
    *[Bad(f"attr-type-{name}-{attr}", TypeError, fn, (name, attr)) for name, attr, fn in [
        ("sum", "axis", lambda t: hwport.sum(t["f"], axis=1.5)),
        ("sum", "keepdim", lambda t: hwport.sum(t["f"], keepdim="yes")),
        ("softmax", "axis", lambda t: hwport.softmax(t["f"], axis="last")),
        ("softmax", "axis", lambda t: hwport.softmax(t["f"], axis=True)),
        ("gelu", "approximate", lambda t: hwport.gelu(t["f"], approximate=1)),
        ("topk", "k", lambda t: hwport.topk(t["f"], 2.0)),
        ("reshape", "shape", lambda t: hwport.reshape(t["f"], "12")),
        ("reshape", "shape", lambda t: hwport.reshape(t["f"], [3.0, 4.0])),
        ("cast", "dtype", lambda t: hwport.cast(t["f"], "float99")),
        ("cast", "dtype", lambda t: hwport.cast(t["f"], 3)),
        ("zeros", "dtype", lambda t: hwport.zeros([2], dtype="complex64", place=P0)),
        ("clip", "min", lambda t: hwport.clip(t["f"], min="0")),
        ("dropout", "training", lambda t: hwport.dropout(t["f"], training="yes")),
        ("dropout", "p", lambda t: hwport.dropout(t["f"], p="half")),
        ("cross_entropy", "reduction",
         lambda t: hwport.cross_entropy(t["f"], t["lab3"], reduction=1)),
        ("layer_norm", "epsilon", lambda t: hwport.layer_norm(t["f"], [4], epsilon="small")),
        ("pad", "value", lambda t: hwport.pad(t["f"], [1, 1], value=[0])),
        ("uniform", "seed", lambda t: hwport.uniform([2], seed=1.5, place=P0)),
    ]],
    # ---- bad attribute values
    Bad("scatter-reduce", ValueError,
        lambda t: hwport.scatter(t["f"], t["idx_ok"], t["upd24"], reduce="mul"),
        ("scatter", "reduce", "mul")),
    Bad("cross_entropy-reduction", ValueError,
        lambda t: hwport.cross_entropy(t["f"], t["lab3"], reduction="avg"),
        ("cross_entropy", "reduction", "avg")),
    # ---- missing required attributes / inputs, unknown keywords
    Bad("missing-attr-topk", TypeError, lambda t: hwport.topk(t["f"]), ("topk", "k")),
    Bad("missing-attr-dispatch", TypeError, lambda t: dispatch.call("topk", (t["f"],), {}),
        ("topk", "k", "missing")),
    Bad("required-attr-None-reshape", TypeError, lambda t: hwport.reshape(t["f"], None),
        ("reshape", "shape")),
    Bad("required-attr-None-topk", TypeError, lambda t: hwport.topk(t["f"], None),
        ("topk", "k")),
    Bad("required-attr-None-take_along_axis", TypeError,
        lambda t: hwport.take_along_axis(t["f"], t["idx2d_big"], None),
        ("take_along_axis", "axis")),
    Bad("missing-input", TypeError, lambda t: dispatch.call("add", (t["f"],), {}),
        ("add", "y")),
    Bad("missing-input-python", TypeError, lambda t: hwport.add(t["f"]), ("add", "y")),
    Bad("too-many-inputs", TypeError, lambda t: dispatch.call("exp", (t["f"], t["f"]), {}),
        ("exp", "1")),
    Bad("unknown-kwarg", TypeError, lambda t: hwport.sum(t["f"], axes=[0]), ("sum", "axes")),
    Bad("unknown-kwarg-dispatch", TypeError,
        lambda t: dispatch.call("sum", (t["f"],), {"axes": [0]}), ("sum", "axes", "axis")),
    Bad("unknown-kwarg-method", TypeError, lambda t: t["f"].sum(dim=0), ("sum", "dim")),
    # ---- mixing places (ValueError naming both)
    *[Bad(f"places-{name}", ValueError, fn, (name, P0, P1)) for name, fn in [
        ("add", lambda t: hwport.add(t["f"], t["f1"])),
        ("add", lambda t: t["f"] + t["f1"]),
        ("multiply", lambda t: t["f1"] * t["f"]),
        ("where", lambda t: hwport.where(t["b"], t["f"], t["f1"])),
        ("matmul", lambda t: hwport.matmul(t["f"], hwport.transpose(t["f1"]))),
        ("concat", lambda t: hwport.concat([t["f"], t["f1"]])),
        ("gather", lambda t: hwport.gather(t["f"], t["idx_ok1"])),
        ("layer_norm", lambda t: hwport.layer_norm(t["f1"], 4, t["v4"])),
    ]],
    # ---- op-specific shape rules
    Bad("concat-shapes", ValueError, lambda t: hwport.concat([t["f"], t["g"]]),
        ("concat", "x[1]", "[2, 5]", "[3, 4]")),
    Bad("concat-empty-list", ValueError, lambda t: hwport.concat([]), ("concat", "x")),
    Bad("concat-0d", ValueError, lambda t: hwport.concat([t["s"], t["s"]]), ("concat",)),
    Bad("stack-shapes", ValueError, lambda t: hwport.stack([t["f"], t["g"]]),
        ("stack", "x[1]", "[2, 5]")),
    Bad("split-not-divisible", ValueError, lambda t: hwport.split(t["f"], 3, axis=1),
        ("split", "3", "4")),
    Bad("topk-0d-k0", ValueError, lambda t: hwport.topk(t["s"], 0), ("topk", "k=0", "0-d")),
    Bad("arange-end-only-beyond-int64", ValueError, lambda t: hwport.arange(2**70),
        ("arange", "start=", "int64")),
    Bad("split-not-divisible-neg-axis", ValueError, lambda t: hwport.split(t["f"], 3, axis=-1),
        ("split", "sections=3", "axis=-1", "4")),
    Bad("split-sizes-sum", ValueError, lambda t: hwport.split(t["f"], [1, 1]),
        ("split", "[1, 1]", "3")),
    Bad("topk-k-too-large", ValueError, lambda t: hwport.topk(t["f"], 5), ("topk", "k=5", "4")),
    Bad("topk-k-negative", ValueError, lambda t: hwport.topk(t["f"], -1), ("topk", "k=-1")),
    Bad("cross_entropy-label-shape", ValueError,
        lambda t: hwport.cross_entropy(t["f"], t["lab2"]), ("cross_entropy", "label", "[2]")),
    Bad("cross_entropy-logits-rank", ValueError,
        lambda t: hwport.cross_entropy(t["f3"], t["lab2"]), ("cross_entropy", "[2, 3, 4]")),
    Bad("layer_norm-weight-shape", ValueError, lambda t: hwport.layer_norm(t["f"], [4], t["v3"]),
        ("layer_norm", "weight", "[3]", "[4]")),
    Bad("layer_norm-bias-shape", ValueError,
        lambda t: hwport.layer_norm(t["f"], [4], t["v4"], t["v3"]), ("layer_norm", "bias", "[3]")),
    Bad("rms_norm-weight-shape", ValueError, lambda t: hwport.rms_norm(t["f"], [4], t["v3"]),
        ("rms_norm", "weight", "[3]")),
    Bad("layer_norm-ndim", ValueError, lambda t: hwport.layer_norm(t["f"], [1, 3, 4]),
        ("layer_norm", "normalized_shape", "[1, 3, 4]", "[3, 4]")),
    Bad("layer_norm-shape", ValueError, lambda t: hwport.layer_norm(t["f"], [5]),
        ("layer_norm", "normalized_shape", "[5]", "[3, 4]")),
    Bad("rms_norm-shape-type", TypeError, lambda t: hwport.rms_norm(t["f"], [4.0]),
        ("rms_norm", "normalized_shape", "ints")),
    Bad("cross_entropy-unsupported", NotImplementedError,
        lambda t: hwport.cross_entropy(t["f"], t["i32"], soft_label=True),
        ("cross_entropy", "soft_label", "False")),
    Bad("dropout-p-above", ValueError, lambda t: hwport.dropout(t["f"], p=1.5),
        ("dropout", "p", "1.5")),
    Bad("dropout-p-below", ValueError, lambda t: hwport.dropout(t["f"], p=-0.1),
        ("dropout", "p", "-0.1")),
    Bad("max-zero-size", ValueError, lambda t: hwport.max(t["empty"]), ("max", "[0, 3]")),
    Bad("argmax-zero-size", ValueError, lambda t: hwport.argmax(t["empty1"]), ("argmax",)),
    Bad("sdpa-E", ValueError,
        lambda t: hwport.scaled_dot_product_attention(t["q"], t["k5"], t["k5"]),
        ("scaled_dot_product_attention", "E=8", "E=5")),
    Bad("sdpa-mask-and-causal", ValueError,
        lambda t: hwport.scaled_dot_product_attention(t["q"], t["k8"], t["k8"], t["mask"],
                                                      is_causal=True),
        ("scaled_dot_product_attention", "is_causal")),
    Bad("rotary-odd", ValueError, lambda t: hwport.rotary_embedding(t["odd"], t["cos5"],
                                                                    t["cos5"]),
        ("rotary_embedding", "even")),
    # ---- Python lists where tensors are needed
    *[Bad(f"list-{name}", TypeError, fn, (name, arg, "Tensor", "list")) for name, arg, fn in [
        ("add", "x", lambda t: hwport.add([1.0, 2.0], t["f"])),
        ("add", "y", lambda t: hwport.add(t["f"], [[1.0] * 4] * 3)),
        ("exp", "x", lambda t: hwport.exp([1.0])),
        ("matmul", "y", lambda t: hwport.matmul(t["f"], [[1.0]] * 4)),
        ("gather", "index", lambda t: hwport.gather(t["f"], [0, 1])),
        ("layer_norm", "weight", lambda t: hwport.layer_norm(t["f"], [4], [1.0] * 4)),
        ("concat", "x[1]", lambda t: hwport.concat([t["f"], [[1.0] * 4]])),
    ]],
    Bad("list-concat-not-a-list", TypeError, lambda t: hwport.concat(t["f"]),
        ("concat", "x", "list")),
    Bad("to_tensor-str", TypeError, lambda t: hwport.to_tensor("abc"), ("to_tensor", "str")),
    # ---- Python scalars that do not fit the dtype they become (numpy 2 raises; no wrap)
    Bad("full-int8-128", ValueError, lambda t: hwport.full([3], 128, dtype="int8"),
        ("full", "fill_value=128", "int8", "[-128, 127]")),
    Bad("full-uint8-neg", ValueError, lambda t: hwport.full([3], -1, dtype="uint8"),
        ("full", "fill_value=-1", "uint8")),
    Bad("full-int64-2**63", ValueError, lambda t: hwport.full([3], 2**63, dtype="int64"),
        ("full", "fill_value=9223372036854775808", "int64")),
    Bad("full_like-int8", ValueError, lambda t: hwport.full_like(t["i8"], 300),
        ("full_like", "fill_value=300", "int8")),
    Bad("pad-int8-1000", ValueError, lambda t: hwport.pad(t["i8"], [1, 1], value=1000),
        ("pad", "value=1000", "int8")),
    Bad("operator-add-int8-1000", ValueError, lambda t: t["i8"] + 1000,
        ("add", "y=1000", "int8", "[-128, 127]")),
    Bad("operator-radd-int8-1000", ValueError, lambda t: 1000 + t["i8"],
        ("add", "x=1000", "int8")),
    Bad("operator-mul-uint8-neg", ValueError, lambda t: t["u8"] * -1,
        ("multiply", "y=-1", "uint8")),
    Bad("subtract-int8-1000", ValueError, lambda t: hwport.subtract(t["i8"], 1000),
        ("subtract", "y=1000", "int8")),
    Bad("operator-sub-int8", ValueError, lambda t: t["i8"] - (-129),
        ("subtract", "y=-129", "int8")),
    Bad("maximum-int32-2**40", ValueError, lambda t: hwport.maximum(t["i32"], 2**40),
        ("maximum", "y", "int32")),
    Bad("abs-2**70", ValueError, lambda t: hwport.abs(2**70), ("abs", "x=", "int64")),
    Bad("add-bool-2**70", ValueError, lambda t: t["b"] + 2**70, ("add", "y=", "int64")),
    # ---- attributes: None, NaN, bool, beyond int64 where an int is expected
    Bad("flatten-start-None", TypeError, lambda t: hwport.flatten(t["f"], start_axis=None),
        ("flatten", "start_axis", "int", "None")),
    Bad("gather-axis-None", TypeError, lambda t: hwport.gather(t["f"], t["idx_ok"], axis=None),
        ("gather", "axis", "None")),
    Bad("sum-keepdim-None", TypeError, lambda t: hwport.sum(t["f"], keepdim=None),
        ("sum", "keepdim", "bool", "None")),
    Bad("tril-diagonal-nan", TypeError, lambda t: hwport.tril(t["f"], diagonal=float("nan")),
        ("tril", "diagonal", "an int", "nan")),
    Bad("tril-diagonal-2**70", ValueError, lambda t: hwport.tril(t["f"], diagonal=2**70),
        ("tril", "diagonal", "int64")),
    Bad("roll-shifts-2**70", ValueError, lambda t: hwport.roll(t["f"], shifts=[2**70]),
        ("roll", "shifts[0]", "int64")),
    Bad("reshape-shape-inf", TypeError, lambda t: hwport.reshape(t["f"], [float("inf")]),
        ("reshape", "shape", "ints", "inf")),
    Bad("topk-k-True", TypeError, lambda t: hwport.topk(t["f"], k=True), ("topk", "k", "int")),
    Bad("softplus-beta-0", ValueError, lambda t: hwport.nn.functional.softplus(t["f"], beta=0),
        ("softplus", "beta", "nonzero")),
    Bad("fill-value-huge-int", ValueError,
        lambda t: hwport.full([2], 2**1100, dtype="float32"),
        ("full", "fill_value", "too large")),
    Bad("flatten-0d-stop", ValueError, lambda t: hwport.flatten(t["s"], stop_axis=17),
        ("flatten", "stop_axis=17"), axis_error=True),
    Bad("scatter-0d", ValueError, lambda t: hwport.scatter(t["s"], t["idx_ok"], t["s"]),
        ("scatter", "x", "0-d")),
    Bad("cross_entropy-ignore-index-unfit", ValueError,
        lambda t: hwport.cross_entropy(t["f"], t["lab3_32"], ignore_index=2**62),
        ("cross_entropy", "ignore_index", "int32")),
    Bad("normal-std-beyond-float", ValueError,
        lambda t: hwport.normal(shape=[2], std=2**1100, seed=1), ("normal", "std", "too large")),
    Bad("arange-start-nan", ValueError, lambda t: hwport.arange(float("nan"), 3),
        ("arange", "start", "finite")),
    # ---- more than HWP_MAX_NDIM (16) dims: named by the public op, not an inner cast/_view
    Bad("add-17d", ValueError, lambda t: hwport.add(t["d17"], t["d17"]),
        ("add", "x", "17 dims", "16")),
    Bad("greater_than-17d", ValueError, lambda t: hwport.greater_than(t["f"], t["d17"]),
        ("greater_than", "y", "17 dims")),
    Bad("ones-17d", ValueError, lambda t: hwport.ones([1] * 17), ("ones", "17 dims", "shape")),
    Bad("unsqueeze-17d", ValueError, lambda t: hwport.unsqueeze(t["d16"], axis=[0]),
        ("unsqueeze", "17 dims", "16")),
]


def _allocated() -> int:
    hwport.device.synchronize(P0)
    hwport.device.synchronize(P1)
    return (hwport.device.memory_stats(P0)["allocated_bytes"]
            + hwport.device.memory_stats(P1)["allocated_bytes"])


@pytest.fixture(scope="module", autouse=True)
def _frozen_heap():
    """gc.collect() here only needs the objects a failed call leaves behind: freezing what
    exists already keeps it fast when the big oracle suite ran first in the same process."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture
def launches(monkeypatch):
    """Records the ops the dispatcher launches (hwport.runtime._core.launch)."""
    seen: list[str] = []
    real = _core.launch

    def spy(op, *args, **kwargs):
        seen.append(op)
        return real(op, *args, **kwargs)

    monkeypatch.setattr(_core, "launch", spy)
    return seen


@pytest.mark.parametrize("bad", BAD, ids=[b.id for b in BAD])
def test_bad_input_raises_clearly_before_any_kernel(bad: Bad, launches):
    tensors = make_tensors()
    gc.collect()
    before = _allocated()
    launches.clear()
    exc_type: type | None = None
    message = ""
    try:
        bad.call(tensors)
    except Exception as exc:  # noqa: BLE001  (the check below names what was expected)
        exc_type, message = type(exc), str(exc)
        exc.__traceback__ = None  # its frames would keep temporaries alive
    assert exc_type is not None, f"{bad.id}: no error raised"
    assert issubclass(exc_type, bad.exc), (
        f"{bad.id}: raised {exc_type.__name__}({message!r}), expected {bad.exc}")
    if bad.axis_error:
        assert issubclass(exc_type, ValueError) and issubclass(exc_type, IndexError), (
            f"{bad.id}: {exc_type.__name__} must be both a ValueError and an IndexError")
    missing = [s for s in bad.says if s not in message]
    assert not missing, (
        f"{bad.id}: the message must name {missing} (op, argument, expectation): {message!r}")
    allowed = {"min", "max"} if bad.index_check else set()
    assert set(launches) <= allowed, (
        f"{bad.id}: kernels ran before the error: {launches} ({message!r})")
    gc.collect()
    after = _allocated()
    assert after == before, (
        f"{bad.id}: allocated_bytes went from {before} to {after} across the failed call: "
        f"a leak ({message!r})")


def test_bad_input_leaves_allocator_at_baseline():
    """Inputs, temporaries of the index check, and the error path together return every
    byte."""
    gc.collect()
    base = _allocated()
    tensors = make_tensors()
    for bad in BAD:
        try:
            bad.call(tensors)
        except Exception as exc:  # noqa: BLE001
            exc.__traceback__ = None
    del tensors
    gc.collect()
    assert _allocated() == base, "allocated_bytes did not return to baseline"


def test_axis_error_is_both_value_and_index_error():
    assert issubclass(AxisError, ValueError) and issubclass(AxisError, IndexError)
    assert hwport.phi_ops.infer_meta.AxisError is AxisError


# ---- not errors: float-only unary math on integers and bools computes in float32 -----------

FLOAT_UNARY = [name for name, op in OPS.items()
               if op.category == "unary" and set(op.dtypes) == {"float16", "bfloat16",
                                                               "float32", "float64"}]


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("op", FLOAT_UNARY)
def test_float_unary_math_promotes_integers_to_float32(op, dtype):
    rng = np.random.default_rng(1)
    if dtype == "bool":
        x = rng.integers(0, 2, 12).astype(bool)
    else:
        lo = 0 if dtype == "uint8" else -4
        x = rng.integers(lo, 5, 12).astype(dtype)
    if op in ("log", "log2", "sqrt", "rsqrt", "reciprocal", "log1p"):
        x = np.abs(x.astype(np.int64)).astype(x.dtype)  # in the domain (0 -> inf is fine)
    got = getattr(hwport, op)(_t(x))
    assert str(got.dtype) == "float32", (
        f"{op} on {dtype}: dtype {got.dtype}, expected float32 (integers compute in float32)")
    want = reference(op, [x.astype(np.float32)], {})
    assert_close(op, "float32", got.numpy(), want)


def test_float_unary_list_covers_the_examples():
    assert {"sqrt", "exp", "log", "sin", "tanh", "erf", "sigmoid", "gelu"} <= set(FLOAT_UNARY)


# ---- not errors: scalars that fit, floats that overflow a float dtype (inf, as numpy) -------

def test_scalars_that_fit_or_round_are_not_errors():
    i8 = _t(np.array([1, -2, 3], np.int8))
    np.testing.assert_array_equal((i8 + 127).numpy(), np.array([-128, 125, -126], np.int8))
    np.testing.assert_array_equal((i8 + 1.5).numpy(), np.array([2.5, -0.5, 4.5], np.float32))
    np.testing.assert_array_equal(hwport.full([2], -128.9, dtype="int8").numpy(), [-128, -128])
    np.testing.assert_array_equal(hwport.full([2], 1.9, dtype="uint8").numpy(), [1, 1])
    # floats convert as `cast` does: truncated, saturated, NaN -> 0 (numpy casts unsafely)
    np.testing.assert_array_equal(hwport.full([2], 1000.0, dtype="int8").numpy(), [127, 127])
    np.testing.assert_array_equal(hwport.full([2], float("nan"), dtype="int32").numpy(), [0, 0])
    half = hwport.full([2], 1e300, dtype="float16").numpy()
    assert half.dtype == np.float16 and np.isinf(half).all()  # numpy: np.float16(1e300) = inf
    f32 = _t(np.array([1.0, -3.0], np.float32))
    big = hwport.clip(f32, min=2**70).numpy()  # an int beyond int64 is the nearest float
    np.testing.assert_array_equal(big, np.full(2, float(2**70), np.float32))
    np.testing.assert_array_equal((f32 + 2**70).numpy(), np.float32(1.0) + np.float32(2**70))


def test_where_scalars_take_the_dtype_of_x_or_y_not_the_condition():
    c = _t(np.array([True, False, True]))
    i8 = _t(np.array([1, -2, 3], np.int8))
    h = _t(np.array([0.5, 1.5, 2.5], np.float16))
    got = hwport.where(c, i8, 7)
    assert str(got.dtype) == "int8"
    np.testing.assert_array_equal(got.numpy(), np.array([1, 7, 3], np.int8))
    assert str(hwport.where(c, 7, i8).dtype) == "int8"
    assert str(hwport.where(c, h, 1.5).dtype) == "float16"
    with pytest.raises(ValueError, match=r"where: y=1000 does not fit in int8"):
        hwport.where(c, i8, 1000)


def test_squeeze_of_a_non_unit_axis_keeps_every_dim():
    x = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
    got = hwport.squeeze(_t(x), axis=[-1])
    assert list(got.shape) == [2, 1, 3]
    np.testing.assert_array_equal(got.numpy(), reference("squeeze", [x], {"axis": [-1]}))


def test_slice_with_a_huge_stride_takes_one_element():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for step in (2**62, -(2**62), 2**63 - 1):
        got = hwport.slice(_t(x), axes=[1], starts=[1], ends=[4], strides=[step]).numpy()
        want = reference("slice", [x], {"axes": [1], "starts": [1], "ends": [4],
                                        "strides": [step]})
        np.testing.assert_array_equal(got, want)


def test_indexing_with_huge_steps_zero_steps_and_bools():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = _t(x)
    for key in [slice(0, 2**70, 2**70), slice(None, None, -(2**70)), (slice(1, None, 10**30), 2)]:
        np.testing.assert_array_equal(t[key].numpy(), x[key])
    with pytest.raises(ValueError, match=r"Tensor index: slice step must not be 0"):
        t[::0]
    with pytest.raises(TypeError, match=r"Tensor index: a bool"):
        t[True]
