"""Gradient clipping with Paddle's semantics (paddle.nn.ClipGradBy*), for an optimizer's
`grad_clip=`.

Called as Paddle does, `clip(params_grads)` maps a list of (param, grad) to a new one. Inside
an optimizer step the same math runs on the optimizer's flat buckets (one tensor per bucket,
optimizer/_buckets.py), so clipping costs a few launches per bucket, not per parameter.
Parameters with `need_clip = False` are left alone. A bucket is anything with need_clip and
runs() (hwport/optimizer/_buckets.py; nn does not import the optimizers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hwport import ops
from hwport.runtime import DType, Tensor
from hwport.tensor import to_tensor

__all__ = ["ClipGradBase", "ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue"]


def _number(value: Any, api: str, arg: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{api}: {arg} must be a float, got {type(value).__name__}")
    return float(value)


def _scalar(value: float, like: Tensor) -> Tensor:
    """A 0-d tensor of like's dtype and place (a transfer, no launch)."""
    return to_tensor(np.asarray(value, dtype=like.dtype.to_numpy()), place=like.place)


def concat(parts: Sequence[Tensor]) -> Tensor:
    """concat of any number of 1-D tensors (the dispatcher takes 16 operands a launch)."""
    parts = list(parts)
    while len(parts) > 1:
        parts = [p[0] if len(p) == 1 else ops.concat(p)
                 for p in (parts[i:i + 16] for i in range(0, len(parts), 16))]
    return parts[0]


def _wide(t: Tensor) -> Tensor:
    """float16/bfloat16 in float32 (norms accumulate there, as in Paddle)."""
    return t.astype(DType.float32) if t.dtype in (DType.float16, DType.bfloat16) else t


class ClipGradBase:
    """What an optimizer's grad_clip must be."""

    def __call__(self, params_grads: Sequence[tuple[Any, Tensor | None]]
                 ) -> list[tuple[Any, Tensor | None]]:
        items = list(params_grads)
        idx = [i for i, (p, g) in enumerate(items)
               if g is not None and getattr(p, "need_clip", True)]
        new = self._clip([items[i][1] for i in idx], None) if idx else []
        for i, g in zip(idx, new, strict=True):
            items[i] = (items[i][0], g)
        return items

    def _clip_buckets(self, buckets: Sequence[Any], grads: list[Tensor]) -> list[Tensor]:
        """The optimizer's path: flat gradients, one per bucket (bucket.need_clip)."""
        idx = [i for i, b in enumerate(buckets) if b.need_clip]
        out = list(grads)
        if idx:
            for i, g in zip(idx, self._clip([grads[i] for i in idx],
                                            [buckets[i] for i in idx]), strict=True):
                out[i] = g
        return out

    def _clip(self, grads: list[Tensor], buckets: list[Any] | None) -> list[Tensor]:
        raise NotImplementedError


class ClipGradByValue(ClipGradBase):
    """Each gradient element clipped to [min, max] (min defaults to -max)."""

    def __init__(self, max: float, min: float | None = None) -> None:
        hi = _number(max, "ClipGradByValue", "max")
        if min is None:
            if hi <= 0:
                raise ValueError(f"ClipGradByValue: max must be > 0 when min is None, got {hi}")
            lo = -hi
        else:
            lo = _number(min, "ClipGradByValue", "min")
        if lo > hi:
            raise ValueError(f"ClipGradByValue: min ({lo}) must be <= max ({hi})")
        self.max, self.min = hi, lo

    def _clip(self, grads: list[Tensor], buckets: list[Any] | None) -> list[Tensor]:
        return [ops.clip(g, min=self.min, max=self.max) for g in grads]


class ClipGradByNorm(ClipGradBase):
    """Each gradient g scaled to norm clip_norm where ||g||_2 > clip_norm:
    g * clip_norm / max(||g||_2, clip_norm)."""

    def __init__(self, clip_norm: float) -> None:
        self.clip_norm = _number(clip_norm, "ClipGradByNorm", "clip_norm")
        if self.clip_norm <= 0:
            raise ValueError(f"ClipGradByNorm: clip_norm must be > 0, got {clip_norm}")

    def _scale(self, sq_sums: Tensor) -> Tensor:
        c = _scalar(self.clip_norm, sq_sums)
        return c / ops.maximum(ops.sqrt(sq_sums), c)

    def _clip(self, grads: list[Tensor], buckets: list[Any] | None) -> list[Tensor]:
        if buckets is None:
            out = []
            for g in grads:
                w = _wide(g)
                s = self._scale((w * w).sum())
                out.append((w * s).astype(g.dtype) if w is not g else g * s)
            return out
        return [self._clip_bucket(g, b) for g, b in zip(grads, buckets, strict=True)]

    def _clip_bucket(self, g: Tensor, b: Any) -> Tensor:
        """Runs of equal-sized parameters are [k, n] views: one reduction per run."""
        sq = g * g
        runs = b.runs()
        sums = [sq[off:off + k * n].reshape([k, n]).sum(axis=1) for _, k, off, n in runs]
        scale = self._scale(concat(sums))
        parts = []
        for first, k, off, n in runs:
            s = scale[first:first + k].reshape([k, 1])
            parts.append((g[off:off + k * n].reshape([k, n]) * s).reshape([-1]))
        return concat(parts)


class ClipGradByGlobalNorm(ClipGradBase):
    """Every gradient scaled by clip_norm / max(global_norm, clip_norm), global_norm the L2
    norm of all of them together (float16/bfloat16 summed in float32). group_name and
    auto_skip_clip are accepted (auto_skip_clip changes nothing numerically: the scale is 1
    when the norm is within clip_norm)."""

    def __init__(self, clip_norm: float, group_name: str = "default_group",
                 auto_skip_clip: bool = False) -> None:
        self.clip_norm = _number(clip_norm, "ClipGradByGlobalNorm", "clip_norm")
        if self.clip_norm <= 0:
            raise ValueError(f"ClipGradByGlobalNorm: clip_norm must be > 0, got {clip_norm}")
        if not isinstance(group_name, str):
            raise TypeError("ClipGradByGlobalNorm: group_name must be a str, got "
                            f"{type(group_name).__name__}")
        self.group_name = group_name
        self.auto_skip_clip = bool(auto_skip_clip)

    def _clip(self, grads: list[Tensor], buckets: list[Any] | None) -> list[Tensor]:
        sums = []
        for g in grads:
            w = _wide(g)
            sums.append((w * w).sum())
        wide = DType.float64 if any(s.dtype == DType.float64 for s in sums) else DType.float32
        total = sums[0] if sums[0].dtype == wide else sums[0].astype(wide)
        for s in sums[1:]:
            total = total + (s if s.dtype == wide else s.astype(wide))
        c = _scalar(self.clip_norm, total)
        scale = c / ops.maximum(ops.sqrt(total), c)
        out = []
        for g in grads:
            s = scale if scale.dtype == g.dtype or g.dtype in (DType.float16, DType.bfloat16) \
                else scale.astype(g.dtype)
            r = g * s
            out.append(r if r.dtype == g.dtype else r.astype(g.dtype))
        return out
