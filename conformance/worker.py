"""The worker subprocess that runs cases (`python -m hwport.conformance.worker`).

Protocol (JSON lines): the parent writes {"target": Target} and then one {"case": Case} per
case on stdin; the worker answers {"ready": true} once, then {"result": Result} per case. The
answers travel on the worker's original stdout, which is moved to a private descriptor first:
file descriptor 1 then points at stderr, so whatever the plugin or a library prints cannot
corrupt the protocol. A segfault or abort kills only this process (faulthandler writes the
Python stack to stderr first); the parent reports CRASH/TIMEOUT and starts a new worker.

A suite's run() may raise CheckFailed (FAIL), NotSupported (NOT_SUPPORTED); any other exception
is a harness problem (ERROR, with the traceback's tail).
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
import traceback
from typing import Any

from .model import Case, CheckFailed, NotSupported, Result, Status, Target
from .suites import load_suite


def run_case(target: Target, case: Case, states: dict[str, dict[str, Any]]) -> Result:
    """Runs one case with its suite; exceptions become FAIL/NOT_SUPPORTED/ERROR results.
    Each suite keeps its own `state` dict for the life of the worker."""
    t0 = time.perf_counter()
    try:
        suite = load_suite(case.suite)
        result = suite.run(target, case, states.setdefault(case.suite, {}))
    except CheckFailed as exc:
        result = Result(case, Status.FAIL, str(exc), details=dict(exc.details))
    except NotSupported as exc:
        result = Result(case, Status.NOT_SUPPORTED, str(exc))
    except Exception as exc:  # noqa: BLE001 - any suite bug is reported, not raised
        tb = traceback.format_exception(exc)
        result = Result(case, Status.ERROR, f"hwcheck error: {type(exc).__name__}: {exc}",
                        details={"traceback": "".join(tb)[-4000:]})
    if not result.duration_s:
        result.duration_s = time.perf_counter() - t0
    return result


def _json_safe(obj: Any) -> Any:
    """Numpy scalars and tuples in details, as plain JSON values."""
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):
        return _json_safe(obj.item())
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return str(obj)  # "nan", "inf", "-inf": strict JSON has no such numbers
    if isinstance(obj, str | int | float | bool) or obj is None:
        return obj
    return str(obj)


def _die_with_parent() -> None:
    """Linux: SIGKILL this worker when the hwcheck thread that started it goes away, so a
    worker stuck in a hanging plugin call never outlives a killed hwcheck."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent is already gone
        os._exit(1)


def _arm_faulthandler() -> None:
    """(Re)installs faulthandler's handlers (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL). Called
    before every case: a library loaded with the plugins may have replaced them since (LLVM,
    which PoCL loads when the OpenCL plugin starts, installs its own; on SIGABRT it does not
    hand over, so a plugin's abort() left no Python stack in the CRASH's stderr tail)."""
    faulthandler.disable()
    faulthandler.enable(file=sys.stderr, all_threads=True)


def main() -> int:
    _die_with_parent()
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # anything printed from here on goes to stderr
    sys.stdout = sys.stderr
    _arm_faulthandler()

    def send(obj: dict[str, Any]) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    target: Target | None = None
    states: dict[str, dict[str, Any]] = {}
    for line in sys.stdin:
        msg = json.loads(line)
        if "target" in msg:
            target = Target.from_json(msg["target"])
            send({"ready": True, "pid": os.getpid()})
        elif "case" in msg:
            assert target is not None, "the target comes first"
            _arm_faulthandler()
            result = run_case(target, Case.from_json(msg["case"]), states)
            send({"result": _json_safe(result.to_json())})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
