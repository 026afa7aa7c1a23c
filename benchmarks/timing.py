"""Timing helpers shared by the benchmarks: best-of-N wall time, with the device synchronized
around each measurement so asynchronous work is counted."""

from __future__ import annotations

import time
from collections.abc import Callable

import hwport


def best_of(fn: Callable[[], object], place: str | None = None, repeat: int = 7) -> float:
    """The fastest of `repeat` timed calls (after one warm-up). With `place`, that device is
    synchronized before the clock starts and before it stops."""

    def sync() -> None:
        if place is not None:
            hwport.device.synchronize(place)

    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best
