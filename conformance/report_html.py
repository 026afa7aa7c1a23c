"""A saved run as one self-contained HTML page (inline CSS, no scripts or external files): the
summary table, per plugin an op x dtype grid of the kernels suite coloured by status, the worst
errors, the fallback coverage grid, the other suites' cases, and every problem with the
command that reruns it."""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import Any

from .model import Status
from .results import STATUS_ORDER, PluginResult, Run, exit_code, summarize

# Worst first: a grid cell shows the worst status among its cases.
SEVERITY = [Status.CRASH, Status.TIMEOUT, Status.FAIL, Status.XPASS, Status.ERROR,
            Status.XFAIL, Status.NOT_SUPPORTED, Status.PASS]
COLORS = {Status.PASS: "#2e7d32", Status.FAIL: "#c62828", Status.NOT_SUPPORTED: "#9e9e9e",
          Status.CRASH: "#6a1b9a", Status.TIMEOUT: "#ef6c00", Status.ERROR: "#455a64",
          Status.XFAIL: "#8d6e63", Status.XPASS: "#ad1457"}
PATH_COLORS = {"native": "#2e7d32", "compiled": "#00838f", "decomposition": "#1565c0",
               "fallback": "#ef6c00",
               "error": "#c62828", "unknown": "#9e9e9e"}
CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; }
th { background: #f3f3f3; }
td.n { text-align: right; }
table.grid td { text-align: center; color: #fff; font-size: 12px; min-width: 48px; }
table.grid td.none { background: #fafafa; }
.legend span { display: inline-block; padding: 2px 8px; margin-right: 6px; color: #fff; }
code, pre { font-family: ui-monospace, monospace; font-size: 12px; }
pre { white-space: pre-wrap; background: #f7f7f7; padding: 6px; margin: 2px 0 10px; }
.bad { color: #c62828; } .ok { color: #2e7d32; }
"""


def _e(v: Any) -> str:
    return escape(str(v))


def _cell(color: str, text: str, title: str) -> str:
    return f'<td style="background:{color}" title="{_e(title)}">{_e(text)}</td>'


def _grid(rows: dict[str, dict[str, str]], dtypes: list[str], cell: Any) -> str:
    """A table with one row per op and one column per dtype; cell(op, dtype) -> <td>."""
    head = "".join(f"<th>{_e(d)}</th>" for d in dtypes)
    body = []
    for op in rows:
        tds = "".join(cell(op, d) for d in dtypes)
        body.append(f"<tr><th>{_e(op)}</th>{tds}</tr>")
    return f'<table class="grid"><tr><th>op</th>{head}</tr>{"".join(body)}</table>'


def _dtype_order(dtypes: set[str]) -> list[str]:
    from hwport.phi_ops.schema import dtype_groups

    order = list(dtype_groups()["all"])
    return sorted(dtypes, key=lambda d: order.index(d) if d in order else len(order))


def _kernels_grid(results: list[PluginResult]) -> str:
    cells: dict[str, dict[str, list[PluginResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        p = r.result.case.params
        if "op" in p:
            cells[p["op"]][p["dtype"]].append(r)
    if not cells:
        return "<p>No kernels cases.</p>"
    dtypes = _dtype_order({d for row in cells.values() for d in row})

    def cell(op: str, d: str) -> str:
        rs = cells[op].get(d)
        if not rs:
            return '<td class="none"></td>'
        worst = min((r.result.status for r in rs), key=SEVERITY.index)
        ok = sum(r.result.status == Status.PASS for r in rs)
        ulps = [r.result.details.get("max_ulp") for r in rs]
        max_ulp = max((u for u in ulps if isinstance(u, int)), default=None)
        bad = next((r for r in rs if r.result.status == worst), rs[0])
        title = (f"{op} {d}: {ok}/{len(rs)} PASS, worst {worst}"
                 + (f", max {max_ulp} ulp" if max_ulp is not None else "")
                 + (f"\n{bad.result.case.name}: {bad.result.message[:300]}"
                    if worst != Status.PASS else ""))
        return _cell(COLORS[worst], f"{ok}/{len(rs)}", title)

    return _grid(cells, dtypes, cell)


def _worst_errors(results: list[PluginResult], n: int = 25) -> str:
    """The kernels cases furthest from the oracle, scored by ulp (or relative error)."""
    scored = []
    for r in results:
        d = r.result.details
        ulp, rel = d.get("max_ulp"), d.get("max_rel_err")
        if (isinstance(ulp, int) and ulp > 0) or (isinstance(rel, float) and rel > 0):
            scored.append(((ulp or 0), (rel if isinstance(rel, float) else 0.0), r))
    scored.sort(key=lambda t: (t[0], t[1]), reverse=True)
    if not scored:
        return "<p>Every compared value matched the oracle exactly.</p>"
    rows = []
    for ulp, rel, r in scored[:n]:
        d = r.result.details
        tol = d.get("tolerance") or {}
        tol_s = ", ".join(f"{k}={v:g}" for k, v in tol.items()) or "exact"
        rows.append(
            f"<tr><td><code>{_e(r.result.case.name)}</code></td>"
            f"<td style='color:{COLORS[r.result.status]}'>{_e(r.result.status)}</td>"
            f"<td class=n>{_e(d.get('max_abs_err'))}</td><td class=n>{rel:.3g}</td>"
            f"<td class=n>{ulp}</td><td>{_e(tol_s)}</td>"
            f"<td>{_e(d.get('first_mismatch') or '')}</td></tr>")
    return ("<table><tr><th>case</th><th>status</th><th>max abs err</th><th>max rel err</th>"
            "<th>max ulp</th><th>tolerance</th><th>first mismatch</th></tr>"
            + "".join(rows) + "</table>")


def _coverage_grid(results: list[PluginResult]) -> str:
    paths: dict[str, dict[str, str]] = {}
    fell: dict[str, dict[str, list[str]]] = {}
    for r in results:
        d = r.result.details
        if "paths" in d:
            paths[r.result.case.name] = d["paths"]
            fell[r.result.case.name] = d.get("fallback_ops", {})
    if not paths:
        return "<p>No coverage cases.</p>"
    dtypes = _dtype_order({d for row in paths.values() for d in row})
    totals: dict[str, int] = defaultdict(int)
    for row in paths.values():
        for p in row.values():
            totals[p] += 1

    def cell(op: str, d: str) -> str:
        p = paths[op].get(d)
        if p is None:
            return '<td class="none"></td>'
        via = fell[op].get(d)
        return _cell(PATH_COLORS.get(p, "#9e9e9e"), p[:6],
                     f"{op} {d}: {p}" + (f" via {', '.join(via)}" if via else ""))

    legend = "".join(f'<span style="background:{c}">{_e(p)} ({totals.get(p, 0)})</span>'
                     for p, c in PATH_COLORS.items() if totals.get(p))
    return f'<p class="legend">{legend}</p>' + _grid(paths, dtypes, cell)


def _case_list(results: list[PluginResult]) -> str:
    rows = "".join(
        f"<tr><td><code>{_e(r.result.case.id)}</code></td>"
        f"<td style='color:{COLORS[r.result.status]}'>{_e(r.result.status)}</td>"
        f"<td>{_e(r.result.message[:400])}</td></tr>" for r in results)
    return f"<table><tr><th>case</th><th>status</th><th>message</th></tr>{rows}</table>"


def _problems(results: list[PluginResult]) -> str:
    bad = [r for r in results if r.result.status in
           (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.XPASS, Status.ERROR)]
    if not bad:
        return '<p class="ok">No failures.</p>'
    out = []
    for r in bad:
        res = r.result
        out.append(f"<p><b style='color:{COLORS[res.status]}'>{_e(res.status)}</b> "
                   f"<code>{_e(r.plugin)} {_e(res.case.id)}</code></p><pre>{_e(res.message)}"
                   + (f"\n\nrerun: {_e(res.details['repro'])}" if res.details.get("repro")
                      else "") + "</pre>")
    return "".join(out)


def _summary(run: Run) -> str:
    summary = summarize(run.results)
    cols = [s for s in STATUS_ORDER
            if any(s in c for suites in summary.values() for c in suites.values())]
    head = "".join(f"<th style='color:{COLORS[Status(s)]}'>{_e(s)}</th>" for s in cols)
    rows = "".join(
        f"<tr><td>{_e(p)}</td><td>{_e(s)}</td><td class=n>{sum(c.values())}</td>"
        + "".join(f"<td class=n>{c.get(k, 0)}</td>" for k in cols) + "</tr>"
        for p, suites in summary.items() for s, c in suites.items())
    return f"<table><tr><th>plugin</th><th>suite</th><th>cases</th>{head}</tr>{rows}</table>"


def _tiers(run: Run) -> str:
    from .tiers import CERTIFIED, NOT_CERTIFIED, assess

    color = {CERTIFIED: COLORS[Status.PASS], NOT_CERTIFIED: COLORS[Status.FAIL]}
    rows = "".join(
        f"<tr><td>{_e(p)}</td><td>{_e(name)}</td>"
        f"<td style='background:{color.get(t['status'], '#ddd')}'>{_e(t['status'])}</td>"
        f"<td>{_e('; '.join(t['reasons']))}</td></tr>"
        for p, got in assess(run.results, run.meta).items() for name, t in got.items())
    return f"<table><tr><th>plugin</th><th>tier</th><th>status</th><th>why</th></tr>{rows}</table>"


def render_html(run: Run) -> str:
    by_plugin: dict[str, dict[str, list[PluginResult]]] = defaultdict(lambda: defaultdict(list))
    for r in run.results:
        by_plugin[r.plugin][r.result.case.suite].append(r)
    code = exit_code(run.results)
    meta = run.meta
    info = "".join(f"<tr><th>{_e(k)}</th><td>{_e(meta[k])}</td></tr>"
                   for k in ("command", "started", "duration_s", "seed", "host", "hwport_version")
                   if k in meta)
    legend = "".join(f'<span style="background:{c}">{_e(s)}</span>' for s, c in COLORS.items())
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>hwcheck report</title>"
             f"<style>{CSS}</style></head><body><h1>hwcheck report "
             f"<span class='{'bad' if code else 'ok'}'>{'FAILED' if code else 'OK'}</span></h1>",
             f"<table>{info}</table>", "<h2>Summary</h2>", _summary(run),
             "<h2>Certification tiers</h2>", _tiers(run),
             f'<p class="legend">{legend}</p>']
    for plugin, suites in by_plugin.items():
        parts.append(f"<h2>Plugin <code>{_e(plugin)}</code></h2>")
        for suite, rs in suites.items():
            if suite == "kernels":
                parts += ["<h3>kernels: op &times; dtype (passed/cases, worst status)</h3>",
                          _kernels_grid(rs), "<h3>Worst errors against the oracle</h3>",
                          _worst_errors(rs)]
            elif suite == "coverage":
                parts += ["<h3>coverage: how each op runs on this plugin</h3>",
                          _coverage_grid(rs)]
            else:
                parts += [f"<h3>{_e(suite)}</h3>", _case_list(rs)]
    parts += ["<h2>Problems</h2>", _problems(run.results), "</body></html>"]
    return "\n".join(parts)
