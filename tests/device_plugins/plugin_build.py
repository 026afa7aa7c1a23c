"""Builds the cpu reference plugin straight from its sources with the C compiler (no CMake), for
tests that run before or without a package build."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CPU_SOURCES = REPO_ROOT / "device_plugins" / "cpu"
ABI_INCLUDE = REPO_ROOT / "runtime" / "include"


def build_cpu_plugin(out_dir: Path, extra_flags: tuple[str, ...] = ()) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise FileNotFoundError("no C compiler (cc/gcc) on PATH")
    out = out_dir / "libhwport_cpu.so"
    sources = sorted(str(p) for p in CPU_SOURCES.glob("*.c"))
    cmd = [cc, "-std=gnu99", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra",
           f"-I{ABI_INCLUDE}", *extra_flags, *sources, "-lpthread", "-lm", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the cpu plugin failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return out
