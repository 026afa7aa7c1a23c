#!/usr/bin/env bash
# The main job: set up (scripts/setup.sh), list the discovered plugins (`hwcheck list`), then
# certify every reference plugin this machine can run with hwcheck (cpu, opencl; cuda only when
# it reports devices): the summary table on stdout, the reports under build/hwcheck/
# (run.json, run.jsonl, junit.xml, report.html). Exit code: hwcheck's (non-zero on FAIL, CRASH,
# TIMEOUT, XPASS). Works from any directory; idempotent. Extra arguments go to `hwcheck run`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
step() { printf '\n==> [main] %s\n' "$*"; }

bash scripts/setup.sh

HWCHECK=("$PY" -m hwport.conformance)
OUT="$ROOT/build/hwcheck"
mkdir -p "$OUT"

step "hwcheck list"
"${HWCHECK[@]}" list

# The job itself: every plugin that has a device, every suite, one worker per CPU.
JOB=("${HWCHECK[@]}" run --jobs "$(nproc 2>/dev/null || echo 2)" --json "$OUT/run.json"
     --junit "$OUT/junit.xml" --html "$OUT/report.html" "$@")

step "hwcheck run (reports in build/hwcheck/)"
exec "${JOB[@]}"
