#!/usr/bin/env bash
# The CUDA plugin's GPU check, for a session that is lent the GPU machine (one H200, 16 cores,
# no network): the device tool runs `bash scripts/gpu_check.sh` in a fresh copy of the working
# tree, with the wheels of scripts/gpu_wheels.sh carried in .whl/ (README.md, "Checking the CUDA
# plugin on a GPU machine"). Budget: under 8 minutes in all; every step has its own time limit
# and the script goes on after a failed step (the summary says which).
#
#   1. set-up: nvidia-smi and nvcc, then scripts/setup.sh with HWPORT_SETUP_OFFLINE=1: a .venv
#      that sees the machine's python3 packages (numpy, pytest, CuPy, the nvidia-cublas wheel,
#      ...), the carried wheels (cffi, pycparser), the build with nvcc (the CUDA plugin builds for
#      HWPORT_CUDA_ARCHITECTURES, default sm_90 + compute_90 PTX); cuBLAS from the nvidia-cublas
#      wheel when there is one (else the system's; without any, matmul runs the tiled kernel)
#   2. the plugin as the runtime sees it (device count, note, kernels)
#   3. the CUDA tests with the gpu-marked ones: test_cuda_plugin.py, the codegen target
#      (test_cuda_codegen.py: NVRTC, hwcheck's abi::codegen_* cases), the CuPy oracle
#      (test_cuda_cupy_oracle.py) and the DLPack exchange (tests/runtime/test_dlpack_device.py)
#   4. the phi_ops oracle (tests/phi_ops/test_ops_oracle.py) on custom:cuda
#   5. hwcheck run --plugin cuda (every conformance suite)
#   6. benchmarks/bench_cuda.py
# Results go to $OUT when set (else gpu_check_out/), in 8 files at most (what the device tool
# brings back): summary.txt; setup.log (machine, set-up, build, plugins), cuda_tests.log,
# oracle.log, hwcheck.log, bench.log; hwcheck.json (hwcheck's run document) and junit.xml (the
# JUnit reports of steps 3-5 in one file). Exit code: the number of failed steps (0 = all passed).
# Knobs: HWPORT_GPU_CHECK_BUDGET (seconds in all, default 450); HWPORT_GPU_CHECK_ONLINE=1 (a
# machine with network: plain setup.sh, which installs the requirements with pip and apt);
# HWPORT_PYTHON (the interpreter, default python3).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
LOG="${OUT:-$ROOT/gpu_check_out}"
mkdir -p "$LOG"
OUTPUTS=(summary.txt setup.log cuda_tests.log oracle.log hwcheck.log bench.log hwcheck.json
         junit.xml)
for f in "${OUTPUTS[@]}"; do rm -f "${LOG:?}/$f"; done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")" # parts merged into $LOG at the end
trap 'rm -rf "$WORK"' EXIT
PY="$ROOT/.venv/bin/python"
START=$SECONDS
FAILED=0
SUMMARY="$LOG/summary.txt"
: >"$SUMMARY"
export PYTHONUNBUFFERED=1

BUDGET=${HWPORT_GPU_CHECK_BUDGET:-450} # seconds for everything (the session allows 8 minutes)

# run <name> <log file> <seconds> <command...>: output appended to $LOG/<log file>, one line in
# the summary. The limit shrinks to what is left of BUDGET; a step with under 20 s left is
# skipped.
run() {
  local name="$1" file="$2" limit="$3"
  shift 3
  local left=$((BUDGET - (SECONDS - START)))
  ((limit > left)) && limit=$left
  if ((limit < 20)); then
    printf '%-11s %-34s %5s  %s\n' "$name" "SKIPPED (time budget spent)" "" "$file" |
      tee -a "$SUMMARY"
    FAILED=$((FAILED + 1))
    return 1
  fi
  local t0=$SECONDS rc
  printf '\n==> [gpu_check] %s (limit %ss, at %ss)\n' "$name" "$limit" "$((SECONDS - START))" |
    tee -a "$LOG/$file"
  # Straight into $OUT: what a step printed comes back even when the whole call is stopped.
  timeout --kill-after=10 "$limit" "$@" >>"$LOG/$file" 2>&1
  rc=$?
  tail -n 15 "$LOG/$file"
  local verdict=ok
  if [[ $rc -ne 0 ]]; then
    verdict="FAILED (rc $rc$([[ $rc -eq 124 || $rc -eq 137 ]] && echo ', timed out'))"
    FAILED=$((FAILED + 1))
  fi
  printf '%-11s %-34s %4ss  %s\n' "$name" "$verdict" "$((SECONDS - t0))" "$file" |
    tee -a "$SUMMARY"
  return $rc
}

