"""docs/porting.md cannot rot: its Python plugin is loaded and run, its C is compiled, its
hwcheck command lines are parsed by hwcheck's own parser, its CMake lines are the template's
and its TOML parses."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tomllib

import pytest

from tests.conftest import ABI_INCLUDE_DIR, REPO_ROOT

from .conftest import run_ok

GUIDE = REPO_ROOT / "docs" / "porting.md"


def blocks(language: str) -> list[str]:
    text = GUIDE.read_text()
    found = re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.M | re.S)
    assert found, f"docs/porting.md has no {language} block"
    return found


def test_the_python_plugin_of_the_guide_loads_and_runs(tmp_path):
    (code,) = [b for b in blocks("python") if b.startswith("# file: tinydev.py")]
    (tmp_path / "tinydev.py").write_text(code)
    out = run_ok("""
        import json
        import hwport
        rt = hwport.runtime
        x = hwport.to_tensor([1.0, 2.0], place="custom:tinydev")
        rt.reset_fallback_stats()
        y = (x + x).numpy().tolist()
        print(json.dumps({"y": y, "fell": [k[0] for k in rt.fallback_stats()],
                          "errors": rt.plugin_errors()}))
    """, {"HWPORT_PLUGIN_PATH": str(tmp_path / "tinydev.py"),
          "HWPORT_PYTHON_PLUGIN_CACHE": str(tmp_path / "cache")})
    assert json.loads(out.splitlines()[-1]) == {"y": [2.0, 4.0], "fell": [], "errors": []}


def test_the_c_of_the_guide_compiles(tmp_path):
    for code in blocks("c"):
        name = re.match(r"/\* file: (\S+)", code)
        assert name, "every C block starts with /* file: NAME.c"
        src = tmp_path / name.group(1)
        src.write_text(code)
        cc = subprocess.run(["cc", "-std=gnu99", "-Wall", "-Wextra", "-Werror", "-c",
                             f"-I{ABI_INCLUDE_DIR}", str(src), "-o", str(src.with_suffix(".o"))],
                            capture_output=True, text=True)
        assert cc.returncode == 0, cc.stderr


def test_the_commands_of_the_guide_are_valid():
    from hwport.conformance.cli import _parser

    lines = [line for b in blocks("bash") for line in b.splitlines()]
    commands = [shlex.split(line) for line in lines if line.startswith("hwcheck ")]
    assert len(commands) >= 4
    for argv in commands:
        try:
            _parser().parse_args(argv[1:])
        except SystemExit:
            pytest.fail(f"docs/porting.md: `{shlex.join(argv)}` is not a valid hwcheck command")
    template = (REPO_ROOT / "device_plugins" / "template" / "CMakeLists.txt").read_text()
    for code in blocks("cmake"):
        for line in filter(None, code.splitlines()):
            assert line in template, f"{line!r} is not what device_plugins/template does"
    for code in blocks("toml"):
        assert "hwport.plugins" in tomllib.loads(code)["project"]["entry-points"]
