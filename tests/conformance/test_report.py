"""Run records and reporters on hand-made results: exit codes, summary, baseline rules,
JSON-lines loading (a killed run), JUnit counts, the text table and the HTML page."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from hwport.conformance.model import FAILING, Case, Result, Status
from hwport.conformance.report_html import COLORS, render_html
from hwport.conformance.report_text import render, summary_table
from hwport.conformance.results import (
    JsonLinesLog,
    PluginResult,
    Run,
    apply_baseline,
    baseline_failures,
    exit_code,
    load_run,
    summarize,
    write_junit,
)


def _r(status: Status, name: str = "add/float32/odd7", suite: str = "kernels",
       plugin: str = "cpu", **details) -> PluginResult:
    params = {"op": name.split("/")[0], "dtype": name.split("/")[1], "case": "x"} \
        if suite == "kernels" else {}
    return PluginResult(plugin, Result(Case(suite, name, params, 3), status,
                                       f"{status} message", 0.01, dict(details)))


def _sample_run() -> Run:
    return Run({"command": "hwcheck run", "seed": 0}, [
        _r(Status.PASS, "add/float32/a", max_ulp=0, max_rel_err=0.0),
        _r(Status.PASS, "exp/float32/a", max_ulp=2, max_rel_err=1e-7, max_abs_err=1e-7,
           tolerance={"ulp": 4}),
        _r(Status.FAIL, "exp/float16/b", max_ulp=9, max_rel_err=0.01, max_abs_err=0.01,
           first_mismatch=[1, 2], repro="hwcheck run --plugin cpu -k kernels::exp/float16/b"),
        _r(Status.CRASH, "mul/float32/c", repro="hwcheck run -k kernels::mul/float32/c"),
        _r(Status.NOT_SUPPORTED, "mul/int8/d"),
        _r(Status.PASS, "add", suite="coverage", paths={"float32": "native"}),
        _r(Status.NOT_SUPPORTED, "mul", suite="coverage",
           paths={"float32": "fallback", "int8": "decomposition"},
           fallback_ops={"float32": ["mul[float32]"]}),
        _r(Status.TIMEOUT, "sync", suite="device", plugin="opencl"),
    ])


@pytest.mark.parametrize("status", list(Status))
def test_exit_code_is_1_exactly_for_the_failing_statuses(status):
    assert exit_code([_r(Status.PASS), _r(status)]) == (1 if status in FAILING else 0)
    assert {Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.XPASS} == FAILING


def test_summary_counts_per_plugin_and_suite():
    assert summarize(_sample_run().results) == {
        "cpu": {"kernels": {"PASS": 2, "FAIL": 1, "CRASH": 1, "NOT_SUPPORTED": 1},
                "coverage": {"PASS": 1, "NOT_SUPPORTED": 1}},
        "opencl": {"device": {"TIMEOUT": 1}}}
    table = summary_table(_sample_run()).splitlines()
    assert table[0].split() == ["plugin", "suite", "cases", "PASS", "FAIL", "NOT_SUPPORTED",
                                "CRASH", "TIMEOUT"]
    assert table[2].split() == ["cpu", "kernels", "5", "2", "1", "1", "1", "0"]
    assert table[4].split() == ["opencl", "device", "1", "0", "0", "0", "0", "1"]


def test_text_report_lists_problems_with_their_rerun_command():
    text = render(_sample_run())
    assert "FAIL cpu kernels::exp/float16/b: FAIL message" in text
    assert "    rerun: hwcheck run --plugin cpu -k kernels::exp/float16/b" in text
    assert "TIMEOUT opencl device::sync" in text
    assert "NOT_SUPPORTED cpu" not in text  # not a problem
    assert text.splitlines()[-1] == ("hwcheck: 8 cases (3 PASS, 1 FAIL, 2 NOT_SUPPORTED, "
                                     "1 CRASH, 1 TIMEOUT): FAILED")


def test_baseline_rules():
    expected = {"cpu/kernels::add/float32/odd7"}
    assert apply_baseline(_r(Status.FAIL), expected).result.status == Status.XFAIL
    assert apply_baseline(_r(Status.CRASH), expected).result.details["baseline_status"] == \
        "CRASH"
    assert apply_baseline(_r(Status.PASS), expected).result.status == Status.XPASS
    assert apply_baseline(_r(Status.NOT_SUPPORTED), expected).result.status == \
        Status.NOT_SUPPORTED
    assert apply_baseline(_r(Status.FAIL, plugin="opencl"), expected).result.status == \
        Status.FAIL  # another plugin's case is not expected to fail


def test_json_document_round_trip_and_baseline_keys(tmp_path):
    run = _sample_run()
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run.to_json()))
    back = load_run(path)
    assert [r.to_json() for r in back.results] == [r.to_json() for r in run.results]
    assert back.meta == run.meta
    assert baseline_failures(path) == {"cpu/kernels::exp/float16/b",
                                       "cpu/kernels::mul/float32/c", "opencl/device::sync"}


def test_json_lines_log_of_a_killed_run_loads_without_its_cut_line(tmp_path):
    path = tmp_path / "log.jsonl"
    log = JsonLinesLog(path, {"seed": 5})
    for r in _sample_run().results[:3]:
        log.add(r)
    log.close()
    with open(path, "a") as f:
        f.write('{"type": "result", "plugin": "cp')  # the kill came mid-line
    run = load_run(path)
    assert run.meta == {"seed": 5}
    assert [r.key for r in run.results] == [r.key for r in _sample_run().results[:3]]
    (tmp_path / "junk.txt").write_text("hello\nworld\n")
    with pytest.raises(ValueError, match=r"junk\.txt"):
        load_run(tmp_path / "junk.txt")


def test_junit_counts_by_status(tmp_path):
    write_junit(_sample_run(), tmp_path / "j.xml")
    suites = {s.get("name"): s for s in ET.parse(tmp_path / "j.xml").getroot()}
    k = suites["cpu.kernels"]
    assert (k.get("tests"), k.get("failures"), k.get("errors"), k.get("skipped")) == \
        ("5", "1", "1", "1")
    cases = {c.get("name"): c for c in k}
    assert cases["exp/float16/b"].find("failure").get("type") == "FAIL"
    assert cases["mul/float32/c"].find("error").get("type") == "CRASH"
    assert cases["mul/int8/d"].find("skipped") is not None
    assert list(cases["add/float32/a"]) == []
    assert suites["opencl.device"].get("errors") == "1"


class _Cells(HTMLParser):
    """Collects the grid cells' (background colour, title) and checks tags balance."""

    def __init__(self):
        super().__init__()
        self.cells: list[tuple[str, str]] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and "style" in (a or {}):
            self.cells.append((a["style"].split(":", 1)[1], a.get("title", "")))
        if tag not in ("meta", "br"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def test_html_is_self_contained_and_colours_the_grid_by_worst_status():
    html = render_html(_sample_run())
    p = _Cells()
    p.feed(html)
    assert p.stack == []
    assert "<script" not in html and "http" not in html and "<link" not in html
    titles = {t.split(":")[0]: color for color, t in p.cells if "PASS, worst" in t}
    assert titles["add float32"] == COLORS[Status.PASS]
    assert titles["exp float16"] == COLORS[Status.FAIL]
    assert titles["mul float32"] == COLORS[Status.CRASH]
    assert titles["mul int8"] == COLORS[Status.NOT_SUPPORTED]
    # the coverage grid, the worst errors
    paths = {t: color for color, t in p.cells if "PASS, worst" not in t}
    assert paths["mul float32: fallback via mul[float32]"] == "#ef6c00"
    assert paths["mul int8: decomposition"] == "#1565c0"
    assert html.index("exp/float16/b") < html.index("exp/float32/a")  # worst first
    assert "rerun: hwcheck run --plugin cpu -k kernels::exp/float16/b" in html
