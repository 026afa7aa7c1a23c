"""Terminal output: the live progress bar (only on a tty), the per-suite summary table, and the
list of problems, each with the command that reruns exactly that case."""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import TextIO

from .ccl_report import format_busbw
from .model import FAILING, Status
from .results import STATUS_ORDER, PluginResult, Run, exit_code, summarize
from .tiers import assess, format_tiers

PROBLEMS = FAILING | {Status.ERROR}
MAX_LISTED = 40


class Progress:
    """`[#####.....] 1234/8448  PASS 1200 FAIL 3 ...` redrawn in place, at most 10 times a
    second; silent when `stream` is not a terminal."""

    WIDTH = 30

    def __init__(self, stream: TextIO = sys.stdout):
        self.stream = stream
        self.enabled = stream.isatty()
        self.total = 0
        self.done = 0
        self.counts: Counter[str] = Counter()
        self._last = 0.0
        self._lock = threading.Lock()

    def set_total(self, total: int) -> None:
        self.total = total

    def update(self, r: PluginResult) -> None:
        with self._lock:
            self.done += 1
            self.counts[str(r.result.status)] += 1
            now = time.monotonic()
            if self.enabled and (now - self._last > 0.1 or self.done == self.total):
                self._last = now
                self._draw(r)

    def _draw(self, r: PluginResult) -> None:
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(frac * self.WIDTH)
        counts = " ".join(f"{s} {self.counts[s]}" for s in STATUS_ORDER if self.counts[s])
        line = (f"\r[{bar:<{self.WIDTH}}] {self.done}/{self.total}  {counts}  "
                f"{r.plugin} {r.result.case.id}")
        self.stream.write(line[:160].ljust(160))
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled and self.done:
            self.stream.write("\r" + " " * 160 + "\r")
            self.stream.flush()


def summary_table(run: Run) -> str:
    """One row per (plugin, suite) with the count of each status that occurs in the run."""
    summary = summarize(run.results)
    present = {s for suites in summary.values() for c in suites.values() for s in c}
    cols = [str(s) for s in STATUS_ORDER if str(s) in present or s in (Status.PASS, Status.FAIL)]
    head = ["plugin", "suite", "cases", *cols]
    rows = []
    for plugin, suites in summary.items():
        for suite, c in suites.items():
            rows.append([plugin, suite, str(sum(c.values())), *(str(c.get(s, 0)) for s in cols)])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def fmt(r: list[str]) -> str:
        return "  ".join(v.ljust(w) if i < 2 else v.rjust(w)
                         for i, (v, w) in enumerate(zip(r, widths, strict=True)))

    return "\n".join([fmt(head), "  ".join("-" * w for w in widths), *map(fmt, rows)])


def problems(run: Run, limit: int = MAX_LISTED) -> str:
    """Every FAIL/CRASH/TIMEOUT/XPASS/ERROR: status, case, the message's first lines and the
    command that reruns it."""
    bad = [r for r in run.results if r.result.status in PROBLEMS]
    lines = []
    for r in bad[:limit]:
        res = r.result
        msg = res.message.strip().splitlines() or [""]
        lines.append(f"{res.status} {r.plugin} {res.case.id}: {msg[0][:300]}")
        lines.extend(f"    {m[:300]}" for m in msg[1:4])
        if res.details.get("repro"):
            lines.append(f"    rerun: {res.details['repro']}")
    if len(bad) > limit:
        lines.append(f"... and {len(bad) - limit} more (all are in the JSON report)")
    return "\n".join(lines)


def render(run: Run) -> str:
    """The summary table, the problems and a one-line verdict."""
    c = Counter(str(r.result.status) for r in run.results)
    parts = [summary_table(run)] if run.results else ["no cases ran"]
    listed = problems(run)
    if listed:
        parts += ["", listed]
    took = run.meta.get("duration_s")
    counts = ", ".join(f"{c[str(s)]} {s}" for s in STATUS_ORDER if c[str(s)])
    code = exit_code(run.results)
    busbw = format_busbw(run.results)
    if busbw:
        parts += ["", busbw]
    if run.results:
        parts += ["", format_tiers(assess(run.results, run.meta))]
    parts += ["", f"hwcheck: {len(run.results)} cases ({counts or 'none'})"
              + (f" in {took:.1f} s" if isinstance(took, int | float) else "")
              + f": {'FAILED' if code else 'OK'}"]
    return "\n".join(parts)
