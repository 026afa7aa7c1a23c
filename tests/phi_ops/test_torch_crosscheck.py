"""Cross-check of ~30 representative ops against PyTorch (CPU) in float32 and float64, with each
op's ops.yaml tolerance: an independent implementation of the same semantics (the numpy
reference is the oracle elsewhere; this catches a reference that is itself wrong).

Where the conventions differ, the torch call is adapted (pad lists the last dim first in torch;
linear's weight is [out, in] in torch; ties in topk follow torch's stable sort)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hwport
from hwport.phi_ops.sample_inputs import sample
from hwport.phi_ops.tolerance import assert_close
from tests.seeds import rng_for

torch = pytest.importorskip("torch")
F = torch.nn.functional

PLACE = "custom:cpu"
FLOAT_DTYPES = ["float32", "float64"]


def T(a: np.ndarray):
    """The hwport tensor of a numpy array."""
    return hwport.to_tensor(np.asarray(a), place=PLACE)


def P(a: np.ndarray):
    """The torch tensor of a numpy array (a copy)."""
    return torch.from_numpy(np.array(a, copy=True))


def check(op: str, dtype: str, got, want, what: str = "") -> None:
    """hwport result(s) against torch result(s) with op's tolerance for dtype."""
    def to_np(v):
        if isinstance(v, tuple | list):
            return tuple(to_np(x) for x in v)
        if isinstance(v, torch.Tensor):
            return v.detach().cpu().numpy()
        return v.numpy()

    g, w = to_np(got), to_np(want)
    try:
        assert_close(op, dtype, g, w)
    except AssertionError as exc:
        raise AssertionError(f"vs torch {what}: {exc}") from None


def S(dtype: str, shape, key, domain: str = "any") -> np.ndarray:
    return sample(dtype, shape, rng_for(*key), domain)


