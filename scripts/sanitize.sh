#!/usr/bin/env bash
# The sanitizer job: the runtime (_core, hwport_probe), the CPU and OpenCL plugins and the test
# plugins built with AddressSanitizer + UBSan (-DHWPORT_SANITIZE=ON) into build/asan, laid out
# as an installed hwport in a second virtual environment (build/asan/venv: its site-packages
# holds that package and sees .venv's packages through a plain path entry, so .venv's editable
# hook, which would import the normal build, never runs), then pytest in it with libasan
# preloaded. Clean = pytest passes and no process (subprocesses included) wrote a sanitizer
# report. Needs the normal set-up first (scripts/setup.sh: the .venv and its requirements).
#
#   bash scripts/sanitize.sh                 tests/runtime, tests/device_plugins, an op slice
#   bash scripts/sanitize.sh --short         the short fixed slice (what tests/test_sanitize.py
#                                            runs in CI; builds one test plugin, not the zoo)
#   bash scripts/sanitize.sh --build-only    build and lay out, run nothing
#   bash scripts/sanitize.sh --selftest      configure only, then check that the job reports a
#                                            deliberate heap overflow and a signed overflow in a
#                                            throwaway C library built with the build's flags
#   bash scripts/sanitize.sh -- PYTEST_ARGS  these tests instead (e.g. -- tests/runtime -x)
#
# Environment: HWPORT_SANITIZE_DIR (default build/asan), HWPORT_SANITIZE_EXTRA_ASAN_OPTIONS
# (appended to ASAN_OPTIONS).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD="${HWPORT_SANITIZE_DIR:-$ROOT/build/asan}"
VPY="$ROOT/.venv/bin/python"
AVENV="$BUILD/venv"
LOGS="$BUILD/reports"

# The op tests: one fixed slice of the oracle cases (float32 on both plugins, four layouts) and
# every bad-input case, and the fixed-seed fuzz slice.
OP_SLICE=(tests/phi_ops/test_ops_oracle.py tests/phi_ops/test_bad_input.py tests/phi_ops/test_fuzz_ops.py
          -k "not test_op_matches_reference or (float32 and not cpu:1 and (step or flip or edges or odd7))")
FULL=(tests/runtime tests/device_plugins "${OP_SLICE[@]}")
SHORT=(tests/runtime/test_stream_lifetime.py tests/runtime/test_streams.py
       tests/runtime/test_allocator.py tests/runtime/test_sizes.py tests/phi_ops/test_ops_oracle.py
       -k "not test_op_matches_reference or (float32 and not cpu:1 and flip and (add or matmul or sum or softmax or where))")

mode=full
pytest_args=()
while (($#)); do
  case "$1" in
    --short) mode=short ;;
    --build-only) mode=build ;;
    --selftest) mode=selftest ;;
    --) shift; pytest_args=("$@"); mode=args; break ;;
    -h | --help) sed -n '2,21p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "sanitize.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

[[ -x "$VPY" ]] || { echo "sanitize.sh: no $VPY; run scripts/setup.sh first" >&2; exit 1; }
export PATH="$ROOT/.venv/bin:$PATH"  # the venv's cmake and ninja
LIBASAN="$(gcc -print-file-name=libasan.so)"
LIBSTDCXX="$(gcc -print-file-name=libstdc++.so)"
[[ -f "$LIBASAN" ]] || { echo "sanitize.sh: gcc has no libasan.so (install libasan)" >&2; exit 1; }

