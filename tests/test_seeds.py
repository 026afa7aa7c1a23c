"""Test data is the same in every run: rng_for does not depend on PYTHONHASHSEED, and no test
seeds a generator from hash() (which does)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRAW = "from tests.seeds import rng_for; print(rng_for('matmul', 'float32', 11).integers(1 << 62))"


def draw_with_hash_seed(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run([sys.executable, "-c", DRAW], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True).stdout


def test_rng_for_is_the_same_in_every_process():
    assert draw_with_hash_seed("1") == draw_with_hash_seed("8") != ""


def test_no_test_seeds_from_hash():
    seeded_from_hash = re.compile(r"default_rng\([^)]*hash\(")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")
                 if seeded_from_hash.search(p.read_text())]
    assert offenders == [], f"seed with tests.seeds.rng_for instead of hash(): {offenders}"
