"""Fixtures for driving device plugins directly through the C ABI (no runtime core).

`cpu_plugin_so` is the installed libhwport_cpu.so (the top-level `cpu_plugin_path` fixture) when
the package is installed and the library is at least as new as the plugin's sources; otherwise
the plugin is compiled here with the C compiler into a temporary directory, so these tests run
against the current sources even when the installed library is stale. The host that drives it
is hwcheck's (hwport.conformance.direct_host), so the package itself must be installed."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
CPU_SOURCES = REPO_ROOT / "device_plugins" / "cpu"
ABI_INCLUDE = REPO_ROOT / "runtime" / "include"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from plugin_build import build_cpu_plugin  # noqa: E402

# Mirrors tests/conftest.py (INSTALL_ROOT), without importing a conftest module.
INSTALLED_CPU = (Path(sysconfig.get_paths()["platlib"]) / "hwport" / "device_plugins" / "cpu"
                 / "libhwport_cpu.so")


def _newest_source_mtime() -> float:
    files = [p for p in CPU_SOURCES.iterdir() if p.suffix in (".c", ".h")]
    files += list((ABI_INCLUDE / "hwport").glob("*.h"))
    files += list((CPU_SOURCES.parent / "common").iterdir())
    return max(p.stat().st_mtime for p in files)


@pytest.fixture(scope="session")
def cpu_plugin_so(request, tmp_path_factory) -> Path:
    if os.environ.get("HWPORT_TEST_CPU_PLUGIN"):
        return Path(os.environ["HWPORT_TEST_CPU_PLUGIN"])
    if INSTALLED_CPU.exists() and INSTALLED_CPU.stat().st_mtime >= _newest_source_mtime():
        return request.getfixturevalue("cpu_plugin_path")
    try:
        return build_cpu_plugin(tmp_path_factory.mktemp("cpu_plugin"))
    except FileNotFoundError as e:
        pytest.skip(f"no installed cpu plugin and no C compiler to build one: {e}")


@pytest.fixture(scope="session")
def cpu(cpu_plugin_so):
    """A fresh instance of the cpu plugin with two virtual devices and default settings."""
    from hwport.conformance.direct_host import DirectHost

    h = DirectHost(cpu_plugin_so, env={
        "HWPORT_CPU_DEVICES": "2",
        "HWPORT_CPU_MEMORY_LIMIT": None,
        "HWPORT_CPU_INLINE_ELEMENTS": None,
    })
    assert h.init_status == 0
    return h


@pytest.fixture(scope="session")
def load_cpu(cpu_plugin_so):
    """Factory: a fresh instance of the cpu plugin under the given environment variables."""
    from hwport.conformance.direct_host import DirectHost

    def load(abi_major: int = 1, **env):
        base = {"HWPORT_CPU_DEVICES": None, "HWPORT_CPU_MEMORY_LIMIT": None,
                "HWPORT_CPU_INLINE_ELEMENTS": None}
        base.update(env)
        return DirectHost(cpu_plugin_so, env=base, abi_major=abi_major)

    return load
