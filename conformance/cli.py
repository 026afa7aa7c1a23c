"""`hwcheck` (also `python -m hwport.conformance`): the conformance CLI that certifies a port.

    hwcheck list [--json]
    hwcheck run [--plugin NAME|PATH]... [--suite S]... [-k PATTERN]... [--dtype D]... [--seed N]
                [--jobs N] [--timeout S] [--json FILE] [--jsonl FILE] [--junit FILE]
                [--html FILE] [--baseline FILE] [--thorough]
                [--ranks N] [--ccl-sizes COUNTS] [--ccl-large]     (the ccl suite, under mpirun)
    hwcheck report FILE [--html OUT]

Exit status of `run`: 0 when nothing failed; 1 on any FAIL, CRASH, TIMEOUT or XPASS; 2 for a
usage error. docs/hwcheck.md describes the statuses and the JSON schema.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from . import listing, runner
from .report_html import render_html
from .report_text import Progress, render
from .results import JsonLinesLog, Run, baseline_failures, exit_code, load_run, write_junit
from .suites import DEFAULT_SUITES, SUITE_NAMES

DEFAULT_JSONL = "hwcheck-results.jsonl"


def _split(values: Sequence[str] | None) -> list[str]:
    """Repeated and comma-separated option values, flattened."""
    return [v for item in values or () for v in item.split(",") if v]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hwcheck", description="Conformance checker that "
                                "certifies an hwport device plugin.")
    sub = p.add_subparsers(dest="command", required=True)

    ls = sub.add_parser("list", help="discovered plugins, their capabilities and load errors")
    ls.add_argument("--plugin", action="append", default=[], metavar="PATH",
                    help="also load this plugin file (as HWPORT_PLUGIN_PATH does)")
    ls.add_argument("--json", action="store_true", help="print the records as JSON")

    r = sub.add_parser("run", help="run the suites against plugins")
    r.add_argument("--plugin", action="append", default=[], metavar="NAME|PATH",
                   help="a loaded plugin's device type, or a plugin file to load directly "
                        "(repeatable; default: every loaded plugin that has a device)")
    r.add_argument("--suite", action="append", metavar="NAME",
                   help=f"suites to run (repeatable or comma-separated; default: "
                        f"{', '.join(DEFAULT_SUITES)}; also: "
                        f"{', '.join(s for s in SUITE_NAMES if s not in DEFAULT_SUITES)})")
    r.add_argument("-k", action="append", default=[], metavar="PATTERN", dest="patterns",
                   help="select cases whose id contains PATTERN (a glob when it has *?[; a "
                        "full case id selects that case alone)")
    r.add_argument("--dtype", action="append", metavar="DTYPE",
                   help="only these dtypes in the op suites (repeatable or comma-separated)")
    r.add_argument("--seed", type=int, default=0, help="base seed of the random inputs")
    r.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                   help="worker processes per plugin (default: the number of CPUs)")
    r.add_argument("--timeout", type=float, default=runner.RunOptions.timeout,
                   help="seconds one case may run before it is TIMEOUT (default %(default)s)")
    r.add_argument("--json", metavar="FILE", help="write the run as a JSON document")
    r.add_argument("--jsonl", metavar="FILE",
                   help="append results as JSON lines while running (default: FILE.jsonl "
                        f"next to --json, else ./{DEFAULT_JSONL})")
    r.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    r.add_argument("--html", metavar="FILE", help="write the HTML report")
    r.add_argument("--baseline", metavar="FILE",
                   help="a saved run: its failures are expected (XFAIL; a pass is XPASS)")
    r.add_argument("--thorough", action="store_true",
                   help="the exhaustive size ladder in the thresholds and transfers suites "
                        "(every 2^k-1, 2^k, 2^k+1) instead of its boundaries")
    r.add_argument("--ranks", type=int, default=runner.RunOptions.ranks, metavar="N",
                   help="ranks the ccl suite runs on (mpirun -n N; default %(default)s)")
    r.add_argument("--ccl-sizes", metavar="COUNTS",
                   help="the ccl suite's element counts per rank, comma-separated (default: 0, "
                        "1, 1023, 65537 and 4 MiB + 1 element of each dtype)")
    r.add_argument("--ccl-large", action="store_true",
                   help="the ccl suite also moves 64 MiB buffers (and times them)")

    rep = sub.add_parser("report", help="render a saved run (JSON or JSON lines)")
    rep.add_argument("file", help="a --json document or a --jsonl log of `hwcheck run`")
    rep.add_argument("--html", metavar="OUT",
                     help="where to write the HTML page (default: FILE with suffix .html)")
    return p


def cmd_list(args: argparse.Namespace) -> int:
    env = {"HWPORT_PLUGIN_PATH": os.pathsep.join(str(Path(p).resolve()) for p in args.plugin)} \
        if args.plugin else {}
    found = listing.probe(env)
    print(json.dumps(found, indent=2) if args.json else listing.format_listing(found))
    return 0


def _write_outputs(run: Run, args: argparse.Namespace) -> None:
    doc = run.to_json()
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    if args.junit:
        write_junit(run, args.junit)
    if args.html:
        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(render_html(run), encoding="utf-8")


def cmd_run(args: argparse.Namespace) -> int:
    suites = _split(args.suite) or list(DEFAULT_SUITES)
    unknown = [s for s in suites if s not in SUITE_NAMES]
    if unknown:
        raise runner.HwcheckUsageError(f"unknown suite(s) {', '.join(unknown)}; expected "
                                       f"{', '.join(SUITE_NAMES)}")
    if args.jobs < 1 or args.timeout <= 0:
        raise runner.HwcheckUsageError("--jobs must be >= 1 and --timeout > 0")
    if args.ranks < 1:
        raise runner.HwcheckUsageError("--ranks must be >= 1")
    try:
        ccl_sizes = sorted({int(v) for v in _split([args.ccl_sizes])}) \
            if args.ccl_sizes else None
    except ValueError:
        raise runner.HwcheckUsageError(f"--ccl-sizes {args.ccl_sizes}: expected element "
                                       f"counts, e.g. 0,1,1023") from None
    if ccl_sizes is not None and min(ccl_sizes) < 0:
        raise runner.HwcheckUsageError("--ccl-sizes: counts must be >= 0")
    skipped: list[str] = []
    targets = runner.resolve_targets(args.plugin, skipped=skipped)
    for s in skipped:
        print(f"hwcheck: skipping plugin {s}")
    if not targets:
        raise runner.HwcheckUsageError("no plugin to check; see `hwcheck list`")
    expected = baseline_failures(args.baseline) if args.baseline else set()
    progress = Progress(sys.stdout)
    opts = runner.RunOptions(suites=suites, patterns=args.patterns, dtypes=_split(args.dtype),
                             seed=args.seed, jobs=args.jobs, timeout=args.timeout,
                             thorough=args.thorough, expected_failures=expected,
                             ranks=args.ranks, ccl_sizes=ccl_sizes, ccl_large=args.ccl_large,
                             on_result=progress.update,
                             on_total=progress.set_total)
    jsonl = args.jsonl or (str(Path(args.json).with_suffix(".jsonl")) if args.json
                           else DEFAULT_JSONL)
    from hwport.runtime import _core  # version facts only; plugins load in workers

    meta = {"command": shlex.join(["hwcheck", *args.argv]),
            "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "seed": args.seed, "jobs": args.jobs, "timeout_s": args.timeout, "suites": suites,
            "patterns": list(args.patterns), "dtypes": _split(args.dtype) or None,
            "baseline": args.baseline, "thorough": args.thorough,
            **({"ranks": args.ranks, "ccl_sizes": ccl_sizes, "ccl_large": args.ccl_large}
               if "ccl" in suites else {}),
            "abi_version": ".".join(map(str, _core.ABI_VERSION)),
            "host": {"python": platform.python_version(), "platform": platform.platform(),
                     "cpus": os.cpu_count()},
            "targets": [{"spec": t.spec, "device_type": t.target.device_type,
                         "plugin": t.info} for t in targets]}
    print(f"hwcheck: checking {', '.join(t.target.device_type or t.spec for t in targets)}; "
          f"results stream to {jsonl}", flush=True)
    log = JsonLinesLog(jsonl, meta)
    t0 = time.perf_counter()
    try:
        run = runner.run(targets, opts, log, meta)
    finally:
        log.close()
        progress.finish()
    run.meta["duration_s"] = round(time.perf_counter() - t0, 3)
    if not run.results:
        raise runner.HwcheckUsageError("no case matched the selection (--suite, -k, --dtype)")
    _write_outputs(run, args)
    print(render(run))
    return exit_code(run.results)


def cmd_report(args: argparse.Namespace) -> int:
    run = load_run(args.file)
    print(render(run))
    out = Path(args.html) if args.html else Path(args.file).with_suffix(".html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(run), encoding="utf-8")
    print(f"hwcheck: HTML report written to {out}")
    return 0


def _terminated(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # unwinds like Ctrl-C: the workers are killed, the log is closed


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    args.argv = argv
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    try:
        return {"list": cmd_list, "run": cmd_run, "report": cmd_report}[args.command](args)
    except (runner.HwcheckUsageError, ValueError, FileNotFoundError) as exc:
        print(f"hwcheck: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hwcheck: interrupted; the results so far are in the JSON-lines log",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
