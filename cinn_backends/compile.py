"""Compiling a cinn.group for a place: lower it (lower_group.py), render it for the place's
codegen target, and compile it through the plugin's codegen table — once per shape class per
process, and once per machine when the plugin can serialize modules (cache.py).

Compile budget: a compile that takes longer than HWPORT_CINN_COMPILE_BUDGET seconds (default
60) is abandoned for this run (CompileBudgetExceeded; the caller runs the group's ops unfused
and warns); the compile finishes in the background and its module lands in the caches, so the
next plan uses it."""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from . import cache

DEFAULT_BUDGET_S = 60.0

STATS: dict[str, float] = {"compiled": 0, "memory_hits": 0, "disk_hits": 0,
                           "fallbacks": 0, "compile_seconds": 0.0}
_lock = threading.Lock()
# made on the first compile; as many compiles at once as the machine has cores
_pool: list[concurrent.futures.ThreadPoolExecutor] = []
_pending: dict[str, concurrent.futures.Future] = {}


class CompileBudgetExceeded(RuntimeError):
    """A compile ran past the budget (HWPORT_CINN_COMPILE_BUDGET)."""


def enabled() -> bool:
    """False when HWPORT_CINN=0: the compiler is off everywhere (groups run unfused)."""
    return os.environ.get("HWPORT_CINN", "1").lower() not in ("0", "false", "no", "off")


def budget_s() -> float:
    try:
        return float(os.environ.get("HWPORT_CINN_COMPILE_BUDGET", DEFAULT_BUDGET_S))
    except ValueError:
        return DEFAULT_BUDGET_S


def reset_stats() -> None:
    for k in STATS:
        STATS[k] = 0


def _count(name: str, by: float = 1) -> None:
    with _lock:
        STATS[name] += by


_targets: dict[str, Any] = {}


def target_info(place: Any) -> dict[str, Any] | None:
    """The place's codegen target description (None: no target), asked once per place."""
    from hwport.runtime import _core

    p = _core.resolve_place(place)
    key = str(p)
    if key not in _targets:
        _targets[key] = _core.codegen_target_info(p)
    return _targets[key]


def _versions(place: Any) -> dict[str, str]:
    from hwport.runtime import _core

    p = _core.resolve_place(place)
    plugin = next((x for x in _core.plugins() if x.get("device_type") == p.device_type), {})
    try:
        from importlib.metadata import version

        sdk = version("hwport")
    except Exception:  # noqa: BLE001 (an uninstalled tree still compiles)
        sdk = "dev"
    return {"sdk": sdk, "plugin": str(plugin.get("plugin_version", "")),
            "abi": str(plugin.get("abi_version", ""))}


@dataclass
class CompiledModule:
    key: str
    module: Any
    functions: dict[str, Any] = field(default_factory=dict)

    def function(self, name: str) -> Any:
        if name not in self.functions:
            self.functions[name] = self.module.get_function(name)
        return self.functions[name]


def _compile_now(place: Any, dialect: str, source: str, options: str, key: str,
                 serialize: bool) -> Any:
    from hwport.runtime import _core

    t0 = time.perf_counter()
    module = _core.codegen_compile(place, dialect, source, options)
    _count("compile_seconds", time.perf_counter() - t0)
    _count("compiled")
    if serialize:
        data = module.serialize()
        if data:
            cache.disk_put(key, bytes(data))
    cache.memory_put(key, CompiledModule(key, module))
    return cache.memory_get(key)


def compile_source(place: Any, dialect: str, source: str, options: str = "") -> CompiledModule:
    """The module of `source` on `place`: from this process's cache, the disk cache, or a
    compile within the budget. Raises the binding's CodegenCompileError (with the build log)
    for source that does not compile, CompileBudgetExceeded past the budget."""
    got = _lookup_or_submit(place, dialect, source, options)
    if isinstance(got, CompiledModule):
        return got
    try:
        return got.result(timeout=budget_s())
    except concurrent.futures.TimeoutError:
        raise CompileBudgetExceeded(
            f"compiling took longer than the budget of {budget_s():g} s "
            "(HWPORT_CINN_COMPILE_BUDGET); it goes on in the background") from None


def prefetch(place: Any, dialect: str, source: str, options: str = "") -> None:
    """Starts compiling `source` in the background when no cache has it (the lowering starts
    every group of a program this way, so their compiles overlap); compile_source then waits
    for it. A failure surfaces there."""
    try:
        _lookup_or_submit(place, dialect, source, options)
    except Exception:  # noqa: BLE001 (reported by the compile_source that waits for it)
        pass


def _lookup_or_submit(place: Any, dialect: str, source: str,
                      options: str) -> CompiledModule | concurrent.futures.Future:
    from hwport.runtime import _core

    info = target_info(place)
    if info is None:
        raise RuntimeError(f"{place}: the device has no codegen target")
    target = {k: info[k] for k in sorted(info) if k != "compute_units"}
    key = cache.module_key(source, dialect, target, options, _versions(place))
    hit = cache.memory_get(key)
    if hit is not None:
        _count("memory_hits")
        return hit
    serialize = bool(info.get("serialize"))
    if serialize:
        payload = cache.disk_get(key)
        if payload is not None:
            try:
                module = _core.codegen_deserialize(place, dialect, payload)
            except Exception:  # noqa: BLE001 (stale bytes: compile again, rewrite the entry)
                module = None
            if module is not None:
                _count("disk_hits")
                cache.memory_put(key, CompiledModule(key, module))
                return cache.memory_get(key)
    with _lock:
        if not _pool:
            _pool.append(concurrent.futures.ThreadPoolExecutor(
                max(2, os.cpu_count() or 1), thread_name_prefix="cinn-compile"))
        fut = _pending.get(key)
        if fut is None:
            fut = _pool[0].submit(_compile_now, place, dialect, source, options, key, serialize)
            _pending[key] = fut
            fut.add_done_callback(lambda _f, k=key: _pending.pop(k, None))
    return fut
