"""The suites, in the order they run. Each is a module here implementing model.Suite."""

from __future__ import annotations

import importlib
from types import ModuleType

SUITE_NAMES = ("abi", "device", "memory", "stream", "transfers", "profiler", "kernels",
               "thresholds", "guards", "coverage", "compiler")


def load_suite(name: str) -> ModuleType:
    if name not in SUITE_NAMES:
        raise ValueError(f"unknown suite {name!r}; expected one of {', '.join(SUITE_NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")
