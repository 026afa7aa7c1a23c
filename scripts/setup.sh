#!/usr/bin/env bash
# Idempotent set-up from a fresh clone:
#   1. system packages (apt, only when something is missing and we are root),
#   2. the .venv with the build and test requirements (skipped while a stamp says they are current),
#   3. an editable, incremental build of hwport (always; the build/ folder persists).
# Works from any directory. Environment knobs:
#   HWPORT_PYTHON=python3.12  interpreter used to create .venv (default: python3 on PATH; >= 3.11)
#   HWPORT_BUILD_VERBOSE=1    show the CMake/compiler output (default on when CI is set)
#   HWPORT_SETUP_OFFLINE=1    a machine without network whose interpreter already holds the
#                             requirements (the GPU machine of scripts/gpu_check.sh): no apt
#                             (a missing system package is a note; a missing C/C++ compiler or
#                             Python.h still an error), a .venv that sees HWPORT_PYTHON's packages
#                             (a .pth file), no pip install of the requirements (the missing ones
#                             are listed) but of the wheels in .whl/ if any (--no-index), then the
#                             same build
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${HWPORT_PYTHON:-python3}"
VENV="$ROOT/.venv"
VPY="$VENV/bin/python"
STAMP="$VENV/.hwport-requirements.sha256"
APT_PACKAGES=(build-essential python3-venv python3-dev git libopenblas-dev libsleef-dev libdnnl-dev
              pocl-opencl-icd ocl-icd-opencl-dev opencl-headers openmpi-bin libopenmpi-dev)
# Build + test requirements. The entries of pyproject.toml's [build-system].requires,
# [project].dependencies and [project.optional-dependencies].test are added to (and override)
# these, so a dependency added there is picked up here without editing this file.
REQUIREMENTS=(scikit-build-core pybind11 numpy ml_dtypes pytest hypothesis cffi ruff
              "cmake>=3.18" ninja pyopencl)

case "${HWPORT_SETUP_OFFLINE:-}" in
  "" | 0 | false | no) OFFLINE=0 ;;
  *) OFFLINE=1 ;;
esac
WHEELS="$ROOT/.whl" # offline: wheels carried to the machine (scripts/gpu_wheels.sh)

START=$SECONDS
step() { printf '\n==> [setup] %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() { printf '\nsetup.sh: error: %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# ---- 1. system packages -------------------------------------------------------------------
step "1/3 system packages"

# Prints one line per missing prerequisite (empty output: nothing missing).
missing_prereqs() {
  local tool
  for tool in cc c++ make git; do
    have "$tool" || echo "$tool"
  done
  # OpenBLAS and its CBLAS header: the CPU plugin's float matmul (device_plugins/cpu/blas.cmake;
  # without it the build still works, with a slower GEMM of the plugin's own).
  if ! compgen -G "/usr/include/*/openblas*/cblas.h" >/dev/null &&
     ! compgen -G "/usr/include/openblas/cblas.h" >/dev/null; then
    echo "libopenblas-dev (OpenBLAS with cblas.h)"
  fi
  # SLEEF, the vector math library: the CPU plugin's float math (device_plugins/cpu/sleef.cmake;
  # without it the build still works, with scalar libm).
  if [[ ! -f /usr/include/sleef.h ]] && ! compgen -G "/usr/include/*/sleef.h" >/dev/null; then
    echo "libsleef-dev (SLEEF, sleef.h)"
  fi
  # oneDNN: the CPU plugin's large float32/bfloat16 products (device_plugins/cpu/blas.cmake;
  # without it the build still works, and those products go to OpenBLAS).
  if [[ ! -f /usr/include/dnnl.h ]] && ! compgen -G "/usr/include/*/dnnl.h" >/dev/null; then
    echo "libdnnl-dev (oneDNN, dnnl.h)"
  fi
  # The OpenCL headers, ICD loader and PoCL (a CPU OpenCL implementation): the OpenCL reference
  # plugin (device_plugins/opencl; without them the build skips it and says so).
  if [[ ! -f /usr/include/CL/cl.h ]]; then
    echo "opencl-headers (CL/cl.h)"
  fi
  if ! compgen -G "/usr/lib/*/libOpenCL.so" >/dev/null && [[ ! -e /usr/lib/libOpenCL.so ]]; then
    echo "ocl-icd-opencl-dev (the OpenCL ICD loader)"
  fi
  if ! compgen -G "/etc/OpenCL/vendors/*.icd" >/dev/null; then
    echo "pocl-opencl-icd (an OpenCL implementation)"
  fi
  # Open MPI: mpirun and the MPI adapter of the collectives (ccl_adapters/mpi; without it the
  # build skips the adapter and says so, and hwport.distributed cannot start).
  if ! have mpirun || ! have mpicc; then
    echo "openmpi-bin libopenmpi-dev (Open MPI: mpirun, mpicc)"
  fi
  if ! have "$PYTHON"; then
    echo "$PYTHON"
    return
  fi
  # Only a venv still to be created needs the interpreter's venv/ensurepip support (offline,
  # the venv is made without pip and uses the interpreter's).
  if [[ ! -x "$VPY" ]] && ! "$PYTHON" -c "import venv$( ((OFFLINE)) || echo ', ensurepip')" \
       >/dev/null 2>&1; then
    echo "venv/ensurepip support of $PYTHON"
  fi
  if ! "$PYTHON" - >/dev/null 2>&1 <<'EOF'
import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))
EOF
  then
    echo "Python.h (development headers) of $PYTHON"
  fi
}

