#!/usr/bin/env bash
# Benchmarks: set up (scripts/setup.sh), make sure PyTorch is in the venv for the comparisons
# (continuing without it when it cannot be installed), then run every benchmarks/bench_*.py.
# Exit code: non-zero when any benchmark failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
TORCH_REQ="torch==2.13.0"
step() { printf '\n==> [bench] %s\n' "$*"; }

bash scripts/setup.sh

step "PyTorch for the comparisons ($TORCH_REQ)"
torch_version() { "$PY" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null; }
if version="$(torch_version)"; then
  echo "    present: torch $version"
elif "$PY" -m pip install -q "$TORCH_REQ" && version="$(torch_version)"; then
  echo "    installed: torch $version"
else
  echo "    WARNING: could not install $TORCH_REQ; continuing without PyTorch"
fi

shopt -s nullglob
benches=(benchmarks/bench_*.py)
if [[ ${#benches[@]} -eq 0 ]]; then
  step "no benchmarks/bench_*.py yet; nothing to run"
  exit 0
fi

failed=()
for bench in "${benches[@]}"; do
  step "$bench"
  if ! "$PY" "$bench"; then
    failed+=("$bench")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  step "FAILED: ${failed[*]}"
  exit 1
fi
step "all ${#benches[@]} benchmarks ran"
