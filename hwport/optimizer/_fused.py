"""Fused optimizer updates in place: a plugin's kernel for an optimizer op of ops.yaml
(`adam_update`), launched with the bucket's own flat tensors as its outputs (param_out = param,
moment1_out = moment1, ...; ops.yaml's kernel contract allows it). One launch per bucket, no
fresh memory, no copy back, and none of the dispatcher's per-call Python.

Where the plugin has no such kernel, or a pipeline layer is active on the thread (the profiler,
tracing: they must see the op call), the optimizer calls the functional op instead, which
decomposes where there is no kernel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hwport.runtime import Tensor, _core


def in_place(op: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor],
             attrs: dict[str, Any]) -> bool:
    """Runs `op`'s kernel writing into `outputs` (some of `inputs`); False (nothing done)
    where the functional op must run instead."""
    if _core.layers_active():
        return False
    first = inputs[0]
    if not _core.has_kernel(op, first.place, first.dtype) or \
            not all(t.is_contiguous() for t in (*inputs, *outputs)):
        return False
    _core.launch(op, first.dtype, list(inputs), list(outputs), attrs)
    return True
