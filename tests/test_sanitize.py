"""scripts/sanitize.sh, the AddressSanitizer + UBSan job (README: "Sanitizers").

CI runs the script's selftest (with the sanitized build's own flags and the job's environment,
a deliberate heap overflow and a signed overflow in a throwaway library must each be reported)
and its short slice (streams, the allocator, the size reproducers, a few op cases: about two
minutes on 2 cores, the second build of the runtime and plugins included). The full job is the
slow test."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "sanitize.sh"


def _require_asan() -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    lib = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True,
                         text=True).stdout.strip()
    if not os.path.isabs(lib):  # gcc echoes the bare name when it has no such library
        pytest.skip("gcc has no libasan.so")


def _run(*args: str, build_dir: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    if build_dir is not None:
        env["HWPORT_SANITIZE_DIR"] = str(build_dir)
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)


def test_selftest_reports_a_deliberate_bug_of_each_kind(tmp_path: Path) -> None:
    _require_asan()
    proc = _run("--selftest", build_dir=tmp_path / "asan")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "selftest heap_overflow: reported (heap-buffer-overflow)" in out, out
    assert "selftest signed_overflow: reported (signed integer overflow)" in out, out


def test_short_slice_is_clean() -> None:
    _require_asan()
    proc = _run("--short")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "no sanitizer reports" in out, out[-20000:]


@pytest.mark.slow
def test_full_job_is_clean() -> None:
    _require_asan()
    proc = _run()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "no sanitizer reports" in out, out[-20000:]
