"""What the build-time generators (gen_cpp_ops.py, gen_cpp_decomp.py) share: CMake runs them as
scripts with only Python 3.11 and PyYAML, `python <gen>.py <ops.yaml> <out_dir>`, and they write
their one file only when its content changes (so builds stay incremental)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml


def load(yaml_path: str) -> dict[str, Any]:
    with open(yaml_path, encoding="utf-8") as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def generate(render: Callable[[dict[str, Any]], str], yaml_path: str, out_dir: str,
             out_name: str) -> None:
    text = render(load(yaml_path))
    out = Path(out_dir) / out_name
    if not out.exists() or out.read_text() != text:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)


def main(argv: list[str], render: Callable[[dict[str, Any]], str], out_name: str,
         tool: str) -> int:
    if len(argv) != 3:
        print(f"usage: {Path(argv[0]).name} <ops.yaml> <out_dir>", file=sys.stderr)
        return 2
    try:
        generate(render, argv[1], argv[2], out_name)
    except (OSError, yaml.YAMLError, KeyError, ValueError) as e:
        print(f"{tool}: {e}", file=sys.stderr)
        return 1
    return 0
