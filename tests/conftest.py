"""Shared fixtures: where the built (installed) plugins live."""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

# Two virtual CPU devices, so multi-device paths run in every test process.
os.environ.setdefault("HWPORT_CPU_DEVICES", "2")

import pytest

INSTALL_ROOT = Path(sysconfig.get_paths()["platlib"]) / "hwport"
REPO_ROOT = Path(__file__).resolve().parents[1]
ABI_INCLUDE_DIR = REPO_ROOT / "runtime" / "include"


def installed_plugin(relative: str) -> Path:
    """Path of a plugin installed with the package, e.g. 'device_plugins/cpu/libhwport_cpu.so'."""
    path = INSTALL_ROOT / relative
    if not path.exists():
        pytest.fail(f"{path} is not built; run the README's set-up command")
    return path


def zoo_plugin_path(variant: str) -> Path:
    """A test-only plugin built by CMake from tests/plugins, installed in hwport/testing_plugins."""
    return installed_plugin(f"testing_plugins/libhwport_test_{variant}.so")


@pytest.fixture(scope="session")
def cpu_plugin_path() -> Path:
    return installed_plugin("device_plugins/cpu/libhwport_cpu.so")


def run_isolated(code: str, env: dict[str, str] | None = None, timeout: float = 120):
    """Runs `code` in a fresh interpreter (plugin discovery happens once per process) and
    returns the CompletedProcess; the test asserts on returncode/stdout/stderr."""
    import os
    import subprocess
    import sys
    import textwrap

    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def exported_functions(so: Path) -> set[str]:
    """The functions a shared library exports (nm -D); skips the test when nm is missing."""
    import shutil
    import subprocess

    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm to list the exported symbols")
    out = subprocess.run([nm, "-D", "--defined-only", str(so)], check=True, capture_output=True,
                         text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[1:2] == ["T"]}