# ---- 1. set-up -----------------------------------------------------------------------------
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH" # the toolkit, when its bin/ is not on PATH
fi
{
  echo "==> [gpu_check] machine"
  nvidia-smi || echo "nvidia-smi not found"
  nvcc --version || echo "nvcc not found"
  echo "cores: $(nproc); python: $(command -v "${HWPORT_PYTHON:-python3}")" \
       "$("${HWPORT_PYTHON:-python3}" --version 2>&1)"
} >>"$LOG/setup.log" 2>&1
head -n 20 "$LOG/setup.log"

if [[ -n "${HWPORT_GPU_CHECK_ONLINE:-}" ]]; then
  HWPORT_BUILD_VERBOSE=1 run setup setup.log 240 bash scripts/setup.sh
else
  HWPORT_SETUP_OFFLINE=1 HWPORT_BUILD_VERBOSE=1 run setup setup.log 240 bash scripts/setup.sh
fi
grep -hE "hwport: (CUDA|OpenCL) plugin|apt skipped; not|requirements not inst|^ *built in [0-9]+ s" \
  "$LOG/setup.log" | sed 's/^ *//' | tee -a "$SUMMARY"

# cuBLAS: the nvidia-cublas wheel of the interpreter (or .venv) first, then the system's.
CUBLAS="$("$PY" - 2>/dev/null <<'EOF'
import glob, os, sys
for d in sys.path:
    for pattern in ("nvidia/cublas/lib/libcublas.so.*", "nvidia/cu*/lib/libcublas.so.*"):
        found = sorted(glob.glob(os.path.join(d, pattern)))
        if found:
            print(found[-1])
            sys.exit()
EOF
)"
if [[ -n "$CUBLAS" ]]; then
  export HWPORT_CUBLAS_LIBRARY="$CUBLAS"
  CUBLAS_DIR="$(dirname "$CUBLAS")" # its libcublasLt beside it
  export LD_LIBRARY_PATH="$CUBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "cuBLAS: $CUBLAS (HWPORT_CUBLAS_LIBRARY)" | tee -a "$SUMMARY"
elif ldconfig -p 2>/dev/null | grep -q 'libcublas\.so'; then
  echo "cuBLAS: the system's ($(ldconfig -p | grep -m1 -o '/[^ ]*libcublas\.so[^ ]*'))" |
    tee -a "$SUMMARY"
else
  echo "cuBLAS: none found; matmul runs the tiled kernel" | tee -a "$SUMMARY"
fi

# ---- 2. the plugin as the runtime sees it --------------------------------------------------
run plugins setup.log 60 "$PY" -c '
import json, hwport, hwport.runtime as rt
info = {"plugins": rt.plugins(), "errors": rt.plugin_errors(),
        "places": hwport.device.get_all_places()}
print(json.dumps(info, indent=1, default=str))
cuda = [p for p in info["plugins"] if p["device_type"] == "cuda"]
assert cuda and cuda[0]["device_count"] > 0, "the CUDA plugin sees no device"
'

# ---- 3. the CUDA plugin's tests, GPU ones included -----------------------------------------
run cuda_tests cuda_tests.log 120 "$PY" -m pytest -q -ra -p no:cacheprovider \
  -m "gpu or not gpu" --junitxml="$WORK/cuda_tests.xml" tests/device_plugins/test_cuda_plugin.py \
  tests/device_plugins/test_cuda_codegen.py tests/device_plugins/test_cuda_cupy_oracle.py \
  tests/runtime/test_dlpack_device.py tests/distributed/test_nccl_adapter.py

