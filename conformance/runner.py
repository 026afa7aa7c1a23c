"""The isolated runner: resolves targets, collects cases from the suites in this process, and
runs them in worker subprocesses (`--jobs` at a time), each case under `--timeout`.

A worker that dies while running a case (segfault, abort, exit) gives that case CRASH, with the
signal and the tail of the worker's stderr; one that runs past the timeout is killed (its whole
process group) and the case is TIMEOUT. Either way a fresh worker takes the next case and the run
goes on. Every result is appended to the JSON-lines log as soon as it arrives.
"""

from __future__ import annotations

import fnmatch
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import listing
from .model import Case, Result, Status, Target
from .results import JsonLinesLog, PluginResult, Run, apply_baseline
from .suites import DEFAULT_SUITES, load_suite

STARTUP_TIMEOUT_S = 60.0
MAX_START_FAILURES = 3  # a target whose workers cannot start this often in a row is abandoned


class HwcheckUsageError(Exception):
    """A bad command line or an unusable target, reported without a traceback."""


# ---- targets ------------------------------------------------------------------------------

@dataclass
class ResolvedTarget:
    """A target with what `hwcheck list` knows about it. `spec` is how the command line named
    it (repro commands repeat it); `info` the plugin's listing record, or {"load_error": ...}
    when the plugin file did not load."""

    spec: str
    target: Target
    info: dict[str, Any]


def _is_path(spec: str) -> bool:
    return "/" in spec or spec.endswith((".so", ".py")) or Path(spec).exists()


def _loadable(path: str) -> str:
    """The file the host loads for `path`: a Python plugin (.py) is checked through its entry
    library (hwport.device_plugins.python.prepare), like any C plugin."""
    if not path.endswith(".py"):
        return path
    from hwport.device_plugins.python import PrepareError, prepare

    try:
        return str(prepare(path))
    except PrepareError as exc:
        raise HwcheckUsageError(f"--plugin {path}: {exc}") from None


def resolve_targets(specs: Sequence[str], env: dict[str, str] | None = None,
                    skipped: list[str] | None = None) -> list[ResolvedTarget]:
    """--plugin NAME (a loaded plugin's device type) or PATH (a plugin file, loaded directly
    through HWPORT_PLUGIN_PATH). No spec: every loaded plugin that has a device; the others
    are added to `skipped` with the reason."""
    base_env = dict(env or {})
    out: list[ResolvedTarget] = []
    default = listing.probe(base_env) if not specs or any(not _is_path(s) for s in specs) \
        else None
    if not specs:
        assert default is not None
        for p in default["plugins"]:
            if p["device_count"] > 0:
                out.append(ResolvedTarget(p["device_type"],
                                          Target(p["device_type"], None, base_env), p))
            elif skipped is not None:
                note = p.get("device_count_note") or "no devices"
                skipped.append(f"{p['device_type']}: reports 0 devices ({note})")
        return out
    for spec in specs:
        if _is_path(spec):
            path = str(Path(spec).resolve())
            if not Path(path).is_file():
                raise HwcheckUsageError(f"--plugin {spec}: no such file")
            shown, path = path, _loadable(path)
            penv = {**base_env, "HWPORT_PLUGIN_PATH": path}
            found = listing.probe(penv)
            rec = next((p for p in found["plugins"]
                        if Path(p["path"]).resolve() == Path(path)), None)
            if rec is None:
                reasons = [e["reason"] for e in found["errors"]
                           if Path(e["path"]).resolve() == Path(path)]
                reason = reasons[0] if reasons else "not loaded (no reason recorded)"
                info = {"device_type": "", "path": path, "load_error": reason}
                out.append(ResolvedTarget(shown, Target("", path, penv), info))
            else:
                out.append(ResolvedTarget(shown, Target(rec["device_type"], path, penv), rec))
        else:
            assert default is not None
            rec = next((p for p in default["plugins"] if p["device_type"] == spec), None)
            if rec is None:
                names = ", ".join(p["device_type"] for p in default["plugins"]) or "none"
                raise HwcheckUsageError(f"--plugin {spec}: no loaded plugin has this device "
                                        f"type (loaded: {names}); see `hwcheck list`")
            out.append(ResolvedTarget(spec, Target(spec, None, base_env), rec))
    return out


