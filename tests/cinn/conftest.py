"""Fixtures of the compiler tests: the template plugin (device_plugins/template/mydev.c), built
once per module with the system C compiler as a vendor would."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

TEMPLATE = REPO_ROOT / "device_plugins" / "template" / "mydev.c"


@pytest.fixture(scope="module")
def mydev(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The template plugin, built with the system C compiler as a vendor would."""
    from hwport.runtime import include_dir

    so = tmp_path_factory.mktemp("mydev") / "libhwport_mydev.so"
    cc = subprocess.run(["cc", "-std=gnu99", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC",
                         "-shared", "-pthread", f"-I{include_dir()}", str(TEMPLATE), "-o", str(so)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    return so
