"""The C++ op pipeline (runtime/src/pipeline.h) for the unary and binary families: its op table
against ops.yaml and the generated Python functions, its infer-meta against the Python rules
(phi_ops/infer_meta.py, the oracle) on every covered op and every shape case of
phi_ops.sample_inputs, its results against the Python path's, and its deferrals (every error
is the Python path's, a swapped hook sends the call to Python; with layers active:
tests/runtime/test_layered_pipeline.py)."""

from __future__ import annotations

import inspect
import itertools
import math

import numpy as np
import pytest

import hwport
from hwport.phi_ops import dispatch, functional, infer_meta
from hwport.phi_ops.api_args import public_call
from hwport.phi_ops.codegen.gen_cpp_ops import family
from hwport.phi_ops.infer_meta import Meta
from hwport.phi_ops.sample_inputs import ALL_DTYPES, cases_for, dname
from hwport.phi_ops.schema import load_ops
from hwport.runtime import _core
from tests.pipeline_hooks import deferred_calls, python_path, sample_calls

OPS = load_ops()
PLACE = "custom:cpu"
TABLE = {name: (op_id, fam, keywords) for op_id, name, fam, keywords in _core._pipeline_ops()}
COVERED = [name for name, (_, fam, _) in TABLE.items() if fam]
# Families whose ops are views (reshape and flatten copy where no view fits): run in C++ as
# their decompositions do.
VIEW_FAMILIES = {"reshape", "flatten", "transpose", "squeeze", "unsqueeze", "expand", "slice",
                 "split", "flip"}
# Composites whose decomposition runs in C++ (its sub-ops' kernels, in its order; the like
# ops: their one fill; the backward ops: their formulas, mixed float dtypes included).
CPP_DECOMPOSED = {"topk", "full_like", "zeros_like", "ones_like", "softmax_grad",
                  "layer_norm_grad", "rms_norm_grad"}
# Composites whose C++ formula promotes mixed float inputs itself (as their decomposition does)
FORMULA_PROMOTES = {"scaled_dot_product_attention"}


def _fast_count() -> int:
    return _core._pipeline_stats()[0]


# ---- the table ---------------------------------------------------------------------------

def test_table_is_ops_yaml_in_order():
    assert list(TABLE) == list(OPS)
    assert [TABLE[n][0] for n in OPS] == list(range(len(OPS)))


def _raw_inputs(op) -> list[str]:
    return [i.name + ("..." if i.variadic else "?" if i.optional else "") for i in op.inputs]


def test_families_follow_ops_yaml_fields():
    for name, op in OPS.items():
        expected = family(op.category, op.infer_meta, {a.name: a.type for a in op.attrs},
                          op.out_dtype, _raw_inputs(op)) or ""
        assert TABLE[name][1] == expected, name
    fams = {TABLE[n][1] for n in COVERED}
    assert fams == {"unary", "binary", "reduce", "where", "norm", "matmul", "concat",
                    "arg_reduce", "scan", "gather", "take_along_axis", "creation", "arange",
                    "pad", "linear", "embedding", "stack", "matrix_unary", "like", "eye",
                    "linspace", "tile", "roll", "topk", "random", "dropout", "rotary",
                    "scatter", "attention", "cross_entropy", "optimizer_update", "grad_like",
                    "cross_entropy_grad",
                    *VIEW_FAMILIES}
    assert set(COVERED) == set(OPS)  # every op parses and infers in C++
    # every op of category binary is covered; the comparisons among them
    assert {n for n, op in OPS.items() if op.category == "binary"} <= set(COVERED)
    assert {"exp", "log", "tanh", "gelu", "add", "pow", "greater_than", "equal", "sum", "mean",
            "max", "min", "var", "where", "cast", "softplus", "clip", "softmax", "log_softmax",
            "layer_norm", "rms_norm", "matmul", "concat", "reshape", "transpose", "flatten",
            "squeeze", "unsqueeze", "expand", "slice", "split", "argmax", "argmin", "cumsum",
            "cumprod", "gather", "index_select", "take_along_axis", "fill", "full", "zeros",
            "ones", "arange", "flip", "pad", "linear", "embedding", "stack", "tril", "triu",
            "full_like", "zeros_like", "ones_like", "eye", "linspace", "tile",
            "roll", "topk", "uniform", "normal", "dropout", "rotary_embedding"} <= set(COVERED)


def test_keywords_are_the_python_signatures():
    """_op_call binds the op's own names; the public function has them too, except where
    ops.yaml `api` gives Paddle's (then the same parameters are fed, under their names)."""
    for name, op in OPS.items():
        params = [p for p in inspect.signature(getattr(functional, name)).parameters
                  if p not in ("place", "name")]
        if op.api is None:
            assert TABLE[name][2] == ", ".join(params), name
        else:
            fed = {op.api.internal(p) or p for p in params}
            assert set(TABLE[name][2].split(", ")) <= fed, name


def test_covered_functions_and_operators_enter_the_pipeline():
    for name in COVERED:
        src = inspect.getsource(getattr(functional, name))
        assert f"_op_call({TABLE[name][0]}," in src, name
    assert functional.PIPELINE_OPERATORS["__sub__"] == (TABLE["subtract"][0], False)
    assert functional.PIPELINE_OPERATORS["__rtruediv__"] == (TABLE["divide"][0], True)


# ---- infer-meta: C++ against the Python rules --------------------------------------------

class _Meta:
    """Stands for a tensor in dispatch._promote_unsupported (which casts it)."""

    def __init__(self, dtype: str):
        self.dtype = dtype

    def astype(self, dtype: str) -> _Meta:
        return _Meta(str(dtype))


