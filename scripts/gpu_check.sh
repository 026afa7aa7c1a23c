#!/usr/bin/env bash
# The CUDA plugin's GPU check, for a session that has a GPU machine (one H200, 16 cores), from
# a fresh copy of the working tree with no build. Budget: under 8 minutes in all; every step has
# its own time limit and the script goes on after a failed step (the summary says which).
#
#   1. set-up: nvidia-smi, then scripts/setup.sh (venv, requirements, the build with nvcc;
#      the CUDA plugin builds for HWPORT_CUDA_ARCHITECTURES, default sm_90 + compute_90 PTX),
#      with CuPy (cupy-cuda13x or cupy-cuda12x, matching nvcc) installed alongside, and the
#      nvidia-cublas wheel when the system has no libcublas (matmul falls back to the tiled
#      kernel without it, and says so)
#   2. the plugin as the runtime sees it (plugins.json: device count, note, kernels)
#   3. tests/device_plugins/test_cuda_plugin.py with the gpu-marked tests
#   4. the phi_ops oracle (tests/phi_ops/test_ops_oracle.py) on custom:cuda
#   5. benchmarks/bench_cuda.py
# Logs, JUnit XML and summary.txt go to $OUT when set (else gpu_check_out/). Exit code: the
# number of failed steps (0 = all passed). HWPORT_GPU_CHECK_NO_INSTALL=1: install nothing
# beyond setup.sh (offline machines); HWPORT_GPU_CHECK_BUDGET: seconds in all (default 450).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
LOG="${OUT:-$ROOT/gpu_check_out}"
mkdir -p "$LOG"
PY="$ROOT/.venv/bin/python"
START=$SECONDS
FAILED=0
SUMMARY="$LOG/summary.txt"
: >"$SUMMARY"

BUDGET=${HWPORT_GPU_CHECK_BUDGET:-450} # seconds for everything (the session allows 8 minutes)

# run <name> <seconds> <command...>: output to $LOG/<name>.log, one line in the summary. The
# limit shrinks to what is left of BUDGET; a step with under 20 s left is skipped.
run() {
  local name="$1" limit="$2"
  shift 2
  local left=$((BUDGET - (SECONDS - START)))
  ((limit > left)) && limit=$left
  if ((limit < 20)); then
    printf '%-14s %-34s\n' "$name" "SKIPPED (time budget spent)" | tee -a "$SUMMARY"
    FAILED=$((FAILED + 1))
    return 1
  fi
  local t0=$SECONDS rc
  printf '\n==> [gpu_check] %s (limit %ss, at %ss)\n' "$name" "$limit" "$((SECONDS - START))"
  timeout --kill-after=10 "$limit" "$@" >"$LOG/$name.log" 2>&1
  rc=$?
  tail -n 15 "$LOG/$name.log"
  local verdict=ok
  if [[ $rc -ne 0 ]]; then
    verdict="FAILED (rc $rc$([[ $rc -eq 124 || $rc -eq 137 ]] && echo ', timed out'))"
    FAILED=$((FAILED + 1))
  fi
  printf '%-14s %-34s %4ss\n' "$name" "$verdict" "$((SECONDS - t0))" | tee -a "$SUMMARY"
  return $rc
}

# ---- 1. set-up -----------------------------------------------------------------------------
{ nvidia-smi || echo "nvidia-smi not found"; nvcc --version || echo "nvcc not found"; } \
  >"$LOG/machine.log" 2>&1
head -n 20 "$LOG/machine.log"

CUDA_MAJOR="$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\..*/\1/p')"
CUPY_WHEELS=(cupy-cuda13x cupy-cuda12x)
[[ "$CUDA_MAJOR" == 12 ]] && CUPY_WHEELS=(cupy-cuda12x cupy-cuda13x)

# The venv first, so that CuPy (no dependencies of its own but fastrlock; numpy comes with the
# requirements) installs in the background while setup.sh installs the rest and builds.
if [[ ! -x "$PY" ]]; then
  "${HWPORT_PYTHON:-python3}" -m venv .venv >"$LOG/venv.log" 2>&1 ||
    echo "venv creation failed (see venv.log)"
