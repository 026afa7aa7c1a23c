"""Python plugins: where the examples are, and a private cache for their entry libraries."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, run_isolated

EXAMPLES = REPO_ROOT / "device_plugins" / "python"
NUMPY_DEVICE = EXAMPLES / "numpy_device.py"
PYOPENCL_DEVICE = EXAMPLES / "pyopencl_device.py"
CUPY_DEVICE = EXAMPLES / "cupy_device.py"


@pytest.fixture
def plugin_env(tmp_path: Path):
    """Environment for a process that loads the given plugin files (HWPORT_PLUGIN_PATH), with
    the entry libraries written under tmp_path."""

    def make(*paths: Path | str, **extra: str) -> dict[str, str]:
        return {"HWPORT_PLUGIN_PATH": ":".join(str(p) for p in paths),
                "HWPORT_PYTHON_PLUGIN_CACHE": str(tmp_path / "cache"), **extra}

    return make


def run_ok(code: str, env: dict[str, str]) -> str:
    """Runs `code` in a fresh interpreter; returns its stdout, failing with its output."""
    proc = run_isolated(code, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout
