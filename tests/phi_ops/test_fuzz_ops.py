"""The bad-input property test: for every op of ops.yaml, hypothesis draws malformed calls
(wrong types, wrong dtypes, unbroadcastable shapes, out-of-range axes, huge and negative sizes,
NaN/inf where an int is expected, out-of-range indices, mixed places, 0-d and zero-size
tensors, values that do not fit the dtype), each made from a valid call of
phi_ops.sample_inputs by corrupting one argument, and runs them in a crash-isolated worker
process (tests/phi_ops/fuzz_worker.py; restarted when it dies). Every call must end in
  - a result equal to the numpy oracle's (phi_ops.reference, phi_ops.tolerance), or
  - a TypeError/ValueError/IndexError/MemoryError whose message names the public op and the
    corrupted argument (or, when the corruption makes two arguments disagree, e.g. shapes,
    dtypes or places, either of them);
never a signal or a hang; afterwards a valid op on the same places works and the allocator's
allocated bytes are back at their baseline.

Each call goes through one public entry point: hwport.<op>, hwport.nn.functional.<op> or the
Tensor method (phi_ops/functional.py generates all three). The CI slice is a fixed-seed draw
(hypothesis derandomized); the `slow` test draws many more.
`python -m tests.phi_ops.test_fuzz_ops [--examples N] [--place P]` prints the summary counts
(calls, crashes, hangs, wrong results, unclear messages, leaks) of a fixed-seed run.
"""

from __future__ import annotations

import collections
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from hwport.phi_ops import sample_inputs as C
from hwport.phi_ops.schema import OpDef, load_ops
from tests.phi_ops.fuzz_worker import read_frame, write_frame

OPS: dict[str, OpDef] = load_ops()
P0, P1 = "custom:cpu:0", "custom:cpu:1"
REPO = Path(__file__).resolve().parents[2]
# Sizes here either overflow or exceed any memory (a size that could be allocated, e.g.
# [2**31] float64, would make the CPU plugin's host heap grow until the OOM killer steps in).
# Generous: only a call that never returns reaches it (the hang check, not a speed limit).
HANG_S = 120.0
MAX_NDIM = 16  # HWP_MAX_NDIM (runtime/include/hwport/types.h)


# ---- the worker process -----------------------------------------------------------------------

class Worker:
    """A persistent `python -m tests.phi_ops.fuzz_worker`, restarted after it dies."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.log = tempfile.TemporaryFile()

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ)
        env.setdefault("HWPORT_CPU_DEVICES", "2")
        # A corrupted size may be valid and merely huge (arange(5, 2**31, dtype='int32')):
        # the devices' limits turn it into OutOfMemoryError, not a worker the OOM killer ends.
        env.setdefault("HWPORT_CPU_MEMORY_LIMIT", "2G")
        env.setdefault("HWPORT_OPENCL_MEMORY_LIMIT", "2G")
        self.log.seek(0)
        self.log.truncate()
        return subprocess.Popen([sys.executable, "-m", "tests.phi_ops.fuzz_worker"], cwd=REPO,
                                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=self.log)

    def run(self, case: dict[str, Any]) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            write_frame(proc.stdin, case)
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
        if not ready:
            proc.kill()
            proc.wait()
            self.proc = None
            return {"status": "hang", "detail": f"no answer within {HANG_S:.0f} s"}
        verdict = read_frame(proc.stdout)
        if verdict is None:
            return self._died()
        return verdict

    def _died(self) -> dict[str, Any]:
        assert self.proc is not None
        code = self.proc.wait()
        self.proc = None
        self.log.seek(0)
        tail = self.log.read()[-600:].decode(errors="replace")
        if code < 0:
            return {"status": "crash",
                    "detail": f"signal {signal.Signals(-code).name}; stderr: {tail}"}
        return {"status": "crash", "detail": f"the process exited with {code}; stderr: {tail}"}

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait()
        self.proc = None


# ---- valid calls to corrupt ---------------------------------------------------------------------

def _base_cases() -> dict[str, list[C.Case]]:
    out: dict[str, list[C.Case]] = collections.defaultdict(list)
    for name, op in OPS.items():
        for d in op.dtypes:
            for c in C.cases_for(name, d):
                if not c.large:
                    out[name].append(c)
    return out


BASE = _base_cases()
FUZZ_OPS = sorted(n for n in OPS if BASE[n])

# ---- corruptions --------------------------------------------------------------------------------

WRONG_TYPES = ["abc", {"a": 1}, b"xy", [["a"]], {1, 2}, 1j]
HUGE_INTS = [2**70, -(2**70), 2**63, -(2**63) - 1, 2**64 + 3]
BAD_INTS = [None, True, 1.5, math.nan, math.inf, -math.inf, "1", [1], *HUGE_INTS,
            2**62, 10**6, -(10**6), -1, 0, 17]
BAD_INT_LISTS = [None, [2**70], [math.nan], [math.inf], [-1], [-5, 3], [2**62, 2**62],
                 [2**62 + 16], [2**40, 2**40, 2**40], [10**6], [-(10**6)], "abc", [1.5],
                 [True], 3, [], [0, 0], [2**31, 2**31], [1] * 17, ["a"], [None]]
BAD_FLOATS = [None, "x", [1.0], math.nan, math.inf, -math.inf, 0, 0.0, -1, -1.0, 2**70,
              2**1100, 1e300, True, 1000, 128, -129, 256, 65536, -(2**63) - 1, 2**64]
BAD_BOOLS = [None, 2, "yes", 1.0, math.nan, [True]]
BAD_STRS = [None, 5, "bogus", "", ["mean"]]
BAD_DTYPES = [None, "int4", 5, "float128", "complex64", "string", *C.ALL_DTYPES]


def _fit_edges(dtype: str) -> list[Any]:
    """Python scalars just outside `dtype`'s range (numpy 2 raises OverflowError for them)."""
    if dtype in ("int8", "uint8", "int16", "int32", "int64"):
        info = np.iinfo(dtype)
        return [int(info.max) + 1, int(info.min) - 1, int(info.max) * 4 + 3]
    return [1e300, -1e300, 2**70]


