"""The abi suite: the plugin file as a host sees it, through cffi with the project's own headers
(plugin.h, device.h), never through the runtime core.

The first six cases are the checks a host makes before it accepts a plugin, in order
(direct_host.LOAD_STAGES): load (dlopen, RTLD_NOW | RTLD_LOCAL), entry (hwport_plugin_init is
exported), init (it returns HWP_OK and an HWP_PluginApi), abi_major (equal to the host's),
struct_sizes (HWP_PluginApi and each table cover their v1 required part), required_functions
(none NULL, and kernels registered or a codegen table). Each assumes the ones before passed, so
collect() loads the plugin in a throwaway process first (it may crash or hang) and stops the
list at the first one that fails: that case FAILs (or CRASHes/TIMEs OUT in the worker, as init
did in the probe) and names the reason. Only a plugin that passes all six gets the others:
host_major_rejected (refuses a host of another major), device_type, last_error (thread-local,
set on failure), minor_negotiation (works with a newer-minor host whose struct is larger),
properties_struct_size and stats_struct_size (never write past the struct_size the host set),
exported_symbols (the dynamic symbol table exports hwport_plugin_init and nothing else) and
resolves_symbols (every symbol binds in a clean process, without the libraries Python has
loaded: a plugin must depend on every library it calls, libm included), and the codegen_*
checks of the codegen table when the plugin has one (suites/abi_codegen.py), and the ccl_*
checks of the CCL table (suites/abi_ccl.py; NOT_SUPPORTED without one: the MPI adapter serves).

When the plugin does not load, the device, memory and stream suites collect one FAIL case,
<suite>::plugin-loads, naming the abi case that failed (see direct_common).
"""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np

from ..model import Case, CheckFailed, NotSupported, Result, Status, Target
from . import abi_ccl, abi_codegen, direct_common
from .direct_common import require

NAME = "abi"
DEVICE_TYPE_RE = re.compile(r"[a-z0-9_]+")


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    from ..direct_host import LOAD_STAGES

    stage = direct_common.probe(target, options)["stage"]
    if stage == direct_common.AFTER_LOAD_STAGE:  # loads, then dies reading its device type
        return [Case(NAME, s) for s in (*LOAD_STAGES, stage)]
    if stage != "ok":
        return [Case(NAME, s) for s in LOAD_STAGES[:LOAD_STAGES.index(stage) + 1]]
    return [Case(NAME, s) for s in LOAD_STAGES] + [Case(NAME, name) for name in CHECKS]


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    from ..direct_host import (
        LOAD_STAGES,
        DirectHost,
        LoadFailed,
        NotSupportedError,
        PluginError,
        open_library,
    )

    path = direct_common.plugin_file(target)
    if case.name in LOAD_STAGES[:2]:  # without calling init, which may crash
        try:
            open_library(path)
        except LoadFailed as e:
            return _gate(e, case)
        return Result(case, Status.PASS)
    if "loaded" not in state:  # the plugin as the host loads it, or why it could not
        try:
            state["loaded"] = DirectHost(path, env=dict(target.env))
        except LoadFailed as e:
            state["loaded"] = e
    loaded = state["loaded"]
    if case.name in LOAD_STAGES:
        return _gate(loaded, case)
    if isinstance(loaded, LoadFailed):
        raise CheckFailed(f"not checked: abi::{loaded.stage} failed: {loaded.message}")
    try:
        loaded.validate()
    except LoadFailed as e:
        raise CheckFailed(f"not checked: abi::{e.stage} failed: {e.message}") from None
    try:
        details = CHECKS[case.name](loaded, target, case) or {}
    except NotSupportedError as e:
        raise NotSupported(str(e)) from None
    except PluginError as e:
        raise CheckFailed(str(e), status=e.status) from None
    return Result(case, Status.PASS, details=details)


def _gate(loaded, case: Case) -> Result:
    """One acceptance check; the ones before it must have passed."""
    from ..direct_host import LOAD_STAGES, LoadFailed

    index = LOAD_STAGES.index(case.name)
    if isinstance(loaded, LoadFailed):
        at = LOAD_STAGES.index(loaded.stage)
        if at == index:
            raise CheckFailed(loaded.message)
        require(at > index, f"not checked: abi::{loaded.stage} failed: {loaded.message}")
        return Result(case, Status.PASS)
    for stage in LOAD_STAGES[2:index]:
        problem = loaded.check_stage(stage)
        require(not problem, f"not checked: abi::{stage} failed: {problem}")
    if index >= 2:
        problem = loaded.check_stage(case.name)
        require(not problem, problem)
    return Result(case, Status.PASS, details=_facts(loaded, case.name))


