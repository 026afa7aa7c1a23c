"""The tests' handles on the op pipeline's routes (runtime/src/pipeline.cpp): force the Python
path (phi_ops/dispatch.py call, the oracle of the C++ one), and see which calls reach it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hwport.phi_ops import dispatch
from hwport.runtime import _core


@contextlib.contextmanager
def python_path() -> Iterator[None]:
    """Every call on this thread takes the Python path (phi_ops/dispatch.py call)."""
    before = _core._pipeline_python_only(True)
    try:
        yield
    finally:
        _core._pipeline_python_only(before)


@contextlib.contextmanager
def deferred_calls() -> Iterator[list[str]]:
    """The names of the ops sent to phi_ops.dispatch.call while in the block."""
    calls: list[str] = []
    real = dispatch.call

    def spy(name, *args, **kwargs):
        calls.append(name)
        return real(name, *args, **kwargs)

    dispatch.call = spy
    try:
        yield calls
    finally:
        dispatch.call = real
