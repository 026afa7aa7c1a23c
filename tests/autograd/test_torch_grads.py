"""Every differentiable op x the oracle suite's float32/float64 cases: the engine's gradients
(and, in float64, its second derivatives through create_graph=True) against PyTorch's autograd
on the same inputs and cotangents (test_gradcheck.py checks them
against finite differences of the numpy oracle; this is the second, independent oracle).

Each op has a torch spelling of its semantics below (the kernel-level attrs of the case, as
ops.yaml names them). Ops torch has no function for (rotary_embedding, the fused *_grad
composites) are written out in torch, and torch differentiates that. The whole gradient is
compared, not probes; inputs are the oracle's (no NaN/Inf specials, no kinks by sampling)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hwport
from hwport.phi_ops import sample_inputs

from .test_gradcheck import DIFFERENTIABLE, OPS, PLACE, SKIP_NAMES, _flat_outputs, run_case
from .test_gradcheck import _get as get_input

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _dims(axis, ndim: int) -> list[int]:
    """A reduction's axes as torch dims (None / []: all)."""
    if axis is None or axis == []:
        return list(range(ndim))
    return [axis] if isinstance(axis, int) else list(axis)


def _reduce(fn):
    def run(x, a):
        if x.ndim == 0:
            return fn(x, [], False) if fn is not None else x
        return fn(x, _dims(a.get("axis"), x.ndim), a.get("keepdim", False))
    return run


def _prod(x, dims, keepdim):
    for d in sorted((d % x.ndim for d in dims), reverse=True):
        x = torch.prod(x, dim=d, keepdim=keepdim)
    return x


def _var(x, a, std):
    fn = torch.std if std else torch.var
    dims = _dims(a.get("axis"), x.ndim) if x.ndim else None
    return fn(x, dim=dims, correction=1 if a.get("unbiased", True) else 0,
              keepdim=a.get("keepdim", False))


def _slice(x, a):
    idx = [slice(None)] * x.ndim
    strides = a.get("strides") or [1] * len(a["axes"])
    for axis, s, e, st in zip(a["axes"], a["starts"], a["ends"], strides, strict=True):
        ax = axis % x.ndim
        idx[ax] = list(range(*slice(s, e, st).indices(x.shape[ax])))
    out = x
    for ax, sel in enumerate(idx):  # torch has no negative steps: index with the positions
        if isinstance(sel, list):
            out = torch.index_select(out, ax, torch.tensor(sel, dtype=torch.long))
    return out