def _facts(h, stage: str) -> dict[str, Any]:
    from ..direct_host import member

    api = h.api
    if stage == "abi_major":
        return {"abi_version": f"{api.abi_major}.{api.abi_minor}"}
    if stage == "struct_sizes":
        tables = {"HWP_PluginApi": api, "HWP_DeviceTable": h.dev, "HWP_MemoryTable": h.mem,
                  "HWP_StreamTable": h.streams}
        return {k: int(v.struct_size) for k, v in tables.items() if v is not None}
    if stage == "required_functions":
        optional = [t for t in ("stream", "ccl", "codegen", "profiler", "shutdown")
                    if member(api, "HWP_PluginApi", t) is not None]
        return {"kernels": len(h.registrations), "optional": optional}
    return {}


def _other_instance(target: Target, **kwargs):
    from ..direct_host import DirectHost

    return DirectHost(direct_common.plugin_file(target), env=dict(target.env), **kwargs)


def host_major_rejected(h, target: Target, case: Case) -> dict[str, Any]:
    """plugin.h: the plugin checks host->abi_major; a host of another major is refused with
    HWP_ERROR_VERSION_MISMATCH."""
    from ..direct_host import ABI_MAJOR, OK, STATUS_NAMES, VERSION_MISMATCH

    other = _other_instance(target, abi_major=ABI_MAJOR + 1)
    name = STATUS_NAMES.get(other.init_status, other.init_status)
    require(other.init_status != OK, f"hwport_plugin_init accepted a host with ABI major "
            f"{ABI_MAJOR + 1} (it must check host->abi_major)")
    require(other.init_status == VERSION_MISMATCH, f"a host with ABI major {ABI_MAJOR + 1} "
            f"was refused with {name}, expected HWP_ERROR_VERSION_MISMATCH")
    return {"refused_with": name}


def device_type(h, target: Target, case: Case) -> dict[str, Any]:
    from ..direct_host import ffi, member

    raw = member(h.api, "HWP_PluginApi", "device_type")
    require(raw is not None, "HWP_PluginApi.device_type is NULL")
    value = ffi.string(raw).decode("utf-8", errors="replace")
    require(DEVICE_TYPE_RE.fullmatch(value) is not None,
            f"device type {value!r} is not [a-z0-9_]+ (it names the place custom:<type>)")
    if target.device_type and not target.plugin_path:
        require(value == target.device_type, f"device type {value!r}, but the target was "
                f"named {target.device_type!r}")
    version = member(h.api, "HWP_PluginApi", "plugin_version")
    require(version is not None, "HWP_PluginApi.plugin_version is NULL")
    try:
        plugin_version = ffi.string(version).decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckFailed(f"plugin_version is not UTF-8: {e}") from None
    return {"device_type": value, "plugin_version": plugin_version}


def last_error(h, target: Target, case: Case) -> dict[str, Any]:
    """get_last_error is never NULL, gives a message after a failed call, and is per thread:
    another thread does not see this thread's message."""
    from ..direct_host import NULL, OK

    n = h.device_count()
    status = h.dev.synchronize_device(n)
    require(status != OK, f"synchronize_device({n}) (out of range) returned HWP_OK")
    msg = h.last_error()
    require(bool(msg), f"get_last_error() is empty after a failed call (status {status})")
    seen: dict[str, Any] = {}

    def other_thread() -> None:
        raw = h.api.get_last_error()
        seen["null"] = raw == NULL
        seen["message"] = "" if raw == NULL else h.last_error()

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    require(not seen["null"], "get_last_error() returned NULL on a thread with no error")
    require(seen["message"] != msg, f"another thread sees this thread's last error ({msg!r}): "
            f"it must be thread-local")
    require(h.last_error() == msg, "the last error changed without a call on this thread")
    return {"message": msg}


def minor_negotiation(h, target: Target, case: Case) -> dict[str, Any]:
    """A host of a newer minor (its HWP_HostApi has a field appended) loads the plugin, which
    then works (it must read the host struct only as far as it knows)."""
    from ..direct_host import ABI_MAJOR, ABI_MINOR

    newer = _other_instance(target, abi_minor=ABI_MINOR + 1, host_extra=8)
    require(newer.api is not None, f"with a v{ABI_MAJOR}.{ABI_MINOR + 1} host: "
            f"{newer.init_message}")
    problem = next((p for p in map(newer.check_stage, ("abi_major", "struct_sizes",
                                                        "required_functions")) if p), "")
    require(not problem, f"with a v{ABI_MAJOR}.{ABI_MINOR + 1} host: {problem}")
    newer.init_devices()
    data = np.arange(1000, dtype=np.uint8)
    buf = newer.alloc(data.nbytes)
    try:
        newer.h2d(buf, data)
        got = np.frombuffer(newer.d2h(buf, data.nbytes), np.uint8)
        require(np.array_equal(got, data), f"with a v{ABI_MAJOR}.{ABI_MINOR + 1} host, data "
                f"read back differs")
    finally:
        newer.free(buf)
    return {"plugin_abi": f"{h.api.abi_major}.{h.api.abi_minor}",
            "hosts": [f"{ABI_MAJOR}.{ABI_MINOR}", f"{ABI_MAJOR}.{ABI_MINOR + 1}"]}


