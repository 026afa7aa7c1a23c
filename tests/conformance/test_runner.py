"""The isolated runner against deliberately broken zoo plugins (tests/plugins): a kernel that
segfaults gives CRASH for exactly the cases that launch it and the run goes on; a hanging
synchronize gives TIMEOUT; a wrong kernel gives FAIL with the right error statistics; results
stream to the JSON-lines log so a killed run keeps them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.conftest import zoo_plugin_path

from .conftest import add_cases, hwcheck, output_size, results_by_id


def test_segfaulting_kernel_is_crash_for_exactly_the_cases_that_launch_it(tmp_path):
    plugin = zoo_plugin_path("segfault_kernel")
    # add/float32 crashes; multiply/float32 (no kernel: the CPU fallback) must still pass after.
    proc = hwcheck("run", "--plugin", str(plugin), "--suite", "kernels", "-k", "add/float32/*",
                   "-k", "kernels::multiply/float32/same13x17", "--jobs", "2",
                   "--json", "run.json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    got = results_by_id(tmp_path / "run.json")
    expected = {cid: ("CRASH" if output_size(c) else "PASS") for cid, c in add_cases().items()}
    expected["kernels::multiply/float32/same13x17"] = "PASS"
    assert {cid: r["status"] for cid, r in got.items()} == expected
    assert "CRASH" in expected.values() and "PASS" in expected.values()
    for cid, r in got.items():
        if r["status"] == "CRASH":
            assert "SIGSEGV" in r["message"], r["message"]
            assert f"-k {cid}" in r["details"]["repro"]
            assert str(plugin) in r["details"]["repro"]
    # the summary and each crash's rerun command are printed
    assert "CRASH" in proc.stdout and "rerun: hwcheck run --plugin" in proc.stdout


def test_a_crash_rerun_command_reruns_exactly_that_case(tmp_path):
    plugin = zoo_plugin_path("segfault_kernel")
    proc = hwcheck("run", "--plugin", str(plugin), "--suite", "kernels", "-k",
                   "kernels::add/float32/bcast", "--json", "one.json", cwd=tmp_path)
    assert proc.returncode == 1
    got = results_by_id(tmp_path / "one.json")
    assert list(got) == ["kernels::add/float32/bcast"]
    assert got["kernels::add/float32/bcast"]["status"] == "CRASH"


def test_hanging_plugin_is_timeout_and_the_run_completes(tmp_path):
    plugin = zoo_plugin_path("hang_sync")
    ids = ["kernels::add/float32/bcast", "kernels::add/float32/0d-x"]
    proc = hwcheck("run", "--plugin", str(plugin), "--suite", "kernels", "-k", ids[0], "-k",
                   ids[1], "--timeout", "2", "--jobs", "1", "--json", "run.json",
                   cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    got = results_by_id(tmp_path / "run.json")
    assert {cid: r["status"] for cid, r in got.items()} == dict.fromkeys(ids, "TIMEOUT")
    for r in got.values():
        assert "2 s timeout" in r["message"]
        assert "--timeout 2" in r["details"]["repro"]


def test_wrong_kernel_fails_with_the_error_statistics(tmp_path):
    plugin = zoo_plugin_path("wrong_result")
    proc = hwcheck("run", "--plugin", str(plugin), "--suite", "kernels", "-k", "add/float32/*",
                   "--json", "run.json", "--seed", "7", cwd=tmp_path)
    assert proc.returncode == 1
    got = results_by_id(tmp_path / "run.json")
    cases = add_cases(seed=7)
    assert set(got) == set(cases)
    checked = 0
    for cid, case in cases.items():
        a, b = (np.asarray(v) for v in case.inputs)
        if a.dtype != np.float32 or b.dtype != np.float32 or not np.isfinite(a).all() \
                or not np.isfinite(b).all():
            continue  # mixed dtypes and NaN/Inf: only the status is checked below
        want = a + b
        wrong = np.where(b < 0, a - b, a + b).astype(np.float32)
        bad = wrong != want
        r = got[cid]
        if not bad.any():
            assert r["status"] == "PASS", r
            continue
        checked += 1
        assert r["status"] == "FAIL", r
        d = r["details"]
        assert d["mismatches"] == int(bad.sum())
        assert tuple(d["first_mismatch"]) == tuple(int(i) for i in np.argwhere(bad)[0])
        assert d["max_abs_err"] == float(np.abs(wrong.astype(np.float64) - want).max())
        assert d["path"] == "native"
    assert checked >= 3
    assert got["kernels::add/float32/special"]["status"] == "FAIL"
    assert got["kernels::add/float32/empty"]["status"] == "PASS"


def test_results_stream_as_json_lines_and_survive_a_kill(tmp_path):
    log = tmp_path / "live.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "hwport.conformance", "run", "--plugin", "cpu", "--suite",
         "kernels", "--jobs", "1", "--jsonl", str(log)], cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while proc.poll() is None:
            lines = log.read_text().splitlines() if log.exists() else []
            if len(lines) > 41:  # the header and at least 40 whole result lines
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    text = log.read_text()
    # a line the kill cut short is dropped; every whole line must parse
    whole = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
    records = [json.loads(line) for line in whole]
    assert records[0]["type"] == "run" and records[0]["schema"] == "hwcheck-run/1"
    results = [r for r in records if r["type"] == "result"]
    assert len(results) >= 40
    assert all(r["plugin"] == "cpu" for r in results)
    assert [r for r in results if r["status"] != "PASS"] == []
    # the partial log renders like a finished run
    rep = hwcheck("report", str(log), "--html", str(tmp_path / "partial.html"), cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    assert "kernels" in rep.stdout and "PASS" in rep.stdout
    assert (tmp_path / "partial.html").read_text().startswith("<!DOCTYPE html>")


def _worker_pids(parent: int) -> list[int]:
    """Live `hwport.conformance.worker` processes started by `parent`."""
    pids = []
    for task in os.listdir(f"/proc/{parent}/task"):
        try:
            with open(f"/proc/{parent}/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            continue
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"hwport.conformance.worker" in f.read():
                    out.append(pid)
        except OSError:
            continue
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _start_hanging_run(tmp_path):
    plugin = zoo_plugin_path("hang_sync")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hwport.conformance", "run", "--plugin", str(plugin), "--suite",
         "kernels", "-k", "kernels::add/float32/bcast", "--timeout", "600", "--jsonl",
         str(tmp_path / "log.jsonl")], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    while not workers and proc.poll() is None:
        workers = _worker_pids(proc.pid)
        time.sleep(0.05)
    assert workers, proc.communicate()
    return proc, workers


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_hwcheck_leaves_no_worker_behind(tmp_path, sig):
    proc, workers = _start_hanging_run(tmp_path)
    time.sleep(0.5)  # let the worker reach the hanging call
    proc.send_signal(sig)
    _, err = proc.communicate()
    if sig == signal.SIGTERM:
        assert proc.returncode == 130 and "interrupted" in err
    for _ in range(600):  # the kernel delivers the parent-death signal asynchronously
        if not any(_alive(w) for w in workers):
            break
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers)