def _split(x, a):
    axis = a["axis"] % x.ndim
    n, sections = x.shape[axis], a["sections"]
    if a.get("_sizes") is False and isinstance(sections, list) and len(sections) == 1:
        sections = sections[0]
    if isinstance(sections, int):
        sizes = [n // sections] * sections
    else:
        sizes = list(sections)
        if -1 in sizes:
            sizes[sizes.index(-1)] = n - sum(s for s in sizes if s != -1)
    return torch.split(x, sizes, dim=axis)


def _pad(x, a):
    pad, widths = a["pad"], []
    for i in reversed(range(len(pad) // 2)):  # torch lists the last padded dim first
        widths += [pad[2 * i], pad[2 * i + 1]]
    widths = [0, 0] * (x.ndim - len(pad) // 2) + widths
    return TF.pad(x, widths, value=float(a.get("value", 0.0)))


def _scatter(x, index, updates, a):
    axis = a["axis"] % x.ndim
    updates = updates.to(x.dtype)
    if a["reduce"] == "add":
        return torch.index_add(x, axis, index, updates)
    # assign, the last occurrence of an index wins: keep only the last ones
    last = {int(v): i for i, v in enumerate(index.tolist())}
    keep = torch.tensor(sorted(last.values()), dtype=torch.long)
    return torch.index_copy(x, axis, index[keep], torch.index_select(updates, axis, keep))


def _layer_norm(x, w, b, a):
    shape = list(x.shape[x.ndim - a["normalized_ndim"]:])
    return TF.layer_norm(x, shape, w, b, eps=a["epsilon"])


def _layer_norm_math(x, w, a):
    dims = list(range(x.ndim - a["normalized_ndim"], x.ndim))
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) * (x - mean)).mean(dim=dims, keepdim=True)
    y = (x - mean) * torch.rsqrt(var + a["epsilon"])
    return y if w is None else y * w


def _rms_norm(x, w, a):
    dims = list(range(x.ndim - a["normalized_ndim"], x.ndim))
    y = x * torch.rsqrt((x * x).mean(dim=dims, keepdim=True) + a["epsilon"])
    return y if w is None else y * w


def _vjp_of(forward):
    """A fused backward op (x, grad, weight?) as torch's own VJP of `forward`, kept
    differentiable (create_graph) so that torch differentiates the VJP in turn."""
    def run(x, grad, weight, a):
        xr = x if x.requires_grad else x.detach().requires_grad_(True)
        with torch.enable_grad():
            (gx,) = torch.autograd.grad(forward(xr, weight, a), xr, grad, create_graph=True)
        return gx
    return run


def _attention(q, k, v, mask, a):
    scale = a.get("scale")
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.to(torch.promote_types(q.dtype, k.dtype))
    return TF.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           is_causal=bool(a.get("is_causal")), scale=scale)


def _cross_entropy(logits, label, a):
    return TF.cross_entropy(logits, label.long(), reduction=a["reduction"],
                            ignore_index=a["ignore_index"])


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def _promoted(*ts):
    dt = ts[0].dtype
    for t in ts[1:]:
        dt = torch.promote_types(dt, t.dtype)
    return torch.broadcast_tensors(*(t.to(dt) for t in ts))


def _gelu_grad(x, g, tanh):
    """gelu's VJP at x for grad (broadcast together): torch's, kept differentiable."""
    x, g = _promoted(x, g)
    with torch.enable_grad():
        xr = x if x.requires_grad else x.detach().requires_grad_(True)
        y = TF.gelu(xr, approximate="tanh" if tanh else "none")
        (gx,) = torch.autograd.grad(y, xr, g, create_graph=True)
    return gx


def _matmul(x, y, a):
    dt = torch.promote_types(x.dtype, y.dtype)
    x, y = x.to(dt), y.to(dt)
    return torch.matmul(x.transpose(-1, -2) if a["transpose_x"] and x.ndim >= 2 else x,
                        y.transpose(-1, -2) if a["transpose_y"] and y.ndim >= 2 else y)


def _ints(v) -> list[int]:
    return [v] if isinstance(v, int) else list(v)


def _same(name):
    return lambda x, a: getattr(torch, name)(x)


def _binary(fn):
    return lambda x, y, a: fn(x, y)


# op -> torch function of (inputs..., attrs)
TORCH = {
    **{n: _same(n) for n in ("abs", "ceil", "cos", "erf", "exp", "expm1", "floor", "log",
                             "log1p", "log2", "neg", "reciprocal", "relu", "round", "rsqrt",
                             "sigmoid", "sign", "sin", "sqrt", "square", "tan", "tanh")},
    "silu": lambda x, a: TF.silu(x),
    "gelu": lambda x, a: TF.gelu(x, approximate="tanh" if a.get("approximate") else "none"),
    "softplus": lambda x, a: TF.softplus(x, beta=a["beta"], threshold=a["threshold"]),
    "cast": lambda x, a: x.to(getattr(torch, str(a["dtype"]))),
    "copy": lambda x, a: x.clone(),
    "add": _binary(torch.add), "subtract": _binary(torch.sub), "multiply": _binary(torch.mul),
    "divide": _binary(torch.div), "maximum": _binary(torch.maximum),
    "minimum": _binary(torch.minimum), "pow": _binary(torch.pow),
    "remainder": _binary(torch.remainder),
    "gelu_grad": lambda x, g, a: _gelu_grad(x, g, False),
    "gelu_tanh_grad": lambda x, g, a: _gelu_grad(x, g, True),
    "clip": lambda x, a: (x.clone() if a["min"] is None and a["max"] is None
                          else torch.clamp(x, a["min"], a["max"])),
    "where": lambda c, x, y, a: torch.where(c.bool(), x, y),
    "concat": lambda xs, a: torch.cat(xs, dim=a["axis"]),
    "stack": lambda xs, a: torch.stack(xs, dim=a["axis"]),
    "expand": lambda x, a: x.expand(*a["shape"]),
    "flatten": lambda x, a: (x.reshape(1) if x.ndim == 0 else
                             torch.flatten(x, a["start_axis"], a["stop_axis"])),
    "flip": lambda x, a: torch.flip(x, [a["axis"]] if isinstance(a["axis"], int)
                                    else list(a["axis"])) if x.ndim else x.clone(),
    "reshape": lambda x, a: x.reshape(a["shape"]),
    "roll": lambda x, a: (torch.roll(x, _ints(a["shifts"]), _ints(a["axis"])) if a["axis"]
                          else torch.roll(x.reshape(-1), _ints(a["shifts"])[0]).reshape(x.shape)),
    "slice": _slice, "split": _split, "pad": _pad,
    "squeeze": lambda x, a: (torch.squeeze(x, tuple(_ints(a["axis"]))) if a["axis"]
                             else torch.squeeze(x)),
    "unsqueeze": lambda x, a: x.reshape(
        np.expand_dims(np.empty(x.shape), tuple(ax % (x.ndim + len(_ints(a["axis"])))
                                                for ax in _ints(a["axis"]))).shape),
    "tile": lambda x, a: torch.tile(x, tuple(a["repeats"])),
    "transpose": lambda x, a: (x.clone() if x.ndim == 0 else x.permute(*a["perm"])
                               if a["perm"] is not None else x.permute(*reversed(range(x.ndim)))),
    "tril": lambda x, a: torch.tril(x, a["diagonal"]),
    "triu": lambda x, a: torch.triu(x, a["diagonal"]),
    "sum": _reduce(lambda x, d, k: torch.sum(x, dim=d, keepdim=k)),
    "mean": _reduce(lambda x, d, k: torch.mean(x, dim=d, keepdim=k)),
    "prod": _reduce(_prod),
    "max": _reduce(lambda x, d, k: torch.amax(x, dim=d, keepdim=k)),
    "min": _reduce(lambda x, d, k: torch.amin(x, dim=d, keepdim=k)),
    "logsumexp": _reduce(lambda x, d, k: torch.logsumexp(x, dim=d, keepdim=k)),
    "var": lambda x, a: _var(x, a, False), "std": lambda x, a: _var(x, a, True),
    "cumsum": lambda x, a: (torch.cumsum(x.reshape(-1), 0) if a.get("axis") is None
                            else torch.cumsum(x, a["axis"])),
    "cumprod": lambda x, a: (torch.cumprod(x.reshape(-1), 0) if a.get("axis") is None
                             else torch.cumprod(x, a["axis"])),
    "matmul": _matmul,
    "linear": lambda x, w, b, a: TF.linear(x, w.t(), b),
    "embedding": lambda i, w, a: TF.embedding(i.long(), w),
    "gather": lambda x, i, a: torch.index_select(x, a["axis"] % x.ndim, i.long()),
    "index_select": lambda x, i, a: torch.index_select(x, a["axis"] % x.ndim, i.long()),
    "take_along_axis": lambda x, i, a: torch.take_along_dim(x, i.long(), dim=a["axis"]),
    "scatter": lambda x, i, u, a: _scatter(x, i.long(), u, a),
    "sort": lambda x, a: (x.clone() if x.ndim == 0 else
                          torch.sort(x, dim=a["axis"], descending=a["descending"],
                                     stable=True).values),
    # ties (the oracle has them) in index order, as hwport's topk takes them
    "topk": lambda x, a: (x.clone() if x.ndim == 0 else
                          torch.sort(x, dim=a["axis"], descending=a["largest"], stable=True)
                          .values.narrow(a["axis"], 0, a["k"])),
    "softmax": lambda x, a: TF.softmax(x, dim=a["axis"]) if x.ndim else torch.ones_like(x),
    "log_softmax": lambda x, a: (TF.log_softmax(x, dim=a["axis"]) if x.ndim
                                 else torch.zeros_like(x)),
    "softmax_grad": lambda out, g, a: (g - (g * out).sum(dim=a["axis"] if out.ndim else (),
                                                       keepdim=True)) * out,
    "layer_norm": _layer_norm,
    "rms_norm": _rms_norm,
    # spelled in plain ops: torch's own layer_norm is wrong at third order (its double
    # backward is not differentiated correctly), which the second-order check reaches here
    "layer_norm_grad": _vjp_of(_layer_norm_math),
    "rms_norm_grad": _vjp_of(_rms_norm),
    "rotary_embedding": lambda x, c, s, a: x * c + _rotate_half(x) * s,
    "scaled_dot_product_attention": _attention,
    "cross_entropy": _cross_entropy,
    "cross_entropy_grad": lambda z, label, g, a: _vjp_of(
        lambda zz, gg, aa: _cross_entropy(zz, label, aa))(z, g, None, a),
}
# dropout draws its mask from hwport's Philox stream: no torch spelling of the same mask
# (its gradient, the mask times the scale, is checked against finite differences).
NOT_IN_TORCH = {"dropout"}


def test_every_differentiable_op_has_a_torch_spelling():
    assert set(DIFFERENTIABLE) - NOT_IN_TORCH == set(TORCH), (
        sorted(set(DIFFERENTIABLE) - NOT_IN_TORCH - set(TORCH)),
        sorted(set(TORCH) - set(DIFFERENTIABLE)))


def _cases(dtype: str) -> list[sample_inputs.Case]:
    out = []
    for op in DIFFERENTIABLE:
        if op in NOT_IN_TORCH:
            continue
        for c in sample_inputs.cases_for(op, dtype):
            if not (c.large or any(s in c.name for s in SKIP_NAMES)):
                out.append(c)
    return out


def _torch_inputs(case, wheres):
    """The case's inputs as torch tensors; the floating ones of `wheres` need gradients."""
    leaves = {}

    def conv(v, where):
        if v is None:
            return None
        t = torch.from_numpy(np.array(v, copy=True))
        if where in wheres:
            t.requires_grad_(True)
            leaves[where] = t
        return t

    out = []
    for i, v in enumerate(case.inputs):
        out.append([conv(a, (i, j)) for j, a in enumerate(v)] if isinstance(v, list)
                   else conv(v, (i, None)))
    return out, leaves


# (rtol, atol per unit of the gradient's scale and per sqrt(element count): sums of rounding)
TOL = {"float32": (2e-4, 2e-5), "float64": (1e-9, 1e-11)}


def _check(case: sample_inputs.Case, order: int = 1) -> None:
    """The case's gradients (order 1), or the gradients of <grads, w> for a random w (order 2:
    double backward through create_graph), against torch's."""
    wheres, leaves, outs = run_case(case)
    t_in, t_leaves = _torch_inputs(case, wheres)
    attrs = {a.name: a.default for a in OPS[case.op].attrs if not a.required}
    attrs.update(case.attrs)
    t_outs = _flat_outputs(TORCH[case.op](*t_in, attrs))
    assert len(outs) >= len(t_outs), case.id
    rng = np.random.default_rng(11)
    used, cot, t_used, t_cot = [], [], [], []
    for o, to in zip(outs, t_outs, strict=False):
        if not (o.dtype.is_floating_point and not o.stop_gradient):
            continue
        assert list(to.shape) == o.shape, f"{case.id}: torch output {list(to.shape)}"
        v = rng.standard_normal(o.shape).astype(o.numpy().dtype)
        used.append(o)
        cot.append(hwport.to_tensor(v, place=PLACE))
        if to.requires_grad:
            t_used.append(to)
            t_cot.append(torch.from_numpy(np.asarray(v, dtype=np.float64)).to(to.dtype))
    if not used:
        pytest.skip("no differentiable output")
    t_targets = [t_leaves[w] for w in wheres]
    second = order == 2
    grads = hwport.grad(used, leaves, grad_outputs=cot, allow_unused=True, create_graph=second)
    t_grads = (torch.autograd.grad(t_used, t_targets, t_cot, allow_unused=True,
                                   create_graph=second) if t_used else [None] * len(wheres))
    if second:
        grads, t_grads = _second(leaves, grads, t_targets, t_grads, rng)
    rtol, atol = TOL[case.dtype]
    for where, g, tg in zip(wheres, grads, t_grads, strict=True):
        a = get_input(case.inputs, where)
        got = np.zeros(a.shape) if g is None else g.numpy().astype(np.float64)
        want = (np.zeros(a.shape) if tg is None or tg._is_zerotensor()
                else tg.detach().numpy().astype(np.float64))
        scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
        name = OPS[case.op].inputs[where[0]].name
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale * math.sqrt(
            max(a.size, 1)), err_msg=f"{case.id}: d{'2' if second else ''}/d{name} vs torch "
                                     f"({sample_inputs.describe(case)})")