missing="$(missing_prereqs)"
if [[ -z "$missing" ]]; then
  note "all present (C/C++ compiler, make, git, OpenBLAS, OpenCL/PoCL, Open MPI, $PYTHON with venv and headers);" \
       "apt skipped"
elif ((OFFLINE)); then
  # No apt without network: build with what is there. The build skips OpenBLAS and OpenCL when
  # they are missing (and says so); without a compiler or the interpreter it cannot start.
  note "offline (HWPORT_SETUP_OFFLINE): apt skipped; not on this machine:" \
       "$(echo "$missing" | paste -sd, - | sed 's/,/, /g')"
  fatal=()
  while IFS= read -r item; do
    case "$item" in
      cc | c++ | "$PYTHON" | Python.h* | venv*) fatal+=("$item") ;;
    esac
  done <<<"$missing"
  ((${#fatal[@]} == 0)) || die "offline, and these are missing: ${fatal[*]}"
else
  note "missing: $(echo "$missing" | paste -sd, - | sed 's/,/, /g')"
  if [[ "$(id -u)" -ne 0 ]]; then
    die "not root, so not installing system packages. Install them, then re-run:
    sudo apt-get update && sudo apt-get install -y --no-install-recommends ${APT_PACKAGES[*]}"
  fi
  have apt-get || die "apt-get not found; install the equivalent of: ${APT_PACKAGES[*]}"
  export DEBIAN_FRONTEND=noninteractive
  note "apt-get update"
  apt-get update -q
  note "apt-get install ${APT_PACKAGES[*]}"
  apt-get install -y -q --no-install-recommends "${APT_PACKAGES[@]}"
  hash -r
  missing="$(missing_prereqs)"
  if [[ -n "$missing" ]]; then
    hint=""
    if grep -qi python <<<"$missing"; then
      hint="
    ($PYTHON is not Debian's python3: install its venv support and headers yourself,
     or run with HWPORT_PYTHON=/usr/bin/python3)"
    fi
    die "still missing after apt-get install: $(echo "$missing" | paste -sd, - | sed 's/,/, /g')$hint"
  fi
fi

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "$PYTHON is $("$PYTHON" -c 'import sys; print(sys.version.split()[0])'); hwport needs Python >= 3.11 (set HWPORT_PYTHON=/path/to/python3.11+)"

# ---- 2. virtual environment and requirements ----------------------------------------------
step "2/3 virtual environment ($VENV) and requirements"

# Offline: the venv sees the interpreter's site-packages (its pip too) through a .pth file that
# adds them after its own, as `venv --system-site-packages` does for a plain interpreter; that
# option would miss them when HWPORT_PYTHON is itself a venv (the GPU machine's python3 is).
link_base_site() {
  local base
  base="$("$PYTHON" - <<'EOF'
import json, os, site, sysconfig
paths = sysconfig.get_paths()
dirs = [paths["purelib"], paths["platlib"], *getattr(site, "getsitepackages", list)()]
print(json.dumps({"dirs": list(dict.fromkeys(d for d in dirs if os.path.isdir(d))),
                  "prefixes": getattr(site, "PREFIXES", [])}))
EOF
)"
  "$VPY" - "$base" <<'EOF'
import json, pathlib, sys, sysconfig
base = json.loads(sys.argv[1])
own = pathlib.Path(sysconfig.get_paths()["purelib"])
dirs = [d for d in base["dirs"] if pathlib.Path(d) != own]
# addsitedir (not a bare path line), so that the .pth files in those folders run too; and their
# prefixes in site.PREFIXES, so that site.getsitepackages() lists them as well (CUDA's
# cuda-pathfinder, which CuPy uses, looks there for the nvidia-* wheels' libraries).
lines = [f"import site; site.addsitedir({d!r})" for d in dirs]
lines.append("import site; site.PREFIXES[:] = dict.fromkeys(site.PREFIXES + %r)"
             % base["prefixes"])
(own / "hwport-base-site.pth").write_text("\n".join(lines) + "\n")
print("    the venv sees (hwport-base-site.pth): " + (", ".join(dirs) or "nothing"))
EOF
}

if ((OFFLINE)); then
  if [[ -x "$VPY" ]] && "$VPY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
  then
    note "exists: $("$VPY" -c 'import sys; print(sys.version.split()[0])')"
  else
    note "creating without pip (it uses $PYTHON's) with" \
         "$("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
    "$PYTHON" -m venv --clear --without-pip "$VENV"
  fi
  link_base_site
  if ! "$VPY" -m pip --version >/dev/null 2>&1; then
    note "$PYTHON has no pip either: ensurepip (offline, from the bundled wheel)"
    "$VPY" -m ensurepip -q
  fi
  export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 # fail at once instead of waiting on a network
elif [[ -x "$VPY" ]] && "$VPY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 \
   && "$VPY" -m pip --version >/dev/null 2>&1; then
  note "exists: $("$VPY" -c 'import sys; print(sys.version.split()[0])')"
else
  if [[ -e "$VENV" ]]; then
    note "$VENV is broken or too old; recreating it"
  fi
  note "creating with $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  "$PYTHON" -m venv --clear "$VENV"
fi

# Upgrade pip only when it is very old (the resolver and PEP 660 editables need >= 21.3).
if ! "$VPY" - <<'EOF'
import sys
import pip
sys.exit(tuple(int(p) for p in pip.__version__.split(".")[:2] if p.isdigit()) < (22, 0))
EOF
then
  ((OFFLINE)) && die "offline, and the pip that $VENV uses is older than 22.0 (needed for PEP 660 editables)"
  note "upgrading the venv's old pip"
  "$VPY" -m pip install -q --upgrade pip
fi

# The full requirement list, and a key over it + pyproject.toml + the interpreter: when the key
# matches the stamp, everything was installed already and pip is not run at all.
mapfile -t REQ_LINES < <("$VPY" - "${REQUIREMENTS[@]}" <<'EOF'
import hashlib, re, sys, tomllib

def name(req):
    return re.split(r"[\s<>=!~;\[(@]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")

with open("pyproject.toml", "rb") as f:
    raw = f.read()
meta = tomllib.loads(raw.decode())
reqs = {name(r): r for r in sys.argv[1:]}
from_pyproject = (meta.get("build-system", {}).get("requires", [])
                  + meta.get("project", {}).get("dependencies", [])
                  + meta.get("project", {}).get("optional-dependencies", {}).get("test", []))
for r in from_pyproject:
    reqs[name(r)] = r
lines = sorted(reqs.values())
key = hashlib.sha256("\n".join(lines + [sys.version]).encode() + b"\0" + raw).hexdigest()
print(key)
print("\n".join(lines))
EOF
)
[[ ${#REQ_LINES[@]} -ge 2 ]] || die "could not read the requirements from pyproject.toml"
KEY="${REQ_LINES[0]}"
REQS=("${REQ_LINES[@]:1}")

if ((OFFLINE)); then
  # No pip from an index: the carried wheels, then a list of what is still missing (the build
  # or the tests that need it will fail, and say so). No stamp: an online run installs all.
  shopt -s nullglob
  wheels=("$WHEELS"/*.whl)
  shopt -u nullglob
  if ((${#wheels[@]})); then
    note "installing the carried wheels: $(printf '%s ' "${wheels[@]##*/}")"
    "$VPY" -m pip install -q --no-index --no-deps --no-compile "${wheels[@]}"
  else
    note "no wheels in $WHEELS"
  fi
  "$VPY" - "${REQS[@]}" <<'EOF'
import importlib.metadata as md
import sys

try:
    from packaging.requirements import Requirement
except ImportError:  # pip's own copy
    from pip._vendor.packaging.requirements import Requirement

have, missing = [], []
for line in sys.argv[1:]:
    req = Requirement(line)
    try:
        version = md.version(req.name)
    except md.PackageNotFoundError:
        missing.append(f"{line} (not installed)")
        continue
    if req.specifier.contains(version, prereleases=True):
        have.append(f"{req.name} {version}")
    else:
        missing.append(f"{line} (has {version})")
print("    requirements present: " + (", ".join(have) or "none"))
if missing:
    print("    requirements not installed (offline, pip is not run; carry the ones needed as "
          "wheels in .whl/, see scripts/gpu_wheels.sh): " + ", ".join(missing))
EOF
elif [[ -f "$STAMP" && "$(cat "$STAMP")" == "$KEY" ]]; then
  note "requirements up to date (stamp $(basename "$STAMP") matches); pip skipped"
else
  note "installing: ${REQS[*]}"
  "$VPY" -m pip install -q "${REQS[@]}"
  printf '%s\n' "$KEY" >"$STAMP"
  note "installed; stamp written"
fi

# ---- 3. build and install hwport (editable, incremental) ----------------------------------
step "3/3 build hwport (pip install --no-build-isolation -e .; incremental in build/)"

# The venv's cmake and ninja must be the ones the build finds (offline: the interpreter's).
export PATH="$VENV/bin:$PATH"
if ((OFFLINE)); then
  PATH="$VENV/bin:$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["scripts"])'):${PATH#*:}"
fi
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}"
PIP_BUILD_ARGS=(--no-build-isolation --no-deps -e .)
case "${HWPORT_BUILD_VERBOSE:-${CI:-}}" in
  "" | 0 | false | no) verbose=0 ;;
  *) verbose=1 ;;
esac
if [[ $verbose == 1 ]]; then
  PIP_BUILD_ARGS=(-v "${PIP_BUILD_ARGS[@]}")
else
  PIP_BUILD_ARGS=(-q "${PIP_BUILD_ARGS[@]}")
fi
build_start=$SECONDS
"$VPY" -m pip install "${PIP_BUILD_ARGS[@]}" \
  || die "building hwport failed (see the output above; HWPORT_BUILD_VERBOSE=1 shows the full CMake log)"
note "built in $((SECONDS - build_start)) s"

step "done in $((SECONDS - START)) s — use $VENV/bin/python (or: source .venv/bin/activate)"
