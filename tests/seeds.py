"""Random generators seeded by a test's parameters, the same in every process.

Python's hash() of a str changes with PYTHONHASHSEED, so a seed taken from it draws different
data on every run (a test that fails once in a dozen runs); crc32 of the parameters' repr does
not."""

from __future__ import annotations

import zlib

import numpy as np


def rng_for(*parts: object) -> np.random.Generator:
    """A generator seeded by `parts` (strings, numbers, tuples of them)."""
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))
