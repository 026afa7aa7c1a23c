"""Version negotiation of the codegen table (ABI 1.2, docs/abi.md section 4): a plugin whose
table is a 1.1 one (struct_size only, trap pointers beyond) loads, works and has no target on
this host; the CPU plugin's 1.2 table read by a 1.1 host (tests/plugins/codegen_host_check.c
playing one) costs that host nothing, and a host handing shorter structs than the plugin knows
gets nothing written or read past them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hwport.runtime import builtin_plugin_paths
from tests.conftest import ABI_INCLUDE_DIR, REPO_ROOT
from tests.conftest import zoo_plugin_path as plugin_path
from tests.test_loader import assert_numbers, errors_for, plugin_entry, run_hwport

CHECK_SRC = REPO_ROOT / "tests" / "plugins" / "codegen_host_check.c"


def test_plugin_with_a_1_1_codegen_table_has_no_target(tmp_path):
    path = plugin_path("codegen_11")
    res = run_hwport("""
        result["info"] = loaded()
        result["target"] = rt._core.codegen_target_info("custom:test_codegen_11")
        try:
            rt._core.codegen_compile("custom:test_codegen_11", "c99", "void f(void) {}")
            result["compile"] = "compiled"
        except NotImplementedError as e:
            result["compile"] = str(e)
        result["add"] = binop("add", "custom:test_codegen_11")
    """, tmp_path, plugin_path_entries=[path])
    info = res["info"]
    assert not errors_for(info, path), info["errors"]
    assert plugin_entry(info, "test_codegen_11")["abi_version"] == "1.1"
    assert res["target"] is None
    assert "has no codegen target" in res["compile"], res["compile"]
    assert_numbers(res["add"], "add")
    # its trap pointers abort the process if the host ever calls past struct_size
    assert "beyond the declared struct_size" not in res["_stderr"], res["_stderr"]


@pytest.fixture(scope="module")
def codegen_host_check(tmp_path_factory) -> Path:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) on PATH")
    exe = tmp_path_factory.mktemp("codegen") / "codegen_host_check"
    r = subprocess.run([cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                        f"-I{ABI_INCLUDE_DIR}", str(CHECK_SRC), "-o", str(exe), "-ldl"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return exe


def _cpu_plugin() -> str:
    return next(p for p in builtin_plugin_paths() if Path(p).name == "libhwport_cpu.so")


def _run(exe: Path, mode: str) -> dict[str, str]:
    proc = subprocess.run([str(exe), _cpu_plugin(), mode], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    facts: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts.setdefault(key, value)
    assert facts.get("result") == "ok", proc.stdout
    return facts


def test_a_1_1_host_reads_the_1_2_table_as_a_prefix(codegen_host_check):
    facts = _run(codegen_host_check, "--host-1.1")
    assert facts["init_status"] == "0"
    assert facts["codegen_table"] == "present"
    assert int(facts["codegen_table_size"]) > 8  # the 1.2 functions follow struct_size


def test_shorter_structs_from_the_host(codegen_host_check):
    facts = _run(codegen_host_check, "--short-structs")
    assert facts["target_info_status"] in ("0", "3")  # 3: no C compiler on this machine
    if facts["target_info_status"] == "0":  # the CPU plugin times a profiled launch
        assert (facts["profiler"], facts["spans"], facts["span_id"], facts["span_name"]) == (
            "present", "1", "77", "fill")
