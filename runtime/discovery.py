"""Where plugins come from: the built-in reference plugins, HWPORT_PLUGIN_PATH, and the
entry-point group ``hwport.plugins``. Discovery never raises: problems become load errors."""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

ENTRY_POINT_GROUP = "hwport.plugins"
_TRUE = {"1", "true", "yes", "on"}


def builtin_plugin_dir() -> Path:
    """The folder that holds the built reference plugins (next to the compiled core)."""
    from . import _core

    return Path(_core.__file__).resolve().parent.parent / "device_plugins"


def builtin_plugin_paths() -> list[str]:
    """Reference plugins in load order: cpu first (it is the fallback device)."""
    root = builtin_plugin_dir()
    found = sorted(root.glob("*/libhwport_*.so"))
    found.sort(key=lambda p: p.parent.name != "cpu")
    return [str(p) for p in found]


def plugins_disabled() -> bool:
    return os.environ.get("HWPORT_DISABLE_PLUGINS", "").strip().lower() in _TRUE


def _expand(entry: str) -> list[str]:
    path = Path(entry)
    if path.is_dir():
        return [str(p) for p in sorted(path.glob("*.so"))]
    return [str(path)]  # a missing file is reported by the loader with the OS's reason


def env_plugin_paths() -> list[str]:
    raw = os.environ.get("HWPORT_PLUGIN_PATH", "")
    paths: list[str] = []
    for entry in raw.split(os.pathsep):
        if entry.strip():
            paths.extend(_expand(entry.strip()))
    return paths


def entry_point_plugin_paths() -> tuple[list[str], list[dict[str, str]]]:
    """Paths from the ``hwport.plugins`` entry points. Each entry point names a str/PathLike,
    or a callable returning one or a list of them."""
    paths: list[str] = []
    errors: list[dict[str, str]] = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {ep.name} = {ep.value}"
        try:
            target = ep.load()
            value = target() if callable(target) else target
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                paths.extend(_expand(os.fspath(v)))
        except Exception as exc:  # a broken third-party package must not break import
            errors.append({"path": where, "reason": f"entry point failed: {exc!r}"})
    return paths, errors


def discover() -> tuple[list[str], list[dict[str, str]]]:
    """All plugin paths to load, in order, and the discovery errors met on the way."""
    paths = builtin_plugin_paths()
    errors: list[dict[str, str]] = []
    if plugins_disabled():
        return [p for p in paths if Path(p).parent.name == "cpu"], errors
    paths += env_plugin_paths()
    ep_paths, ep_errors = entry_point_plugin_paths()
    paths += ep_paths
    errors += ep_errors
    unique: list[str] = []
    for p in paths:
        if p not in unique:
            unique.append(p)
    return unique, errors
