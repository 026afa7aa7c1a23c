"""Flat buckets of parameters: the optimizers' way to few device launches.

Parameters of one parameter group that share dtype, place and per-parameter options (learning
rate multiplier, clipping, decay) form a bucket; a parameter of ALONE_NUMEL elements or more
forms its own (no gathering copies; its update is a view of it). A bucket's optimizer states
(moments, velocity, float32 master weights) live as ONE flat tensor per state, so an update
is a fixed handful of elementwise ops over the whole bucket, whatever its number of
parameters: one concat gathers the gradients, one the parameters (none when master weights
hold them), the update runs on the flat tensors, and each parameter gets its slice (a view)
through set_value. Inside a bucket parameters are ordered by size, so runs of equal-sized
parameters are [k, n] views of the flat tensor (ClipGradByNorm reduces a run with one
launch)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hwport import ops
from hwport.runtime import DType, Tensor
from hwport.tensor import to_tensor

LOW_PRECISION = (DType.float16, DType.bfloat16)
# A parameter this large gets a bucket of its own: its launches are cheap next to its bytes,
# and gathering it into a shared bucket would copy it (gradient and value) every step.
ALONE_NUMEL = 1 << 15
FLOAT = (DType.float16, DType.bfloat16, DType.float32, DType.float64)


def numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def flat(t: Tensor) -> Tensor:
    """A 1-D view of `t` (a copy only when it is not contiguous)."""
    return t.reshape([-1])


MAX_CONCAT = 16  # operands one launch takes (runtime/src/dispatch.cpp kMaxOperands)


def concat(parts: Sequence[Tensor]) -> Tensor:
    """concat of any number of 1-D tensors: one launch per 16 (then one joining them)."""
    parts = list(parts)
    while len(parts) > 1:
        parts = [p[0] if len(p) == 1 else ops.concat(p)
                 for p in (parts[i:i + MAX_CONCAT] for i in range(0, len(parts), MAX_CONCAT))]
    return parts[0]


def gather(tensors: Sequence[Tensor], dtype: DType) -> Tensor:
    """One flat tensor of `dtype` holding `tensors` one after another (one concat per 16
    tensors; none for a single one; plus one cast when the dtype differs)."""
    out = concat([flat(t) for t in tensors])
    return out if out.dtype == dtype else out.astype(dtype)


class Bucket:
    """Parameters updated together, and their flat optimizer states."""

    def __init__(self, params: list[Any], names: list[str], key: tuple[Any, ...],
                 store: DType, compute: DType, need_clip: bool, lr_scale: float) -> None:
        order = sorted(range(len(params)), key=lambda i: numel(params[i].shape))
        self.params = [params[i] for i in order]
        self.names = [names[i] for i in order]
        self.shapes = [list(p.shape) for p in self.params]
        self.sizes = [numel(s) for s in self.shapes]
        self.offsets = [int(o) for o in np.cumsum([0, *self.sizes[:-1]])]
        self.numel = sum(self.sizes)
        self.dtype: DType = self.params[0].dtype
        self.place = self.params[0].place
        self.key = key
        self.store = store  # dtype of the moment-like states
        self.compute = compute  # dtype the update runs in
        self.need_clip = need_clip
        self.lr_scale = lr_scale
        self.states: dict[str, Tensor] = {}
        self.pows: dict[str, float] = {}
        self.master: Tensor | None = None
        self.reg: float | None = None  # the parameters' own L2 regularizer coefficient

    def views(self, t: Tensor) -> list[Tensor]:
        """Each parameter's slice of a flat tensor, in its shape (views, no launches)."""
        return [t[o:o + n].reshape(s)
                for o, n, s in zip(self.offsets, self.sizes, self.shapes, strict=True)]

    def runs(self) -> list[tuple[int, int, int, int]]:
        """(first parameter, count, offset, size) of each run of equal-sized parameters."""
        out: list[tuple[int, int, int, int]] = []
        for i, n in enumerate(self.sizes):
            if out and out[-1][3] == n:
                first, k, off, _ = out[-1]
                out[-1] = (first, k + 1, off, n)
            else:
                out.append((i, 1, self.offsets[i], n))
        return out

    def scalars(self, values: Sequence[float]) -> list[Tensor]:
        """0-d tensors of the compute dtype on the bucket's place: one host-to-device transfer
        and no launch, so a scalar operand costs no fill kernel."""
        host = np.asarray(values, dtype=self.compute.to_numpy())
        t = to_tensor(host, place=self.place)
        return [t[i] for i in range(len(values))]

    def split(self, keep: list[int]) -> tuple[Bucket, Bucket]:
        """Two buckets: the parameters at positions `keep` and the others, states sliced."""
        rest = [i for i in range(len(self.params)) if i not in set(keep)]
        return self._subset(keep), self._subset(rest)

    def _subset(self, idx: list[int]) -> Bucket:
        b = Bucket([self.params[i] for i in idx], [self.names[i] for i in idx], self.key,
                   self.store, self.compute, self.need_clip, self.lr_scale)
        b.pows = dict(self.pows)
        b.reg = self.reg
        take: Callable[[Tensor], Tensor] = lambda t: gather(  # noqa: E731
            [t[self.offsets[i]:self.offsets[i] + self.sizes[i]] for i in idx], t.dtype)
        b.states = {k: take(v) for k, v in self.states.items()}
        b.master = None if self.master is None else take(self.master)
        return b
