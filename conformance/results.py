"""Run records: the JSON-lines log a run appends to as cases finish, the final JSON document
(schema "hwcheck-run/1", documented in docs/hwcheck.md), loading either back, the per-suite
summary, --baseline classification (XFAIL/XPASS) and JUnit XML.

A JSON-lines log holds one object per line: first {"type": "run", ...run metadata}, then one
{"type": "result", "plugin": ..., ...Result.to_json()} per finished case, flushed as it is
written, so a killed run keeps everything that finished; `load_run` reads it like a document.
"""

from __future__ import annotations

import json
import os
import threading
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import FAILING, Result, Status

SCHEMA = "hwcheck-run/1"
STATUS_ORDER = tuple(Status)


@dataclass
class PluginResult:
    """A Result and the device type of the plugin it ran on."""

    plugin: str
    result: Result

    def to_json(self) -> dict[str, Any]:
        return {"plugin": self.plugin, **self.result.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PluginResult:
        return cls(d.get("plugin", ""), Result.from_json(d))

    @property
    def key(self) -> str:
        return f"{self.plugin}/{self.result.case.id}"


@dataclass
class Run:
    """A run: its metadata (command, seed, targets, ...) and its results."""

    meta: dict[str, Any] = field(default_factory=dict)
    results: list[PluginResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        from .ccl_report import busbw_rows
        from .tiers import assess

        busbw = busbw_rows(self.results)
        return {"schema": SCHEMA, **self.meta, "summary": summarize(self.results),
                **({"ccl_busbw": busbw} if busbw else {}),
                "tiers": assess(self.results, self.meta), "exit_code": exit_code(self.results),
                "results": [r.to_json() for r in self.results]}


class JsonLinesLog:
    """Appends records to a JSON-lines file, one flushed line each (thread-safe)."""

    def __init__(self, path: str | os.PathLike, meta: dict[str, Any]):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = Path(path)
        self._f = open(self.path, "w", encoding="utf-8")
        self._lock = threading.Lock()
        self._write({"type": "run", "schema": SCHEMA, **meta})

    def _write(self, obj: dict[str, Any]) -> None:
        with self._lock:
            self._f.write(json.dumps(obj, sort_keys=True) + "\n")
            self._f.flush()

    def add(self, r: PluginResult) -> None:
        self._write({"type": "result", **r.to_json()})

    def close(self) -> None:
        self._f.close()


def load_run(path: str | os.PathLike) -> Run:
    """A saved run: a final JSON document or a (possibly partial) JSON-lines log."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and "results" in doc:
        meta = {k: v for k, v in doc.items()
                if k not in ("results", "summary", "tiers", "exit_code", "schema")}
        return Run(meta, [PluginResult.from_json(r) for r in doc["results"]])
    run = Run()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if n == len(text.splitlines()):  # a line cut short by a kill: drop it
                break
            raise ValueError(f"{path}:{n}: not a JSON line") from None
        if obj.get("type") == "run":
            run.meta = {k: v for k, v in obj.items() if k not in ("type", "schema")}
        elif obj.get("type") == "result":
            run.results.append(PluginResult.from_json(obj))
    if not run.meta and not run.results:
        raise ValueError(f"{path}: neither an hwcheck JSON document nor a JSON-lines log")
    return run


def summarize(results: Iterable[PluginResult]) -> dict[str, dict[str, dict[str, int]]]:
    """{plugin: {suite: {status: count}}} (only statuses that occur)."""
    out: dict[str, dict[str, Counter[str]]] = {}
    for r in results:
        out.setdefault(r.plugin, {}).setdefault(r.result.case.suite, Counter())[
            str(r.result.status)] += 1
    return {p: {s: dict(c) for s, c in suites.items()} for p, suites in out.items()}


def exit_code(results: Iterable[PluginResult]) -> int:
    """1 when any result is FAIL, CRASH, TIMEOUT or XPASS; else 0."""
    return int(any(r.result.status in FAILING for r in results))


def baseline_failures(path: str | os.PathLike) -> set[str]:
    """The keys ("plugin/suite::name") a saved run recorded as FAIL, CRASH, TIMEOUT or XFAIL:
    the failures a later run against this baseline expects."""
    expected = {Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.XFAIL}
    return {r.key for r in load_run(path).results if r.result.status in expected}


def apply_baseline(r: PluginResult, expected: set[str]) -> PluginResult:
    """An expected failure becomes XFAIL; a PASS of an expected failure becomes XPASS."""
    if r.key not in expected:
        return r
    res = r.result
    if res.status in (Status.FAIL, Status.CRASH, Status.TIMEOUT):
        res.details = {**res.details, "baseline_status": str(res.status)}
        res.status = Status.XFAIL
    elif res.status == Status.PASS:
        res.status = Status.XPASS
        res.message = ("passed, but the baseline expected a failure: update the baseline"
                       + (f"; {res.message}" if res.message else ""))
    return r


def write_junit(run: Run, path: str | os.PathLike) -> None:
    """JUnit XML: one <testsuite> per (plugin, suite), one <testcase> per result. FAIL/XPASS
    are <failure>, CRASH/TIMEOUT/ERROR are <error>, NOT_SUPPORTED/XFAIL are <skipped>."""
    root = ET.Element("testsuites", name="hwcheck")
    groups: dict[tuple[str, str], list[PluginResult]] = {}
    for r in run.results:
        groups.setdefault((r.plugin, r.result.case.suite), []).append(r)
    for (plugin, suite), rs in groups.items():
        counts = Counter(str(r.result.status) for r in rs)
        ts = ET.SubElement(
            root, "testsuite", name=f"{plugin}.{suite}", tests=str(len(rs)),
            failures=str(counts["FAIL"] + counts["XPASS"]),
            errors=str(counts["CRASH"] + counts["TIMEOUT"] + counts["ERROR"]),
            skipped=str(counts["NOT_SUPPORTED"] + counts["XFAIL"]),
            time=f"{sum(r.result.duration_s for r in rs):.3f}")
        for r in rs:
            res = r.result
            tc = ET.SubElement(ts, "testcase", classname=f"hwcheck.{plugin}.{suite}",
                               name=res.case.name, time=f"{res.duration_s:.4f}")
            tag = {Status.FAIL: "failure", Status.XPASS: "failure", Status.CRASH: "error",
                   Status.TIMEOUT: "error", Status.ERROR: "error",
                   Status.NOT_SUPPORTED: "skipped", Status.XFAIL: "skipped"}.get(res.status)
            if tag:
                el = ET.SubElement(tc, tag, type=str(res.status), message=res.message[:500])
                el.text = res.message
    ET.indent(root)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
