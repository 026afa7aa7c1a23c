"""What the direct suites (abi, device, memory, stream) share: finding the plugin file, the
isolated load probe run at collect time, and the DirectHost each worker keeps in its `state`.

These suites drive the plugin's C tables through cffi (conformance.direct_host), never through
the runtime core, so a runtime bug cannot hide a plugin bug. Each worker loads its own private
copy of the library, so the copy the runtime itself may have loaded stays untouched.

A plugin that the host would reject (see direct_host.LOAD_STAGES) cannot be checked further:
the abi suite reports the stage that failed, and the device, memory and stream suites then
collect one case, `<suite>::plugin-loads`, that FAILs with the reason (so a run of one of them
alone can never pass a plugin that does not load).
"""

from __future__ import annotations

import functools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ..model import Case, CheckFailed, NotSupported, Result, Status, Target

PROBE_MARK = "hwcheck-probe: "


def probe_timeout() -> float:
    """How long the load probe may take: HWPORT_PLUGIN_PROBE_TIMEOUT, as for the runtime's own
    isolated probe (default 30 s)."""
    try:
        return float(os.environ.get("HWPORT_PLUGIN_PROBE_TIMEOUT", "30"))
    except ValueError:
        return 30.0


def plugin_file(target: Target, options: dict[str, Any] | None = None) -> str:
    """The plugin library to load: the target's file, else the file of the loaded plugin with
    the target's device type (hwport.runtime.plugins() lists each with its path)."""
    if target.plugin_path:
        return target.plugin_path
    info = (options or {}).get("plugin") or {}
    if info.get("path"):
        return str(info["path"])
    from hwport import runtime

    for p in runtime.plugins():
        if p["device_type"] == target.device_type:
            return str(p["path"])
    loaded = ", ".join(p["device_type"] for p in runtime.plugins()) or "none"
    raise LookupError(f"no loaded plugin has device type {target.device_type!r} "
                      f"(loaded: {loaded})")


# How long the probe's own start-up (Python, numpy, cffi reading the headers) may take before
# the plugin is touched; the probe timeout proper covers only the plugin's load and init.
HARNESS_START_S = 300.0


@functools.cache
def _probe(path: str, env_items: tuple[tuple[str, str], ...], timeout: float) -> dict[str, Any]:
    env = {**os.environ, **dict(env_items)}
    # The probe imports hwport only for its headers: keep the runtime from loading (and
    # probing) the plugin itself, which would spend the timeout before the probe even starts.
    env.pop("HWPORT_PLUGIN_PATH", None)
    env["HWPORT_DISABLE_PLUGINS"] = "1"
    cmd = [sys.executable, "-m", "hwport.conformance.direct_host", path, "{}", PROBE_MARK]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    err_tail: list[str] = []
    threading.Thread(target=_pump, args=(proc.stdout, lines.put), daemon=True).start()
    keep_err = lambda ln: ln is not None and err_tail.append(ln)  # noqa: E731
    threading.Thread(target=_pump, args=(proc.stderr, keep_err), daemon=True).start()
    out: list[str] = []
    deadline = time.monotonic() + HARNESS_START_S
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            proc.kill()
            proc.wait()
            return _unfinished("\n".join(out), f"did not finish within {timeout:g} s (hung)")
        if line is None:
            break
        out.append(line)
        if line.startswith(PROBE_MARK + '{"ready"'):
            deadline = time.monotonic() + timeout
    proc.wait()
    for line in reversed(out):
        if line.startswith(PROBE_MARK) and '"stage"' in line:
            return json.loads(line[len(PROBE_MARK):])
    how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
           else f"exited with status {proc.returncode}")
    err = "\n".join(err_tail).strip()[-500:]
    # exit() in a plugin's constructor or init ends the probe without a report: not a pass,
    # whatever the status (0 included).
    verdict = "crashed" if proc.returncode < 0 else "ended before reporting"
    return _unfinished("\n".join(out), f"{verdict}: the probe process {how}"
                                        + (f"; stderr: {err}" if err else ""))


# The stage _unfinished names when the probe died after every load check passed.
AFTER_LOAD_STAGE = "device_type"


