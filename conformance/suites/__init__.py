"""The suites, in the order they run. Each is a module here implementing model.Suite."""

from __future__ import annotations

import importlib
from types import ModuleType

SUITE_NAMES = ("abi", "device", "memory", "stream", "transfers", "profiler", "kernels",
               "thresholds", "guards", "coverage", "compiler", "ccl")
# What `hwcheck run` runs without --suite: ccl launches mpirun, so it runs when named.
DEFAULT_SUITES = tuple(s for s in SUITE_NAMES if s != "ccl")


def load_suite(name: str) -> ModuleType:
    if name not in SUITE_NAMES:
        raise ValueError(f"unknown suite {name!r}; expected one of {', '.join(SUITE_NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")
