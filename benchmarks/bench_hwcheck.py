"""A full `hwcheck run` on the reference CPU plugin (every suite, every case), timed end to end
as a user runs it: a fresh `python -m hwport.conformance` process with --jobs = the CPU count.

Target (issue 5): <= 2 minutes on a 2-core machine. Prints the wall time, the case count and
cases/s; exits non-zero when the run failed or missed the target.
Run: .venv/bin/python benchmarks/bench_hwcheck.py [extra hwcheck run arguments]"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 120.0


def main() -> int:
    jobs = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        cmd = [sys.executable, "-m", "hwport.conformance", "run", "--plugin", "cpu", "--jobs",
               str(jobs), "--json", str(out), *sys.argv[1:]]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if not out.exists():
            print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
            print(f"hwcheck run did not write its report (exit {proc.returncode})")
            return 1
        doc = json.loads(out.read_text())
    n = len(doc["results"])
    per_suite = {s: sum(c.values()) for s, c in doc["summary"].get("cpu", {}).items()}
    print(f"hwcheck run --plugin cpu --jobs {jobs}: {n} cases in {wall:.1f} s wall "
          f"({n / wall:.0f} cases/s); target <= {TARGET_S:.0f} s")
    print(f"  cases per suite: {per_suite}; exit code {proc.returncode}")
    if proc.returncode != 0:
        print(proc.stdout[-3000:])
    return int(proc.returncode != 0 or wall > TARGET_S)


if __name__ == "__main__":
    raise SystemExit(main())