def _pump(stream: Any, put: Callable[[Any], None]) -> None:
    for line in stream:
        put(line.rstrip("\n"))
    put(None)


def _unfinished(stdout: str, why: str) -> dict[str, Any]:
    """The probe died: the stage after the last one it reported passed is the one that failed."""
    from ..direct_host import LOAD_STAGES

    passed = [json.loads(line[len(PROBE_MARK):])["passed"] for line in stdout.splitlines()
              if line.startswith(PROBE_MARK) and '"passed"' in line]
    at = LOAD_STAGES.index(passed[-1]) + 1 if passed else 0
    if at == len(LOAD_STAGES):
        # Every acceptance check passed; what killed it was the probe's read of the device type
        # (a garbage HWP_PluginApi.device_type pointer): the abi suite's device_type check.
        return {"stage": AFTER_LOAD_STAGE, "message": f"{why} while reading "
                "HWP_PluginApi.device_type, after every load check had passed"}
    return {"stage": LOAD_STAGES[at], "message": why}


def probe(target: Target, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Loads the plugin in a throwaway process (it may crash or hang): {"stage": the first
    direct_host.LOAD_STAGES check that failed, or "ok"; "message": why}. Cached per process."""
    try:
        path = plugin_file(target, options)
    except LookupError as e:
        return {"stage": "load", "message": str(e)}
    return _probe(path, tuple(sorted(target.env.items())), probe_timeout())


def load_gate(suite: str, target: Target, options: dict[str, Any]) -> list[Case] | None:
    """None when the plugin loads; else the one case that reports why it did not."""
    found = probe(target, options)
    if found["stage"] == "ok":
        return None
    reason = f"plugin did not load: abi::{found['stage']} failed: {found['message']}"
    return [Case(suite, "plugin-loads", {"reason": reason})]


def host(target: Target, state: dict[str, Any]):
    """The worker's DirectHost for the target: loaded, accepted and its devices initialised,
    once per worker. A plugin the host rejects FAILs the case."""
    from ..direct_host import DirectHost, LoadFailed

    if "host" not in state:
        try:
            h = DirectHost(plugin_file(target), env=dict(target.env))
            h.validate()
        except LoadFailed as e:
            raise CheckFailed(f"plugin did not load: abi::{e.stage} failed: {e.message}",
                              stage=e.stage) from None
        if h.device_count() < 1:
            raise CheckFailed(f"the plugin reports no devices: {h.last_error() or 'no reason'}")
        h.init_devices()
        state["host"] = h
    return state["host"]


Check = Callable[[Any, Case], dict[str, Any] | None]


def run_check(checks: dict[str, Check], target: Target, case: Case,
              state: dict[str, Any]) -> Result:
    """Runs the check named by the case with the worker's host. A check raises CheckFailed or
    NotSupported (or direct_host.NotSupportedError for a missing optional function), or
    returns the details of a PASS."""
    from ..direct_host import NotSupportedError, PluginError

    if case.name == "plugin-loads":
        raise CheckFailed(case.params["reason"])
    h = host(target, state)
    try:
        details = checks[case.name](h, case) or {}
    except NotSupportedError as e:
        raise NotSupported(str(e)) from None
    except PluginError as e:  # an unexpected error status where the check needed success
        raise CheckFailed(str(e), status=e.status) from None
    return Result(case, Status.PASS, details=details)


def require(cond: bool, message: str, **details: Any) -> None:
    """FAILs the check with `message` unless `cond`."""
    if not cond:
        raise CheckFailed(message, **details)


def expect_error(h, status: int, what: str, expected: int | None = None) -> str:
    """`status` must be an error (the `expected` one, when given) that comes with a message
    from get_last_error; returns the message."""
    from ..direct_host import OK, STATUS_NAMES

    msg = h.last_error()
    name = STATUS_NAMES.get(status, status)
    require(status != OK, f"{what} returned HWP_OK; expected an error")
    if expected is not None:
        require(status == expected, f"{what} returned {name}, expected "
                f"{STATUS_NAMES[expected]} ({msg})")
    require(bool(msg), f"{what} returned {name} but get_last_error() is empty")
    return msg