def _struct_size_respected(ctype: str, last_field: str, call) -> dict[str, Any]:
    """Calls `call(ptr)` with an older host's struct (struct_size reaching `last_field`) that
    sits in a larger guarded buffer: nothing past struct_size may change."""
    from ..direct_host import ffi, field_end

    size = field_end(ctype, last_field)
    full = ffi.sizeof(ctype) + 64
    mem = ffi.new("unsigned char[]", full)
    ffi.memmove(mem, b"\xab" * full, full)
    ptr = ffi.cast(ctype + " *", mem)
    ptr.struct_size = size
    call(ptr)
    tail = bytes(ffi.buffer(mem, full))[size:]
    changed = [i + size for i, c in enumerate(tail) if c != 0xAB]
    require(not changed, f"{ctype} with struct_size {size}: the plugin wrote past it (bytes "
            f"{changed[0]}..{changed[-1]})" if changed else "")
    return {"struct_size": size}


def properties_struct_size(h, target: Target, case: Case) -> dict[str, Any]:
    get_props = h.require("device", "get_properties")
    return _struct_size_respected("HWP_DeviceProperties", "name",
                                  lambda p: h.check(get_props(0, p), "get_properties"))


def stats_struct_size(h, target: Target, case: Case) -> dict[str, Any]:
    get_stats = h.require("memory", "get_memory_stats")
    return _struct_size_respected("HWP_MemoryStats", "bytes_in_use",
                                  lambda s: h.check(get_stats(0, s), "get_memory_stats"))


def exported_symbols(h, target: Target, case: Case) -> dict[str, Any]:
    """docs/abi.md: a plugin exports exactly hwport_plugin_init; anything else may bind to
    another library's symbol of the same name (or it to the plugin's)."""
    from ..elf_symbols import NotElf
    from ..elf_symbols import exported_symbols as read_exports

    try:
        names = read_exports(direct_common.plugin_file(target))
    except NotElf as e:
        raise NotSupported(f"cannot read the dynamic symbol table: {e}") from None
    extra = [n for n in names if n != "hwport_plugin_init"]
    shown = ", ".join(extra[:20]) + (f" (and {len(extra) - 20} more)" if len(extra) > 20 else "")
    require(not extra, f"the plugin exports {len(extra)} symbol(s) besides hwport_plugin_init: "
            f"{shown}; build with hidden visibility (-fvisibility=hidden) and mark only "
            f"hwport_plugin_init HWP_EXPORT", exported=names)
    return {"exported": names}


def resolves_symbols(h, target: Target, case: Case) -> dict[str, Any]:
    """The host loads a plugin with RTLD_NOW: every undefined symbol must come from a library
    the plugin depends on. Checked in a process of its own (the dynamic loader's trace mode),
    since this worker's Python already has libm and others loaded, which hide a missing -lm."""
    from ..elf_symbols import LoaderUnavailable, unresolved_symbols

    try:
        found = unresolved_symbols(direct_common.plugin_file(target), env=dict(target.env))
    except LoaderUnavailable as e:
        raise NotSupported(str(e)) from None
    problems = []
    if found["libraries"]:
        problems.append(f"libraries not found: {', '.join(found['libraries'])}")
    if found["symbols"]:
        problems.append(f"undefined symbols: {', '.join(found['symbols'][:20])}")
    if found["versions"]:
        problems.append(f"symbol versions not found: {', '.join(found['versions'])}")
    require(not problems, "in a process without Python's libraries, binding every symbol "
            f"(RTLD_NOW) fails: {'; '.join(problems)}; link the plugin against the libraries it "
            "calls (e.g. -lm for expf)", **found)
    return found


CHECKS = {
    "host_major_rejected": host_major_rejected,
    "device_type": device_type,
    "last_error": last_error,
    "minor_negotiation": minor_negotiation,
    "properties_struct_size": properties_struct_size,
    "stats_struct_size": stats_struct_size,
    "exported_symbols": exported_symbols,
    "resolves_symbols": resolves_symbols,
    **abi_codegen.CHECKS,
    **abi_ccl.CHECKS,
}
