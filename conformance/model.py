"""The data every part of hwcheck shares: what is checked (Target), one check (Case), its outcome
(Result) and the statuses. Suites produce Cases in the parent process and run them in worker
subprocesses; everything here is JSON-serialisable so it can cross that boundary and be written
as JSON lines."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol


class Status(enum.StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    NOT_SUPPORTED = "NOT_SUPPORTED"  # the plugin does not claim the capability: not a failure
    CRASH = "CRASH"  # the worker died (signal, abort) while running the case
    TIMEOUT = "TIMEOUT"  # the case ran past --timeout; the worker was killed
    ERROR = "ERROR"  # a harness problem, not the plugin's fault
    XFAIL = "XFAIL"  # failed, and the --baseline expected it to
    XPASS = "XPASS"  # passed, but the --baseline expected a failure


# Statuses that make `hwcheck run` exit non-zero.
FAILING = frozenset({Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.XPASS})


@dataclass(frozen=True)
class Target:
    """The plugin under check: a file loaded directly (`--plugin PATH`) or an installed/built-in
    plugin named by its device type (`--plugin NAME`); `env` is set in every worker."""

    device_type: str
    plugin_path: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Target:
        return cls(**d)


@dataclass(frozen=True)
class Case:
    """One check. `name` is unique within its suite ("h2d_offsets", "add/float32/broadcast");
    `params` are JSON values; `seed` makes any random input reproducible."""

    suite: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    @property
    def id(self) -> str:
        return f"{self.suite}::{self.name}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Case:
        return cls(**d)


@dataclass
class Result:
    """The outcome of one Case. `details` holds measurements (max_abs_err, max_rel_err, max_ulp,
    first_mismatch, stats before/after, ...); `message` says what was wrong, in one or a few
    lines a vendor can act on."""

    case: Case
    status: Status
    message: str = ""
    duration_s: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.case.id, **self.case.to_json(), "status": str(self.status),
                "message": self.message, "duration_s": self.duration_s, "details": self.details}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Result:
        case = Case(d["suite"], d["name"], d.get("params", {}), d.get("seed", 0))
        return cls(case, Status(d["status"]), d.get("message", ""), d.get("duration_s", 0.0),
                   d.get("details", {}))


class CheckFailed(AssertionError):
    """Raised by a suite's run() for a FAIL; its message becomes Result.message."""

    def __init__(self, message: str, **details: Any):
        super().__init__(message)
        self.details = details


class NotSupported(Exception):
    """Raised by a suite's run() when the plugin does not claim what the case needs."""


class Suite(Protocol):
    """What each module in conformance/suites provides.

    collect() runs in the parent process and must not load the plugin's kernels (it may read
    what `hwcheck list` reads). run() runs inside a worker subprocess and may crash or hang:
    the runner turns that into CRASH/TIMEOUT. `state` is a dict that lives as long as the worker
    (for a loaded plugin, a device handle, ...); a restarted worker starts with a fresh one."""

    NAME: str

    def collect(self, target: Target, options: dict[str, Any]) -> list[Case]: ...

    def run(self, target: Target, case: Case, state: dict[str, Any]) -> Result: ...
