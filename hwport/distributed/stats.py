"""What the collectives moved: calls and payload bytes per kind, counted by the runtime at the
CCL table (all_gather / reduce_scatter / all_to_all count the whole buffer of all ranks)."""

from __future__ import annotations

from hwport.runtime import _core


def traffic() -> dict[str, dict[str, int]]:
    """{kind: {'calls': n, 'bytes': b}} since the start (or the last reset_traffic)."""
    return {kind: dict(entry) for kind, entry in _core.ccl_traffic().items()}


def reset_traffic() -> None:
    _core.ccl_reset_traffic()
