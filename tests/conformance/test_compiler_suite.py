"""hwcheck's compiler suite: the fusion compiler through a plugin's codegen target, as users
reach it (to_static backend="CINN"). The CPU (c99) and OpenCL targets pass it and certify the
compiler tier; a broken toolchain (a C compiler that fails every build) FAILs the fused groups
and the build-log check with reasons a vendor can act on; a plugin without a target is
NOT_SUPPORTED, not a failure."""

from __future__ import annotations

import json
import shutil

import pytest

from .conftest import hwcheck, results_by_id


@pytest.mark.parametrize("plugin", ["cpu", "opencl"])
def test_reference_targets_pass_and_certify_the_compiler_tier(plugin, tmp_path):
    out = tmp_path / "run.json"
    proc = hwcheck("run", "--plugin", plugin, "--suite", "abi,compiler", "--json", str(out),
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = results_by_id(out)
    compiler = {k: r for k, r in results.items() if k.startswith("compiler::")}
    assert {"compiler::fused/rms_norm", "compiler::fused/softmax",
            "compiler::compile_error_log", "compiler::shape_class",
            "compiler::cache_across_processes"} <= set(compiler)
    assert all(r["status"] == "PASS" for r in compiler.values()), compiler
    assert compiler["compiler::cache_across_processes"]["details"]["second_disk_hits"] >= 1
    tier = json.loads(out.read_text())["tiers"][plugin]["compiler"]
    assert tier["status"] == "certified", tier


def test_a_broken_toolchain_fails_with_the_reason(tmp_path):
    false = shutil.which("false")
    out = tmp_path / "run.json"
    proc = hwcheck("run", "--plugin", "cpu", "--suite", "compiler", "--json", str(out),
                   cwd=tmp_path, env={"HWPORT_CC": false})
    assert proc.returncode == 1
    results = results_by_id(out)
    fused = results["compiler::fused/softmax"]
    assert fused["status"] == "FAIL" and "fell back to its ops" in fused["message"]
    log = results["compiler::compile_error_log"]
    assert log["status"] == "FAIL" and "build log" in log["message"]


def test_a_plugin_without_a_target_is_not_supported(tmp_path):
    out = tmp_path / "run.json"
    proc = hwcheck("run", "--plugin", "cpu", "--suite", "compiler", "--json", str(out),
                   cwd=tmp_path, env={"HWPORT_CC": str(tmp_path / "no-such-compiler")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = results_by_id(out)
    assert {r["status"] for r in results.values()} == {"NOT_SUPPORTED"}
    assert "no codegen target" in results["compiler::fused/rms_norm"]["message"]