fi
if [[ -n "${HWPORT_GPU_CHECK_NO_INSTALL:-}" ]]; then
  CUPY_WHEELS=() # offline: use what the venv has
fi
(
  for wheel in "${CUPY_WHEELS[@]}"; do
    if timeout 120 "$PY" -m pip install -q --no-deps "$wheel" fastrlock; then
      echo "installed $wheel"
      break
    fi
  done
  if [[ -z "${HWPORT_GPU_CHECK_NO_INSTALL:-}" ]] &&
     ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so'; then
    timeout 90 "$PY" -m pip install -q --no-deps "nvidia-cublas-cu${CUDA_MAJOR:-12}" \
      || timeout 90 "$PY" -m pip install -q --no-deps nvidia-cublas \
      || echo "no cuBLAS wheel: matmul runs the tiled kernel"
  fi
) >"$LOG/cupy_install.log" 2>&1 &
EXTRAS_PID=$!

HWPORT_BUILD_VERBOSE=1 run setup 240 bash scripts/setup.sh
grep -E "hwport: (CUDA|OpenCL) plugin" "$LOG/setup.log" | tee -a "$SUMMARY"
wait "$EXTRAS_PID"
cat "$LOG/cupy_install.log"

# A cuBLAS from the wheel: tell the plugin where it is.
CUBLAS_WHEEL="$(find "$ROOT/.venv" -name 'libcublas.so.*' -not -name '*Lt*' 2>/dev/null |
  head -n 1)"
if [[ -n "$CUBLAS_WHEEL" ]]; then
  export HWPORT_CUBLAS_LIBRARY="$CUBLAS_WHEEL"
  CUBLAS_DIR="$(dirname "$CUBLAS_WHEEL")"
  export LD_LIBRARY_PATH="$CUBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "cuBLAS: $CUBLAS_WHEEL" | tee -a "$SUMMARY"
fi

# ---- 2. the plugin as the runtime sees it --------------------------------------------------
run plugins 60 "$PY" -c '
import json, hwport, hwport.runtime as rt
info = {"plugins": rt.plugins(), "errors": rt.plugin_errors(),
        "places": hwport.device.get_all_places()}
print(json.dumps(info, indent=1, default=str))
cuda = [p for p in info["plugins"] if p["device_type"] == "cuda"]
assert cuda and cuda[0]["device_count"] > 0, "the CUDA plugin sees no device"
'
cp "$LOG/plugins.log" "$LOG/plugins.json" 2>/dev/null

# ---- 3. the CUDA plugin's tests, GPU ones included -----------------------------------------
run cuda_tests 90 "$PY" -m pytest -q -ra -p no:cacheprovider \
  -m "gpu or not gpu" --junitxml="$LOG/cuda_tests.xml" tests/device_plugins/test_cuda_plugin.py

# ---- 4. the op oracle on custom:cuda (every op, dtype and layout case) ---------------------
run oracle 150 "$PY" -m pytest -q -ra -p no:cacheprovider --maxfail=300 \
  --junitxml="$LOG/oracle.xml" tests/phi_ops/test_ops_oracle.py -k "cuda"
"$PY" - "$LOG/oracle.xml" <<'EOF' | tee -a "$SUMMARY"
import sys, xml.etree.ElementTree as ET
try:
    suite = ET.parse(sys.argv[1]).getroot().find("testsuite")
    print("oracle on custom:cuda: " + ", ".join(f"{k} {suite.get(k)}" for k in
          ("tests", "failures", "errors", "skipped", "time")))
except Exception as exc:  # noqa: BLE001
    print(f"oracle: no JUnit report ({exc})")
EOF

# ---- 5. benchmarks ---------------------------------------------------------------------------
run bench 90 "$PY" benchmarks/bench_cuda.py

printf '\n==> [gpu_check] done in %ss, %d failed step(s); logs in %s\n' \
  "$((SECONDS - START))" "$FAILED" "$LOG" | tee -a "$SUMMARY"
exit "$FAILED"
