#!/usr/bin/env bash
# Run here, with network, before a session's GPU check: downloads into .whl/ the wheels of the
# Python packages the GPU machine lacks (it has no network; its python3 is 3.12 with numpy,
# pytest, pybind11, scikit-build-core, CuPy, ... but not cffi and pycparser), makes sure git
# ignores .whl/ (through .git/info/exclude, so that it travels only when carried), and prints
# what to give the device tool. scripts/gpu_check.sh installs them there (setup.sh,
# HWPORT_SETUP_OFFLINE=1: pip install --no-index --no-deps .whl/*.whl).
#
#   bash scripts/gpu_wheels.sh [--python-version 3.12] [NAME==VERSION ...]
#
# Default packages: cffi and pycparser, at the versions .venv has (the ones the tests ran with),
# else the newest. --python-version: the GPU machine's (3.12); another one for a rehearsal here.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DEST="$ROOT/.whl"
PYVER=3.12
PACKAGES=()
while (($#)); do
  case "$1" in
    --python-version) PYVER="${2:?--python-version needs a value, e.g. 3.12}"; shift 2 ;;
    --python-version=*) PYVER="${1#*=}"; shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "gpu_wheels.sh: unknown option $1" >&2; exit 2 ;;
    *) PACKAGES+=("$1"); shift ;;
  esac
done

PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || PY="${HWPORT_PYTHON:-python3}"
if ((${#PACKAGES[@]} == 0)); then
  for name in cffi pycparser; do
    version="$("$PY" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' \
      "$name" 2>/dev/null || true)"
    PACKAGES+=("$name${version:+==$version}")
  done
fi

# One version of each package in .whl/ (two would stop the whole install there).
mkdir -p "$DEST"
for spec in "${PACKAGES[@]}"; do
  name="${spec%%[<>=!~;[ ]*}"
  rm -f "$DEST/$(tr '[:upper:]-.' '[:lower:]__' <<<"$name")"-*.whl
done

echo "==> downloading ${PACKAGES[*]} for CPython $PYVER, manylinux x86_64, into .whl/"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 -d "$DEST" "${PACKAGES[@]}"

# .whl/ must not travel as part of the working tree unless carried, nor be committed.
EXCLUDE="$(git rev-parse --git-path info/exclude)"
mkdir -p "$(dirname "$EXCLUDE")"
grep -qxF '/.whl/' "$EXCLUDE" 2>/dev/null || echo '/.whl/' >>"$EXCLUDE"
git check-ignore -q "$DEST/x.whl" || { echo "gpu_wheels.sh: .whl/ is not ignored by git" >&2; exit 1; }

ls -l "$DEST"
cat <<EOF

==> .whl/ holds $(du -sh "$DEST" | cut -f1) (ignored by git through $EXCLUDE).
In the session that is lent the GPU machine, call the device tool's run with:
  command:   bash scripts/gpu_check.sh
  carry:     [".whl"]
  timeout_s: 540
The results come back from \$OUT: summary.txt, setup.log, cuda_tests.log, oracle.log,
hwcheck.log, bench.log, hwcheck.json, junit.xml (README.md, "Checking the CUDA plugin on a GPU
machine").
EOF
