"""The guards suite: writes outside a kernel's output. Every op of phi_ops/ops.yaml x every dtype
the plugin claims, on up to two of the op's shape cases (phi_ops.sample_inputs) whose largest
input has an element count that is no multiple of 8 (a vector width) and so no multiple of the
host allocator's rounding either, run through the public Python API on `custom:<device_type>`
as in the kernels suite, with one difference: the host places every output of every kernel
launch (phi_ops.dispatch.output_allocator) at a non-zero offset inside a larger plugin
allocation whose GUARD_BYTES before and after hold a random pattern (written through the
plugin's copy_h2d). After the call has synchronized, the guard bytes are read back: any that
changed is a FAIL naming the launch, the side and the first byte. The results must still match
the numpy oracle (an offset output view is valid and must be honoured).

A case is "guards::<op>/<dtype>/<shape case>": NOT_SUPPORTED where the plugin has no native
kernel for (op, dtype) (a decomposition's or the CPU fallback's outputs are not the plugin's
kernels' writes) or the case launched none.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..model import Case, CheckFailed, NotSupported, Result, Status, Target
from . import kernels, op_common

NAME = "guards"
GUARD_BYTES = 256  # before and after each output: more than any vector or cache line
CASES_PER_GROUP = 2
_SKIPPED = ("large", "empty", "0d")  # sizes that a guard check learns nothing more from


def _picked(cases: list[Any]) -> list[Any]:
    """Up to CASES_PER_GROUP shape cases whose largest input has an element count > 1 that is
    no multiple of 8; else the first case with a non-empty input."""
    def size(sc: Any) -> int:
        return max((int(np.size(x)) for x in sc.inputs if isinstance(x, np.ndarray)), default=0)

    usable = [sc for sc in cases if not sc.name.startswith(_SKIPPED) and size(sc) > 0]
    odd = [sc for sc in usable if size(sc) > 1 and size(sc) % 8]
    return (odd or usable)[:CASES_PER_GROUP]


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    from hwport.phi_ops import sample_inputs

    base = int(options.get("seed", 0))
    groups = [(name, d, op_common.group_seed(base, name, d))
              for name, op in sample_inputs.OPS.items()
              for d in op_common.claimed_dtypes(op.dtypes, options)]
    return op_common.load_error_case(NAME, options) or [
        Case(NAME, f"{name}/{d}/{sc.name}", {"op": name, "dtype": d, "case": sc.name}, seed)
        for name, d, seed in groups for sc in _picked(sample_inputs.cases_for(name, d, seed))]


def _shape_case(state: dict[str, Any], case: Case) -> Any:
    p = case.params
    found = op_common.sample_cases(state, p["op"], p["dtype"], case.seed).get(p["case"])
    if found is None:
        raise ValueError(f"no shape case {p['case']!r} for {p['op']}/{p['dtype']}")
    return found


class GuardedOutputs:
    """An output_allocator: each output is a contiguous view at a non-zero offset into a 1-D
    tensor of its dtype with GUARD_BYTES (rounded up to whole elements) on either side, the
    whole filled with random bytes through the plugin's copy_h2d."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.launches: list[dict[str, Any]] = []

    def __call__(self, shape: list[int], dtype: Any, place: Any, op: str = "empty") -> Any:
        from hwport.runtime import _core

        dt = _core.parse_dtype(dtype, op, "dtype")
        itemsize = dt.itemsize
        guard = -(-GUARD_BYTES // itemsize)
        n = math.prod(shape)
        pattern = self.rng.integers(0, 256, (2 * guard + n) * itemsize, dtype=np.uint8)
        big = _core.from_numpy(pattern.view(dt.to_numpy()), place)
        strides, s = [0] * len(shape), 1
        for i in range(len(shape) - 1, -1, -1):
            strides[i] = s
            s *= max(shape[i], 1)
        self.launches.append({"op": op, "shape": list(shape), "dtype": str(dt), "big": big,
                              "guard": guard * itemsize, "nbytes": n * itemsize,
                              "pattern": pattern})
        return big._view(list(shape), strides, guard)

    def damage(self) -> list[dict[str, Any]]:
        """One record per guard region that changed (reads every buffer back)."""
        found = []
        for i, rec in enumerate(self.launches):
            got = rec["big"].numpy().view(np.uint8).reshape(-1)
            want = rec["pattern"]
            end = rec["guard"] + rec["nbytes"]
            for side, lo, hi in (("before", 0, rec["guard"]), ("after", end, want.size)):
                bad = np.flatnonzero(got[lo:hi] != want[lo:hi])
                if bad.size:
                    # distance from the output: bytes before its start / past its end
                    first = int(rec["guard"] - bad[-1]) if side == "before" else int(bad[0] + 1)
                    found.append({"launch": i, "op": rec["op"], "shape": rec["shape"],
                                  "dtype": rec["dtype"], "side": side, "bytes": int(bad.size),
                                  "nearest": first})
        return found


@contextmanager
def guarded_outputs(seed: int) -> Iterator[GuardedOutputs]:
    from hwport.phi_ops import dispatch

    guarded = GuardedOutputs(seed)
    saved, dispatch.output_allocator = dispatch.output_allocator, guarded
    try:
        yield guarded
    finally:
        dispatch.output_allocator = saved


def _describe(d: dict[str, Any]) -> str:
    where = "before its start" if d["side"] == "before" else "past its end"
    return (f"{d['bytes']} guard byte(s) {where} changed (the nearest at byte {d['nearest']} "
            f"{where}) around the {d['dtype']} output {d['shape']} of launch {d['launch']} "
            f"({d['op']})")


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    if case.name == op_common.LOAD_CASE:
        op_common.raise_load_error(case)
    from hwport.phi_ops.reference import reference
    from hwport.runtime import _core

    op, sc = case.params["op"], _shape_case(state, case)
    where = op_common.place(target)
    key_dtype = sc.key_dtype()
    if not _core.has_kernel(op, where, key_dtype):
        raise NotSupported(f"{op}: no native {key_dtype} kernel (the host's outputs are not "
                           f"written by a plugin kernel of this op)")
    want = reference(op, sc.inputs, sc.attrs)
    with guarded_outputs(case.seed) as guarded:
        _, got = kernels._call(op, sc, where)
    if not guarded.launches:
        raise NotSupported(f"{op}: this case launched no kernel")
    details: dict[str, Any] = {"launches": len(guarded.launches), "guard_bytes": GUARD_BYTES,
                               "key_dtype": key_dtype}
    damage = guarded.damage()
    if damage:
        raise CheckFailed(f"{op}: " + "; ".join(_describe(d) for d in damage[:3]),
                          damage=damage, **details)
    ok, message, stats = kernels._compare(op, key_dtype, got, want, sc.tolerance)
    details.update(stats)
    if not ok:
        raise CheckFailed(f"{op} (outputs at a non-zero offset in a larger buffer): {message}",
                          **details)
    return Result(case, Status.PASS, details=details)