def python_plan(op_name: str, metas: list[Meta], attrs: dict) -> tuple | None:
    """(shape, out dtype, key dtype[, normalized axes]) as phi_ops.dispatch.call's meta stage
    gives them; None where it raises."""
    op = OPS[op_name]
    try:
        norm = dispatch._attrs(op, attrs)
        k = op.key_input_index()
        stand_ins = [m if m is None or isinstance(m, list) else _Meta(m.dtype) for m in metas]
        _, metas = dispatch._promote_unsupported(op, stand_ins, list(metas), k)
        plan = infer_meta.infer(op, metas, norm)
        if k is None:  # creation: the output's dtype keys the kernel
            key = plan.outputs[0].dtype
        else:
            key_meta = metas[k][0] if isinstance(metas[k], list) else metas[k]
            key = plan.casts.get(k, key_meta.dtype)
        dispatch._check_dtype(op, key, metas, k)
    except (TypeError, ValueError, IndexError, _core.OutOfMemoryError):
        return None
    if not plan.outputs:  # split of a zero-size dim into no parts
        shape = list(metas[0].shape)
        shape[plan.attrs["axis"]] = 0
        out = (tuple(shape), metas[0].dtype, key)
    else:
        out = (tuple(plan.outputs[0].shape), plan.outputs[0].dtype, key)
    if op.infer_meta in ("reduce", "arg_reduce", "scan", "topk"):
        return out + (plan.attrs["axis"],)
    if op.infer_meta == "slice":  # the bounds the view is built from
        return out + tuple(list(plan.attrs[k]) for k in ("axes", "starts", "ends", "strides"))
    if op.infer_meta == "split":
        return out + (tuple(tuple(m.shape) for m in plan.outputs), plan.attrs["axis"])
    if op.infer_meta in ("gather", "take_along_axis"):
        return out + (plan.attrs["axis"], plan.attrs["_bound"])
    if op.infer_meta == "arange":
        return out + (plan.attrs["start"], plan.attrs["end"], plan.attrs["step"])
    if op.infer_meta == "pad":
        return out + (list(plan.attrs["pad"]),)
    if op.infer_meta == "tile":
        return out + (list(plan.attrs["repeats"]),)
    if op.infer_meta == "embedding":
        return out + (plan.attrs["_bound"],)
    if op.infer_meta == "stack":
        return out + (plan.attrs["axis"],)
    if TABLE[op_name][1] in ("flip", "roll"):
        return out + (list(plan.attrs["axis"]),)
    return out


def cpp_plan(op_name: str, metas: list, attrs: dict) -> tuple | None:
    def one(m):
        if m is None:
            return None
        if isinstance(m, list):
            return [one(e) for e in m]
        return (list(m.shape), m.dtype)

    got = _core._pipeline_infer(op_name, [one(m) for m in metas], attrs)
    return None if got is None else (tuple(got[0]),) + tuple(got[1:])


def _meta(v):
    """The Meta of a sample input (None stays None, a list of arrays a list of Metas)."""
    if v is None:
        return None
    if isinstance(v, list):
        return [_meta(e) for e in v]
    return Meta(tuple(np.shape(v)), dname(v))


def _python_only_form(op_name: str, metas: list[Meta], attrs: dict) -> bool:
    """The forms the C++ rules leave to Python on purpose: a reduction of a 0-d x (returned
    cast, no kernel) or over a zero-size dim (max/min refuse, the rest fill); a matmul with
    K = 0 (zeros); a composite whose floating inputs do not all have the key dtype (its
    decomposition keeps their precision) unless its formula promotes them; arange with a bool
    bound; linspace with an int bound beyond int64; uniform, normal, dropout with a bool or an
    int beyond int64 for a float attribute (Python keeps it as it is); topk of a 0-d x."""
    op = OPS[op_name]
    if op_name == "topk":  # a 0-d x (a copy and a zero index)
        return metas[0].ndim == 0
    if op.category == "random" or op_name == "dropout":  # a bool or huge int for a float
        return any(isinstance(v := attrs.get(a.name), bool) or
                   (isinstance(v, int) and not -2**63 <= v < 2**63)
                   for a in op.attrs if a.type == "float")
    if op.infer_meta == "linspace":
        return any(isinstance(attrs.get(k), int) and not -2**63 <= attrs[k] < 2**63
                   for k in ("start", "stop"))
    if op.infer_meta == "arange":  # a bool bound (an int to numpy, not to the count)
        return any(isinstance(attrs.get(k), bool) for k in ("start", "end", "step"))
    if op.infer_meta == "matmul":
        x = metas[0]
        k = x.shape[-2] if attrs.get("transpose_x") and x.ndim >= 2 else x.shape[-1]
        return k == 0
    if (not op.is_primitive and len(metas) > 1 and op_name not in CPP_DECOMPOSED
            and op_name not in FORMULA_PROMOTES):
        floats = [m.dtype for m in metas if m is not None and not isinstance(m, list)
                  and m.dtype.startswith(("float", "bfloat"))]
        return len(set(floats)) > 1
    if op.infer_meta != "reduce":
        return False
    x = metas[0]
    axis = attrs.get("axis")
    axes = range(x.ndim) if axis in (None, []) else [axis] if isinstance(axis, int) else axis
    return x.ndim == 0 or any(x.shape[a] == 0 for a in axes if -x.ndim <= a < x.ndim)


