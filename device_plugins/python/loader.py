"""Makes a Python plugin loadable like any C plugin: a copy of the entry library
(hwport_python_shim.so) with the plugin's name written into it.

``prepare(path_to_plugin.py)`` (or ``prepare("package.module:Class")``) returns the path of that
copy, ``libhwport_py_<name>.so`` in the cache folder (``HWPORT_PYTHON_PLUGIN_CACHE``, default
``$XDG_CACHE_HOME/hwport/python_plugins``). The runtime's discovery does this for every ``.py``
file in ``HWPORT_PLUGIN_PATH`` and for entry points that name one (or a Plugin class), so the
host loads the copy through its own path, the isolated probe included. The copy is written
once per content (its name holds a digest) and atomically, so concurrent processes agree.
"""

from __future__ import annotations

import hashlib
import json
import os
import site
import sys
import tempfile
from pathlib import Path

MARKER = b"HWPORT-PYTHON-PLUGIN-PAYLOAD:"
CAPACITY = 16384  # PAYLOAD_CAPACITY in shim.c
SHIM_NAME = "hwport_python_shim.so"
EMBED_NAME = "_hwport_pyembed.so"


class PrepareError(Exception):
    """The plugin cannot be made loadable (the reason is the message)."""


def sdk_library_dir() -> Path:
    """Where the built shim and embedding libraries are (next to the installed package)."""
    here = Path(__file__).resolve().parent
    if (here / SHIM_NAME).is_file():
        return here
    # An editable install keeps the sources here and the built libraries in site-packages.
    try:
        from hwport.runtime import _core
    except ImportError:
        return here
    return Path(_core.__file__).resolve().parent.parent / "device_plugins" / "python"


def cache_dir() -> Path:
    raw = os.environ.get("HWPORT_PYTHON_PLUGIN_CACHE")
    if raw:
        return Path(raw)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hwport" / "python_plugins"


def _target(spec: str | os.PathLike) -> tuple[dict[str, str], str]:
    text = os.fspath(spec)
    if text.endswith(".py"):
        path = Path(text).resolve()
        if not path.is_file():
            raise PrepareError(f"{text}: no such Python file")
        return {"file": str(path)}, path.stem
    module, sep, attr = text.partition(":")
    if not sep or not module or not attr:
        raise PrepareError(f"{text!r} is neither a .py file nor 'package.module:Class'")
    return {"module": module, "attr": attr}, attr


def _site_dirs() -> list[str]:
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def prepare(spec: str | os.PathLike, library_dir: str | os.PathLike | None = None) -> Path:
    """The loadable entry library of the Python plugin ``spec`` (a .py file or 'mod:Class')."""
    target, stem = _target(spec)
    lib_dir = Path(library_dir) if library_dir else sdk_library_dir()
    shim, embed = lib_dir / SHIM_NAME, lib_dir / EMBED_NAME
    for f in (shim, embed):
        if not f.is_file():
            raise PrepareError(f"the Python plugin SDK is not built: no {f} (hwport was built "
                               "without libpython to embed?)")
    sys_path = [p for p in sys.path if p and os.path.isdir(p)]
    doc = json.dumps({"target": target, "site_dirs": _site_dirs(), "sys_path": sys_path},
                     separators=(",", ":"))
    payload = MARKER + str(embed).encode() + b"\n" + doc.encode()
    if len(payload) >= CAPACITY:
        raise PrepareError(f"the plugin's load payload is {len(payload)} bytes, more than "
                           f"the shim holds ({CAPACITY}); shorten sys.path")
    data = shim.read_bytes()
    empty = MARKER + b"\0" * (CAPACITY - len(MARKER))  # g_payload; the code has the marker too
    at = data.find(empty)
    if at < 0 or data.find(empty, at + 1) >= 0:
        raise PrepareError(f"{shim} does not hold exactly one empty payload")
    patched = data[:at] + payload.ljust(CAPACITY, b"\0") + data[at + CAPACITY:]
    digest = hashlib.sha256(patched).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in stem.lower())
    out_dir = cache_dir()
    out = out_dir / f"libhwport_py_{safe}_{digest}.so"
    if out.is_file() and out.read_bytes() == patched:
        return out
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".tmp_", suffix=".so")
    with os.fdopen(fd, "wb") as f:
        f.write(patched)
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)  # atomic: a concurrent reader sees the old or the new whole file
    return out