def _arr(case: C.Case, i: int) -> Any:
    return case.inputs[i]


def _input_corruptions(op: OpDef, case: C.Case, i: int) -> list[tuple[str, Any]]:
    """(kind, new input entry) for input i of `case`."""
    spec = op.inputs[i]
    v = case.inputs[i]
    rng = C.rng_for("fuzz", op.name, case.name, i)
    out: list[tuple[str, Any]] = [("wrong_type", ("value", w)) for w in WRONG_TYPES]
    if not spec.optional:
        out.append(("none", None))
    out += [("huge_scalar", ("value", h)) for h in HUGE_INTS[:2]]
    out += [("scalar_nan", ("value", math.nan)), ("scalar_bool", ("value", True))]
    if spec.variadic:
        arrays = v or []
        out += [("empty_list", ("list", [])),
                ("list_with_str", ("list", [_entry(a) for a in arrays] + [("value", "s")])),
                ("list_other_place", ("list", [_entry(a, P1 if k else P0)
                                               for k, a in enumerate(arrays)])),
                ("list_bad_shape", ("list", [_entry(a) for a in arrays]
                                    + [_entry(np.zeros((7, 9), arrays[0].dtype))]))]
        return out
    if v is None:
        return out
    a = np.asarray(v)
    d = C.dname(a)
    for other in C.ALL_DTYPES:
        if other != d:
            out.append(("wrong_dtype", _entry(C.sample(other, a.shape, rng))))
    out += [("bad_shape", _entry(C.sample(d, a.shape + (7,), rng))),
            ("bad_shape", _entry(C.sample(d, (5, 7, 3), rng))),
            ("zero_d", _entry(C.sample(d, (), rng))),
            ("zero_size", _entry(C.sample(d, (0,) + a.shape[1:], rng))),
            ("zero_size", _entry(C.sample(d, (3, 0), rng))),
            ("other_place", _entry(a, P1)),
            ("ndim17", _entry(C.sample(d, (1,) * (MAX_NDIM + 1), rng))),
            ("noncontiguous_like", _entry(np.ascontiguousarray(a)))]
    if d in ("int8", "uint8", "int16", "int32", "int64"):
        out += [("scalar_overflow", ("value", e)) for e in _fit_edges(d)]
    if spec.name in ("index", "label"):
        big = np.full(a.shape, 10**6, dtype=a.dtype) if a.size else np.array([10**6], a.dtype)
        neg = np.full(a.shape, -7, dtype=a.dtype) if a.size else np.array([-7], a.dtype)
        out += [("index_range", _entry(big)), ("index_range", _entry(neg)),
                ("index_float", _entry(a.astype(np.float32)))]
    return out


def _entry(a: Any, place: str = P0) -> tuple[str, np.ndarray, str]:
    return ("array", np.asarray(a), place)