def _meta_cases(op_name: str) -> list[tuple[list[Meta], dict]]:
    """Every shape case of phi_ops.sample_inputs for the op (every dtype it lists), and every
    dtype (pair) of all ten on a few shapes, broadcasting failures included."""
    op = OPS[op_name]
    out = []
    for d in op.dtypes:
        for case in cases_for(op_name, d):
            out.append(([_meta(v) for v in case.inputs], case.attrs))
    n = len(op.inputs)
    if not n:  # creation: shapes, values and dtypes (absent, None, given)
        dtypes = [{}, {"dtype": None}] + [{"dtype": d} for d in ("int8", "uint8", "float16",
                                                                  "bool", "int64", "float32")]
        if op.infer_meta == "arange":
            bounds = [(5,), (1, 7, 2), (0.5, 3), (10, 0, -3), (0, 1, 0.1), (2, 2), (3, 1),
                      (1, 1e300, 1e-300), (0, 5, 0), (float("inf"),), (-2**63, 2**63 - 1),
                      (2**63 - 1, -2**63, -1), (1, 2.5, True), (None,), (0, None, 2),
                      (-7, 7, 2**40), (0.0, 1, 3)]
            for b in bounds:
                for d in dtypes:
                    out.append(([], dict(zip(("start", "end", "step"), b, strict=False), **d)))
            return out
        if op.infer_meta == "eye":  # sizes of every kind; m absent, None or given
            for n_, m_ in itertools.product((0, 3, -1, True, 2.0, 2**62, None),
                                            ("absent", None, 0, 4, -2, 2**62, 1.5)):
                for d in dtypes:
                    out.append(([], {"n": n_, **({} if m_ == "absent" else {"m": m_}), **d}))
            return out
        if op.infer_meta == "linspace":  # bounds of every kind; num fitting or not
            for b, num in itertools.product(((0, 1), (1.5, -3), (True, 2), (float("inf"), 0),
                                             (0, float("nan")), (None, 1), (2**70, 1)),
                                            (0, 1, 5, -1, True, 2.0, 2**58, 2**62)):
                for d in dtypes:
                    out.append(([], {"start": b[0], "stop": b[1], "num": num, **d}))
            return out
        if op.category == "random":  # seeds and offsets of every kind, the two floats
            for shp, seed, off, lo, d in itertools.product(
                    ([2, 3], [], 4, [0, 5], [-1], [2**62, 4], [1] * 17), (0, 7, -1, 2**63, True,
                                                                          1.5, None),
                    ("absent", 3, None, 2**64), (0, 2.5, True, 2**70, None, float("nan")),
                    dtypes):
                lo_name = next(a.name for a in op.attrs if a.type == "float")
                out.append(([], {"shape": shp, "seed": seed, lo_name: lo,
                                 **({} if off == "absent" else {"offset": off}), **d}))
            return out
        values = [1, -3, 2.5, True, 300, 2**40, float("nan"), float("-inf")]
        value = next((a.name for a in op.attrs if a.type == "float"), None)
        for shp in ([2, 3], [], 4, [0, 5], [-1], [2**62, 4], [1] * 17, (2, 1)):
            for v in values if value else [None]:
                for d in dtypes:
                    out.append(([], {"shape": shp, **({value: v} if value else {}), **d}))
        return out
    if op.infer_meta == "linear":  # x, weight, bias (None: absent)
        for dts in itertools.product(("float16", "float32", "float64", "int32"), repeat=3):
            for shp in [[(2, 3), (3, 4), (4,)], [(2, 3), (3, 4), None], [(3,), (3, 4), None],
                        [(), (3, 4), None], [(2, 3), (4, 3), None], [(2, 3), (3, 4), (3,)],
                        [(5, 2, 3), (3, 4), (4,)], [(2, 3), (3,), None], [(0, 3), (3, 0), (0,)]]:
                out.append(([None if s is None else Meta(s, d)
                             for s, d in zip(shp, dts, strict=True)], {}))
        return out
    if op.infer_meta == "attention":  # query, key, value, attn_mask (None: absent)
        for dts in itertools.product(("float16", "float32", "float64", "int32"), repeat=3):
            for shp in [[(2, 3), (4, 3), (4, 5), None], [(2, 3), (4, 3), (4, 5), (2, 4)],
                        [(2, 3), (4, 3), (4, 5), (1, 4)], [(2, 3), (4, 3), (4, 5), (3, 4)],
                        [(7, 2, 3), (1, 4, 3), (7, 4, 5), (7, 1, 1)], [(3,), (4, 3), (4, 5), None],
                        [(2, 3), (4, 2), (4, 5), None], [(2, 3), (4, 3), (3, 5), None],
                        [(2, 2, 3), (3, 4, 3), (4, 5), None], [(0, 3), (0, 3), (0, 0), None]]:
                for attrs in ({}, {"is_causal": True}, {"scale": 0.5}, {"scale": 2},
                              {"is_causal": 1}, {"scale": "x"}):
                    metas = [None if s is None else Meta(s, d) for s, d in
                             zip(shp, [*dts, "float32" if dts[0] != "int32" else "bool"],
                                 strict=True)]
                    out.append((metas, attrs))
        return out
    if TABLE[op_name][1] == "optimizer_update":  # param, grad, moment1, moment2
        adam = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lr": 1e-3}
        for dts in [("float32",) * 4, ("float64",) * 4, ("float16",) * 4, ("int32",) * 4,
                    ("float32", "float64", "float32", "float32"),
                    ("float32",) * 3 + ("bfloat16",)]:
            for shp in [[(4, 5)] * 4, [()] * 4, [(0, 3)] * 4, [(4, 5), (4, 5), (5,), (4, 5)],
                        [(3,), (3,), (3,), (1,)]]:
                for attrs in (adam, dict(adam, decay=0.99), dict(adam, beta1="x"),
                              {k: v for k, v in adam.items() if k != "lr"}):
                    out.append(([Meta(s, d) for s, d in zip(shp, dts, strict=True)], attrs))
        return out
    if TABLE[op_name][1] == "grad_like":  # out/x, grad[, weight]
        norm = len(op.inputs) == 3
        for dts in [("float32",) * 3, ("float64",) * 3, ("float16",) * 3, ("int32",) * 3,
                    ("float32", "float64", "float32"), ("float16", "float16", "float32")]:
            for shp in [[(4, 5), (4, 5), (5,)], [(4, 5), (4, 5), None], [(4, 5), (5,), (5,)],
                        [(2, 3, 4), (2, 3, 4), (3, 4)], [(4, 5), (4, 5), (4,)],
                        [(), (), None], [(0, 3), (0, 3), (3,)]]:
                attr_sets = ([{}, {"normalized_ndim": 2}, {"normalized_ndim": 0},
                              {"epsilon": -1.0}, {"epsilon": 1e-3, "normalized_ndim": 1}]
                             if norm else [{}, {"axis": 0}, {"axis": -2}, {"axis": 5}])
                for attrs in attr_sets:
                    metas = [None if s is None else Meta(s, d)
                             for s, d in zip(shp, dts, strict=True)][:len(op.inputs)]
                    out.append((metas, attrs))
        return out
    if op.inputs[0].variadic:  # concat: lists of one to three tensors
        for dts in itertools.product(ALL_DTYPES, repeat=2):
            for shp in [[(2, 3), (2, 5)], [(2, 3), (4, 3)], [(3,), (0,)], [(), ()], [(2, 3)]]:
                for axis in (0, 1, -1, 2, -3):
                    out.append(([[Meta(s, d) for s, d in zip(shp, dts, strict=False)]],
                                {"axis": axis}))
        return out
    shapes = {1: [[()], [(0, 3)], [(4, 5)]],
              2: [[(3, 1, 5), (4, 5)], [(2,), (3,)], [(), ()], [(0, 3), (1, 3)],
                  [(2, 0), (3, 1)]],
              3: [[(3, 1, 1), (4, 1), (5,)], [(2,), (3,), (1,)], [(), (), ()],
                  [(4, 1), (), (2,)]]}[n]
    if TABLE[op_name][1] == "scatter":  # x, index, updates
        shapes = shapes + [[(4, 3), (2,), (2, 3)], [(4, 3), (3,), (4, 3)], [(4, 3), (0,), (0, 3)],
                           [(4, 3), (2, 1), (2, 3)], [(4,), (5,), (5,)], [(), (1,), ()]]
    if TABLE[op_name][1] == "cross_entropy":  # logits, label
        shapes = shapes + [[(3, 5), (3,)], [(3, 5), (4,)], [(0, 4), (0,)], [(3, 5), (3, 1)]]
    if TABLE[op_name][1] == "cross_entropy_grad":  # logits, label, grad (of the loss's shape)
        shapes = shapes + [[(3, 5), (3,), ()], [(3, 5), (3,), (3,)], [(3, 5), (4,), ()],
                           [(0, 4), (0,), (0,)], [(3, 5), (3,), (1,)]]
    if TABLE[op_name][1] == "rotary":  # even last dims, cos and sin broadcasting or not
        shapes = shapes + [[(2, 4), (2, 4), (1, 4)], [(3, 2, 6), (2, 1), (6,)],
                           [(2, 4), (3, 4), (4,)], [(2, 4), (4,), (2, 1, 4)]]
    attr_sets: list[dict] = [{}]
    extra = {"matmul": [{"transpose_x": tx, "transpose_y": ty} for tx in (False, True)
                        for ty in (False, True)],
             "reshape": [{"shape": s} for s in ([-1], [5, -1], [0, -1], [-1, -1], [20], [2, -2],
                                                [4, 5, 1], [])],
             "transpose": [{"perm": p} for p in (None, [1, 0], [0], [-1, 0], [0, 0], [2, 0])],
             "squeeze": [{"axis": a} for a in (None, [], [0], [-1], [1, 0], [0, 0], [2], 3)],
             "unsqueeze": [{"axis": a} for a in ([0], [-1], [0, 2], [1, 1], [5], [-4], 1)],
             "expand": [{"shape": s} for s in ([4, 5], [2, 4, 5], [-1, 5], [-1, -1, 5], [3, 5],
                                               [4, 0], [0, 4, 5], [5])],
             "flatten": [{"start_axis": a, "stop_axis": b} for a in (0, 1, -1, 2)
                         for b in (0, -1, 1, -3)],
             "slice": [dict(zip(("axes", "starts", "ends", "strides"), v, strict=False))
                       for v in ([[0], [1], [3]], [[1, 0], [-1, 0], [0, 10], [-1, 2]],
                                 [[-1], [0], [100], [7]], [[0], [5], [-100], [-9]],
                                 [[0, 0], [0, 0], [1, 1]], [[2], [0], [1]], [[0], [0], [1], [0]],
                                 [[0, 1], [0], [1]], [[], [], []], [0, 1, 2], [[0], [0], [1], []],
                                 [[0], [-2**63], [2**63 - 1], [-2**63]],
                                 [[-1], [2**63 - 1], [-2**63], [2**63 - 1]])],
             "split": [{"sections": v, "axis": a} for v, a in (
                 (2, 0), ([1, -1], 0), ([2, 3], 1), (5, -1), ([-1, -1], 0), ([6, -1], 1),
                 (0, 0), ([0, 4], 0), (1, 2), ((1, 3), 0), ([4], 0), ([], 0), (1, -3))],
             "arg_reduce": [{"axis": a, "keepdim": k} for a in (None, 0, 1, -1, 2, -3)
                            for k in (False, True)],
             "scan": [{"axis": a} for a in (None, 0, -1, 1, 2, -3)],
             "gather": [{"axis": a} for a in (0, 1, -1, 2, -3)],
             "take_along_axis": [{"axis": a} for a in (0, 1, -1, 2, -3)],
             "flip": [{"axis": a} for a in ([0], [-1], [0, 1], [1, 0], [0, 0], [2], [], 0, -3)],
             "tile": [{"repeats": r} for r in ([2], [1, 3], [0, 2, 1], 3, [], [-1], (2, 2),
                                               [1] * 17, [2**62, 2**62], [True])],
             "roll": [{"shifts": s, **a} for s in (1, [2], [1, -1], [], (3,))
                      for a in ({}, {"axis": None}, {"axis": [0]}, {"axis": [0, -1]},
                                {"axis": [1, 1]}, {"axis": [2]}, {"axis": 0}, {"axis": []})],
             "topk": [{"k": k, **a} for k in (0, 1, 3, 6, -1, True)
                      for a in ({}, {"axis": 0}, {"axis": -2}, {"axis": 2}, {"largest": False},
                                {"largest": 1}, {"axis": None})],
             "scatter": [{"axis": a, **r} for a in (0, 1, -1, 2, None, 1.0)
                         for r in ({}, {"reduce": "add"}, {"reduce": "max"}, {"reduce": None})],
             "cross_entropy": [{"reduction": r, "ignore_index": i}
                               for r in ("mean", "sum", "none", "avg", None)
                               for i in (-100, 0, 2**40, -2**31 - 1, True, 1.5)],
             "cross_entropy_grad": [{"reduction": r, "ignore_index": i}
                                    for r in ("mean", "none", "avg") for i in (-100, 2**40)],
             "matrix_unary": [{"diagonal": d} for d in (0, 1, -2, 2**62)],
             "dropout": [{"p": p, **a} for p in (0.0, 0.5, 1, 1.5, -0.1, float("nan"), True,
                                                  None, 2**70)
                         for a in ({}, {"training": False}, {"training": 1}, {"seed": 3},
                                   {"seed": 2.0}, {"offset": -1}, {"seed": None})],
             "like": ([{"fill_value": v, **d} for v in (1, -3, 2.5, True, 300, float("nan"))
                       for d in ({}, {"dtype": "int8"}, {"dtype": None}, {"dtype": "bool"})]
                      if op_name == "full_like" else
                      [{"dtype": d} for d in (None, "int8", "float16", "bool")]),
             "pad": [{"pad": p, "value": v} for p in ([1, 2], [0, 0, 1, 0], [1], [-1, 0],
                                                       [0, 0, 0, 0, 0, 0], [2**62, 2**62])
                     for v in (0.0, 2.5, -3, True, 300, float("nan"))]}
    attr_sets += extra.get(TABLE[op_name][1], [])
    if op.infer_meta == "unary" and "axis" in op.attr_map:
        attr_sets += [{"axis": a} for a in (0, 1, -1, -2, 2, -3)]
    if TABLE[op_name][1] in ("reshape", "unsqueeze", "expand", "slice", "split",
                             "take_along_axis", "flip", "pad", "tile", "roll", "topk") or \
            op_name == "full_like":
        attr_sets = attr_sets[1:]  # shape / axis is required
    if OPS[op_name].infer_meta == "reduce":
        attr_sets += [{"axis": a, "keepdim": k} for a in (0, -1, [1, 0], [0, 0], 2, -3, (1,))
                      for k in (False, True)]
        if "dtype" in OPS[op_name].attr_map:
            attr_sets += [{"dtype": d} for d in ("float64", "int32", "bool")]
    for dts in itertools.product(ALL_DTYPES, repeat=n):
        for shp in shapes:
            for attrs in attr_sets:
                out.append(([Meta(s, d) for s, d in zip(shp, dts, strict=True)], attrs))
    return out


