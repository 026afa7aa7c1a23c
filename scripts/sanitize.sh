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
#                                            runs in CI)
#   bash scripts/sanitize.sh --build-only    build and lay out, run nothing
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
# every bad-input case.
OP_SLICE=(tests/phi_ops/test_ops_oracle.py tests/phi_ops/test_bad_input.py
          -k "not test_op_matches_reference or (float32 and not cpu:1 and (step or flip or edges or odd7))")
FULL=(tests/runtime tests/device_plugins "${OP_SLICE[@]}")
SHORT=(tests/runtime/test_stream_lifetime.py tests/runtime/test_streams.py
       tests/runtime/test_allocator.py tests/phi_ops/test_ops_oracle.py
       -k "not test_op_matches_reference or (float32 and not cpu:1 and flip and (add or matmul or sum or softmax or where))")

mode=full
pytest_args=()
while (($#)); do
  case "$1" in
    --short) mode=short ;;
    --build-only) mode=build ;;
    --) shift; pytest_args=("$@"); mode=args; break ;;
    -h | --help) sed -n '2,18p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "sanitize.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

[[ -x "$VPY" ]] || { echo "sanitize.sh: no $VPY; run scripts/setup.sh first" >&2; exit 1; }
export PATH="$ROOT/.venv/bin:$PATH"  # the venv's cmake and ninja
LIBASAN="$(gcc -print-file-name=libasan.so)"
LIBSTDCXX="$(gcc -print-file-name=libstdc++.so)"
[[ -f "$LIBASAN" ]] || { echo "sanitize.sh: gcc has no libasan.so (install libasan)" >&2; exit 1; }

# ---- build ----------------------------------------------------------------------------------
printf '==> [sanitize] build (%s)\n' "$BUILD"
start=$SECONDS
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHWPORT_SANITIZE=ON \
    -DPython_EXECUTABLE="$VPY" -Dpybind11_DIR="$("$VPY" -m pybind11 --cmakedir)" >/dev/null
fi
cmake --build "$BUILD" --target hwport_sanitized
printf '    built in %d s\n' $((SECONDS - start))

# ---- lay out the sanitized package in its own venv ------------------------------------------
if [[ ! -x "$AVENV/bin/python" ]]; then
  "$VPY" -m venv --without-pip "$AVENV"
fi
APY="$AVENV/bin/python"
"$APY" - "$ROOT" "$BUILD" "$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')" <<'EOF'
import os, shutil, sys, sysconfig
from pathlib import Path

root, build, deps = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
site = Path(sysconfig.get_paths()["platlib"])
# .venv's packages (numpy, pytest, ...) as a plain path: its .pth files, the editable hook among
# them, are not run.
(site / "hwport-sanitize-deps.pth").write_text(deps + "\n")
# `import hwport` finds this package even where the repository root comes first on sys.path
# (pytest's rootdir, `python -c` in the checkout), as the editable hook does for the normal one.
(site / "_hwport_sanitized.py").write_text(f"""import importlib.machinery, sys


class Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "hwport":
            return None
        return importlib.machinery.PathFinder.find_spec(name, [{str(site)!r}])


sys.meta_path.insert(0, Finder)
""")
(site / "_hwport_sanitized.pth").write_text("import _hwport_sanitized\n")
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
cuda = Path(deps) / "hwport/device_plugins/cuda/libhwport_cuda.so"
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
EOF

[[ $mode == build ]] && exit 0
case "$mode" in
  full) pytest_args=("${FULL[@]}") ;;
  short) pytest_args=("${SHORT[@]}") ;;
esac

# ---- run -------------------------------------------------------------------------------------
# Reports go to files (one per process, subprocesses included) rather than to stderr, so that a
# finding in a child whose failure a test expected still fails the job.
rm -rf "$LOGS"
mkdir -p "$LOGS"
# detect_leaks=0: CPython and pybind11 keep objects alive until exit by design (interned and
# immortal objects, module state, pybind11's internals), so LeakSanitizer would report every
# process; hwport's own leaks are checked by the allocator's counters in the tests instead.
# allocator_may_return_null=1: tests ask for impossible sizes and expect OutOfMemoryError, not
# ASan's "allocation-size-too-big" abort. protect_shadow_gap=0: PoCL's LLVM maps memory there.
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:protect_shadow_gap=0:log_path=$LOGS/asan${HWPORT_SANITIZE_EXTRA_ASAN_OPTIONS:+:$HWPORT_SANITIZE_EXTRA_ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$LOGS/ubsan"
export LD_PRELOAD="$LIBASAN:$LIBSTDCXX${LD_PRELOAD:+:$LD_PRELOAD}"
export PYTHONMALLOC=malloc  # Python's own buffers through malloc, so ASan sees overruns into them
export HWPORT_SANITIZED=1   # for tests that cannot run under ASan (none yet)

printf '\n==> [sanitize] pytest %s\n' "${pytest_args[*]}"
start=$SECONDS
set +e
"$APY" -m pytest -q -ra -p no:cacheprovider "${pytest_args[@]}"
rc=$?
set -e
unset LD_PRELOAD
printf '    pytest exit %d in %d s\n' "$rc" $((SECONDS - start))

shopt -s nullglob
reports=("$LOGS"/*)
if ((${#reports[@]})); then
  printf '\n==> [sanitize] %d sanitizer report(s):\n' "${#reports[@]}"
  for r in "${reports[@]}"; do
    printf -- '---- %s\n' "$r"
    cat "$r"
  done
  exit 1
fi
printf '\n==> [sanitize] no sanitizer reports\n'
exit "$rc"
