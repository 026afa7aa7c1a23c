#!/usr/bin/env bash
# PyTorch CPU in the venv, as the independent second oracle of the tests and the baseline of the
# benchmarks. Optional: when it cannot be installed, say so and go on (the tests that need it
# skip cleanly). Idempotent. Needs scripts/setup.sh to have made .venv.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
TORCH_REQ="torch==2.13.0"

printf '\n==> [torch] PyTorch for cross-checks and comparisons (%s)\n' "$TORCH_REQ"
torch_version() { "$PY" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null; }
if version="$(torch_version)"; then
  echo "    present: torch $version"
elif "$PY" -m pip install -q "$TORCH_REQ" && version="$(torch_version)"; then
  echo "    installed: torch $version"
else
  echo "    WARNING: could not install $TORCH_REQ; continuing without PyTorch"
fi
exit 0
