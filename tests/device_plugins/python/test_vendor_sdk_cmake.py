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
                   "abi,device,memory,stream,transfers,profiler", "--jobs", "2", "--json",
                   "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["tiers"]["mydev"]["runtime"]["status"] == "certified"
    assert results_by_id(tmp_path / "run.json")["abi::resolves_symbols"]["status"] == "PASS"


@pytest.mark.slow
def test_the_template_wheel_installs_next_to_hwport_and_is_certified(tmp_path):
    """Plays the vendor: the template as a wheel (scikit-build-core, against the installed
    hwport), installed in a fresh venv that sees hwport, found there through its entry point."""
    src = tmp_path / "mydev"
    shutil.copytree(TEMPLATE, src)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                            "--no-deps", str(src), "-w", str(tmp_path / "dist")], env=env,
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    # native code, no use of Python's C API: any Python 3, this platform only
    assert wheel.name.startswith("hwport_mydev-0.1.0-py3-none-linux_")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    vpy = venv / "bin" / "python"
    site = subprocess.run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True)
    site_dir = Path(site.stdout.strip())
    import sysconfig

    hwport_site = sysconfig.get_paths()["purelib"]  # hwport's own environment
    (site_dir / "hwport-env.pth").write_text(f"import site; site.addsitedir({hwport_site!r})\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(site_dir), str(wheel)], check=True, capture_output=True)
    work = tmp_path / "work"  # not where the source folder "mydev" is (a path to hwcheck)
    work.mkdir()
    listed = subprocess.run([str(vpy), "-m", "hwport.conformance", "list", "--json"],
                            capture_output=True, text=True, cwd=work)
    assert listed.returncode == 0, listed.stderr
    (mydev,) = [p for p in json.loads(listed.stdout)["plugins"] if p["device_type"] == "mydev"]
    assert Path(mydev["path"]).is_relative_to(site_dir / "hwport_mydev")
    run = subprocess.run([str(vpy), "-m", "hwport.conformance", "run", "--plugin", "mydev",
                          "--suite", "abi,device,memory,stream,transfers,profiler", "--jobs", "2",
                          "--json", "run.json"], capture_output=True, text=True, cwd=work)
    assert run.returncode == 0, run.stdout + run.stderr
    doc = json.loads((work / "run.json").read_text())
    assert doc["tiers"]["mydev"]["runtime"]["status"] == "certified"
