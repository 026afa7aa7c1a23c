"""The side table of kernel.codegen_launch (pir/dialects/kernel.py): a compiled kernel
(hwport.runtime._core.CodegenFunction) is no attribute, so the op carries `function_id`, an
int that indexes this registry. Each entry holds the function, its fixed grid and group (three
ints each) and its argument list, in the kernel's parameter order:

    ("in", i)    operand i (its buffer + the byte offset of its first element; contiguous)
    ("out", j)   result j (written by the kernel: fresh contiguous memory)
    ("i64", v)   an int64 constant
    ("f64", v)   a float64 constant

    fid = codegen_functions.register(fn, grid=(n, 1, 1), group=(1, 1, 1),
                                     args=[("out", 0), ("in", 0), ("i64", n)])

Ids are process-wide and never reused; an entry lives until `unregister` (it keeps its module
loaded), so a program text naming a function_id is meaningful only in the process that made
it."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

ArgSpec = tuple[str, int | float]

ARG_KINDS = ("in", "out", "i64", "f64")


@dataclass(frozen=True)
class CodegenLaunch:
    function: Any  # hwport.runtime._core.CodegenFunction
    grid: tuple[int, int, int]
    group: tuple[int, int, int]
    args: tuple[ArgSpec, ...]

    def problems(self, num_inputs: int, num_outputs: int) -> list[str]:
        """What makes this launch wrong for an op of `num_inputs` operands and `num_outputs`
        results (every result must be an argument: the kernel writes it)."""
        out: list[str] = []
        written = set()
        for k, (kind, value) in enumerate(self.args):
            if kind in ("in", "out"):
                limit = num_inputs if kind == "in" else num_outputs
                if not 0 <= int(value) < limit:
                    out.append(f"argument {k} ({kind}, {value}) is out of range: the op has "
                               f"{limit} {'operand' if kind == 'in' else 'result'}(s)")
                if kind == "out":
                    written.add(int(value))
        missing = sorted(set(range(num_outputs)) - written)
        if missing:
            out.append(f"result(s) {missing} are no argument of the kernel")
        return out


_lock = threading.Lock()
_ids = itertools.count(1)
_registry: dict[int, CodegenLaunch] = {}


def _dims(name: str, dims: int | Sequence[int]) -> tuple[int, int, int]:
    seq = [dims] if isinstance(dims, int) else list(dims)
    if not 1 <= len(seq) <= 3 or not all(
            isinstance(d, int) and not isinstance(d, bool) and 1 <= d < 2**32 for d in seq):
        raise ValueError(f"codegen_functions: {name} must be 1-3 ints in [1, 2^32), got {dims!r}")
    return (*seq, *([1] * (3 - len(seq))))  # type: ignore[return-value]


def _arg(k: int, spec: Sequence[Any]) -> ArgSpec:
    if len(spec) != 2 or spec[0] not in ARG_KINDS:
        raise ValueError(f"codegen_functions: argument {k} must be (kind, value) with kind one "
                         f"of {ARG_KINDS}, got {spec!r}")
    kind, value = spec
    if kind in ("in", "out", "i64") and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(f"codegen_functions: argument {k} ({kind}) takes an int, got {value!r}")
    if kind == "i64" and not -2**63 <= value < 2**63:
        raise ValueError(f"codegen_functions: argument {k} ({value}) does not fit in int64")
    if kind == "f64":
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise TypeError(f"codegen_functions: argument {k} (f64) takes a float, got {value!r}")
        value = float(value)
    return (kind, value)


def register(function: Any, grid: int | Sequence[int], group: int | Sequence[int],
             args: Iterable[Sequence[Any]]) -> int:
    """Registers a launch of `function`; its id for kernel.codegen_launch's `function_id`."""
    from hwport.runtime import _core

    if not isinstance(function, _core.CodegenFunction):
        raise TypeError(f"codegen_functions.register: expected a CodegenFunction, got "
                        f"{type(function).__name__}")
    launch = CodegenLaunch(function, _dims("grid", grid), _dims("group", group),
                           tuple(_arg(k, a) for k, a in enumerate(args)))
    with _lock:
        fid = next(_ids)
        _registry[fid] = launch
    return fid


def lookup(function_id: int) -> CodegenLaunch:
    with _lock:
        launch = _registry.get(function_id)
    if launch is None:
        raise KeyError(f"codegen function id {function_id} is not registered in "
                       f"pir.codegen_functions (ids are valid only in the process that "
                       f"registered them)")
    return launch


def unregister(function_id: int) -> None:
    """Forgets an entry (its module unloads once nothing else holds the function)."""
    with _lock:
        _registry.pop(function_id, None)


def registered() -> int:
    """How many entries the registry holds."""
    with _lock:
        return len(_registry)
