"""hwport.nn.clip (ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue): Paddle's call form
on (param, grad) lists and the optimizer's bucket path, against numpy; the global norm also
against torch.nn.utils.clip_grad_norm_ (torch divides by norm + 1e-6, Paddle by the norm)."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport import optimizer as o
from hwport.nn import clip
from tests.optimizer.standin import make_param, set_grad

SHAPES = [[3, 4], [4], [4], [2, 5], [4], [7]]


def _grads(scale, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * scale).astype(dtype) for s in SHAPES]


def _np_clip(kind, gs, c):
    gs = [g.astype(np.float64) for g in gs]
    if kind == "global":
        norm = np.sqrt(sum((g * g).sum() for g in gs))
        return [g * c / max(norm, c) for g in gs]
    if kind == "norm":
        return [g * c / max(np.sqrt((g * g).sum()), c) for g in gs]
    return [np.clip(g, -c, c) for g in gs]


MAKE = {"global": clip.ClipGradByGlobalNorm, "norm": clip.ClipGradByNorm,
        "value": clip.ClipGradByValue}


@pytest.mark.parametrize("kind", sorted(MAKE))
@pytest.mark.parametrize("scale", [0.05, 3.0])
def test_call_form(kind, scale):
    gs = _grads(scale)
    ps = [make_param(np.zeros_like(g), name=f"p{i}") for i, g in enumerate(gs)]
    ps[2].need_clip = False
    pairs = [(p, hwport.to_tensor(g)) for p, g in zip(ps, gs, strict=True)]
    pairs.append((make_param(np.zeros(2, np.float32)), None))
    out = MAKE[kind](0.5)(pairs)
    keep = [i for i in range(len(gs)) if i != 2]
    want = _np_clip(kind, [gs[i] for i in keep], 0.5)
    assert out[2][1] is pairs[2][1] and out[-1][1] is None
    for i, w in zip(keep, want, strict=True):
        assert out[i][0] is ps[i]
        np.testing.assert_allclose(out[i][1].numpy(), w, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("kind", sorted(MAKE))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bucket_path_in_sgd(kind, dtype):
    """SGD(lr=1) from zero: the parameters become minus the clipped gradients."""
    gs = _grads(2.0, seed=1, dtype=dtype)
    ps = [make_param(np.zeros_like(g), name=f"p{i}") for i, g in enumerate(gs)]
    ps[0].need_clip = False
    for p, g in zip(ps, gs, strict=True):
        set_grad(p, g)
    o.SGD(1.0, parameters=ps, grad_clip=MAKE[kind](0.7)).step()
    want = [gs[0].astype(np.float64)] + _np_clip(kind, gs[1:], 0.7)
    tol = 1e-12 if dtype == np.float64 else 2e-6
    for p, w in zip(ps, want, strict=True):
        np.testing.assert_allclose(-p.numpy(), w, rtol=tol, atol=tol)


def test_global_norm_spans_dtypes_and_float16():
    gs = _grads(1.0, seed=2)
    ps = [make_param(g * 0, name=f"p{i}", dtype="float16" if i % 2 else None)
          for i, g in enumerate(gs)]
    for p, g in zip(ps, gs, strict=True):
        set_grad(p, g)
    widened = [p.grad.numpy().astype(np.float64) for p in ps]
    o.SGD(1.0, parameters=ps, grad_clip=clip.ClipGradByGlobalNorm(1.0),
          multi_precision=True).step()
    want = _np_clip("global", widened, 1.0)
    for p, w in zip(ps, want, strict=True):
        np.testing.assert_allclose(-p.numpy().astype(np.float64), w, rtol=2e-3, atol=1e-4)


torch = pytest.importorskip("torch")


def test_global_norm_against_torch():
    gs = _grads(4.0, seed=3)
    ts = [torch.nn.Parameter(torch.zeros(g.shape)) for g in gs]
    for t, g in zip(ts, gs, strict=True):
        t.grad = torch.tensor(g)
    torch.nn.utils.clip_grad_norm_(ts, 1.5)
    out = clip.ClipGradByGlobalNorm(1.5)([(make_param(g), hwport.to_tensor(g)) for g in gs])
    for (_, g), t in zip(out, ts, strict=True):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="ClipGradByGlobalNorm: clip_norm must be > 0"):
        clip.ClipGradByGlobalNorm(0.0)
    with pytest.raises(TypeError, match="ClipGradByNorm: clip_norm must be a float"):
        clip.ClipGradByNorm("1")
    with pytest.raises(ValueError, match="ClipGradByValue: min"):
        clip.ClipGradByValue(0.1, 0.5)
    assert (clip.ClipGradByValue(0.3).min, clip.ClipGradByValue(0.3).max) == (-0.3, 0.3)


def test_clip_by_norm_many_runs_in_one_bucket():
    """20 distinct sizes (20 runs, more than one concat's 16 operands) in one bucket."""
    rng = np.random.default_rng(5)
    gs = [rng.standard_normal(n).astype(np.float32) for n in range(1, 21)]
    ps = [make_param(np.zeros_like(g), name=f"p{i}") for i, g in enumerate(gs)]
    for p, g in zip(ps, gs, strict=True):
        set_grad(p, g)
    o.SGD(1.0, parameters=ps, grad_clip=clip.ClipGradByNorm(1.0)).step()
    for p, w in zip(ps, _np_clip("norm", gs, 1.0), strict=True):
        np.testing.assert_allclose(-p.numpy(), w, rtol=2e-6, atol=1e-7)


def test_exported_from_hwport_nn():
    import hwport.nn as nn

    assert nn.ClipGradByGlobalNorm is clip.ClipGradByGlobalNorm
    assert nn.ClipGradByNorm is clip.ClipGradByNorm and nn.ClipGradByValue is clip.ClipGradByValue
