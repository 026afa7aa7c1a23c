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


def _expand(entry: str, errors: list[dict[str, str]] | None = None) -> list[str]:
    path = Path(entry)
    if path.is_dir():
        return [str(p) for p in sorted(path.glob("*.so"))]
    if entry.endswith(".py"):
        return _python_plugin(entry, entry, errors)
    return [str(path)]  # a missing file is reported by the loader with the OS's reason


def _python_plugin(spec: str, where: str, errors: list[dict[str, str]] | None) -> list[str]:
    """A Python plugin (a .py file or 'module:Class') as the path of its entry library, which
    the host loads like any plugin (hwport.device_plugins.python.loader)."""
    try:
        from hwport.device_plugins.python.loader import prepare

        return [str(prepare(spec))]
    except Exception as exc:
        if errors is not None:
            errors.append({"path": where, "reason": f"Python plugin not loadable: {exc}"})
        return []


def env_plugin_paths(errors: list[dict[str, str]] | None = None) -> list[str]:
    """HWPORT_PLUGIN_PATH: libraries, folders (their *.so) and Python plugins (*.py)."""
    raw = os.environ.get("HWPORT_PLUGIN_PATH", "")
    paths: list[str] = []
    for entry in raw.split(os.pathsep):
        if entry.strip():
            paths.extend(_expand(entry.strip(), errors))
    return paths


def entry_point_plugin_paths() -> tuple[list[str], list[dict[str, str]]]:
    """Paths from the ``hwport.plugins`` entry points. Each entry point names a str/PathLike
    (a library, a folder or a Python plugin's .py file), a callable returning one or a list of
    them, or a Python plugin class (a hwport.device_plugins.python.Plugin subclass)."""
    paths: list[str] = []
    errors: list[dict[str, str]] = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {ep.name} = {ep.value}"
        try:
            target = ep.load()
            if _is_python_plugin_class(target):
                paths.extend(_python_plugin(ep.value, where, errors))
                continue
            value = target() if callable(target) else target
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                paths.extend(_expand(os.fspath(v), errors))
        except Exception as exc:  # a broken third-party package must not break import
            errors.append({"path": where, "reason": f"entry point failed: {exc!r}"})
    return paths, errors


def _is_python_plugin_class(target: object) -> bool:
    if not isinstance(target, type):
        return False
    from hwport.device_plugins.python.plugin import Plugin

    return issubclass(target, Plugin)


def discover() -> tuple[list[str], list[dict[str, str]]]:
    """All plugin paths to load, in order, and the discovery errors met on the way."""
    paths = builtin_plugin_paths()
    errors: list[dict[str, str]] = []
    if plugins_disabled():
        return [p for p in paths if Path(p).parent.name == "cpu"], errors
    paths += env_plugin_paths(errors)
    ep_paths, ep_errors = entry_point_plugin_paths()
    paths += ep_paths
    errors += ep_errors
    unique: list[str] = []
    for p in paths:
        if p not in unique:
            unique.append(p)
    return unique, errors
