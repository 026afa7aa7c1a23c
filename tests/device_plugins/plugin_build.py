"""Builds the cpu reference plugin straight from its sources with the C compiler (no CMake), for
tests that run before or without a package build: the generated kernel table first (as
device_plugins/cpu/generated.cmake does), then every source file (in parallel), then the link."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CPU_SOURCES = REPO_ROOT / "device_plugins" / "cpu"
SUPPORT_SOURCES = REPO_ROOT / "device_plugins" / "common"
ABI_INCLUDE = REPO_ROOT / "runtime" / "include"
OPS_YAML = REPO_ROOT / "phi_ops" / "ops.yaml"
GEN_CPU_ELEMENTWISE = REPO_ROOT / "phi_ops" / "codegen" / "gen_cpu_elementwise.py"


def generate_cpu_sources(out_dir: Path) -> Path:
    """Runs the CPU plugin's code generators into out_dir; returns the include directory."""
    gen_dir = out_dir / "generated"
    proc = subprocess.run([sys.executable, str(GEN_CPU_ELEMENTWISE), str(OPS_YAML), str(gen_dir)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"generating the cpu plugin's kernel table failed:\n{proc.stderr}")
    return gen_dir


def build_cpu_plugin(out_dir: Path, extra_flags: tuple[str, ...] = ()) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise FileNotFoundError("no C compiler (cc/gcc) on PATH")
    out_dir = Path(out_dir)
    gen_dir = generate_cpu_sources(out_dir)
    out = out_dir / "libhwport_cpu.so"
    obj_dir = out_dir / "obj"
    obj_dir.mkdir(parents=True, exist_ok=True)
    sources = sorted(CPU_SOURCES.glob("*.c")) + sorted(SUPPORT_SOURCES.glob("*.c"))
    flags = ["-std=gnu99", "-O3", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra",
             f"-I{ABI_INCLUDE}", f"-I{SUPPORT_SOURCES}", f"-I{gen_dir}", *extra_flags]

    def compile_one(src: Path) -> tuple[list[str], subprocess.CompletedProcess]:
        cmd = [cc, *flags, "-c", str(src), "-o", str(obj_dir / (src.stem + ".o"))]
        return cmd, subprocess.run(cmd, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(compile_one, sources))
    for cmd, proc in results:
        if proc.returncode != 0:
            raise RuntimeError(f"building the cpu plugin failed:\n{' '.join(cmd)}\n{proc.stderr}")
    objects = [str(obj_dir / (src.stem + ".o")) for src in sources]
    cmd = [cc, "-shared", "-fPIC", *extra_flags, *objects, "-lpthread", "-lm", "-ldl", "-o",
           str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"linking the cpu plugin failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return out
