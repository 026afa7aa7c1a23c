"""What `hwcheck list` shows, and what the runner knows about a target before running it: every
loaded plugin (ABI and plugin version, devices, optional tables, claimed dtypes, native kernel
count) and the load errors of the skipped ones.

`describe_plugins()` reads the plugins loaded in *this* process (it imports hwport.runtime).
`probe(env)` runs it in a fresh interpreter with `env` added (e.g. HWPORT_PLUGIN_PATH for a
plugin file given as --plugin PATH), so a plugin is never loaded into the hwcheck parent:
`python -m hwport.conformance.listing` prints the same records as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

PROBE_TIMEOUT_S = 120.0
_MARK = "hwcheck-listing: "  # plugins may print on stdout too; the record is the marked line


def describe_plugins() -> dict[str, Any]:
    """{"plugins": [record...], "errors": [{"path", "reason"}...], "abi_version": "M.m"}.
    A record: device_type, path, abi_version, plugin_version, device_count, device_count_note,
    devices (names), num_kernels, optional (optional tables/functions present), dtypes (the
    dtypes it has at least one kernel for), kernels_by_dtype (native kernel count per dtype)."""
    from hwport.phi_ops.schema import dtype_groups, load_ops
    from hwport.runtime import _core, plugin_errors, plugins

    ops = load_ops()
    records = []
    for p in plugins():
        rec = dict(p)
        rec["devices"] = []
        by_dtype: dict[str, int] = {}
        if p["device_count"] > 0:
            place = f"custom:{p['device_type']}"
            for i in range(p["device_count"]):
                props = _core.device_properties(f"{place}:{i}")
                rec["devices"].append(str(props.get("name", "")))
            for d in dtype_groups()["all"]:
                n = sum(1 for name in ops if _core.has_kernel(name, place, d))
                if n:
                    by_dtype[d] = n
        rec["kernels_by_dtype"] = by_dtype
        rec["dtypes"] = list(by_dtype)
        records.append(rec)
    errors = [{"path": e["path"], "reason": e["reason"]} for e in plugin_errors()]
    abi = f"{_core.ABI_VERSION[0]}.{_core.ABI_VERSION[1]}"
    return {"abi_version": abi, "plugins": records, "errors": errors}


def probe(env: dict[str, str] | None = None) -> dict[str, Any]:
    """describe_plugins() in a fresh interpreter with `env` added to this environment."""
    full = dict(os.environ)
    full.update(env or {})
    proc = subprocess.run([sys.executable, "-m", __name__], env=full, capture_output=True,
                          text=True, timeout=PROBE_TIMEOUT_S)
    if proc.returncode != 0:
        raise RuntimeError(f"listing the plugins failed (exit {proc.returncode}): "
                           f"{proc.stderr.strip()[-2000:]}")
    for line in proc.stdout.splitlines():
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK):])
    raise RuntimeError(f"listing the plugins printed no record: {proc.stdout[-2000:]!r}")


def format_listing(listing: dict[str, Any]) -> str:
    """The `hwcheck list` text."""
    lines = [f"hwport host, C ABI {listing['abi_version']}",
             f"{len(listing['plugins'])} plugin(s) loaded:"]
    for p in listing["plugins"]:
        note = f" ({p['device_count_note']})" if p.get("device_count_note") else ""
        lines.append(f"  {p['device_type']}  abi {p['abi_version']}  v{p['plugin_version']}  "
                     f"devices={p['device_count']}{note}  native kernels={p['num_kernels']}")
        lines.append(f"      path: {p['path']}")
        for i, name in enumerate(p["devices"]):
            lines.append(f"      custom:{p['device_type']}:{i}  {name}")
        lines.append(f"      optional: {', '.join(p['optional']) or 'none (required set only)'}")
        dts = ", ".join(f"{d}({n})" for d, n in p["kernels_by_dtype"].items())
        lines.append(f"      dtypes (kernels): {dts or 'none'}")
    lines.append(f"{len(listing['errors'])} plugin(s) skipped:")
    for e in listing["errors"]:
        lines.append(f"  {e['path']}: {e['reason']}")
    return "\n".join(lines)


def main() -> int:
    print(_MARK + json.dumps(describe_plugins()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
