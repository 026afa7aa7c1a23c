#!/usr/bin/env bash
# The main job: set up (scripts/setup.sh), list the discovered plugins and their load errors,
# then run the job below. Works from any directory; idempotent.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
step() { printf '\n==> [main] %s\n' "$*"; }

bash scripts/setup.sh

step "plugins loaded and skipped (python -m hwport.runtime)"
"$PY" -m hwport.runtime

# The job itself: one line (later: the hwcheck conformance run over every reference plugin).
JOB=("$PY" examples/quickstart.py)

step "${JOB[*]#"$ROOT/"}"
exec "${JOB[@]}"
