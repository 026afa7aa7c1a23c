"""The installed package is all a vendor needs to build a C plugin: `python -m hwport
--cmake-dir` gives find_package(hwport CONFIG) (hwport::abi, hwport_add_plugin), pkg-config
works too, and device_plugins/template builds out of tree, loads and is certified."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conformance.conftest import hwcheck, results_by_id
from tests.conftest import REPO_ROOT, exported_functions

from .conftest import run_ok

TEMPLATE = REPO_ROOT / "device_plugins" / "template"
BIN = Path(sys.executable).parent  # the venv's cmake and ninja


def where(flag: str) -> Path:
    out = subprocess.run([sys.executable, "-m", "hwport", flag], check=True,
                         capture_output=True, text=True).stdout
    return Path(out.strip())


@pytest.fixture(scope="module")
def built_template(tmp_path_factory) -> Path:
    """The template copied to a fresh folder and built there with CMake against the installed
    package only (hwport_DIR), not the source tree."""
    cmake = shutil.which("cmake", path=str(BIN)) or shutil.which("cmake")
    if cmake is None:
        pytest.skip("no cmake")
    src = tmp_path_factory.mktemp("vendor") / "mydev"
    shutil.copytree(TEMPLATE, src)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmake_dir = where("--cmake-dir")
    assert (cmake_dir / "hwportConfig.cmake").is_file()
    assert not str(cmake_dir).startswith(str(REPO_ROOT / "runtime"))
    configure = subprocess.run([cmake, "-S", str(src), "-B", str(src / "build"), "-G", "Ninja",
                                f"-Dhwport_DIR={cmake_dir}"], env=env, capture_output=True,
                               text=True)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    build = subprocess.run([cmake, "--build", str(src / "build")], env=env, capture_output=True,
                           text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    assert "warning" not in build.stdout.lower()  # -Wall -Wextra clean
    return src / "build" / "libhwport_mydev.so"


def test_template_builds_out_of_tree_and_loads(built_template):
    assert exported_functions(built_template) == {"hwport_plugin_init"}
    out = run_ok("""
        import json
        import numpy as np
        import hwport
        rt = hwport.runtime
        (p,) = [p for p in rt.plugins() if p["device_type"] == "mydev"]
        a = np.arange(12, dtype="float32").reshape(3, 4)
        x = hwport.to_tensor(a, place="custom:mydev")
        rt.reset_fallback_stats()
        t = x.T.numpy()  # the device's own copy kernel makes the strided view contiguous
        print(json.dumps({"plugin": p, "t": t.tolist(), "fell": list(map(list,
                          rt.fallback_stats()))}))
    """, {"HWPORT_PLUGIN_PATH": str(built_template)})
    doc = json.loads(out.splitlines()[-1])
    assert doc["plugin"]["num_kernels"] == 10  # copy, one per dtype
    assert doc["t"] == [[0.0, 4.0, 8.0], [1.0, 5.0, 9.0], [2.0, 6.0, 10.0], [3.0, 7.0, 11.0]]
    assert doc["fell"] == []


def test_pkg_config_and_include_dir_build_a_plugin(tmp_path):
    pkg_config = shutil.which("pkg-config")
    if pkg_config is None:
        pytest.skip("no pkg-config")
    include = where("--include-dir")
    assert (include / "hwport" / "hwport.h").is_file()
    from hwport.__main__ import package_root  # what --pkgconfig-dir prints

    env = {**os.environ, "PKG_CONFIG_PATH": str(package_root() / "lib" / "pkgconfig")}
    flags = subprocess.run([pkg_config, "--cflags", "hwport"], env=env, check=True,
                           capture_output=True, text=True).stdout.split()
    assert any(Path(f[2:]).resolve() == include.resolve() for f in flags if f.startswith("-I"))
    so = tmp_path / "libhwport_mydev.so"
    cc = subprocess.run(["cc", "-std=gnu99", "-O1", "-Wall", "-Wextra", "-Werror", "-fPIC",
                         "-shared", *flags, str(TEMPLATE / "mydev.c"), "-o", str(so)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    assert exported_functions(so) == {"hwport_plugin_init"}


@pytest.mark.slow
def test_hwcheck_certifies_the_template(built_template, tmp_path):
    proc = hwcheck("run", "--plugin", str(built_template), "--suite",
                   "abi,device,memory,stream,transfers", "--jobs", "2", "--json", "run.json",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["tiers"]["mydev"]["runtime"]["status"] == "certified"
    assert results_by_id(tmp_path / "run.json")["abi::resolves_symbols"]["status"] == "PASS"
