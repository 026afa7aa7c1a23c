"""The bus-bandwidth report of the ccl suite, in nccl-tests' convention: per collective and
size, the slowest rank's time per call, algbw = size / time and busbw = algbw x factor
(all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast 1). The rows
live in the details of the ccl::busbw/<collective> results; run documents repeat them under
"ccl_busbw" and the terminal summary prints them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def busbw_rows(results: Sequence[Any]) -> dict[str, list[dict[str, Any]]]:
    """{plugin: [{"collective", "ranks", "backend", "bytes", "time_us", "algbw_GBps",
    "busbw_GBps", ...}]} from a run's ccl::busbw/* results."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        res = r.result
        if res.case.suite != "ccl" or not res.case.name.startswith("busbw/"):
            continue
        d = res.details
        for row in d.get("rows", []):
            out.setdefault(r.plugin, []).append(
                {"collective": d.get("collective"), "ranks": d.get("ranks"),
                 "backend": d.get("backend"), "dtype": d.get("dtype"), **row})
    return out


def _size(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def format_busbw(results: Sequence[Any]) -> str:
    """The table printed after a run with the ccl suite ("" when it did not time anything)."""
    rows = busbw_rows(results)
    if not rows:
        return ""
    lines = []
    for plugin, got in rows.items():
        first = got[0]
        lines.append(f"bus bandwidth: {plugin}, {first['ranks']} ranks, {first['backend']} "
                     f"backend, {first['dtype']} (nccl-tests' busbw)")
        lines.append(f"  {'collective':<15}{'size':>10}{'time (us)':>13}{'algbw GB/s':>12}"
                     f"{'busbw GB/s':>12}")
        lines += [f"  {r['collective']:<15}{_size(r['bytes']):>10}{r['time_us']:>13.1f}"
                  f"{r['algbw_GBps']:>12.3f}{r['busbw_GBps']:>12.3f}" for r in got]
    return "\n".join(lines)