# ---- 4. the op oracle on custom:cuda (every op, dtype and layout case) ---------------------
run oracle oracle.log 120 "$PY" -m pytest -q -ra -p no:cacheprovider --maxfail=300 \
  --junitxml="$WORK/oracle.xml" tests/phi_ops/test_ops_oracle.py -k "cuda"

# ---- 5. hwcheck: the conformance suites on the cuda plugin ---------------------------------
# One worker per core (each holds a CUDA context). When the time limit stops the run before it
# writes its reports, they are made from its JSON-lines log (flushed per case).
run hwcheck hwcheck.log 150 "$PY" -m hwport.conformance run --plugin cuda \
  --jobs "$(nproc 2>/dev/null || echo 4)" --timeout 40 --json "$LOG/hwcheck.json" \
  --jsonl "$WORK/hwcheck.jsonl" --junit "$WORK/hwcheck.xml"
if [[ ! -s "$LOG/hwcheck.json" && -s "$WORK/hwcheck.jsonl" ]]; then
  "$PY" - "$WORK/hwcheck.jsonl" "$LOG/hwcheck.json" "$WORK/hwcheck.xml" >>"$LOG/hwcheck.log" \
    2>&1 <<'EOF'
import json, sys
from hwport.conformance.report_text import render
from hwport.conformance.results import load_run, write_junit

run = load_run(sys.argv[1])
with open(sys.argv[2], "w") as f:
    json.dump(run.to_json(), f, indent=1, sort_keys=True)
write_junit(run, sys.argv[3])
print(f"==> [gpu_check] hwcheck stopped early: {sys.argv[2]} holds the {len(run.results)} "
      "results it logged")
print(render(run))
EOF
fi

# ---- 6. benchmarks ---------------------------------------------------------------------------
run bench bench.log 60 "$PY" benchmarks/bench_cuda.py

# ---- results: one JUnit file, counts in the summary -----------------------------------------
"$PY" - "$LOG/junit.xml" "$LOG/hwcheck.json" "$WORK"/cuda_tests.xml "$WORK"/oracle.xml \
  "$WORK"/hwcheck.xml <<'EOF' | tee -a "$SUMMARY"
import collections, json, os, sys
import xml.etree.ElementTree as ET

merged = ET.Element("testsuites", name="gpu_check")
for path in sys.argv[3:]:
    step = os.path.basename(path).removesuffix(".xml")
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        print(f"{step}: no JUnit report ({type(exc).__name__})")
        continue
    total = collections.Counter()
    for suite in [root] if root.tag == "testsuite" else root.iter("testsuite"):
        suite.set("name", f"{step}.{suite.get('name', '')}")
        merged.append(suite)
        for k in ("tests", "failures", "errors", "skipped", "time"):
            total[k] += float(suite.get(k) or 0)
    print(f"{step}: " + ", ".join(f"{k} {total[k]:g}" for k in
                                  ("tests", "failures", "errors", "skipped")) +
          f", {total['time']:.1f} s")
ET.ElementTree(merged).write(sys.argv[1], encoding="utf-8", xml_declaration=True)
try:
    with open(sys.argv[2]) as f:
        summary = json.load(f)["summary"]
    for plugin, suites in summary.items():
        print(f"hwcheck {plugin}: " + "; ".join(
            f"{suite} " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
            for suite, counts in suites.items()))
except (OSError, ValueError, KeyError) as exc:
    print(f"hwcheck: no run document ({type(exc).__name__})")
EOF

extra="$(find "$LOG" -type f | sed "s|^$LOG/||" | grep -vxF -f <(printf '%s\n' "${OUTPUTS[@]}"))"
[[ -z "$extra" ]] || echo "note: more files than the 8 the device tool returns: $extra" |
  tee -a "$SUMMARY"
printf '\n==> [gpu_check] done in %ss, %d failed step(s); results in %s\n' \
  "$((SECONDS - START))" "$FAILED" "$LOG" | tee -a "$SUMMARY"
exit "$FAILED"
