"""The sizes the thresholds and transfers suites sweep: a fixed ladder of lengths around powers
of two (2^k - 1, 2^k, 2^k + 1), and sizes relative to the device's own properties
(max_work_group_size, simd_width, total_memory), named symbolically in case ids ("wg+1") and
resolved in the worker, where the plugin is loaded (collect() must not load it).

A size spec is an int ("4097") or `[<mult>]<token>[+-<delta>]` with token wg (the max
work-group size), simd (the SIMD width) or max (the largest transfer: min(256 MiB,
total_memory / 4)): "wg+1", "2wg-1", "simd-1", "max"."""

from __future__ import annotations

import re
from typing import Any

MAX_K = 16  # the ladder's largest power: lengths up to 2^16 + 1
MAX_TRANSFER = 256 << 20  # the largest copy or memset: min(this, total_memory / 4)
LARGEST_LENGTH = 1 << 20  # device-relative lengths are capped here (a huge work-group size)

# Boundaries most kernels change code path at: vector bodies, tiles, blocks, work-groups.
DEFAULT_LENGTHS = ("63", "64", "65", "127", "129", "255", "257", "1023", "1025", "4095",
                   "4097")
DEVICE_LENGTHS = ("simd-1", "simd+1", "wg-1", "wg", "wg+1", "2wg+1")
LARGE_LENGTHS = ("65535", "65537")  # for one dtype of each element size (see thresholds.py)


def full_ladder(max_k: int = MAX_K) -> tuple[str, ...]:
    """Every 2^k - 1, 2^k, 2^k + 1 for k <= max_k (distinct, ascending)."""
    sizes = sorted({n for k in range(max_k + 1) for n in (2**k - 1, 2**k, 2**k + 1) if n >= 1})
    return tuple(str(n) for n in sizes)


_SPEC = re.compile(r"^(\d*)(wg|simd|max)([+-]\d+)?$")


def resolve(spec: str, props: dict[str, Any], minimum: int = 0) -> int:
    """The size a spec names on a device with these properties (at least `minimum`)."""
    if spec.isdigit():
        return max(int(spec), minimum)
    m = _SPEC.match(spec)
    if m is None:
        raise ValueError(f"bad size spec {spec!r}")
    mult = int(m.group(1) or 1)
    delta = int(m.group(3) or 0)
    if m.group(2) == "max":
        base = max_transfer(props)
        return max(mult * base + delta, minimum)
    unit = int(props.get("max_work_group_size" if m.group(2) == "wg" else "simd_width") or 1)
    return max(min(mult * max(unit, 1) + delta, LARGEST_LENGTH), minimum)


def max_transfer(props: dict[str, Any]) -> int:
    """min(256 MiB, total_memory / 4); 256 MiB when the device does not say."""
    total = int(props.get("total_memory") or 0)
    return min(MAX_TRANSFER, total // 4) if total > 0 else MAX_TRANSFER


def device_properties(place: str, state: dict[str, Any]) -> dict[str, Any]:
    """The runtime's view of the device's properties (cached in the worker's state)."""
    if "device_properties" not in state:
        from hwport.runtime import _core

        state["device_properties"] = dict(_core.device_properties(place))
    return state["device_properties"]


def is_thorough(options: dict[str, Any]) -> bool:
    """`hwcheck run --thorough` (options["thorough"]): the exhaustive ladder instead of its
    boundaries."""
    return bool(options.get("thorough", False))
