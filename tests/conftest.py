"""Shared fixtures: where the built (installed) plugins live."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

INSTALL_ROOT = Path(sysconfig.get_paths()["platlib"]) / "hwport"
REPO_ROOT = Path(__file__).resolve().parents[1]
ABI_INCLUDE_DIR = REPO_ROOT / "runtime" / "include"


def installed_plugin(relative: str) -> Path:
    """Path of a plugin library installed with the package, e.g. 'device_plugins/cpu/libhwport_cpu.so'."""
    path = INSTALL_ROOT / relative
    if not path.exists():
        pytest.fail(f"{path} is not built; run the README's set-up command")
    return path


def test_plugin_path(variant: str) -> Path:
    """A test-only plugin built by CMake from tests/plugins (installed under hwport/testing_plugins)."""
    return installed_plugin(f"testing_plugins/libhwport_test_{variant}.so")


@pytest.fixture(scope="session")
def cpu_plugin_path() -> Path:
    return installed_plugin("device_plugins/cpu/libhwport_cpu.so")
