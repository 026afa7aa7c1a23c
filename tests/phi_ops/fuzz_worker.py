"""The crash-isolated side of the bad-input fuzzer (tests/phi_ops/test_fuzz_ops.py).

Run as `python -m tests.phi_ops.fuzz_worker`: it reads cases from stdin and writes one verdict
per case to its private result pipe (the original stdout; fd 1 is pointed at stderr so nothing
a plugin prints can corrupt the stream). Frames are a 4-byte big-endian length and a pickle.
The parent restarts the process when it dies (a signal) or stops answering (a hang), and
reports that case.

A case is a dict:
  op      ops.yaml name; called as `hwport.<op>` (creation/random ops get `place=`)
  inputs  one entry per ops.yaml input: ("array", ndarray, place) | ("value", object) |
          ("list", [entries]) | None
  attrs   keyword arguments
  place   the place creation ops get, and where the check after the call runs
  arg     the argument the fuzzer corrupted (the error message must name it)
  entry   "hwport" | "nn" (hwport.nn.functional) | "method" (Tensor method of the first input)
  dtype   the ops.yaml dtype of the valid call the case was made from

A verdict is a dict: status "ok" (result matches the oracle), "ok_unchecked" (a result, and
no oracle applies), "wrong" (result differs from the oracle, or the oracle refuses the call),
"error" (an allowed exception naming op and argument), "unclear" (another exception, or one
that does not name them), "harness" (the worker's own checks failed), plus "leak"/"broken"
when the allocator did not return to its baseline or a valid op on the place failed
afterwards; "detail" says why.
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import re
import struct
import sys
import traceback
from typing import Any, BinaryIO

import numpy as np

ALLOWED = (TypeError, ValueError, IndexError, MemoryError)


def read_frame(stream: BinaryIO) -> Any:
    head = stream.read(4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack(">I", head)
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return pickle.loads(data)


def write_frame(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj)
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def _allocated(places: list[str]) -> int:
    import hwport

    total = 0
    for p in places:
        hwport.device.synchronize(p)
        total += hwport.device.memory_stats(p)["allocated_bytes"]
    return total


def _build(entry: Any, places: set[str]) -> Any:
    import hwport

    if entry is None:
        return None
    kind = entry[0]
    if kind == "array":
        places.add(entry[2])
        return hwport.to_tensor(entry[1], place=entry[2])
    if kind == "list":
        return [_build(e, places) for e in entry[1]]
    return entry[1]


def _numpy_inputs(case: dict[str, Any]) -> list[Any] | None:
    """The oracle's inputs: arrays as given; a Python scalar as the 0-d array hwport makes of
    it (phi_ops.promotion.scalar_dtype next to the first tensor); None when some input is
    something else."""
    from hwport.phi_ops.promotion import np_dtype, promotion_inputs, scalar_dtype
    from hwport.phi_ops.schema import load_ops

    op = load_ops()[case["op"]]
    arrays = [(spec.name, e[1]) for spec, e in zip(op.inputs, case["inputs"], strict=True)
              if e is not None and e[0] == "array"]
    deciding = [a for n, a in arrays if n in promotion_inputs(op)]
    first = (deciding or [a for _, a in arrays] or [None])[0]
    like = None if first is None else _dname(first)

    def conv(e: Any) -> Any:
        if e is None:
            return None
        if e[0] == "array":
            return e[1]
        if e[0] == "list":
            return [conv(x) for x in e[1]]
        v = e[1]
        if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
            return np.asarray(v, dtype=np_dtype(scalar_dtype(v, like)))
        raise TypeError("not an oracle input")

    try:
        return [conv(e) for e in case["inputs"]]
    except (TypeError, ValueError, OverflowError):
        return None


def _dname(a: np.ndarray) -> str:
    return "bfloat16" if a.dtype.name == "bfloat16" else a.dtype.name


def _check_result(case: dict[str, Any], result: Any) -> tuple[str, str]:
    from hwport.phi_ops import sample_inputs as C
    from hwport.phi_ops.reference import reference
    from hwport.phi_ops.tolerance import assert_close

    inputs = _numpy_inputs(case)
    if inputs is None:
        return "ok_unchecked", "an input is not an array or a Python scalar"
    try:
        got = C.to_numpy(result)
    except (ValueError, MemoryError) as exc:  # e.g. a huge expand view: too big to read back
        return "ok_unchecked", f"the result cannot be read back: {exc}"
    as_float = _float_math_inputs(case["op"], inputs)
    attrs = _as_dispatched(case["op"], case["attrs"])
    try:
        want = reference(case["op"], as_float, attrs)
    except Exception as exc:  # noqa: BLE001  (numpy refusing the call: hwport accepted it)
        return "wrong", (f"hwport returned a result but the oracle refuses the call: "
                         f"{type(exc).__name__}: {exc}")
    try:
        key = C.Case(case["op"], case["dtype"], "fuzz", as_float, attrs).key_dtype()
    except Exception:  # noqa: BLE001  (no promotion rule for these dtypes)
        key = case["dtype"]
    try:
        assert_close(case["op"], key, got, want)
    except AssertionError as exc:
        return "wrong", f"result differs from the oracle: {exc}"
    except Exception as exc:  # noqa: BLE001  (shapes/dtypes the comparison cannot line up)
        return "wrong", f"result cannot be compared with the oracle: {type(exc).__name__}: {exc}"
    return "ok", ""


def _as_dispatched(op_name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """The attributes as the dispatcher documents it normalizes them (the oracle takes them
    so): None for a list attribute whose default is [] means []; an int beyond int64 for a
    float attribute is the nearest float (inf beyond the float range)."""
    from hwport.phi_ops.schema import load_ops

    op = load_ops()[op_name]
    out = dict(attrs)
    for a in op.attrs:
        v = out.get(a.name)
        if v is None and a.type == "ints" and a.default == [] and a.name in out:
            out[a.name] = []
        elif (a.type == "float" and isinstance(v, int) and not isinstance(v, bool)
              and not -(2**63) <= v < 2**63):
            try:
                out[a.name] = float(v)
            except OverflowError:  # beyond any float: the oracle's saturating bound is inf
                out[a.name] = math.copysign(math.inf, v)
    return out


def _float_math_inputs(op_name: str, inputs: list[Any]) -> list[Any]:
    """Float-only unary math computes integer/bool inputs in float32 (hwport's rule, as
    PyTorch's): the oracle, defined on floats only, gets them cast the same way."""
    from hwport.phi_ops.schema import load_ops

    op = load_ops()[op_name]
    x = inputs[0] if inputs else None
    if (op.category == "unary" and isinstance(x, np.ndarray) and x.dtype.kind in "biu"
            and all(d.startswith(("float", "bfloat")) for d in op.dtypes)):
        return [x.astype(np.float32), *inputs[1:]]
    return inputs


# Corruptions that make two arguments disagree: an error may name either of them.
RELATIONAL = {"bad_shape", "zero_size", "zero_d", "other_place", "wrong_dtype", "ndim17",
              "list_bad_shape", "list_other_place", "huge_scalar", "scalar_nan", "scalar_bool",
              "scalar_overflow", "attr_dtype"}


def _names(msg: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", msg) is not None


def _classify_error(case: dict[str, Any], exc: BaseException) -> tuple[str, str]:
    msg = str(exc)
    text = f"{type(exc).__name__}: {msg}"
    if not isinstance(exc, ALLOWED):
        return "unclear", f"not a TypeError/ValueError/IndexError/MemoryError: {text}"
    from hwport.phi_ops.api_args import public_names
    from hwport.phi_ops.schema import load_ops

    op = load_ops()[case["op"]]
    public = public_names(op)  # the message names what the caller passed
    arg = case["arg"].split("[")[0]
    arg = public.get(arg, arg)
    if not _names(msg, case["op"]):
        return "unclear", f"the message does not name the op {case['op']!r}: {text}"
    args = [arg]
    if case["kind"] in RELATIONAL:
        args += list(public.values())
    if not any(_names(msg, a) for a in args):
        return "unclear", f"the message does not name the argument {arg!r}: {text}"
    return "error", text


def _after_check(places: list[str]) -> str:
    """A valid op on every place the case used still gives the right answer."""
    import hwport

    for p in places:
        a = hwport.to_tensor(np.array([1.0, 2.0], np.float32), place=p)
        b = hwport.to_tensor(np.array([3.0, 5.0], np.float32), place=p)
        got = hwport.add(a, b).numpy()
        if not np.array_equal(got, np.array([4.0, 7.0], np.float32)):
            return f"add on {p} after the case gave {got}, expected [4, 7]"
    return ""


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    from hwport.phi_ops.api_args import public_call
    from hwport.phi_ops.schema import load_ops

    op = load_ops()[case["op"]]
    places = sorted({case["place"], *_input_places(case)})
    gc.collect()
    base = _allocated(places)
    status, detail = "unclear", ""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    try:
        args = [_build(e, set()) for e in case["inputs"]]
        # The public function's form: Paddle's names and order (ops.yaml `api`).
        args, kwargs = public_call(op, args, dict(case["attrs"]))
        if not op.inputs:
            kwargs["place"] = case["place"]
        result = _entry_point(case, args)(*_positional(case, args), **kwargs)
        args, kwargs = [], {}
        status, detail = _check_result(case, result)
        del result
    except Exception as exc:  # noqa: BLE001  (classified below)
        status, detail = _classify_error(case, exc)
        exc.__traceback__ = None
        del exc
    args, kwargs = [], {}  # tensors passed by keyword too: the leak check needs them gone
    verdict: dict[str, Any] = {"status": status, "detail": detail}
    try:
        broken = _after_check(places)
    except Exception as exc:  # noqa: BLE001
        broken = f"a valid add failed after the case: {type(exc).__name__}: {exc}"
    if broken:
        verdict["broken"] = broken
    gc.collect()
    after = _allocated(places)
    if after != base:
        verdict["leak"] = f"allocated_bytes went from {base} to {after}"
    return verdict


def _entry_point(case: dict[str, Any], args: list[Any]) -> Any:
    """The public function the case calls: hwport.ops.<op> (hwport.<op> is the same function,
    but for uniform/normal, whose seed=0 there draws from the global generator: no oracle),
    hwport.nn.functional.<op>, or the Tensor method bound to its first input (when that input
    is a tensor)."""
    import hwport
    import hwport.ops

    entry = case.get("entry", "hwport")
    if entry == "method" and args and isinstance(args[0], hwport.Tensor):
        return getattr(args[0], case["op"])
    if entry == "nn":
        return getattr(hwport.nn.functional, case["op"])
    return getattr(hwport.ops, case["op"])


def _positional(case: dict[str, Any], args: list[Any]) -> list[Any]:
    import hwport

    if case.get("entry") == "method" and args and isinstance(args[0], hwport.Tensor):
        return args[1:]
    return args


def _input_places(case: dict[str, Any]) -> list[str]:
    out: list[str] = []

    def walk(e: Any) -> None:
        if e is None:
            return
        if e[0] == "array":
            out.append(e[2])
        elif e[0] == "list":
            for x in e[1]:
                walk(x)

    for e in case["inputs"]:
        walk(e)
    return out


def main() -> None:
    results = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # prints (Python or C) go to stderr, never into the result stream
    sys.stdout = sys.stderr
    import hwport  # noqa: F401  (import once, before the first case)

    stdin = sys.stdin.buffer
    while True:
        case = read_frame(stdin)
        if case is None:
            return
        try:
            verdict = run_case(case)
        except BaseException as exc:  # noqa: BLE001  (a defect of the worker or the check)
            verdict = {"status": "harness",
                       "detail": "the case broke the worker's own checks: "
                                 + "".join(traceback.format_exception_only(exc)).strip()}
        write_frame(results, verdict)


if __name__ == "__main__":
    main()
