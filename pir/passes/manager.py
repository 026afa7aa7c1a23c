"""Passes and the PassManager: a registry of named passes, a textual pipeline
("dce,cse,canonicalize{max_iterations=4},cf.if(dce)": passes in order, options in braces,
a nested pipeline run on every op of the named kind), pass timing, IR printing before/after
with a filter, and verification after each pass."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..core import Operation
from ..program import Program
from ..verifier import VerificationError, verify


class PassError(ValueError):
    """A bad pipeline, an unknown pass or option, or a pass that broke the IR."""


class Pass:
    """A transformation of the regions of one op (the module, or the anchor op of a nested
    pipeline). Subclasses set `name`, may declare `options` (name -> default; the type of the
    default converts the textual value) and implement run(op) -> whether anything changed."""

    name: ClassVar[str] = ""
    options: ClassVar[dict[str, Any]] = {}

    def __init__(self, **options: Any) -> None:
        unknown = set(options) - set(self.options)
        if unknown:
            raise PassError(f"pass {self.name}: unknown option(s) {sorted(unknown)}; it takes "
                            f"{sorted(self.options) or 'none'}")
        self.opts = {**self.options, **options}

    def run(self, op: Operation) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self.opts.items() if v != self.options[k])
        return self.name + (f"{{{opts}}}" if opts else "")


_REGISTRY: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator: makes the pass available by its name in pipelines."""
    if not cls.name:
        raise PassError(f"{cls.__name__} has no name")
    _REGISTRY[cls.name] = cls
    return cls


def registered_passes() -> dict[str, type[Pass]]:
    from . import (  # noqa: F401 (register)
        canonicalize,
        constant_folding,
        cse,
        dce,
        fusions,
        lower_to_kernel,
    )

    return dict(_REGISTRY)


@dataclass
class Nested:
    """A pipeline run on every op named `anchor` (on its regions), innermost ops first."""

    anchor: str
    passes: list[Pass | Nested]

    def __repr__(self) -> str:
        return f"{self.anchor}({','.join(map(repr, self.passes))})"


@dataclass
class PassTiming:
    seconds: dict[str, float] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, dt: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + dt
        self.runs[name] = self.runs.get(name, 0) + 1

    def report(self) -> str:
        total = sum(self.seconds.values()) or 1e-12
        lines = ["pass timing (wall):"]
        for name, s in sorted(self.seconds.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {s * 1e3:9.3f} ms  {100 * s / total:5.1f}%  {name} "
                         f"(x{self.runs[name]})")
        lines.append(f"  {total * 1e3:9.3f} ms  total")
        return "\n".join(lines)


Filter = bool | Sequence[str] | Callable[[Pass], bool]


def _selected(f: Filter, p: Pass) -> bool:
    if isinstance(f, bool):
        return f
    if callable(f):
        return bool(f(p))
    return p.name in f


class PassManager:
    """Runs passes in order on a program. print_before / print_after: True, a list of pass
    names, or a predicate; the IR goes to `output` (a callable taking a str; default print).
    verify_each: verify after every pass (a failure names the pass). timing: PassTiming
    collects per-pass wall time (report())."""

    def __init__(self, passes: str | Iterable[Pass | Nested] = (), *, verify_each: bool = True,
                 timing: bool = False, print_before: Filter = False,
                 print_after: Filter = False,
                 output: Callable[[str], None] | None = None) -> None:
        self.passes: list[Pass | Nested] = (parse_pipeline(passes) if isinstance(passes, str)
                                            else list(passes))
        self.verify_each = verify_each
        self.timing = PassTiming() if timing else None
        self.print_before = print_before
        self.print_after = print_after
        self.output = output or print

    def add(self, p: Pass | Nested | str) -> PassManager:
        self.passes += parse_pipeline(p) if isinstance(p, str) else [p]
        return self

    def run(self, program: Program) -> bool:
        changed = self._run_list(self.passes, program.module, program)
        return changed

    def _run_list(self, passes: Sequence[Pass | Nested], op: Operation,
                  program: Program) -> bool:
        changed = False
        for p in passes:
            if isinstance(p, Nested):
                anchors = [o for o in op.walk() if o.name == p.anchor and o is not op]
                for anchor in reversed(anchors):  # inner ones first
                    if not anchor.erased:
                        changed |= self._run_list(p.passes, anchor, program)
                continue
            changed |= self._run_one(p, op, program)
        return changed

    def _run_one(self, p: Pass, op: Operation, program: Program) -> bool:
        where = "" if op is program.module else f" on {op.name}"
        if _selected(self.print_before, p):
            self.output(f"// ----- IR before {p!r}{where} -----\n{program}")
        t0 = time.perf_counter()
        changed = p.run(op)
        if self.timing is not None:
            self.timing.add(p.name, time.perf_counter() - t0)
        if _selected(self.print_after, p):
            self.output(f"// ----- IR after {p!r}{where} -----\n{program}")
        if self.verify_each:
            try:
                verify(program)
            except VerificationError as exc:
                raise PassError(f"the IR does not verify after pass {p!r}{where}:\n  "
                                + "\n  ".join(exc.errors)) from None
        return changed


_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.:\-]*|[{}(),=]|[^\s{}(),=]+)")


def parse_pipeline(text: str) -> list[Pass | Nested]:
    """Passes of a textual pipeline: `name`, `name{opt=value,...}`, `op.name(pipeline)`,
    separated by commas."""
    tokens = [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]
    registry = registered_passes()
    pos = 0

    def bad(expected: str) -> PassError:
        found = tokens[pos] if pos < len(tokens) else "the end"
        return PassError(f"pipeline {text!r}: expected {expected}, found {found!r}")

    def take(expected: str | None = None) -> str:
        nonlocal pos
        if pos >= len(tokens) or (expected is not None and tokens[pos] != expected):
            raise bad(repr(expected) if expected else "a pass name")
        pos += 1
        return tokens[pos - 1]

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def pipeline(closing: str | None) -> list[Pass | Nested]:
        out: list[Pass | Nested] = []
        while peek() is not None and peek() != closing:
            name = take()
            if peek() == "(":
                take("(")
                out.append(Nested(name, pipeline(")")))
                take(")")
            else:
                cls = registry.get(name)
                if cls is None:
                    raise PassError(f"pipeline {text!r}: unknown pass {name!r}; registered: "
                                    f"{', '.join(sorted(registry))}")
                opts: dict[str, Any] = {}
                if peek() == "{":
                    take("{")
                    while peek() != "}":
                        key = take()
                        take("=")
                        opts[key] = _convert(cls, key, take())
                        if peek() == ",":
                            take(",")
                    take("}")
                out.append(cls(**opts))
            if peek() == ",":
                take(",")
            elif peek() not in (None, closing):
                raise bad("',' between passes")
        return out

    result = pipeline(None)
    if pos != len(tokens):
        raise bad("the end of the pipeline")
    return result


def _convert(cls: type[Pass], key: str, raw: str) -> Any:
    if key not in cls.options:
        raise PassError(f"pass {cls.name}: unknown option {key!r}; it takes "
                        f"{sorted(cls.options) or 'none'}")
    default = cls.options[key]
    try:
        if isinstance(default, bool):
            if raw not in ("true", "false"):
                raise ValueError(raw)
            return raw == "true"
        return type(default)(raw)
    except ValueError:
        raise PassError(f"pass {cls.name}: option {key}={raw!r} is not a "
                        f"{type(default).__name__}") from None