def _attr_corruptions(op: OpDef, case: C.Case, name: str) -> list[tuple[str, Any]]:
    kind = op.attr_map[name].type
    table: dict[str, list[Any]] = {"int": BAD_INTS, "ints": BAD_INT_LISTS, "float": BAD_FLOATS,
                                   "bool": BAD_BOOLS, "str": BAD_STRS, "dtype": BAD_DTYPES,
                                   "floats": [None, "x", [math.nan], [2**1100], 3]}
    out = [(f"attr_{kind}", v) for v in table[kind]]
    if kind == "float":
        out += [("value_overflow", v) for v in _fit_edges(_value_dtype(op, case))]
    if kind in ("int", "ints"):
        nd = _ndim(case)
        axis = [nd + 3, -nd - 3]
        out += [("axis_range", x if kind == "int" else [x]) for x in axis]
    return out


def _value_dtype(op: OpDef, case: C.Case) -> str:
    """The dtype a float attribute's value becomes (fill value, pad value, clip bound)."""
    d = case.attrs.get("dtype")
    if d is not None:
        return str(d)
    return case.dtype


def _ndim(case: C.Case) -> int:
    for v in case.inputs:
        if isinstance(v, np.ndarray):
            return v.ndim
    shape = case.attrs.get("shape", ())
    return len(shape) if isinstance(shape, list | tuple) else 1


@st.composite
def bad_calls(draw: Callable, ops: list[str] | None = None, place: str = P0) -> dict[str, Any]:
    """One malformed call: a valid sample case with one argument corrupted."""
    name = draw(st.sampled_from(ops or FUZZ_OPS))
    op = OPS[name]
    case = draw(st.sampled_from(BASE[name]))
    targets = [("input", i) for i in range(len(op.inputs))] + [
        ("attr", a.name) for a in op.attrs]
    where, which = draw(st.sampled_from(targets))
    inputs = [None if v is None else
              ("list", [_entry(a, place) for a in v]) if isinstance(v, list) else
              _entry(v, place) for v in case.inputs]
    attrs = dict(case.attrs)
    if where == "input":
        kind, entry = draw(st.sampled_from(_input_corruptions(op, case, which)))
        if place != P0:
            entry = _moved(entry, place)
        inputs[which] = entry
        arg = op.inputs[which].name
    else:
        kind, value = draw(st.sampled_from(_attr_corruptions(op, case, which)))
        attrs[which] = value
        arg = which
    entries = ["hwport"] + ["nn"] * op.nn + ["method"] * op.method
    return {"op": name, "dtype": case.dtype, "base": case.name, "kind": kind, "arg": arg,
            "inputs": inputs, "attrs": attrs, "place": place,
            "entry": draw(st.sampled_from(entries))}


def _moved(entry: Any, place: str) -> Any:
    """An input entry on `place` instead of P0 (P1 stays the 'other place')."""
    if entry is None or entry[0] == "value":
        return entry
    if entry[0] == "list":
        return ("list", [_moved(e, place) for e in entry[1]])
    return ("array", entry[1], place if entry[2] == P0 else P0)


def describe(case: dict[str, Any]) -> str:
    def show(e: Any) -> str:
        if e is None:
            return "None"
        if e[0] == "array":
            return f"{C.dname(e[1])}{list(e[1].shape)}@{e[2]}"
        if e[0] == "list":
            return "[" + ", ".join(show(x) for x in e[1]) + "]"
        return repr(e[1])[:40]

    names = [i.name for i in OPS[case["op"]].inputs]
    ins = ", ".join(f"{n}={show(e)}" for n, e in zip(names, case["inputs"], strict=True))
    return (f"{case.get('entry', 'hwport')}.{case['op']}({ins}; {case['attrs']}) "
            f"[base {case['dtype']}/{case['base']}, "
            f"corrupted {case['arg']}: {case['kind']}]")


# ---- running a batch and counting ---------------------------------------------------------------

FAILURES = ("crash", "hang", "wrong", "unclear", "harness")


class Tally:
    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.failures: list[str] = []

    def add(self, case: dict[str, Any], verdict: dict[str, Any]) -> None:
        self.counts["calls"] += 1
        status = verdict["status"]
        self.counts[status] += 1
        problems = []
        if status in FAILURES:
            problems.append(f"{status}: {verdict['detail']}")
        for extra in ("leak", "broken"):
            if extra in verdict:
                self.counts[extra] += 1
                problems.append(f"{extra}: {verdict[extra]}")
        if problems:
            self.failures.append(f"{describe(case)}\n    " + "\n    ".join(problems))

    def summary(self) -> str:
        c = self.counts
        return (f"calls {c['calls']}, crashes {c['crash']}, hangs {c['hang']}, wrong results "
                f"{c['wrong']}, unclear messages {c['unclear']}, leaks {c['leak']}, broken "
                f"places {c['broken']} (clear errors {c['error']}, correct results {c['ok']}, "
                f"results without an oracle {c['ok_unchecked']})")


