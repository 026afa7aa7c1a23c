"""scripts/setup.sh's offline mode (HWPORT_SETUP_OFFLINE=1, what scripts/gpu_check.sh uses on the
GPU machine, which has no network) and gpu_check.sh's time budget and output files.

The offline set-up runs for real on a tiny scikit-build-core project in a temporary root, with
this test's interpreter (itself a venv, like the GPU machine's python3) as HWPORT_PYTHON and pip
barred from any index: the new .venv must see the interpreter's packages, install a carried wheel
from .whl/, list the requirement nobody has, and build with the interpreter's scikit-build-core
and cmake."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"

PROBE_PYPROJECT = """\
[build-system]
requires = ["scikit-build-core>=0.10"]
build-backend = "scikit_build_core.build"

[project]
name = "offline-probe"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["numpy>=1.24"]

[project.optional-dependencies]
test = ["pytest>=8", "hwport-no-such-package>=1"]

[tool.scikit-build]
build-dir = "build/{wheel_tag}"
wheel.packages = ["offline_probe"]
"""


def _wheel(dest: Path, name: str, version: str, source: str) -> Path:
    """A minimal pure-Python wheel holding package `name` (one __init__.py)."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": source,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{dist}/RECORD,,\n"
    out = dest / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as z:
        for path, text in {**files, f"{dist}/RECORD": record}.items():
            z.writestr(path, text)
    return out


@pytest.mark.parametrize("script", ["setup.sh", "gpu_check.sh", "gpu_wheels.sh"])
def test_script_parses(script: str) -> None:
    r = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_offline_setup_uses_the_interpreters_packages_and_carried_wheels(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "setup.sh").write_text((SCRIPTS / "setup.sh").read_text())
    (root / "pyproject.toml").write_text(PROBE_PYPROJECT)
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(probe LANGUAGES NONE)\n")
    (root / "offline_probe").mkdir()
    (root / "offline_probe" / "__init__.py").write_text("BUILT = True\n")
    (root / ".whl").mkdir()
    _wheel(root / ".whl", "hwport_carried_probe", "1.0", "CARRIED = 42\n")

    env = {**os.environ, "HWPORT_SETUP_OFFLINE": "1", "HWPORT_PYTHON": sys.executable,
           "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull}
    env.pop("PIP_FIND_LINKS", None)
    r = subprocess.run(["bash", str(root / "scripts" / "setup.sh")], env=env,
                       capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "creating without pip" in out, out
    assert "installing the carried wheels: hwport_carried_probe-1.0-py3-none-any.whl" in out, out
    # The one requirement that is nowhere is named; the interpreter's numpy counts as present.
    missing = next(line for line in out.splitlines() if "requirements not installed" in line)
    assert "hwport-no-such-package>=1 (not installed)" in missing
    assert "numpy" not in missing and "scikit-build-core" not in missing, missing

    vpy = root / ".venv" / "bin" / "python"
    probe = subprocess.run(
        [str(vpy), "-c",
         "import json, site, sys, numpy, offline_probe, hwport_carried_probe as c\n"
         "print(json.dumps({'prefix': sys.prefix, 'numpy': numpy.__file__,\n"
         "  'carried': c.__file__, 'value': c.CARRIED, 'built': offline_probe.BUILT,\n"
         "  'site': site.getsitepackages()}))"],
        capture_output=True, text=True, cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr
    import json

    info = json.loads(probe.stdout)
    venv = str(root / ".venv")
    assert info["prefix"] == venv
    assert info["carried"].startswith(venv) and info["value"] == 42
    assert info["built"] is True
    # numpy comes from this interpreter's site-packages, which site.getsitepackages() lists too.
    numpy_site = str(Path(__import__("numpy").__file__).parents[1])
    assert info["numpy"].startswith(numpy_site), info
    assert numpy_site in info["site"] and info["site"][0].startswith(venv), info


def test_gpu_check_budget_skips_every_step_and_returns_at_most_8_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "HWPORT_GPU_CHECK_BUDGET": "0"}
    r = subprocess.run(["bash", str(SCRIPTS / "gpu_check.sh")], env=env, capture_output=True,
                       text=True)
    steps = ["setup", "plugins", "cuda_tests", "oracle", "hwcheck", "bench"]
    assert r.returncode == len(steps), r.stdout + r.stderr
    summary = (out / "summary.txt").read_text()
    for step in steps:
        assert any(line.startswith(step) and "SKIPPED (time budget spent)" in line
                   for line in summary.splitlines()), (step, summary)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert len(files) <= 8 and set(files) <= {
        "summary.txt", "setup.log", "cuda_tests.log", "oracle.log", "hwcheck.log", "bench.log",
        "hwcheck.json", "junit.xml"}, files
    assert "more files than the 8" not in summary