# ---- options and case selection ---------------------------------------------------------------

@dataclass
class RunOptions:
    suites: Sequence[str] = DEFAULT_SUITES
    patterns: Sequence[str] = ()
    dtypes: Sequence[str] | None = None
    seed: int = 0
    jobs: int = 1
    timeout: float = 60.0
    thorough: bool = False  # the exhaustive size ladders (thresholds, transfers)
    ranks: int = 2  # the ccl suite's mpirun -n
    ccl_sizes: Sequence[int] | None = None  # the ccl suite's element counts (None: default)
    ccl_large: bool = False  # the ccl suite's 64 MiB buffers
    expected_failures: set[str] = field(default_factory=set)
    on_result: Callable[[PluginResult], None] | None = None
    on_total: Callable[[int], None] | None = None


def matches(case_id: str, patterns: Sequence[str], all_ids: set[str]) -> bool:
    """-k: a pattern equal to a case id selects that case alone; one with *?[ is a glob on the
    id or on the name (the id without "<suite>::"); any other is a substring of the id.
    Several patterns: any may match."""
    if not patterns:
        return True
    for p in patterns:
        if p in all_ids:
            if case_id == p:
                return True
        elif any(ch in p for ch in "*?["):
            if fnmatch.fnmatchcase(case_id, p) or fnmatch.fnmatchcase(
                    case_id.split("::", 1)[-1], p):
                return True
        elif p in case_id:
            return True
    return False


def derive_seed(base: int, plugin: str, case_id: str) -> int:
    return zlib.crc32(f"{base}/{plugin}/{case_id}".encode()) or 1


def repro_command(rt: ResolvedTarget, case: Case, opts: RunOptions) -> str:
    """The command line that reruns exactly this case."""
    parts = ["hwcheck", "run", "--plugin", rt.spec, "--suite", case.suite, "-k", case.id,
             "--seed", str(opts.seed)]
    if opts.timeout != RunOptions.timeout:
        parts += ["--timeout", f"{opts.timeout:g}"]
    if opts.thorough:
        parts.append("--thorough")
    if case.suite == "ccl":
        if opts.ranks != RunOptions.ranks:
            parts += ["--ranks", str(opts.ranks)]
        if opts.ccl_sizes is not None:
            parts += ["--ccl-sizes", ",".join(map(str, opts.ccl_sizes))]
        if opts.ccl_large:
            parts.append("--ccl-large")
    return shlex.join(parts)


def collect(rt: ResolvedTarget, opts: RunOptions) -> tuple[list[Case], list[Result]]:
    """The selected cases of every requested suite for one target, with seeds; a suite whose
    collect() raises gives one ERROR result instead."""
    options = {"plugin": rt.info, "dtypes": list(opts.dtypes) if opts.dtypes else None,
               "seed": opts.seed, "k": list(opts.patterns), "thorough": opts.thorough,
               "ranks": opts.ranks, "ccl_large": opts.ccl_large,
               "ccl_sizes": list(opts.ccl_sizes) if opts.ccl_sizes is not None else None}
    cases: list[Case] = []
    errors: list[Result] = []
    for name in opts.suites:
        try:
            got = list(load_suite(name).collect(rt.target, options))
        except Exception as exc:  # noqa: BLE001 - one suite's bug must not stop the run
            errors.append(Result(Case(name, "collect"), Status.ERROR,
                                 f"hwcheck error: collecting the {name} suite raised "
                                 f"{type(exc).__name__}: {exc}"))
            continue
        cases.extend(got)
    ids = {c.id for c in cases}
    selected = [c for c in cases if matches(c.id, opts.patterns, ids)]
    plugin = rt.target.device_type or rt.spec
    return [c if c.seed else replace(c, seed=derive_seed(opts.seed, plugin, c.id))
            for c in selected], errors


