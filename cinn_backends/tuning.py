"""A schedule's tunable parameters (autotune.py searches them; the schedules read them). Every
field's zero/empty value means "the rule": Tuning() is the rule-based default schedule.

SIMT targets (schedule_simt.py):
  mode   "tree": a group of `group` threads per row, reducing through local memory (rows per
         group `rows`, a launch argument); "item": a row (or a chunk of elements of a flat
         group) per work-item with a vectorizable inner loop (the CPU schedule's row body),
         `group` work-items per group, `per_unit` work-items per compute unit (launch-time).
  group  threads per group (a power of two; fixed in the source).
  rows   "tree": rows per group (launch-time, no recompile).
CPU targets (schedule_cpu.py):
  per_unit  groups per compute unit (launch-time: no recompile).
Both (the CPU schedule's loops, which the item schedule runs too):
  vector  lanes of the vectorized loops and of the reductions' partial accumulators (a power
          of two; the rule: the target's preferred_vector_width).
  stream  1: the element loops' stores to outputs bypass the caches where the renderer can
          (OpenCL: non-temporal stores of aligned vectors; c99: of aligned 64-byte blocks,
          render/c99_stream.py), for outputs too large to be read again from cache; the
          measurement decides, per shape bucket."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Tuning:
    mode: str = ""
    group: int = 0
    rows: int = 0
    per_unit: int = 0
    vector: int = 0
    stream: int = 0

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v}

    @classmethod
    def from_json(cls, d: Any) -> Tuning:
        """Raises ValueError for anything that is not a tuning this version writes."""
        if not isinstance(d, dict) or \
                set(d) - {"mode", "group", "rows", "per_unit", "vector", "stream"}:
            raise ValueError(f"not a tuning: {d!r}")
        mode = d.get("mode", "")
        if mode not in ("", "tree", "item"):
            raise ValueError(f"unknown mode {mode!r}")
        ints = {k: d.get(k, 0) for k in ("group", "rows", "per_unit", "vector", "stream")}
        if any(not isinstance(v, int) or isinstance(v, bool) or v < 0 or v > 1 << 20
               for v in ints.values()):
            raise ValueError(f"bad tuning values: {d!r}")
        for k in ("group", "vector"):
            if ints[k] & (ints[k] - 1):
                raise ValueError(f"{k} is not a power of two")
        if ints["stream"] > 1:
            raise ValueError("stream is 0 or 1")
        return cls(mode, **ints)

    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.to_json().items()) or "rule"


RULE = Tuning()