@pytest.mark.parametrize("op_name", COVERED)
def test_cpp_infer_meta_matches_python_rules(op_name):
    checked = 0
    for metas, attrs in _meta_cases(op_name):
        want = python_plan(op_name, metas, attrs)
        got = cpp_plan(op_name, metas, attrs)
        if got is None and want is not None and _python_only_form(op_name, metas, attrs):
            continue
        assert got == want, (op_name, metas, attrs)
        checked += want is not None
    assert checked > 0


# ---- results: fast path against the Python path ------------------------------------------

def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _same_tensor(got, want, inputs) -> bool:
    """Equal bytes, and the same layout: a view of the same input at the same strides and
    offset where the Python path made a view, fresh memory where it did not."""
    if not _same(got.numpy(), want.numpy()):
        return False
    if (tuple(got.strides), got._offset) != (tuple(want.strides), want._offset):
        return False
    bases = [t for t in inputs if isinstance(t, hwport.Tensor)]
    return [got._shares_storage(t) for t in bases] == [want._shares_storage(t) for t in bases]


@pytest.mark.parametrize("op_name", COVERED)
def test_results_equal_the_python_path(op_name):
    op = OPS[op_name]
    ran_fast = 0
    for case, inputs, args, kwargs in sample_calls(op, PLACE):
        with deferred_calls() as deferred:
            got = getattr(functional, op_name)(*args, **kwargs)
        with python_path():
            before = _fast_count()
            want = dispatch.call(op_name, inputs, dict(case.attrs))
            assert _fast_count() == before
        if isinstance(want, (list, tuple)):  # split's views, topk's (values, indices)
            assert type(got) is type(want) and len(got) == len(want), case.id
            assert all(_same_tensor(g, w, inputs) for g, w in zip(got, want, strict=True))
        else:
            assert _same_tensor(got, want, inputs), case.id
        # embedding's kernels are keyed by its index (the first input), not the weight
        registry_key = (dname(case.inputs[0]) if op.infer_meta == "embedding"
                        else case.key_dtype())
        # A primitive, or a composite with a native kernel or a C++ formula (ops.yaml
        # `formula`), runs in C++; any other composite decomposes in Python (whose
        # primitives then take the C++ path); the view families (reshape, transpose) are
        # their decompositions, in C++.
        native = (op.is_primitive or TABLE[op_name][1] in VIEW_FAMILIES
                  or op_name in CPP_DECOMPOSED or op.formula is not None
                  or _core.has_kernel(op_name, PLACE, registry_key))
        metas = [_meta(v) for v in case.inputs]
        native = native and not _python_only_form(op_name, metas, case.attrs)
        if op_name in ("cross_entropy", "cross_entropy_grad"):  # an ignored (or bad) label:
            # the Python path's label check (before the same kernel)
            lab, classes = np.asarray(case.inputs[1]), np.shape(case.inputs[0])[-1]
            native = native and bool(np.all((lab >= 0) & (lab < classes)))
        assert (op_name not in deferred) == native, case.id
        ran_fast += native
    assert ran_fast > 0 or not op.is_primitive


