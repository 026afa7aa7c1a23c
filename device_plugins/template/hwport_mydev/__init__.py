"""The mydev plugin's Python package: only where its library is (hwport's entry point)."""

from pathlib import Path


def library_path() -> Path:
    return Path(__file__).resolve().parent / "libhwport_mydev.so"
