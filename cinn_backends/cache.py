"""The compiled-module cache: in the process (key -> module) and on disk (key -> the module's
serialized bytes, when the plugin's codegen table can serialize), so a warm process compiles
nothing.

The key hashes everything the bytes depend on: the source, its dialect, the target
description (architecture, flags, widths), the compile options, the SDK's version and the
plugin's. A disk entry is `<key>.hwpm`: a header line with the payload's SHA-256, then the
payload; one that fails its checksum is ignored and rewritten. Entries are written to a
temporary file and renamed into place, so processes that share the directory never read half
a file. The directory is HWPORT_CINN_CACHE_DIR, else $XDG_CACHE_HOME/hwport/cinn, else
~/.cache/hwport/cinn; HWPORT_CINN_CACHE=0 turns the disk cache off."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

MAGIC = b"hwport-cinn-module 1 "

_memory: dict[str, Any] = {}  # key -> compiled module (this process)


def cache_dir() -> Path | None:
    if os.environ.get("HWPORT_CINN_CACHE", "1").lower() in ("0", "false", "no", "off"):
        return None
    explicit = os.environ.get("HWPORT_CINN_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hwport" / "cinn"


def module_key(source: str, dialect: str, target: dict[str, Any], options: str,
               versions: dict[str, str]) -> str:
    blob = json.dumps({"source": source, "dialect": dialect, "target": target,
                       "options": options, "versions": versions}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def memory_get(key: str) -> Any:
    return _memory.get(key)


def memory_put(key: str, module: Any) -> None:
    _memory[key] = module


def clear_memory() -> None:
    """Forgets this process's modules (tests: the next lookup goes to disk)."""
    _memory.clear()


def disk_get(key: str) -> bytes | None:
    d = cache_dir()
    if d is None:
        return None
    path = d / f"{key}.hwpm"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, sep, payload = data.partition(b"\n")
    if not sep or not head.startswith(MAGIC):
        return None
    if hashlib.sha256(payload).hexdigest().encode() != head[len(MAGIC):]:
        return None  # damaged: the caller compiles and rewrites it
    return payload


def disk_put(key: str, payload: bytes) -> None:
    d = cache_dir()
    if d is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{key[:16]}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
        os.replace(tmp, d / f"{key}.hwpm")
    except OSError:
        pass  # a read-only or full cache directory costs a compile, never a failure