SCALARS = [True, False, 0, 1, -3, 127, 200, 2**31, 2**63 - 1, 2**64, 0.5, -2.25, 1e300,
           float("inf"), float("nan")]


@pytest.mark.parametrize("op_name", ["add", "subtract", "multiply", "divide", "pow", "maximum",
                                     "greater_than", "equal", "bitwise_and", "floor_divide"])
def test_python_scalars_match_the_python_path(op_name):
    """Weak scalars (NEP 50) on either side, every tensor dtype: the same result, or the same
    error (an int that does not fit the tensor's integer dtype)."""
    rng = np.random.default_rng(3)
    for d in ALL_DTYPES:
        arr = (rng.standard_normal((2, 3)) * 3).astype(np.float64)
        t = hwport.to_tensor(arr.astype(d) if d != "bfloat16" else arr.astype(np.float32),
                             place=PLACE)
        if d == "bfloat16":
            t = t.astype("bfloat16")
        for s, reflected in itertools.product(SCALARS, (False, True)):
            args = (s, t) if reflected else (t, s)
            got = _outcome(lambda a=args: getattr(functional, op_name)(*a))
            with python_path():
                want = _outcome(lambda a=args: dispatch.call(op_name, a, {}))
            assert got == want, (op_name, d, s, reflected)


def test_where_with_scalars_matches_the_python_path():
    rng = np.random.default_rng(5)
    cond = hwport.to_tensor(rng.standard_normal((2, 3)) > 0, place=PLACE)
    for d in ALL_DTYPES:
        t = hwport.to_tensor(rng.standard_normal((3,)).astype(np.float32),
                             place=PLACE).astype(d)
        for args in [(cond, t, 2), (cond, 1.5, t), (cond, True, t), (cond, t, 300),
                     (cond, 1, 2), (True, t, t), (cond.astype("int8"), t, 0.5)]:
            got = _outcome(lambda a=args: hwport.where(*a))
            with python_path():
                want = _outcome(lambda a=args: dispatch.call("where", a, {}))
            assert got == want, (d, args[1:])


def _outcome(fn) -> tuple:
    try:
        r = fn().numpy()
    except (TypeError, ValueError, IndexError, NotImplementedError, RuntimeError) as e:
        return type(e).__name__, str(e)
    return "ok", r.dtype.str, r.shape, r.tobytes()