# ---- the environment of a sanitized run -----------------------------------------------------
# Reports go to files (one per process, subprocesses included) rather than to stderr, so that a
# finding in a child whose failure a test expected still fails the job.
# detect_leaks=0: CPython and pybind11 keep objects alive until exit by design (interned and
# immortal objects, module state, pybind11's internals), so LeakSanitizer would report every
# process; hwport's own leaks are checked by the allocator's counters in the tests instead.
# allocator_may_return_null=1: tests ask for impossible sizes and expect OutOfMemoryError, not
# ASan's "allocation-size-too-big" abort. protect_shadow_gap=0: PoCL's LLVM maps memory there.
sanitizer_env() {
  rm -rf "$LOGS"
  mkdir -p "$LOGS"
  export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:protect_shadow_gap=0:log_path=$LOGS/asan${HWPORT_SANITIZE_EXTRA_ASAN_OPTIONS:+:$HWPORT_SANITIZE_EXTRA_ASAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$LOGS/ubsan"
  export HWPORT_UBSAN_LOG_PATH="$LOGS/ubsan"  # see _hwport_sanitized.py below
  export LD_PRELOAD="$LIBASAN:$LIBSTDCXX${LD_PRELOAD:+:$LD_PRELOAD}"
  export PYTHONMALLOC=malloc  # Python's own buffers through malloc, so ASan sees overruns there
}

# Prints the reports the run left and returns 1, or says there were none.
check_reports() {
  shopt -s nullglob
  local reports=("$LOGS"/*)
  shopt -u nullglob
  if ((${#reports[@]})); then
    printf '\n==> [sanitize] %d sanitizer report(s):\n' "${#reports[@]}"
    local r
    for r in "${reports[@]}"; do
      printf -- '---- %s\n' "$r"
      cat "$r"
    done
    return 1
  fi
  printf '\n==> [sanitize] no sanitizer reports\n'
}

# ---- configure; the sanitizer venv --------------------------------------------------------
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  printf '==> [sanitize] configure (%s)\n' "$BUILD"
  # -O0 -g1: the quickest second build (CI builds it on every run); reports keep file:line.
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHWPORT_SANITIZE=ON \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" \
    -DPython_EXECUTABLE="$VPY" -Dpybind11_DIR="$("$VPY" -m pybind11 --cmakedir)" >/dev/null
fi

[[ -x "$AVENV/bin/python" ]] || "$VPY" -m venv --without-pip "$AVENV"
APY="$AVENV/bin/python"
SITE="$("$APY" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
DEPS="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
# .venv's packages (numpy, pytest, ...) as a plain path: its .pth files, the editable hook among
# them, are not run.
printf '%s\n' "$DEPS" >"$SITE/hwport-sanitize-deps.pth"
# Run at every start of the venv's Python (a .pth line): `import hwport` finds the sanitized
# package even where the repository root comes first on sys.path (pytest's rootdir, `python -c`
# in the checkout), as the editable hook does for the normal one; and UBSan reports go to files.
cat >"$SITE/_hwport_sanitized.py" <<PY
import ctypes, importlib.machinery, os, sys


class Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "hwport":
            return None
        return importlib.machinery.PathFinder.find_spec(name, ["$SITE"])


sys.meta_path.insert(0, Finder)
# With ASan in the process, gcc's libubsan ignores UBSAN_OPTIONS' log_path: set it here.
if os.environ.get("HWPORT_UBSAN_LOG_PATH"):
    try:
        ctypes.CDLL("libubsan.so.1").__sanitizer_set_report_path(
            os.environ["HWPORT_UBSAN_LOG_PATH"].encode())
    except (OSError, AttributeError):
        pass
PY
printf 'import _hwport_sanitized\n' >"$SITE/_hwport_sanitized.pth"

# ---- selftest: the job reports a deliberate bug -------------------------------------------
if [[ $mode == selftest ]]; then
  # The build's own flags (CMakeLists.txt, HWPORT_SANITIZE_FLAGS) on a throwaway library that
  # overruns a heap buffer or overflows an int; loaded by the venv's Python with the job's
  # environment, each case must fail and leave its report.
  read -r -a flags <<<"$(sed -n 's/^HWPORT_SANITIZE_FLAGS:STRING=//p' "$BUILD/CMakeCache.txt" | tr ';' ' ')"
  dir="$BUILD/selftest"
  mkdir -p "$dir"
  cat >"$dir/bugs.c" <<'C'
#include <limits.h>
#include <stdlib.h>
int heap_overflow(int n) { /* reads one element past an n-element buffer */
  int *p = calloc((size_t)n, sizeof(int)), r = p[n];
  free(p);
  return r;
}
int signed_overflow(int x) { return x + INT_MAX; }
C
  gcc -O1 -g -shared -fPIC "${flags[@]}" -o "$dir/libbugs.so" "$dir/bugs.c"
  failed=0
  for case in "heap_overflow:heap-buffer-overflow" "signed_overflow:signed integer overflow"; do
    fn="${case%%:*}" want="${case#*:}"
    if (
      sanitizer_env
      ! "$APY" -c "import ctypes, sys; ctypes.CDLL(sys.argv[1]).$fn(4)" "$dir/libbugs.so" \
        2>/dev/null && grep -q "$want" "$LOGS"/*
    ); then
      printf '    selftest %s: reported (%s)\n' "$fn" "$want"
    else
      printf '    selftest %s: NOT reported as "%s"\n' "$fn" "$want"
      failed=1
    fi
  done
  exit "$failed"
fi

# ---- build; the sanitized package in the venv ---------------------------------------------
printf '==> [sanitize] build (%s)\n' "$BUILD"
start=$SECONDS
target=hwport_sanitized
[[ $mode == short ]] && target=hwport_sanitized_short  # its tests use one test plugin
cmake --build "$BUILD" --target "$target"
printf '    built in %d s\n' $((SECONDS - start))

"$APY" - "$ROOT" "$BUILD" "$SITE" "$DEPS" <<'PY'
import os, shutil, sys
from pathlib import Path

root, build, site, deps = (Path(a) for a in sys.argv[1:])
pkg = site / "hwport"
if pkg.exists():
    shutil.rmtree(pkg)
# The wheel's layout (pyproject.toml [tool.scikit-build.wheel.packages]): sources linked, the
# sanitized binaries copied in.
sources = {"": "hwport", "runtime": "runtime", "device_plugins": "device_plugins",
           "phi_ops": "phi_ops", "conformance": "conformance"}
built = {"runtime": sorted((build / "runtime").glob("_core*.so")) + [build / "runtime/hwport_probe"],
         "device_plugins/cpu": [build / "device_plugins/cpu/libhwport_cpu.so"],
         "device_plugins/opencl": sorted((build / "device_plugins/opencl").glob("libhwport_*.so")),
         "testing_plugins": sorted((build / "tests/plugins").glob("libhwport_test_*.so"))}
# The CUDA plugin is not instrumented (nvcc): the normal build's, so that its tests still find it.
cuda = deps / "hwport/device_plugins/cuda/libhwport_cuda.so"
if cuda.exists():
    built["device_plugins/cuda"] = [cuda]


def link_tree(src: Path, dst: Path) -> None:
    """dst mirrors src: real folders where built files go, links to the sources elsewhere."""
    dst.mkdir(parents=True, exist_ok=True)
    for entry in src.iterdir():
        if entry.name == "__pycache__" or (dst / entry.name).exists():
            continue
        rel = (dst / entry.name).relative_to(pkg).as_posix()
        if entry.is_dir() and any(k == rel or k.startswith(rel + "/") for k in built):
            link_tree(entry, dst / entry.name)
        else:
            os.symlink(entry, dst / entry.name)


for rel, files in built.items():
    (pkg / rel).mkdir(parents=True, exist_ok=True)
    for f in files:
        if not f.exists():
            sys.exit(f"sanitize.sh: {f} was not built")
        shutil.copy2(f, pkg / rel / f.name)
for rel, src in sources.items():
    link_tree(root / src, pkg / rel if rel else pkg)
PY

[[ $mode == build ]] && exit 0
case "$mode" in
  full) pytest_args=("${FULL[@]}") ;;
  short) pytest_args=("${SHORT[@]}") ;;
esac

# ---- run -------------------------------------------------------------------------------------
sanitizer_env
printf '\n==> [sanitize] pytest %s\n' "${pytest_args[*]}"
start=$SECONDS
set +e
"$APY" -m pytest -q -ra -p no:cacheprovider "${pytest_args[@]}"
rc=$?
set -e
unset LD_PRELOAD
printf '    pytest exit %d in %d s\n' "$rc" $((SECONDS - start))
check_reports || exit 1
exit "$rc"
