#!/usr/bin/env bash
# The test suite: set up (scripts/setup.sh), then pytest over tests/ from the venv.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k plugin -x`. The pytest
# configuration (test paths, `-m 'not slow'`) lives in pyproject.toml. Exit code = pytest's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh
bash scripts/install_torch.sh

printf '\n==> [test] python -m pytest -q -ra --durations=25 %s\n' "$*"
# --durations: the slowest tests, to keep the suite inside its time budget
exec "$ROOT/.venv/bin/python" -m pytest -q -ra --durations=25 "$@"
