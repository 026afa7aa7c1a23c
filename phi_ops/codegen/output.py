"""The command line every generator shares: write the file, or --check that it is current."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def run(generate: Callable[[], str], out: Path, module: str, description: str | None) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args()
    text = generate()
    if args.check:
        if not out.exists() or out.read_text() != text:
            print(f"{out} is stale: run python -m {module}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    print(f"wrote {out}")
    return 0