# ---- activations ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("approximate", [False, True])
def test_gelu(dtype, approximate):
    x = np.concatenate([S(dtype, (64,), ("gelu", dtype), "wide"),
                        np.array([0.0, -0.0, 1e-3, -5.0, 5.0, np.nan], dtype)])
    got = hwport.gelu(T(x), approximate=approximate)
    want = F.gelu(P(x), approximate="tanh" if approximate else "none")
    check("gelu", dtype, got, want, f"approximate={approximate}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 5.0), (0.5, 1.0)])
def test_softplus(dtype, beta, threshold):
    x = np.concatenate([S(dtype, (64,), ("softplus", dtype), "wide"),
                        np.array([-100.0, 0.0, threshold / beta, threshold / beta + 1e-3,
                                  100.0], dtype)])
    got = hwport.softplus(T(x), beta=beta, threshold=threshold)
    check("softplus", dtype, got, F.softplus(P(x), beta=beta, threshold=threshold),
          f"beta={beta}, threshold={threshold}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op,tfn", [("silu", F.silu), ("sigmoid", torch.sigmoid),
                                    ("tanh", torch.tanh), ("erf", torch.erf),
                                    ("expm1", torch.expm1), ("relu", F.relu)])
def test_elementwise_activation(dtype, op, tfn):
    x = np.concatenate([S(dtype, (7, 13), (op, dtype), "wide").reshape(-1),
                        np.array([0.0, -0.0, 1e-6, -1e-6, 30.0, -30.0, np.nan], dtype)])
    check(op, dtype, getattr(hwport, op)(T(x)), tfn(P(x)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_log1p_near_zero(dtype):
    x = np.array([1e-10, -1e-10, 1e-5, -0.5, 3.0, 0.0], dtype)
    check("log1p", dtype, hwport.log1p(T(x)), torch.log1p(P(x)))


# ---- normalization / softmax --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("normalized_ndim", [1, 2])
def test_layer_norm(dtype, affine, normalized_ndim):
    x = S(dtype, (3, 5, 8), ("ln", dtype))
    shape = x.shape[3 - normalized_ndim:]
    w = S(dtype, shape, ("ln-w", dtype)) if affine else None
    b = S(dtype, shape, ("ln-b", dtype)) if affine else None
    got = hwport.layer_norm(T(x), list(shape), None if w is None else T(w),
                            None if b is None else T(b), epsilon=1e-5)
    want = F.layer_norm(P(x), list(shape), None if w is None else P(w),
                        None if b is None else P(b), eps=1e-5)
    check("layer_norm", dtype, got, want, f"affine={affine}, ndim={normalized_ndim}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("weighted", [True, False])
def test_rms_norm_formula(dtype, weighted):
    x = S(dtype, (4, 6, 16), ("rms", dtype))
    w = S(dtype, (16,), ("rms-w", dtype)) if weighted else None
    eps = 1e-6
    tx = P(x)
    want = tx * torch.rsqrt(tx.pow(2).mean(dim=-1, keepdim=True) + eps)
    if weighted:
        want = want * P(w)
    got = hwport.rms_norm(T(x), [16], None if w is None else T(w), eps=eps)
    check("rms_norm", dtype, got, want, "formula")
    if hasattr(F, "rms_norm"):  # torch >= 2.4 has the op itself
        check("rms_norm", dtype, got,
              F.rms_norm(tx, [16], None if w is None else P(w), eps=eps), "F.rms_norm")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(dtype, axis):
    x = S(dtype, (4, 7, 5), ("softmax", dtype), "wide")
    x[0, 0, :] = -np.inf  # a fully masked slice (NaN) ...
    x[1, 2, 1] = -np.inf  # ... and a partly masked one
    check("softmax", dtype, hwport.softmax(T(x), axis=axis), F.softmax(P(x), dim=axis))
    check("log_softmax", dtype, hwport.log_softmax(T(x), axis=axis),
          F.log_softmax(P(x), dim=axis))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("axis,keepdim", [([1], False), ([0, 2], True), ([], False)])
def test_logsumexp(dtype, axis, keepdim):
    x = S(dtype, (3, 4, 5), ("lse", dtype), "wide") * 10
    x[0, 1, :] = -np.inf
    got = hwport.logsumexp(T(x), axis=axis, keepdim=keepdim)
    want = torch.logsumexp(P(x), dim=axis or list(range(3)), keepdim=keepdim)
    check("logsumexp", dtype, got, want, f"axis={axis}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("unbiased", [True, False])
@pytest.mark.parametrize("axis,keepdim", [([1], False), ([0, 2], True), (None, False)])
def test_var_std(dtype, unbiased, axis, keepdim):
    x = S(dtype, (3, 4, 5), ("var", dtype)) + 100.0  # an offset: a one-pass formula fails
    dim = axis if axis is not None else list(range(3))
    for op, tfn in (("var", torch.var), ("std", torch.std)):
        got = getattr(hwport, op)(T(x), axis=axis, keepdim=keepdim, unbiased=unbiased)
        want = tfn(P(x), dim=dim, unbiased=unbiased, keepdim=keepdim)
        check(op, dtype, got, want, f"axis={axis}, unbiased={unbiased}")


@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, "int32", "int64"])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_cumsum_cumprod(dtype, axis):
    x = S(dtype, (4, 6), ("cum", dtype), "near1")
    tx = P(x)
    flat = tx.reshape(-1) if axis is None else tx
    dim = 0 if axis is None else axis
    want_dtype = torch.int64 if dtype.startswith("int") else tx.dtype
    check("cumsum", dtype, hwport.cumsum(T(x), axis=axis),
          torch.cumsum(flat, dim=dim, dtype=want_dtype))
    check("cumprod", dtype, hwport.cumprod(T(x), dim=axis),
          torch.cumprod(flat, dim=dim, dtype=want_dtype))


# ---- linear algebra / attention ------------------------------------------------------------------

MATMUL_CASES = [
    ((3, 4), (4, 5), False, False),
    ((4, 3), (4, 5), True, False),
    ((3, 4), (5, 4), False, True),
    ((2, 4, 3), (1, 5, 4), True, True),
    ((2, 1, 3, 4), (5, 4, 6), False, False),
    ((4,), (4, 5), False, False),
    ((3, 4), (4,), False, False),
    ((6,), (6,), False, False),
]


@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, "int32"])
@pytest.mark.parametrize("xs,ys,tx,ty", MATMUL_CASES, ids=[str(c[:2]) + f"-{c[2]}{c[3]}"
                                                           for c in MATMUL_CASES])
def test_matmul(dtype, xs, ys, tx, ty):
    dom = "small" if dtype == "int32" else "any"
    x, y = S(dtype, xs, ("mm", dtype, xs), dom), S(dtype, ys, ("mm-y", dtype, ys), dom)
    a, b = P(x), P(y)
    if tx and a.ndim >= 2:
        a = a.transpose(-1, -2)
    if ty and b.ndim >= 2:
        b = b.transpose(-1, -2)
    got = hwport.matmul(T(x), T(y), transpose_x=tx, transpose_y=ty)
    check("matmul", dtype, got, torch.matmul(a, b))
    if not (tx or ty):
        check("matmul", dtype, T(x) @ T(y), torch.matmul(a, b), "@ operator")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("bias", [True, False])
def test_linear(dtype, bias):
    x, w = S(dtype, (2, 3, 5), ("lin", dtype)), S(dtype, (5, 4), ("lin-w", dtype))
    b = S(dtype, (4,), ("lin-b", dtype)) if bias else None
    got = hwport.linear(T(x), T(w), None if b is None else T(b))
    want = F.linear(P(x), P(w).T.contiguous(), None if b is None else P(b))
    check("linear", dtype, got, want)


SDPA_CASES = ["plain", "causal", "causal-L<S", "bool-mask", "float-mask", "scale", "batch-bcast"]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("kind", SDPA_CASES)
def test_scaled_dot_product_attention(dtype, kind):
    key = ("sdpa", dtype, kind)
    L, S_, E, Ev = (3, 5, 8, 4) if kind == "causal-L<S" else (5, 5, 8, 4) if kind == "causal" \
        else (4, 6, 8, 5)
    qb, kb = ((2, 1), (3,)) if kind == "batch-bcast" else ((2,), (2,))
    q = S(dtype, (*qb, L, E), (*key, "q"))
    k = S(dtype, (*kb, S_, E), (*key, "k"))
    v = S(dtype, (*kb, S_, Ev), (*key, "v"))
    mask = None
    if kind == "bool-mask":
        mask = S("bool", (L, S_), (*key, "m")) | np.eye(L, S_, dtype=bool)
    elif kind == "float-mask":
        mask = S(dtype, (1, L, S_), (*key, "m"))
    causal = kind.startswith("causal")
    scale = 0.3 if kind == "scale" else None
    got = hwport.scaled_dot_product_attention(T(q), T(k), T(v),
                                              None if mask is None else T(mask),
                                              is_causal=causal, scale=scale)
    tq, tk, tv = P(q), P(k), P(v)
    if kind == "batch-bcast":  # broadcast the batch dims explicitly for torch
        tq, tk, tv = tq.expand(2, 3, L, E), tk.expand(2, 3, S_, E), tv.expand(2, 3, S_, Ev)
    want = F.scaled_dot_product_attention(tq, tk, tv,
                                          attn_mask=None if mask is None else P(mask),
                                          is_causal=causal, scale=scale)
    check("scaled_dot_product_attention", dtype, got, want, kind)


# ---- losses / lookup --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy(dtype, reduction, ignore_index):
    logits = S(dtype, (8, 5), ("ce", dtype), "wide")
    label = np.array([0, 4, -100, 2, 2, 1, 3, 2], np.int64)
    if ignore_index != -100:
        label[2] = 1
    got = hwport.cross_entropy(T(logits), T(label), reduction=reduction,
                               ignore_index=ignore_index)
    want = F.cross_entropy(P(logits), P(label), reduction=reduction, ignore_index=ignore_index)
    check("cross_entropy", dtype, got, want, f"{reduction}, ignore_index={ignore_index}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_embedding(dtype):
    w = S(dtype, (10, 4), ("emb", dtype))
    idx = np.array([[0, 9, 3], [3, 3, 1]], np.int64)
    check("embedding", dtype, hwport.embedding(T(idx), T(w)), F.embedding(P(idx), P(w)))


# ---- sorting ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, "int32"])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [-1, 0])
def test_sort_argsort_stable(dtype, descending, axis):
    x = S(dtype, (6, 9), ("sort", dtype), "ties")  # many ties: stability is visible
    if dtype != "int32":
        x[1, 2] = np.nan
        x[3, 0] = np.nan
        x[4, 4] = -np.inf
    values, indices = torch.sort(P(x), dim=axis, descending=descending, stable=True)
    check("sort", dtype, hwport.sort(T(x), axis=axis, descending=descending), values)
    check("argsort", dtype, hwport.argsort(T(x), axis=axis, descending=descending), indices)


@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, "int32"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype, largest):
    x = S(dtype, (5, 9), ("topk", dtype), "ties")
    k = 4
    # ties: the lower index first, i.e. torch's stable sort (torch.topk leaves tie order open)
    values, indices = torch.sort(P(x), dim=-1, descending=largest, stable=True)
    got = hwport.topk(T(x), k=k, largest=largest)
    check("topk", dtype, got, (values[..., :k], indices[..., :k]))
    distinct = np.argsort(S("float64", (5, 9), ("topk-d", dtype)), axis=-1).astype(dtype)
    tv, ti = torch.topk(P(distinct), k, dim=-1, largest=largest, sorted=True)
    check("topk", dtype, hwport.topk(T(distinct), k=k, largest=largest), (tv, ti),
          "torch.topk, distinct values")


# ---- elementwise semantics --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (None, 0.5), (-0.5, None), (1.0, -1.0)])
def test_clip(dtype, bounds):
    lo, hi = bounds
    x = np.concatenate([S(dtype, (40,), ("clip", dtype), "wide"), np.array([np.nan], dtype)])
    check("clip", dtype, hwport.clip(T(x), min=lo, max=hi), torch.clamp(P(x), min=lo, max=hi),
          f"bounds={bounds}")


@pytest.mark.parametrize("dtype", [*FLOAT_DTYPES, "int32", "int64"])
def test_remainder_floor_divide_with_negatives(dtype):
    x = np.array([7, -7, 7, -7, 0, 5, -5, 13, -13, 1], dtype)
    y = np.array([2, 2, -2, -2, 3, -3, 3, 4, -4, 7], dtype)
    if dtype in FLOAT_DTYPES:
        x = np.concatenate([x, S(dtype, (30,), ("rem", dtype), "wide")])
        y = np.concatenate([y, S(dtype, (30,), ("rem-y", dtype), "nonzero")])
        x[-1], y[-1] = 5.5, -2.0
    check("remainder", dtype, hwport.remainder(T(x), T(y)), torch.remainder(P(x), P(y)))
    check("remainder", dtype, T(x) % T(y), torch.remainder(P(x), P(y)), "% operator")
    check("floor_divide", dtype, hwport.floor_divide(T(x), T(y)),
          torch.floor_divide(P(x), P(y)))
    check("floor_divide", dtype, T(x) // T(y), torch.floor_divide(P(x), P(y)), "// operator")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_round_half_to_even(dtype):
    x = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 2.4999, 2.5001, 1e15 + 0.5, -0.0],
                 dtype)
    check("round", dtype, hwport.round(T(x)), torch.round(P(x)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_maximum_minimum_propagate_nan(dtype):
    x = np.array([1.0, np.nan, 2.0, -np.inf, np.nan], dtype)
    y = np.array([np.nan, 1.0, 3.0, 0.0, np.nan], dtype)
    check("maximum", dtype, hwport.maximum(T(x), T(y)), torch.maximum(P(x), P(y)))
    check("minimum", dtype, hwport.minimum(T(x), T(y)), torch.minimum(P(x), P(y)))
    m = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, -1.0]], dtype)
    check("max", dtype, hwport.max(T(m), axis=[1]), torch.amax(P(m), dim=1))
    check("min", dtype, hwport.min(T(m), axis=[1]), torch.amin(P(m), dim=1))