def _second(leaves, grads, t_leaves, t_grads, rng):
    """d <grads, w> / d leaves on both sides (w random; None where nothing depends)."""
    if any(g is not None and not np.isfinite(g.numpy()).all() for g in grads):
        pytest.skip("a first derivative is not finite (var of one element): no second")
    ws = [None if g is None else rng.standard_normal(g.shape) for g in grads]
    terms = [(g * hwport.to_tensor(w.astype(g.numpy().dtype), place=PLACE)).sum()
             for g, w in zip(grads, ws, strict=True) if g is not None and not g.stop_gradient]
    t_terms = [(tg * torch.from_numpy(w).to(tg.dtype)).sum()
               for tg, w in zip(t_grads, ws, strict=True) if tg is not None and tg.requires_grad]
    got = (hwport.grad([sum(terms[1:], terms[0])], leaves, allow_unused=True) if terms
           else [None] * len(leaves))
    want = (torch.autograd.grad([sum(t_terms[1:], t_terms[0])], t_leaves, allow_unused=True)
            if t_terms else [None] * len(leaves))
    return got, want


@pytest.mark.parametrize("case", _cases("float64"), ids=lambda c: c.id)
def test_float64_gradients_match_torch(case: sample_inputs.Case) -> None:
    _check(case)


@pytest.mark.parametrize("case", _cases("float32"), ids=lambda c: c.id)
def test_float32_gradients_match_torch(case: sample_inputs.Case) -> None:
    _check(case)