def run_fuzz(examples: int, ops: list[str] | None = None, place: str = P0,
             seed: int | None = None) -> Tally:
    """Draws `examples` bad calls (derandomized: the same ones every run, or those of `seed`)
    and runs each in the worker."""
    tally = Tally()
    worker = Worker()
    opts: dict[str, Any] = {"max_examples": examples, "database": None, "deadline": None,
                            "phases": [Phase.generate], "suppress_health_check": list(HealthCheck)}
    if seed is None:
        opts["derandomize"] = True

    @settings(**opts)
    @given(bad_calls(ops, place))
    def draw(case: dict[str, Any]) -> None:
        tally.add(case, worker.run(case))

    if seed is not None:
        from hypothesis import seed as hseed

        draw = hseed(seed)(draw)
    try:
        draw()
    finally:
        worker.close()
    return tally


def _assert_clean(tally: Tally) -> None:
    print(tally.summary())
    assert not tally.failures, (
        f"{len(tally.failures)} bad calls misbehaved ({tally.summary()}):\n"
        + "\n".join(tally.failures[:60]))


# ---- the tests ----------------------------------------------------------------------------------

def test_fuzz_every_op_fixed_seed() -> None:
    """The CI slice: a fixed draw that covers every op of ops.yaml."""
    _assert_clean(run_fuzz(1200))


def test_fuzz_strategy_covers_every_op_and_kind() -> None:
    """The strategy itself: every op of ops.yaml has valid calls to corrupt, and the
    corruption kinds the issue lists are all drawn."""
    assert set(FUZZ_OPS) == set(OPS), f"ops without a base case: {set(OPS) - set(FUZZ_OPS)}"
    kinds: set[str] = set()
    for name in FUZZ_OPS:
        op, case = OPS[name], BASE[name][0]
        for i in range(len(op.inputs)):
            kinds |= {k for k, _ in _input_corruptions(op, case, i)}
        for a in op.attrs:
            kinds |= {k for k, _ in _attr_corruptions(op, case, a.name)}
    want = {"wrong_type", "wrong_dtype", "bad_shape", "axis_range", "attr_ints", "attr_int",
            "other_place", "zero_d", "zero_size", "index_range", "value_overflow",
            "scalar_overflow", "ndim17", "huge_scalar"}
    assert want <= kinds, want - kinds


def test_worker_reports_a_crash_and_recovers() -> None:
    """The harness: a case that kills the worker is reported as a crash, and the next case
    runs in a fresh worker."""
    worker = Worker()
    try:
        crash = {"op": "abs", "dtype": "float32", "base": "-", "kind": "-", "arg": "x",
                 "inputs": [("value", _Kill())], "attrs": {}, "place": P0}
        v = worker.run(crash)
        assert v["status"] == "crash" and "SIGKILL" in v["detail"], v
        ok = {"op": "abs", "dtype": "float32", "base": "-", "kind": "-", "arg": "x",
              "inputs": [_entry(np.array([-1.5, 2.0], np.float32))], "attrs": {}, "place": P0}
        assert worker.run(ok) == {"status": "ok", "detail": ""}
    finally:
        worker.close()


class _Kill:
    """Unpickling it in the worker kills the worker (a stand-in for a segfaulting call)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_kill_self, ())


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _opencl_ready() -> bool:
    import hwport

    return any(p["device_type"] == "opencl" and p["device_count"] > 0
               for p in hwport.runtime.plugins())


OPENCL_OPS = ["add", "abs", "exp", "sum", "matmul", "reshape", "gather", "full", "pad",
              "where", "cast", "softmax", "concat", "clip", "pow"]


def test_fuzz_opencl_subset() -> None:
    """A subset on custom:opencl (PoCL), with custom:cpu:0 as the other place."""
    if not _opencl_ready():
        pytest.skip("the OpenCL plugin has no device here")
    _assert_clean(run_fuzz(200, OPENCL_OPS, place="custom:opencl:0"))


@pytest.mark.slow
def test_fuzz_every_op_long() -> None:
    _assert_clean(run_fuzz(20000, seed=11))


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1200)
    parser.add_argument("--place", default=P0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--ops", default="")
    parser.add_argument("--show", type=int, default=40, help="failures to print")
    args = parser.parse_args(argv)
    os.environ.setdefault("HWPORT_CPU_DEVICES", "2")
    tally = run_fuzz(args.examples, [o for o in args.ops.split(",") if o] or None,
                     args.place, args.seed)
    for f in tally.failures[:args.show]:
        print(f)
    print(tally.summary())


if __name__ == "__main__":
    main(sys.argv[1:])
