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

from tests.conformance.conftest import hwcheck
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


def test_the_codegen_target_of_the_guide_runs_every_op_and_passes_hwcheck(tmp_path):
    for code in blocks("python"):
        name = re.match(r"# file: (\S+)", code)
        assert name, "every Python block starts with # file: NAME.py"
        (tmp_path / name.group(1)).write_text(code)
    env = {"HWPORT_PLUGIN_PATH": str(tmp_path / "tinycc.py"), "PYTHONPATH": str(tmp_path),
           "HWPORT_PYTHON_PLUGIN_CACHE": str(tmp_path / "cache"),
           "HWPORT_CINN_CACHE_DIR": str(tmp_path / "cinn")}
    out = run_ok("""
        import json
        import numpy as np
        import hwport
        from hwport.cinn_backends import compile as cc
        rt = hwport.runtime
        a = np.linspace(-2, 2, 35, dtype=np.float32).reshape(5, 7)
        x = hwport.to_tensor(a, place="custom:tinycc")
        rt.reset_fallback_stats()
        # eager: softmax decomposes into max, subtract (a broadcast), exp, sum, divide
        y = hwport.nn.functional.softmax(x, axis=-1).numpy()
        e = np.exp(a - a.max(-1, keepdims=True))
        cc.reset_stats()
        static = hwport.jit.to_static(lambda t: hwport.tanh(t * 2.0) + t, backend="CINN")
        static(x)
        z = static(x).numpy()
        print(json.dumps({
            "softmax": float(np.abs(y - e / e.sum(-1, keepdims=True)).max()),
            "fused": float(np.abs(z - (np.tanh(a * 2) + a)).max()),
            "fused_fallbacks": int(cc.STATS["fallbacks"]),
            "fused_compiled": int(cc.STATS["compiled"]),
            "fell": [k[0] for k in rt.fallback_stats()],
            "compiled": sorted({k[0] for k in rt.compiled_stats() if k[1] == "tinycc"}),
            "errors": rt.plugin_errors()}))
    """, env)
    s = json.loads(out.splitlines()[-1])
    assert s["errors"] == [] and s["fell"] == [], s
    assert {"max", "subtract", "exp", "sum", "divide"} <= set(s["compiled"]), s["compiled"]
    assert s["softmax"] < 1e-6 and s["fused"] < 1e-5, s
    assert s["fused_fallbacks"] == 0 and s["fused_compiled"] >= 1, s
    # the guide's hwcheck line for it: every codegen check of the abi suite
    (line,) = [ln for b in blocks("bash") for ln in b.splitlines() if "tinycc.py" in ln]
    env.pop("HWPORT_PLUGIN_PATH")  # --plugin names it
    proc = hwcheck(*shlex.split(line)[1:], "--json", "run.json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = {r["id"]: r for r in json.loads((tmp_path / "run.json").read_text())["results"]}
    assert len(results) == 9 and results["abi::codegen_launch"]["status"] == "PASS", results
    assert {i for i, r in results.items() if r["status"] != "PASS"} == {"abi::codegen_serialize"}


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