@pytest.mark.parametrize("case", _cases("float64"), ids=lambda c: c.id)
def test_float64_double_backward_matches_torch(case: sample_inputs.Case) -> None:
    """create_graph=True works for every rule: second derivatives against torch's."""
    _check(case, order=2)


SATURATED = [c for d in ("float64", "float32")
             for c in sample_inputs.cases_for("scaled_dot_product_attention", d)
             if c.name == "huge-scale"]


@pytest.mark.parametrize("case", SATURATED, ids=lambda c: c.id)
def test_saturated_attention_gradients_match_torch(case: sample_inputs.Case) -> None:
    """The oracle's huge-scale attention (scale 1e300), left out of the lists above by
    SKIP_NAMES: in float64 the softmax saturates to one-hot rows, whose true gradient with
    respect to q and k is exactly 0 (not NaN from inf * 0 in the rule); in float32 the scores
    overflow and both libraries give NaN."""
    assert case.attrs["scale"] == 1e300
    _check(case)
    if case.dtype == "float64":
        _check(case, order=2)
        _, leaves, outs = run_case(case)
        grads = hwport.grad(outs, leaves, grad_outputs=[hwport.ones_like(outs[0])])
        for g in grads[:2]:  # q, k
            np.testing.assert_array_equal(g.numpy(), np.zeros(g.shape))
        assert np.isfinite(grads[2].numpy()).all() and np.abs(grads[2].numpy()).sum() > 0
