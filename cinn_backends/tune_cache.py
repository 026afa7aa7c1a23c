"""The autotuner's winners: in this process (key -> Tuning) and on disk, one JSON file
`autotune.json` in cache.cache_dir():

    {"format": "hwport-cinn-autotune 1",
     "entries": {"<source hash>/<device hash>/<shape bucket>":
                 {"key": "<the same key>",
                  "tuning": {"mode": "item", "group": 1, "per_unit": 8},
                  "ms": 0.41, "rule_ms": 9.6, "sha256": "<of the entry without it>"}}}

Written to a temporary file and renamed into place (a reader never sees half a file; two
writers at once may lose one's new entry, which costs a re-tune, never a wrong schedule). A
file that does not parse, has another format, or an entry whose checksum or tuning does not
validate is ignored (the entry is tuned again and the file rewritten). HWPORT_CINN_CACHE=0:
memory only."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from . import cache
from .tuning import Tuning

FORMAT = "hwport-cinn-autotune 1"
FILE = "autotune.json"

_memory: dict[str, Tuning] = {}
_lock = threading.Lock()


def path() -> Path | None:
    d = cache.cache_dir()
    return None if d is None else d / FILE


def _digest(entry: dict[str, Any]) -> str:
    body = {k: v for k, v in entry.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _read() -> dict[str, dict[str, Any]]:
    p = path()
    if p is None:
        return {}
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or \
            not isinstance(data.get("entries"), dict):
        return {}
    return data["entries"]


def _valid(key: str, entry: Any) -> Tuning | None:
    if not isinstance(entry, dict) or entry.get("sha256") != _digest(entry) or \
            entry.get("key") != key:
        return None
    try:
        return Tuning.from_json(entry.get("tuning"))
    except ValueError:
        return None


def get(key: str) -> Tuning | None:
    """The winner for key (this process, else the disk file), or None."""
    with _lock:
        hit = _memory.get(key)
    if hit is not None:
        return hit
    found = _valid(key, _read().get(key))
    if found is not None:
        with _lock:
            _memory[key] = found
    return found


def put(key: str, tuning: Tuning, info: dict[str, float]) -> None:
    with _lock:
        _memory[key] = tuning
    p = path()
    if p is None:
        return
    entry: dict[str, Any] = {"key": key, "tuning": tuning.to_json(), **info}
    entry["sha256"] = _digest(entry)
    with _lock:
        entries = {k: v for k, v in _read().items() if _valid(k, v) is not None}
        entries[key] = entry
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".autotune.", suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump({"format": FORMAT, "entries": entries}, f, sort_keys=True, indent=1)
            os.replace(tmp, p)
        except OSError:
            pass  # a read-only or full cache directory costs a re-tune, never a failure


def clear_memory() -> None:
    """Forgets this process's winners (tests: the next lookup reads the file)."""
    with _lock:
        _memory.clear()