def test_operators_match_the_functions():
    a = hwport.to_tensor(np.array([[1.5, -2.0, 3.0]], np.float32), place=PLACE)
    b = hwport.to_tensor(np.array([[2], [3]], np.int32), place=PLACE)
    pairs = [
        (a - b, hwport.subtract(a, b)), (b - a, hwport.subtract(b, a)),
        (2 - a, hwport.subtract(2, a)), (a / 2, hwport.divide(a, 2)),
        (3 / b, hwport.divide(3, b)), (a ** 2, hwport.pow(a, 2)), (2 ** a, hwport.pow(2, a)),
        (a > b, hwport.greater_than(a, b)), (a <= 1.5, hwport.less_equal(a, 1.5)),
        (a == b, hwport.equal(a, b)), (-a, hwport.neg(a)), (abs(a), hwport.abs(a)),
        (~b, hwport.bitwise_not(b)), (b & 6, hwport.bitwise_and(b, 6)),
        (b // 2, hwport.floor_divide(b, 2)), (7 % b, hwport.remainder(7, b)),
    ]
    for got, want in pairs:
        assert _same(got.numpy(), want.numpy())
    np.testing.assert_array_equal((a - b).numpy(), a.numpy() - b.numpy())
    np.testing.assert_array_equal((2 - a).numpy(), 2 - a.numpy())


# ---- deferrals ---------------------------------------------------------------------------

def _bad_calls():
    f32 = hwport.to_tensor(np.ones((2, 3), np.float32), place=PLACE)
    i8 = hwport.to_tensor(np.ones(3, np.int8), place=PLACE)
    b = hwport.to_tensor(np.ones(3, bool), place=PLACE)
    other = hwport.to_tensor(np.ones((2, 3), np.float32), place="custom:cpu:1")
    return [
        ("add", (f32, i8[:2]), ValueError,
         r"add: cannot broadcast x of shape \[2, 3\], y of shape \[2\]"),
        ("subtract", (f32, "a"), TypeError, "subtract: y expected a Tensor or a Python scalar"),
        ("add", (i8, 1000), ValueError, r"add: y=1000 does not fit in int8"),
        ("multiply", (300, i8), ValueError, r"multiply: x=300 does not fit in int8"),
        ("subtract", (b, b), TypeError, "subtract: x and y promote to bool"),
        ("abs", (b,), TypeError, "abs: x has dtype bool"),
        ("bitwise_and", (f32, f32), TypeError, "bitwise_and: x and y promote to float32"),
        ("add", (f32, other), ValueError, "add: y is on custom:cpu:1 but x is on custom:cpu:0"),
        ("exp", (None,), TypeError, "exp: missing required input 'x'"),
        ("gelu", (f32, {"approximate": 1}), TypeError, "gelu: approximate expected a bool"),
        ("add", (1, 2), None, None),  # no tensor at all: Python's rule (a 0-d result)
    ]


def test_bad_arguments_raise_the_python_paths_exact_error():
    for op_name, given, exc, fragment in _bad_calls():
        fn = getattr(functional, op_name)
        attrs = given[-1] if isinstance(given[-1], dict) else {}
        args = given[:-1] if attrs else given
        got = _outcome(lambda: fn(*args, **attrs))  # noqa: B023
        with python_path():
            want = _outcome(lambda: dispatch.call(op_name, args, attrs))  # noqa: B023
        assert got == want, op_name
        if exc is not None:
            assert got[0] == exc.__name__ and fragment and _search(fragment, got[1]), got


def _search(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


def test_the_python_only_hook_takes_the_python_path():
    a = hwport.to_tensor(np.ones(3, np.float32), place=PLACE)
    with deferred_calls() as calls:
        hwport.exp(a)
        a - a
        assert calls == []
        with python_path():
            before = _fast_count()
            np.testing.assert_allclose(hwport.exp(a).numpy(), np.exp(np.ones(3, np.float32)))
            np.testing.assert_array_equal((a - a).numpy(), np.zeros(3, np.float32))
            assert _fast_count() == before
        assert calls == ["exp", "subtract"]


def test_a_swapped_output_allocator_takes_the_python_path():
    a = hwport.to_tensor(np.ones(3, np.float32), place=PLACE)
    made = []

    def allocator(shape, dtype, place, op):
        made.append(op)
        return _core.empty(shape, dtype, place, op)

    dispatch.output_allocator = allocator
    try:
        before = _fast_count()
        np.testing.assert_array_equal(hwport.add(a, a).numpy(), np.full(3, 2, np.float32))
        assert made == ["add"] and _fast_count() == before
    finally:
        dispatch.output_allocator = _core.empty
    before = _fast_count()
    hwport.add(a, a)
    assert _fast_count() == before + 1


def test_keyword_arguments_bind_by_the_tables_names():
    a = hwport.to_tensor(np.array([0.5, -1.0], np.float32), place=PLACE)
    ids = {name: op_id for name, (op_id, _, _) in TABLE.items()}
    np.testing.assert_array_equal(_core._op_call(ids["subtract"], y=a, x=a).numpy(), [0, 0])
    with pytest.raises(TypeError, match=r"subtract: takes the arguments \(x, y\)"):
        _core._op_call(ids["subtract"], a, z=a)


# ---- the slicing, arg_reduce, scan and index families: errors and layouts ----------------

def _new_family_bad_calls():
    x = hwport.to_tensor(np.arange(24, dtype=np.float32).reshape(4, 6), place=PLACE)
    empty = hwport.to_tensor(np.zeros((0, 3), np.float32), place=PLACE)

    def idx(v, dtype=np.int64):
        return hwport.to_tensor(np.array(v, dtype), place=PLACE)

    return [  # (function, args, kwargs, exception, fragment naming the op and the argument)
        ("gather", (x, idx([0, 4])), {}, IndexError,
         r"gather: index holds 4, out of bounds for a dimension of size 4 \(axis 0\)"),
        ("gather", (x, idx([-1, 0], np.int32)), {"axis": 1}, IndexError,
         r"gather: index holds -1, out of bounds for a dimension of size 6 \(axis 1\)"),
        ("gather", (x, idx([0])), {"axis": 2}, infer_meta.AxisError, "gather: axis"),
        ("gather", (x, idx([0.0], np.float32)), {}, TypeError, "gather: index must be an int"),
        ("index_select", (x, idx([9])), {}, IndexError, "index_select: index holds 9"),
        ("take_along_axis", (x, idx([[6]])), {"axis": 1}, IndexError,
         "take_along_axis: indices holds 6"),
        ("take_along_axis", (x, idx([0])), {"axis": 0}, ValueError,
         "take_along_axis: indices must have arr's 2 dims"),
        ("slice", (x, [0], [0], [1]), {"strides": [0]}, ValueError,
         "slice: strides must not be 0"),
        ("slice", (x, [0, -2], [0, 0], [1, 1]), {}, ValueError, "slice: axes=.* twice"),
        ("slice", (x, [0, 1], [0], [1]), {}, ValueError, "slice: axes, starts, ends"),
        ("slice", (x, [2], [0], [1]), {}, infer_meta.AxisError, "slice: axes"),
        ("split", (x, 4), {"axis": 1}, ValueError, "split: num_or_sections=4"),
        ("split", (x, [1, 1]), {}, ValueError, "split: num_or_sections"),
        ("split", (x, [7, -1]), {}, ValueError, "split: num_or_sections"),
        ("argmax", (x,), {"axis": 2}, infer_meta.AxisError, "argmax: axis"),
        ("argmin", (empty,), {}, ValueError, r"argmin: x of shape \[0, 3\] has no elements"),
        ("argmax", (empty,), {"axis": 0}, ValueError, "argmax: cannot reduce over the zero-size"),
        ("argmax", (x,), {"keepdim": 1}, TypeError, "argmax: keepdim expected a bool"),
        ("cumsum", (x,), {"axis": 1.5}, TypeError, "cumsum: axis expected an int"),
        ("cumprod", (x,), {"dim": -3}, infer_meta.AxisError, "cumprod: dim"),
    ]


def test_new_families_raise_the_python_paths_errors():
    """Every refused call of the new families raises what the Python path raises (type and
    message, naming the public op and argument)."""
    for op_name, args, kwargs, exc, fragment in _new_family_bad_calls():
        fn = getattr(functional, op_name)
        got = _outcome(lambda: fn(*args, **kwargs))  # noqa: B023
        with python_path():
            want = _outcome(lambda: fn(*args, **kwargs))  # noqa: B023
        assert got == want, (op_name, got, want)
        assert got[0] == exc.__name__ and _search(fragment, got[1]), (op_name, got)


def test_slices_and_splits_of_views_keep_the_python_paths_layout():
    """Views of views (an offset, negative and zero strides) sliced and split in C++: the same
    bytes, strides, offset and storage as the decompositions give."""
    base = hwport.to_tensor(np.arange(120, dtype=np.float32).reshape(4, 5, 6), place=PLACE)
    views = [base, hwport.transpose(base, [2, 0, 1]), hwport.flip(base, [1]),
             hwport.slice(base, [0, 2], [1, 5], [4, 0], strides=[2, -2]),
             hwport.expand(hwport.unsqueeze(base[0], [0]), [3, 5, 6])]
    calls = [("slice", ([0, -1], [1, -2], [100, -100]), {"strides": [2, -3]}),
             ("slice", ([1], [-2**63], [2**63 - 1]), {"strides": [2**63 - 1]}),
             ("slice", ([2], [3], [3]), {}),
             ("split", ([1, -1, 2],), {"axis": 0}), ("split", (1,), {"axis": -1}),
             ("split", ([0, 5],), {"axis": 1})]
    for v in views:
        for op_name, rest, kwargs in calls:
            if op_name == "split" and kwargs["axis"] == 0 and v.shape[0] != 4:
                continue
            if op_name == "split" and kwargs["axis"] == 1 and v.shape[1] != 5:
                continue
            fn = getattr(functional, op_name)
            before = _fast_count()
            got = fn(v, *rest, **kwargs)
            assert _fast_count() == before + 1, (op_name, rest)
            with python_path():
                want = fn(v, *rest, **kwargs)
            pairs = zip(got, want, strict=True) if isinstance(want, list) else [(got, want)]
            for g, w in pairs:
                assert _same_tensor(g, w, [v, base]), (op_name, rest, tuple(v.strides))
                np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("op_name", ["fill", "arange", "eye", "linspace"])
def test_creation_results_equal_the_python_path(op_name):
    """Every creation case of the infer-meta grid (values into every dtype: fitting, saturating
    casts, NaN, inf; bounds of every kind), called through the public function (Paddle's
    names: eye's num_rows) with and without place=: the same bytes, or the same error."""
    for i, (_, attrs) in enumerate(_meta_cases(op_name)):
        if any(isinstance(v, int) and abs(v) >= 2**58 for v in attrs.values()) and \
                op_name in ("eye", "linspace"):
            continue  # sizes beyond memory: the infer-meta grid checks them
        args, kwargs = public_call(OPS[op_name], [], dict(attrs))
        kwargs = dict(kwargs, **({"place": PLACE} if i % 2 else {}))
        fn = getattr(functional, op_name)
        got = _outcome(lambda: fn(*args, **kwargs))  # noqa: B023
        with python_path():
            want = _outcome(lambda: fn(*args, **kwargs))  # noqa: B023
        assert got == want, (op_name, kwargs)


@pytest.mark.parametrize("op_name", ["pad", "flip", "argmax", "cumsum", "tile", "roll"])
def test_grid_results_equal_the_python_path(op_name):
    """The infer-meta grid's cases on real tensors (every dtype; pad's values into each):
    the same bytes, strides and offset, or the same error, with the fast path and without."""
    for metas, attrs in _meta_cases(op_name):
        m = metas[0]
        x = hwport.to_tensor(np.arange(math.prod(m.shape), dtype=np.float32).reshape(m.shape),
                             place=PLACE).astype(m.dtype)
        fn = getattr(functional, op_name)

        def run(x=x, attrs=attrs, fn=fn):
            args, kwargs = public_call(OPS[op_name], [x], dict(attrs))  # tile's repeat_times
            out = fn(*args, **kwargs)
            return (tuple(out.strides), out._offset, out._shares_storage(x)), out

        got = _outcome(lambda: run()[1])
        with python_path():
            want = _outcome(lambda: run()[1])
        assert got == want, (op_name, m, attrs)
        if got[0] == "ok":
            layout = run()[0]
            with python_path():
                assert layout == run()[0], (op_name, m, attrs)


def test_topk_runs_in_cpp_and_equals_the_python_path():
    """topk's decomposition in C++ (argsort, the first k, take_along_axis): one fast call, the
    Python path's bytes and layout, on transposed inputs, NaNs, k = 0 and zero-size dims."""
    rng = np.random.default_rng(0)
    checked = 0
    for dt in ("float32", "float16", "int32", "int8"):
        for shp in ((5,), (3, 4), (2, 3, 4), (4, 0)):
            v = (rng.standard_normal(shp) * 3).astype(dt)
            if dt.startswith("float") and v.size:
                v.flat[0] = np.nan
            for transposed in (False, True):
                x = hwport.to_tensor(v, place=PLACE)
                if transposed and len(shp) >= 2:
                    x = hwport.transpose(x, list(range(len(shp)))[::-1])
                for axis in range(-x.ndim, x.ndim):
                    ks = {k for k in (0, 1, x.shape[axis]) if k <= x.shape[axis]}
                    for k, largest in itertools.product(ks, (True, False)):
                        before = _fast_count()
                        got = hwport.topk(x, k, axis, largest)
                        assert _fast_count() == before + 1
                        with python_path():
                            want = dispatch.call("topk", [x], {"k": k, "axis": axis,
                                                               "largest": largest})
                        assert type(got) is type(want)
                        assert all(_same_tensor(g, w, [x]) for g, w in zip(got, want,
                                                                            strict=True))
                        checked += 1
    assert checked > 500


def test_random_composites_equal_the_python_path():
    """normal and dropout: checked in C++, decomposed on the Python path: the Python path's bytes
    for every float dtype, int and float attributes, offsets, transposed inputs, p = 0 and 1,
    training off."""
    rng = np.random.default_rng(1)
    checked = 0
    for dt in ("float16", "bfloat16", "float32", "float64"):
        for shp, seed, offset, mean, std in (([3, 4], 7, 0, 0.0, 1.0), ([5], 0, 2**40, 2, 3),
                                             ([0, 2], 3, 5, -1.5, 0.25), ([], 11, 1, 0, 1)):
            with deferred_calls() as deferred:
                got = hwport.normal(mean, std, shp, seed, offset, dtype=dt)  # Paddle order
            with python_path():
                want = dispatch.call("normal", [], {"shape": shp, "seed": seed, "mean": mean,
                                                    "std": std, "offset": offset, "dtype": dt})
            assert deferred[:1] == ["normal"] and _same_tensor(got, want, []), (dt, shp)
            checked += 1
        v = rng.standard_normal((4, 6)).astype(np.float32)
        x = hwport.cast(hwport.to_tensor(v, place=PLACE), dt)
        for xs in (x, hwport.transpose(x, [1, 0])):
            for p, training, seed in ((0.5, True, 3), (0.0, True, 1), (1, True, 2),
                                      (1.0, True, 0), (0.3, False, 5), (0.9, True, 2**62)):
                with deferred_calls() as deferred:
                    got = hwport.nn.functional.dropout(xs, p, training=training, seed=seed,
                                                       offset=4)
                with python_path():
                    want = dispatch.call("dropout", [xs], {"p": p, "training": training,
                                                           "seed": seed, "offset": 4})
                assert deferred[:1] == ["dropout"], (dt, p, training)
                assert _same_tensor(got, want, [xs]), (dt, p, training)
                checked += 1
    assert checked == 64


def test_rotary_embedding_equals_the_python_path():
    """rotary_embedding (checked in C++, decomposed on the Python path): the Python path's
    bytes for every float dtype of x, cos and sin (mixed ones promote, then x's dtype),
    broadcast cos/sin, transposed x."""
    rng = np.random.default_rng(2)
    floats = ("float16", "bfloat16", "float32", "float64")
    checked = 0
    for dx, dc in itertools.product(floats, repeat=2):
        v = rng.standard_normal((4, 4)).astype(np.float32)
        x = hwport.cast(hwport.to_tensor(v, place=PLACE), dx)
        for xs, cshape in ((x, (4, 4)), (x, (4,)), (hwport.transpose(x, [1, 0]), (4, 1))):
            c = hwport.cast(hwport.to_tensor(rng.standard_normal(cshape).astype(np.float32),
                                             place=PLACE), dc)
            s = hwport.cast(hwport.to_tensor(rng.standard_normal(cshape).astype(np.float32),
                                             place=PLACE), dx)
            with deferred_calls() as deferred:
                got = hwport.nn.functional.rotary_embedding(xs, c, s)
            with python_path():
                want = dispatch.call("rotary_embedding", [xs, c, s], {})
            assert deferred[:1] == ["rotary_embedding"], (dx, dc, cshape)
            assert _same_tensor(got, want, [xs, c, s]), (dx, dc, cshape)
            checked += 1
    assert checked == 48


def test_cross_entropy_equals_the_python_path():
    """cross_entropy (checked in C++; the plugin's kernel where every label is a class, else
    the Python path, whose label check tells an ignored label from a bad one): the Python
    path's bytes for every float dtype, int32/int64 labels, every reduction, ignored rows
    (all of them: NaN), zero rows."""
    rng = np.random.default_rng(3)
    checked = 0
    for dt, lt in itertools.product(("float16", "bfloat16", "float32", "float64"),
                                    ("int32", "int64")):
        for n, labels in ((4, [0, 2, -100, 1]), (3, [7, 7, 7]), (0, []), (2, [1, 1])):
            v = rng.standard_normal((n, 3)).astype(np.float32)
            logits = hwport.cast(hwport.to_tensor(v, place=PLACE), dt)
            label = hwport.to_tensor(np.array(labels, dtype=lt), place=PLACE)
            for reduction, ignore in itertools.product(("mean", "sum", "none"), (-100, 7)):
                if any(b != ignore and not 0 <= b < 3 for b in labels):
                    with pytest.raises(IndexError, match="cross_entropy: label holds"):
                        hwport.ops.cross_entropy(logits, label, ignore_index=ignore,
                                                 reduction=reduction)
                    continue  # an out-of-range label: the Python path's error
                with deferred_calls() as deferred:
                    got = hwport.ops.cross_entropy(logits, label, ignore_index=ignore,
                                                   reduction=reduction)  # the op's mean
                with python_path():
                    want = dispatch.call("cross_entropy", [logits, label],
                                         {"reduction": reduction, "ignore_index": ignore})
                classes_only = all(0 <= b < 3 for b in labels)
                assert deferred[:1] == ([] if classes_only else ["cross_entropy"]), (dt, n)
                assert _same_tensor(got, want, [logits, label]), (dt, n)
                checked += 1
    assert checked > 100


def test_attention_equals_the_python_path():
    """scaled_dot_product_attention (checked and run in C++ by its ops.yaml formula where the
    device has no kernel): the Python decomposition's bytes for float dtypes (mixed ones
    promote), bool and float masks, scales, is_causal."""
    rng = np.random.default_rng(4)

    def t(shape, dtype):
        return hwport.cast(hwport.to_tensor(rng.standard_normal(shape).astype(np.float32),
                                            place=PLACE), dtype)

    checked = 0
    for dq, dv in itertools.product(("float16", "bfloat16", "float32", "float64"), repeat=2):
        q, k, v = t((2, 3, 4), dq), t((2, 5, 4), dq), t((1, 5, 2), dv)
        masks = [None, hwport.greater_than(t((3, 5), "float32"), t((1, 5), "float32")),
                 t((2, 1, 5), "float16"), t((5,), "float64")]
        for mask, attrs in itertools.product(masks, ({}, {"scale": 0.25}, {"scale": 3},
                                                     {"is_causal": True})):
            if mask is not None and attrs.get("is_causal"):
                continue
            with deferred_calls() as deferred:
                got = hwport.nn.functional.scaled_dot_product_attention(q, k, v, mask, **attrs)
            with python_path():
                want = dispatch.call("scaled_dot_product_attention", [q, k, v, mask], attrs)
            assert "scaled_dot_product_attention" not in deferred, (dq, dv, attrs)
            assert _same_tensor(got, want, [q, k, v, mask]), (dq, dv, attrs)
            checked += 1
    assert checked == 16 * 13
