"""The hwcheck command line: list, run (selection, outputs, baseline, seeds, exit codes,
usage errors, a plugin file that does not load) and report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points

from hwport.phi_ops.schema import dtype_groups, load_ops
from tests.conftest import installed_plugin, zoo_plugin_path

from .conftest import add_cases, hwcheck, results_by_id


def test_console_script_is_the_cli():
    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "hwcheck"]
    from hwport.conformance.cli import main

    assert ep.load() is main


def test_list_shows_plugins_capabilities_and_skipped_ones(tmp_path):
    broken = zoo_plugin_path("wrong_major")
    proc = hwcheck("list", "--json", "--plugin", str(broken), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    by_type = {p["device_type"]: p for p in found["plugins"]}
    cpu = by_type["cpu"]
    assert cpu["path"] == str(installed_plugin("device_plugins/cpu/libhwport_cpu.so"))
    assert cpu["abi_version"] == found["abi_version"] == "1.2"
    assert cpu["device_count"] == 2 and len(cpu["devices"]) == 2  # HWPORT_CPU_DEVICES=2
    # the CPU plugin has a kernel for every primitive in every dtype ops.yaml lists
    assert cpu["dtypes"] == list(dtype_groups()["all"])
    assert sum(cpu["kernels_by_dtype"].values()) == cpu["num_kernels"]
    prims = [op for op in load_ops().values() if op.is_primitive]
    assert cpu["kernels_by_dtype"]["float32"] >= sum("float32" in op.dtypes for op in prims)
    assert {"stream", "memory.async_copies", "memory.host_address"} <= set(cpu["optional"])
    assert "codegen" in cpu["optional"]  # the c99 target (ABI 1.2)
    (err,) = [e for e in found["errors"] if e["path"] == str(broken)]
    assert "ABI major version 2" in err["reason"]

    text = hwcheck("list", "--plugin", str(broken), cwd=tmp_path)
    assert text.returncode == 0
    assert "cpu  abi 1.2" in text.stdout and "optional: device.get_properties" in text.stdout
    assert "1 plugin(s) skipped" in text.stdout and "ABI major version 2" in text.stdout


def test_run_writes_json_junit_html_and_the_summary(tmp_path):
    proc = hwcheck("run", "--plugin", "cpu", "--suite", "kernels,coverage", "-k",
                   "add/float32/*", "-k", "coverage::add", "--jobs", "2", "--json",
                   "out/run.json", "--junit", "out/junit.xml", "--html", "out/run.html",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "out/run.json").read_text())
    assert doc["schema"] == "hwcheck-run/1" and doc["exit_code"] == 0
    assert doc["seed"] == 0 and doc["targets"][0]["device_type"] == "cpu"
    ids = [r["id"] for r in doc["results"]]
    assert ids == [*add_cases(), "coverage::add"]  # collection order, each case once
    for r in doc["results"][:-1]:
        assert r["status"] == "PASS" and r["plugin"] == "cpu"
        assert r["details"]["path"] == "native"
        assert r["details"]["max_ulp"] in (0, None)  # add is exact
    cov = doc["results"][-1]
    assert cov["details"]["paths"] == dict.fromkeys(cov["params"]["dtypes"], "native")
    assert doc["summary"] == {"cpu": {"kernels": {"PASS": len(ids) - 1},
                                      "coverage": {"PASS": 1}}}
    # the JSON-lines log next to --json has the same results
    lines = [json.loads(x) for x in (tmp_path / "out/run.jsonl").read_text().splitlines()]
    assert sorted(x["id"] for x in lines[1:]) == sorted(ids)

    suites = ET.parse(tmp_path / "out/junit.xml").getroot().findall("testsuite")
    assert {s.get("name"): int(s.get("tests")) for s in suites} == {
        "cpu.kernels": len(ids) - 1, "cpu.coverage": 1}
    assert all(s.get("failures") == "0" and s.get("errors") == "0" for s in suites)

    html = (tmp_path / "out/run.html").read_text()
    assert "<th>add</th>" in html and "hwcheck report" in html
    # the printed summary table
    row = next(line for line in proc.stdout.splitlines() if line.startswith("cpu ")
               and "kernels" in line)
    assert row.split()[2:4] == [str(len(ids) - 1), str(len(ids) - 1)]


def test_dtype_filter_and_seed_select_inputs_reproducibly(tmp_path):
    plugin = str(zoo_plugin_path("wrong_result"))
    case = "kernels::add/float32/same13x17"
    runs = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        proc = hwcheck("run", "--plugin", plugin, "--suite", "kernels", "-k", case,
                       "--dtype", "float32", "--seed", str(seed), "--json", f"{name}.json",
                       cwd=tmp_path)
        assert proc.returncode == 1
        runs[name] = results_by_id(tmp_path / f"{name}.json")[case]
    assert runs["a"]["seed"] == runs["b"]["seed"] != runs["c"]["seed"]
    assert runs["a"]["details"] == runs["b"]["details"]
    assert runs["a"]["details"]["max_abs_err"] != runs["c"]["details"]["max_abs_err"]
    assert "--seed 3" in runs["a"]["details"]["repro"]
    only = hwcheck("run", "--plugin", "cpu", "--suite", "kernels", "-k", "kernels::abs/*",
                   "--dtype", "int8,float16", "--json", "d.json", cwd=tmp_path)
    assert only.returncode == 0
    dts = {r["params"]["dtype"] for r in results_by_id(tmp_path / "d.json").values()}
    assert dts == {"int8", "float16"}


def test_baseline_turns_known_failures_into_xfail_and_fixed_ones_into_xpass(tmp_path):
    plugin = str(zoo_plugin_path("wrong_result"))
    first = hwcheck("run", "--plugin", plugin, "--suite", "kernels", "-k", "add/float32/*",
                    "--json", "base.json", cwd=tmp_path)
    assert first.returncode == 1
    base = results_by_id(tmp_path / "base.json")
    failed = {cid for cid, r in base.items() if r["status"] == "FAIL"}
    assert failed
    again = hwcheck("run", "--plugin", plugin, "--suite", "kernels", "-k", "add/float32/*",
                    "--baseline", "base.json", "--json", "again.json", cwd=tmp_path)
    assert again.returncode == 0, again.stdout
    statuses = {cid: r["status"] for cid, r in results_by_id(tmp_path / "again.json").items()}
    assert statuses == {cid: "XFAIL" if cid in failed else base[cid]["status"] for cid in base}

    # a baseline that expects a failure of a case that passes: XPASS, and the run fails
    fixed = {"results": [{"plugin": "cpu", "suite": "kernels", "name": "add/float32/bcast",
                          "status": "FAIL"}]}
    (tmp_path / "fixed.json").write_text(json.dumps(fixed))
    xp = hwcheck("run", "--plugin", "cpu", "--suite", "kernels", "-k", "add/float32/*",
                 "--baseline", "fixed.json", "--json", "xp.json", cwd=tmp_path)
    assert xp.returncode == 1
    got = results_by_id(tmp_path / "xp.json")
    assert got["kernels::add/float32/bcast"]["status"] == "XPASS"
    assert {r["status"] for cid, r in got.items() if cid != "kernels::add/float32/bcast"} == {
        "PASS"}


def test_a_plugin_file_that_does_not_load_fails_with_the_reason(tmp_path):
    broken = str(zoo_plugin_path("missing_required"))
    proc = hwcheck("run", "--plugin", broken, "--suite", "kernels,coverage", "--json",
                   "r.json", cwd=tmp_path)
    assert proc.returncode == 1
    got = results_by_id(tmp_path / "r.json")
    assert set(got) == {"kernels::plugin-loads", "coverage::plugin-loads"}
    for r in got.values():
        assert r["status"] == "FAIL" and "did not load" in r["message"]
        assert "required function" in r["message"]


def test_usage_errors_exit_2_with_a_message(tmp_path):
    cases = [
        (["run", "--suite", "nope"], "unknown suite"),
        (["run", "--plugin", "no_such_type", "--suite", "kernels"], "no loaded plugin"),
        (["run", "--plugin", "./missing.so"], "no such file"),
        (["run", "--plugin", "cpu", "--suite", "kernels", "-k", "zzz-no-case"], "no case"),
        (["run", "--plugin", "cpu", "--jobs", "0"], "--jobs"),
        (["report", "missing.json"], "missing.json"),
    ]
    for args, needle in cases:
        proc = hwcheck(*args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert needle in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_report_renders_a_saved_run_as_table_and_html(tmp_path):
    run = hwcheck("run", "--plugin", str(zoo_plugin_path("wrong_result")), "--suite",
                  "kernels", "-k", "add/float32/*", "--json", "saved.json", cwd=tmp_path)
    assert run.returncode == 1
    rep = hwcheck("report", "saved.json", cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    table = run.stdout[run.stdout.index("plugin "):]
    assert rep.stdout.startswith(table.split("\nhwcheck: ")[0])  # the same table and problems
    html = (tmp_path / "saved.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    assert "Worst errors" in html and "rerun: hwcheck run" in html
    assert "#c62828" in html  # the add/float32 cell is coloured FAIL


def test_progress_bar_only_on_a_terminal(tmp_path):
    import os
    import pty
    import subprocess
    import sys

    args = ["run", "--plugin", "cpu", "--suite", "kernels", "-k", "add/float32/*"]
    piped = hwcheck(*args, cwd=tmp_path)
    assert piped.returncode == 0 and "\r" not in piped.stdout
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "hwport.conformance", *args], cwd=tmp_path,
                            stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait() == 0
    text = out.decode()
    n = len(add_cases())
    assert f"] {n}/{n}  PASS {n}" in text and "\r[" in text and "#" * 30 in text
