"""Autotuning: a group's schedule picked by measuring a small space of candidates on the device.

    lowered = tuned(place, target, lower, shapes)   # lower(tuning) -> LoweredGroup

The space per target kind (tuning.py):
- SIMT, a row reduction: the rule (a group of up to 256 threads per row, a tree through local
  memory); "item" (a row per work-item, vectorizable row loops: CPU-like OpenCL devices) with
  1 or 64 work-items per group and 2..1024 work-items per compute unit (launch-time), and with
  half or twice the target's preferred vector width (2..16 lanes), or with streaming
  (non-temporal) stores; "tree" with 16..128 threads, one row or 4 rows per group.
- SIMT, elementwise: the rule (a thread per element, 256 per group), 64 per group, "item"
  chunks of elements per work-item.
- SIMT, a column reduction: threads per group 256 / 64 / 32.
- CPU: streaming (non-temporal) stores of the element loops' outputs; groups per compute unit
  1, 2, 4 (the rule), 8, 16 (launch-time: one compile); half and twice the target's preferred
  vector width (the loops' lanes; a compile each).

Each candidate is lowered, compiled through compile.compile_source (so its module lands in the
module caches), launched on synthetic inputs of the group's real shapes (floats in [0.5, 1.5),
integers and bools zero) a few times with the device synchronized, best-of; a candidate whose
outputs differ from the rule's beyond a float tolerance (or at all, for integers) is dropped.
Tuning stops at the budget (HWPORT_CINN_TUNE_BUDGET seconds per group, default 2, compiles
included; the rule is always measured first; past it only launch-time variants of a source
already compiled, up to twice the budget); groups with fewer than HWPORT_CINN_TUNE_MIN
elements (default 65536) use the rule untuned, as does HWPORT_CINN_AUTOTUNE=0.

The winner is kept in this process and on disk (tune_cache.py): keyed by the rule's source
hash, the device (target description and plugin version) and the shape bucket (each kernel's
rows / inner / columns rounded up to a power of two). A warm process lowers the winner
directly and compiles only it (its module comes from the module cache)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from . import tune_cache
from .tuning import RULE, Tuning

DEFAULT_BUDGET_S = 2.0
DEFAULT_MIN_ELEMENTS = 1 << 16
STATS: dict[str, float] = {"tuned": 0, "reused": 0, "candidates": 0, "seconds": 0.0}

Lower = Callable[[Tuning], Any]  # tuning -> LoweredGroup


def min_elements() -> float:
    """Groups with less work than this (HWPORT_CINN_TUNE_MIN elements) keep the rule."""
    return _env_float("HWPORT_CINN_TUNE_MIN", DEFAULT_MIN_ELEMENTS)


def enabled() -> bool:
    return os.environ.get("HWPORT_CINN_AUTOTUNE", "1").lower() not in ("0", "false", "no", "off")


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def budget_s() -> float:
    return _env_float("HWPORT_CINN_TUNE_BUDGET", DEFAULT_BUDGET_S)


def candidates(lowered: Any) -> list[Tuning]:
    """The schedule space of a group lowered by the rule (RULE first)."""
    target = lowered.target
    out = [RULE]
    pref = max(1, target.preferred_vector_width)
    if not target.is_simt:
        # other vector widths: half and twice the target's (lane accumulators, unrolling)
        widths = [w for w in (pref // 2, pref * 2) if 1 <= w <= 64]
        # streaming stores first (one compile): they save a large output's cache-line reads
        return out + [Tuning(stream=1)] + [Tuning(per_unit=n) for n in (1, 2, 8, 16)] + \
            [Tuning(vector=w) for w in widths]
    if any(s.col_dims for s in lowered.specs):
        return out + [Tuning(group=g) for g in (64, 32)]
    items = [Tuning("item", group=1, per_unit=n) for n in (8, 32, 256, 2, 1024, 128)]
    # non-temporal stores early, within the budget of a loaded machine: on a CPU OpenCL device
    # they save large outputs' cache-line reads (1.4-1.5x on a 64 MiB RMSNorm with PoCL)
    items.insert(1, Tuning("item", group=1, per_unit=8, stream=1))
    # OpenCL C's vector types hold 2..16 lanes (render/opencl_vector.py)
    items += [Tuning("item", group=1, per_unit=8, vector=w)
              for w in (pref // 2, pref * 2) if 2 <= w <= 16]
    if not any(s.reduction for s in lowered.specs):
        return out + items + [Tuning(group=64), Tuning(group=1024)]
    out += items
    out += [Tuning("tree", group=g, rows=r) for g in (64, 16, 128, 32) for r in (1, 4)]
    out += [Tuning("item", group=64, per_unit=n) for n in (64, 512)]
    return out


def shape_bucket(lowered: Any, shapes: Mapping[Any, Sequence[int]]) -> str:
    from .lower_group import evaluate

    env = lowered.dims(shapes)
    parts = []
    for spec in lowered.specs:
        dims = [evaluate(e, env) for e in (spec.rows, spec.inner, spec.cols)]
        parts.append("x".join(str(_pow2(d)) for d in dims))
    return ";".join(parts)


def _pow2(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def device_key(place: Any, lowered: Any) -> str:
    from .compile import _versions, target_info

    info = target_info(place) or {}
    blob = json.dumps({"target": info, "versions": _versions(place)}, sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def tuning_key(place: Any, lowered: Any, shapes: Mapping[Any, Sequence[int]]) -> str:
    src = hashlib.sha256((lowered.dialect + "\n" + lowered.options + "\n" +
                          lowered.source).encode()).hexdigest()
    return f"{src[:32]}/{device_key(place, lowered)}/{shape_bucket(lowered, shapes)}"


def _work(lowered: Any, shapes: Mapping[Any, Sequence[int]]) -> int:
    from .lower_group import evaluate

    env = lowered.dims(shapes)
    return sum(evaluate(s.rows, env) * evaluate(s.inner, env) * evaluate(s.cols, env)
               for s in lowered.specs)


def tuned(place: Any, lower: Lower, shapes: Mapping[Any, Sequence[int]],
          rule: Any | None = None, search_now: bool = True) -> Any:
    """The group lowered with its tuned schedule (the rule's LoweredGroup when tuning is off,
    not worth it, or nothing beat the rule). `rule`: the rule's lowering, if already made;
    search_now=False: a known winner or the rule, never a search."""
    rule = rule if rule is not None else lower(RULE)
    if not enabled():
        return rule
    try:
        if _work(rule, shapes) < min_elements():
            return rule
        key = tuning_key(place, rule, shapes)
    except Exception:  # noqa: BLE001 (shapes the group's launches refuse: they report it)
        return rule
    known = tune_cache.get(key)
    if known is not None:
        STATS["reused"] += 1
        if known == RULE:
            return rule
        try:
            return lower(known)
        except Exception:  # noqa: BLE001 (a winner this version cannot lower: the rule)
            return rule
    if not search_now:
        return rule
    try:
        best = search(place, lower, shapes, rule)
    except Exception:  # noqa: BLE001 (tuning never fails a group: the rule, tuned next time)
        return rule
    tune_cache.put(key, best[0], best[1])
    return best[2]


def search(place: Any, lower: Lower, shapes: Mapping[Any, Sequence[int]],
           rule: Any) -> tuple[Tuning, dict[str, float], Any]:
    """(the winner, its and the rule's times in ms, its LoweredGroup): candidates measured in
    order until the budget is spent."""
    from .compile import compile_source

    budget = budget_s()
    # the rule's compile is not the tuner's cost (the untuned path pays it too): the clock
    # starts when its module is there
    module = compile_source(place, rule.dialect, rule.source, rule.options)
    t_start = time.perf_counter()
    bench = _Bench(place, rule, shapes)
    times: dict[str, float] = {}
    best: tuple[float, Tuning, Any] | None = None
    seen_sources: set[str] = set()
    measured: list[tuple[float, Tuning, Any, Any]] = []
    for cand in candidates(rule):
        spent = time.perf_counter() - t_start
        if best is not None and spent > 2 * budget:
            break
        try:
            lowered = rule if cand == RULE else lower(cand)
            # past the budget, only launch-time variants of a source already compiled
            if best is not None and spent > budget and lowered.source not in seen_sources:
                continue
            module = compile_source(place, lowered.dialect, lowered.source, lowered.options)
        except Exception:  # noqa: BLE001 (a candidate that does not lower or compile)
            continue
        seen_sources.add(lowered.source)
        STATS["candidates"] += 1
        t = bench.measure(lowered, module, cutoff=None if best is None else 3 * best[0],
                          spend=budget / 8)
        if t is None:
            continue
        times[cand.label()] = round(t * 1e3, 4)
        measured.append((t, cand, lowered, module))
        if best is None or t < best[0]:
            best = (t, cand, lowered)
    # a second round over the three fastest, alternating, so that a burst of load on the
    # machine during one candidate's turn does not pick the winner
    top = sorted(measured, key=lambda m: m[0])[:3]
    if len(top) > 1:
        for _ in range(2):
            for i, (t, cand, lowered, module) in enumerate(top):
                again = bench.measure(lowered, module, None, repeat=2, spend=budget / 16)
                if again is not None and again < t:
                    top[i] = (again, cand, lowered, module)
        t, cand, lowered, _ = min(top, key=lambda m: m[0])
        best = (t, cand, lowered)
        times.update({c.label(): round(x * 1e3, 4) for x, c, _, _ in top})
    STATS["tuned"] += 1
    STATS["seconds"] += time.perf_counter() - t_start
    if best is None:
        return RULE, times, rule
    info = {"ms": round(best[0] * 1e3, 4), "rule_ms": times.get("rule", -1.0)}
    return best[1], info, best[2]


class _Bench:
    """Synthetic inputs and outputs of the group's shapes on the place; the rule's outputs are
    the reference every candidate must match."""

    def __init__(self, place: Any, rule: Any, shapes: Mapping[Any, Sequence[int]]) -> None:
        from .lower_group import _key

        self.place = place
        got = {_key(k): tuple(int(d) for d in v) for k, v in shapes.items()}
        dtypes: dict[tuple[str, int], str] = {}
        for k in rule.kernels:
            for b in k.buffers:
                dtypes[(b.role, b.index)] = b.dtype
        self.ins = {i: _tensor(got[("in", i)], dtypes[("in", i)], place, fill=True)
                    for (role, i) in dtypes if role == "in"}
        self.outs = {j: _tensor(got[("out", j)], dtypes[("out", j)], place, fill=False)
                     for (role, j) in dtypes if role == "out"}
        self.shapes = shapes
        self.reference: dict[int, np.ndarray] | None = None

    def _run(self, lowered: Any, module: Any, launches: list[Any]) -> None:
        for launch in launches:
            args: list[Any] = []
            for kind, value in launch.args:
                if kind == "in":
                    args.append(self.ins[value])
                elif kind == "out":
                    args.append(self.outs[value])
                elif kind == "i64":
                    args.append(int(value))
                else:
                    args.append(float(value))
            module.function(launch.kernel).launch(list(launch.grid), list(launch.group), args)

    def measure(self, lowered: Any, module: Any, cutoff: float | None,
                repeat: int = 5, spend: float = 0.25) -> float | None:
        """Best-of seconds of the group's launches; None: its results differ from the rule's
        (the first candidate measured is the rule). Stops after one timed run slower than
        cutoff, or when the timed runs have taken `spend` seconds."""
        import hwport

        launches = lowered.launches(self.shapes)
        try:
            self._run(lowered, module, launches)  # warm-up (and the results)
            hwport.device.synchronize(self.place)
        except Exception:  # noqa: BLE001 (a launch the device refuses)
            return None
        outs = {j: _host(t) for j, t in self.outs.items()}
        if self.reference is None:
            self.reference = outs
        elif not all(_close(outs[j], self.reference[j]) for j in outs):
            return None
        best, total = float("inf"), 0.0
        for _ in range(repeat):
            t0 = time.perf_counter()
            self._run(lowered, module, launches)
            hwport.device.synchronize(self.place)
            t = time.perf_counter() - t0
            best, total = min(best, t), total + t
            if (cutoff is not None and best > cutoff) or total > spend:
                break
        return best


def _tensor(shape: tuple[int, ...], dtype: str, place: Any, fill: bool) -> Any:
    import hwport

    host = dtype if dtype not in ("bfloat16",) else "float32"
    if fill and dtype.startswith(("float", "bfloat")):
        rng = np.random.default_rng(0)
        arr = (0.5 + rng.random(shape)).astype(host)
    else:
        arr = np.zeros(shape, dtype=np.bool_ if dtype == "bool" else host)
    t = hwport.to_tensor(arr, place=place)
    return t.astype(dtype) if host != dtype else t


def _host(t: Any) -> np.ndarray:
    if str(t.dtype) == "bfloat16":
        t = t.astype("float32")
    return np.asarray(t.numpy())


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True))
    return bool(np.array_equal(a, b))
