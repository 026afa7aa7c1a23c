"""The tests' handles on the op pipeline's routes (runtime/src/pipeline.cpp): force the Python
path (phi_ops/dispatch.py call, the oracle of the C++ one), and see which calls reach it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from hwport.phi_ops import dispatch
from hwport.phi_ops.api_args import public_call
from hwport.phi_ops.sample_inputs import cases_for, device_inputs
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


def sample_calls(op: Any, place: str) -> Iterator[tuple[Any, list[Any], tuple, dict]]:
    """(case, inputs on `place`, public args, public kwargs) for every small sample case of
    `op` (phi_ops.sample_inputs) in every dtype it lists."""
    for d in op.dtypes:
        for case in cases_for(op.name, d):
            if case.large:
                continue
            inputs = device_inputs(case, place)
            args, kwargs = public_call(op, inputs, dict(case.attrs))
            yield case, inputs, tuple(args), kwargs
