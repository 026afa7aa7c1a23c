"""`python -m hwport.runtime`: list the loaded plugins, their devices and the skipped ones."""

from __future__ import annotations

from . import _core, plugin_errors, plugins


def main() -> int:
    loaded = plugins()
    print(f"hwport runtime, C ABI {_core.ABI_VERSION[0]}.{_core.ABI_VERSION[1]}")
    print(f"{len(loaded)} plugin(s) loaded:")
    for p in loaded:
        note = f" ({p['device_count_note']})" if p["device_count_note"] else ""
        print(
            f"  {p['device_type']:<12} abi {p['abi_version']:<5} v{p['plugin_version']:<8} "
            f"devices={p['device_count']}{note} kernels={p['num_kernels']} "
            f"streams={'yes' if p['has_streams'] else 'no'}  {p['path']}"
        )
        for i in range(p["device_count"]):
            props = _core.device_properties(f"custom:{p['device_type']}:{i}")
            print(f"      custom:{p['device_type']}:{i}  {props.get('name', '')}")
    errors = plugin_errors()
    print(f"{len(errors)} plugin(s) skipped:")
    for e in errors:
        print(f"  {e['path']}: {e['reason']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