# ---- the worker process -------------------------------------------------------------------

class WorkerDied(Exception):
    def __init__(self, returncode: int | None):
        super().__init__(returncode)
        self.returncode = returncode


class WorkerTimeout(Exception):
    pass


class WorkerStartError(Exception):
    pass


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "closed its pipe"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name} (signal {-returncode})"
    return f"exited with status {returncode}"


class Worker:
    """One `python -m hwport.conformance.worker` process for one target."""

    def __init__(self, target: Target):
        env = dict(os.environ)
        env.update(target.env)
        if target.plugin_path:
            env["HWPORT_PLUGIN_PATH"] = target.plugin_path
        env.setdefault("PYTHONFAULTHANDLER", "1")
        self._err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hwport.conformance.worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._err, env=env, start_new_session=True)
        self._buf = b""
        try:
            self._send({"target": target.to_json()})
            self._receive(STARTUP_TIMEOUT_S)
        except (WorkerDied, WorkerTimeout) as exc:
            what = describe_exit(exc.returncode) if isinstance(exc, WorkerDied) else \
                f"did not answer within {STARTUP_TIMEOUT_S:g} s"
            tail = self.stderr_tail()
            self.close()
            raise WorkerStartError(f"the worker process {what}"
                                   + (f"; its stderr (tail):\n{tail}" if tail else "")) from None

    def _send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise WorkerDied(self.proc.wait()) from None

    def _receive(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerTimeout()
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerDied(self.proc.wait())
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def run(self, case: Case, timeout: float) -> Result:
        self._send({"case": case.to_json()})
        return Result.from_json(self._receive(timeout)["result"])

    def stderr_tail(self, limit: int = 4000) -> str:
        self._err.seek(0, os.SEEK_END)
        size = self._err.tell()
        self._err.seek(max(0, size - limit))
        return self._err.read().decode("utf-8", "replace").strip()

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._err.close()


def _isolated_result(case: Case, status: Status, what: str, worker: Worker | None) -> Result:
    tail = worker.stderr_tail() if worker is not None else ""
    message = what + (f"; worker stderr (tail):\n{tail}" if tail else "")
    return Result(case, status, message, details={"stderr_tail": tail} if tail else {})


# ---- the run ------------------------------------------------------------------------------

class _TargetRun:
    """Runs one target's cases on `jobs` worker threads, each owning one worker process."""

    def __init__(self, rt: ResolvedTarget, cases: list[Case], opts: RunOptions,
                 emit: Callable[[Case, Result], None]):
        self.rt, self.opts, self.emit = rt, opts, emit
        self._queue = list(reversed(cases))
        self._lock = threading.Lock()
        self._start_failures = 0
        self.live: set[Worker] = set()
        self.stopped = False

    def _next(self) -> Case | None:
        with self._lock:
            return self._queue.pop() if self._queue else None

    def _start(self, case: Case) -> Worker | None:
        try:
            worker = Worker(self.rt.target)
        except (WorkerStartError, OSError) as exc:
            with self._lock:
                self._start_failures += 1
                give_up = self._start_failures >= MAX_START_FAILURES
                rest = list(reversed(self._queue)) if give_up else []
                if give_up:
                    self._queue.clear()
            for c in [case, *rest]:
                self.emit(c, Result(c, Status.ERROR, f"hwcheck error: a worker could not start: "
                                                     f"{exc}"))
            return None
        with self._lock:
            self._start_failures = 0
            self.live.add(worker)
        return worker

    def kill_all(self) -> None:
        """Kills every live worker (the run was interrupted)."""
        with self._lock:
            self.stopped = True
            workers = list(self.live)
        for w in workers:
            w.kill()

    def _retire(self, worker: Worker) -> None:
        with self._lock:
            self.live.discard(worker)
        worker.close()

    def _loop(self) -> None:
        worker: Worker | None = None
        try:
            while (case := self._next()) is not None:
                if worker is None:
                    worker = self._start(case)
                    if worker is None:
                        continue
                t0 = time.perf_counter()
                try:
                    result = worker.run(case, self.opts.timeout)
                except WorkerTimeout:
                    worker.kill()
                    result = _isolated_result(
                        case, Status.TIMEOUT, f"the case ran past the {self.opts.timeout:g} s "
                        f"timeout; the worker was killed", worker)
                    self._retire(worker)
                    worker = None
                except WorkerDied as exc:
                    result = _isolated_result(
                        case, Status.CRASH, f"the worker process {describe_exit(exc.returncode)}"
                        f" while running the case", worker)
                    self._retire(worker)
                    worker = None
                except Exception as exc:  # noqa: BLE001 - e.g. a garbled answer: never lose a case
                    result = Result(case, Status.ERROR, f"hwcheck error: talking to the worker "
                                                        f"failed: {type(exc).__name__}: {exc}")
                    self._retire(worker)
                    worker = None
                if result.status in (Status.CRASH, Status.TIMEOUT):
                    result.duration_s = time.perf_counter() - t0
                if self.stopped:
                    break
                self.emit(case, result)
        finally:
            if worker is not None:
                self._retire(worker)

    def run(self) -> None:
        threads = [threading.Thread(target=self._loop, daemon=True)
                   for _ in range(max(1, self.opts.jobs))]
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        except BaseException:  # interrupted: no worker may outlive hwcheck
            self.kill_all()
            raise


def run(targets: Sequence[ResolvedTarget], opts: RunOptions, log: JsonLinesLog | None,
        meta: dict[str, Any] | None = None) -> Run:
    """Runs every target's selected cases; returns the Run, results in collection order."""
    plan = [(rt, *collect(rt, opts)) for rt in targets]
    if opts.on_total is not None:
        opts.on_total(sum(len(cases) + len(errs) for _, cases, errs in plan))
    out = Run(dict(meta or {}))
    lock = threading.Lock()
    for rt, cases, errors in plan:
        plugin = rt.target.device_type or Path(rt.spec).name
        order = {c.id: i for i, c in enumerate(cases)}
        got: list[PluginResult] = []

        def emit(case: Case, result: Result, rt: ResolvedTarget = rt, plugin: str = plugin,
                 got: list[PluginResult] = got) -> None:
            pr = apply_baseline(PluginResult(plugin, result), opts.expected_failures)
            if pr.result.status in (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.ERROR,
                                    Status.XPASS):
                pr.result.details["repro"] = repro_command(rt, case, opts)
            with lock:
                got.append(pr)
                if log is not None:
                    log.add(pr)
                if opts.on_result is not None:
                    opts.on_result(pr)

        for err in errors:
            emit(err.case, err)
        # Suites with run_batch (ccl: N ranks under mpirun) run their cases themselves.
        batch_suites = {c.suite for c in cases if hasattr(load_suite(c.suite), "run_batch")}
        batched = [c for c in cases if c.suite in batch_suites]
        _TargetRun(rt, [c for c in cases if c.suite not in batch_suites], opts, emit).run()
        for name in dict.fromkeys(c.suite for c in batched):
            load_suite(name).run_batch(
                rt.target, [c for c in batched if c.suite == name],
                {"ranks": opts.ranks, "timeout": opts.timeout}, emit)
        got.sort(key=lambda r: order.get(r.result.case.id, -1))
        out.results.extend(got)
    return out


def status_counts(results: Sequence[PluginResult]) -> Counter[str]:
    return Counter(str(r.result.status) for r in results)
