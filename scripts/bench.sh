#!/usr/bin/env bash
# Benchmarks: set up (scripts/setup.sh), make sure PyTorch is in the venv for the comparisons
# (continuing without it when it cannot be installed), then run every benchmarks/bench_*.py.
# Exit code: non-zero when any benchmark failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
step() { printf '\n==> [bench] %s\n' "$*"; }

bash scripts/setup.sh

bash scripts/install_torch.sh

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