# ---- shape / indexing -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("pad", [[1, 2], [1, 0, 2, 3], [0, 1, 1, 0, 2, 2]])
def test_pad(dtype, pad):
    x = S(dtype, (2, 3, 4), ("pad", dtype))
    # ours: (before, after) pairs from the first dim; torch: from the last dim
    pairs = [pad[i:i + 2] for i in range(0, len(pad), 2)]
    torch_pad = [v for pair in reversed(pairs) for v in pair]
    torch_pad = [0, 0] * (3 - len(pairs)) + torch_pad
    got = hwport.pad(T(x), pad=pad, value=1.5)
    check("pad", dtype, got, F.pad(P(x), torch_pad, value=1.5), f"pad={pad}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shifts,axis", [([2], []), ([1, -2], [0, -1]), ([7], [1])])
def test_roll(dtype, shifts, axis):
    x = S(dtype, (3, 5), ("roll", dtype))
    want = torch.roll(P(x), shifts=shifts[0]) if not axis else \
        torch.roll(P(x), shifts=shifts, dims=axis)
    check("roll", dtype, hwport.roll(T(x), shifts=shifts, axis=axis), want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("diagonal", [0, 1, -2])
def test_tril_triu(dtype, diagonal):
    x = S(dtype, (2, 4, 5), ("tri", dtype))
    check("tril", dtype, hwport.tril(T(x), diagonal=diagonal), torch.tril(P(x), diagonal))
    check("triu", dtype, hwport.triu(T(x), diagonal=diagonal), torch.triu(P(x), diagonal))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_along_axis(dtype, axis):
    x = S(dtype, (4, 5, 3), ("take", dtype))
    shape = list(x.shape)
    shape[axis] = 6
    idx = rng_for("take-i", dtype, axis).integers(0, x.shape[axis], shape).astype(np.int64)
    check("take_along_axis", dtype, hwport.take_along_axis(T(x), T(idx), axis=axis),
          torch.take_along_dim(P(x), P(idx), dim=axis))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_index_copy_and_add(dtype, axis):
    x = S(dtype, (5, 6), ("scatter", dtype))
    upd_shape = [5, 6]
    upd_shape[axis] = 3
    u = S(dtype, upd_shape, ("scatter-u", dtype, axis))
    unique = np.array([4, 0, 2], np.int64)
    dups = np.array([1, 3, 1], np.int64)
    check("scatter", dtype, hwport.scatter(T(x), T(unique), T(u), axis=axis),
          P(x).index_copy(axis, P(unique), P(u)), "index_copy")
    # reduce="add" accumulates in float64 and rounds once (phi_ops.reference); torch's float32
    # index_add rounds after every addition, so torch runs it in float64 here
    want = P(x).double().index_add(axis, P(dups), P(u).double()).to(getattr(torch, dtype))
    check("scatter", dtype, hwport.scatter(T(x), T(dups), T(u), axis=axis, reduce="add"),
          want, "index_add with duplicates")
    check("index_select", dtype, hwport.index_select(T(x), T(dups), axis=axis),
          torch.index_select(P(x), axis, P(dups)))
    check("gather", dtype, hwport.gather(T(x), T(unique), axis=axis),
          torch.index_select(P(x), axis, P(unique)))


# ---- creation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("start,stop,num", [(0.0, 1.0, 7), (5.0, -3.0, 17), (2.0, 9.0, 1),
                                            (-1.0, 1.0, 1001)])
