"""The distribution: the folders map into one `hwport` package, installed editable (Python
edits take effect without reinstalling), with the ABI headers shipped for vendors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hwport
import hwport.device_plugins
import hwport.runtime
from tests.conftest import REPO_ROOT


def test_python_modules_come_from_the_source_tree():
    assert Path(hwport.__file__).resolve() == REPO_ROOT / "hwport" / "__init__.py"
    assert Path(hwport.runtime.__file__).resolve() == REPO_ROOT / "runtime" / "__init__.py"
    assert Path(hwport.device_plugins.__file__).resolve().parent == REPO_ROOT / "device_plugins"


def test_abi_headers_are_reachable():
    include = hwport.runtime.include_dir()
    for name in ("hwport.h", "types.h", "plugin.h", "device.h", "kernel.h", "kernel_util.h"):
        assert (include / "hwport" / name).is_file(), name


def test_runtime_cli_lists_the_cpu_plugin(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hwport.runtime"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "cpu" in proc.stdout and "custom:cpu:0" in proc.stdout
