"""hwport.runtime: the C++ runtime core (plugin loader, devices, caching allocator, streams,
dispatch) and plugin discovery. Importing it loads every discovered plugin; a plugin that
fails any check is skipped and listed in plugin_errors(), never raised."""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import Any

from . import _core
from ._core import (
    CodegenCompileError,
    DType,
    Event,
    FallbackError,
    NotSupportedError,
    OutOfMemoryError,
    Place,
    Stream,
    Tensor,
)
from .discovery import builtin_plugin_dir, builtin_plugin_paths, discover

__all__ = [
    "CodegenCompileError", "DType", "Event", "FallbackError", "NotSupportedError",
    "OutOfMemoryError", "Place", "Stream", "Tensor", "builtin_plugin_dir", "compiled_stats",
    "fallback_stats",
    "include_dir", "plugin_errors", "plugins", "reset_fallback_stats", "set_fallback_mode",
]

# pybind11's enum keeps its own __repr__ over one defined in C++; set the public spelling here.
DType.__repr__ = lambda self: f"hwport.{self}"

_discovery_errors: list[dict[str, str]] = []
_FALSE = {"0", "false", "no", "off"}


def _probe_settings() -> tuple[bool, float]:
    enabled = os.environ.get("HWPORT_PLUGIN_PROBE", "1").strip().lower() not in _FALSE
    try:
        timeout = float(os.environ.get("HWPORT_PLUGIN_PROBE_TIMEOUT", "30"))
    except ValueError:
        timeout = 30.0
    return enabled, timeout


def _load_all() -> None:
    """Loads what discovery found. Plugins other than the built-in ones are first initialized
    in a throwaway process (hwport_probe), so one that crashes or hangs is skipped."""
    paths, errors = discover()
    _discovery_errors.extend(errors)
    builtin = set(builtin_plugin_paths())
    probe, timeout = _probe_settings()
    probe_exe = Path(_core.__file__).resolve().parent / "hwport_probe"
    _core.load_plugins(
        [(p, probe and p not in builtin) for p in paths],
        str(probe_exe) if probe_exe.exists() else "",
        timeout,
    )


def plugins() -> list[dict[str, Any]]:
    """Loaded plugins: device_type, path, abi_version, plugin_version, device_count, ..."""
    return _core.plugins()


def plugin_errors() -> list[dict[str, str]]:
    """Plugins that were skipped, each with its path and the precise reason."""
    return list(_discovery_errors) + _core.plugin_errors()


def fallback_stats(kind: str = "cpu") -> dict[tuple[str, str, str], int]:
    """How often each (op, device type, dtype) ran on the CPU fallback (kind="cpu"), or through
    the eager JIT's compiled kernels where the device has no kernel (kind="compiled")."""
    if kind == "cpu":
        return _core.fallback_stats()
    if kind == "compiled":
        return _core.compiled_stats()
    raise ValueError(f"fallback_stats: kind must be 'cpu' or 'compiled', got {kind!r}")


def compiled_stats() -> dict[tuple[str, str, str], int]:
    """How often each (op, device type, dtype) ran through the eager JIT's compiled kernels
    (cinn_backends/eager_jit.py) instead of the CPU fallback."""
    return _core.compiled_stats()


def reset_fallback_stats() -> None:
    """Clears the counts of both kinds (CPU fallback and compiled)."""
    _core.reset_fallback_stats()


def set_fallback_mode(mode: str) -> None:
    """'allow' (default) or 'error' (also set by HWPORT_FALLBACK=error)."""
    _core.set_fallback_mode(mode)


def include_dir() -> Path:
    """The C ABI headers a vendor builds a plugin against."""
    return Path(__file__).resolve().parent / "include"


def _install_eager_jit() -> None:
    """The eager JIT (hwport.cinn_backends.eager_jit), where a loaded plugin has a codegen
    target and HWPORT_CINN is not 0. Cheap: the compiler loads on the first call that needs
    it; a failure here is a warning, never an import error."""
    if os.environ.get("HWPORT_CINN", "1").strip().lower() in _FALSE:
        return
    if not any(p.get("has_codegen_target") for p in _core.plugins()):
        return
    try:
        from hwport.cinn_backends import eager_jit

        eager_jit.install()
    except Exception as exc:  # noqa: BLE001 (importing hwport never fails for the compiler)
        import warnings

        warnings.warn(f"hwport: the eager JIT is off ({type(exc).__name__}: {exc})",
                      RuntimeWarning, stacklevel=2)


_load_all()
atexit.register(_core.shutdown)
_install_eager_jit()