def test_linspace(dtype, start, stop, num):
    got = hwport.linspace(start, stop, num, dtype=dtype, place=PLACE)
    want = torch.linspace(start, stop, num, dtype=getattr(torch, dtype))
    check("linspace", dtype, got, want)


@pytest.mark.parametrize("args,dtype", [((0, 10, 3), "int64"), ((10, -3, -2), "int32"),
                                        ((0.5, 3.0, 0.25), "float32"),
                                        ((0.0, 1.0, 0.1), "float64"),
                                        ((-2.0, 2.0, 0.5), "float32")])
def test_arange(args, dtype):
    got = hwport.arange(*args, dtype=dtype, place=PLACE)
    want = torch.arange(*args, dtype=getattr(torch, dtype))
    check("arange", dtype, got, want, f"arange{args}")


def test_arange_inferred_dtypes():
    assert str(hwport.arange(5, place=PLACE).dtype) == str(torch.arange(5).dtype).split(".")[1]
    got = hwport.arange(0, 2.5, 0.5, place=PLACE)
    assert str(got.dtype) == "float32"
    check("arange", "float32", got, torch.arange(0, 2.5, 0.5))


def test_gelu_forms_differ_as_torch_says():
    """The tanh form is an approximation: it must differ from the exact one by what torch's
    does (sanity that approximate= is honored, not ignored)."""
    x = np.linspace(-4, 4, 101).astype(np.float64)
    exact = hwport.gelu(T(x), approximate=False).numpy()
    approx = hwport.gelu(T(x), approximate=True).numpy()
    t_gap = (F.gelu(P(x), approximate="tanh") - F.gelu(P(x))).abs().max().item()
    gap = float(np.abs(exact - approx).max())
    assert t_gap > 1e-5 and math.isclose(gap, t_gap, rel_tol=1e-6), (gap, t_gap)
