"""The abi suite's structural checks of a plugin's CCL table (hwport/ccl.h, ABI 1.2). What the
collectives do is the ccl suite's business (suites/ccl.py, on N ranks under mpirun).

A plugin without the table (HWP_PluginApi.ccl NULL) or with a bare one (struct_size only, a
1.0/1.1 table) is NOT_SUPPORTED: the host's MPI adapter serves its collectives (host memory
directly, other devices staged), which the ccl suite checks like an own table.

  ccl_table      struct_size bare or covering unique_id_size..group_end; every required
                 function (get_unique_id, comm_init, comm_split, comm_destroy, comm_abort,
                 comm_get_async_error, all_reduce, broadcast, all_gather, send, recv,
                 group_start, group_end) non-NULL; unique_id_size in 1..128; every function
                 that is set (the optional reduce, reduce_scatter, all_to_all NULL or set)
                 points into executable memory of the process
  ccl_unique_id  get_unique_id returns HWP_OK and writes no byte past unique_id_size

A table that fails ccl_table is one the runtime ignores (it falls back to the MPI adapter), so
the vendor's collectives never run: the message says so.
"""

from __future__ import annotations

from typing import Any

from ..model import CheckFailed, NotSupported
from .direct_common import require

REQUIRED = ("get_unique_id", "comm_init", "comm_split", "comm_destroy", "comm_abort",
            "comm_get_async_error", "all_reduce", "broadcast", "all_gather", "send", "recv",
            "group_start", "group_end")
OPTIONAL = ("reduce", "reduce_scatter", "all_to_all")
MAX_ID = 128  # HWP_CCL_UNIQUE_ID_MAX_BYTES
IGNORED = "the runtime ignores this table and serves the plugin with its MPI adapter"


def _table(h) -> Any:
    from ..direct_host import ffi, member

    t = member(h.api, "HWP_PluginApi", "ccl")
    if t is None:
        raise NotSupported("the plugin has no CCL table (HWP_PluginApi.ccl is NULL; optional): "
                           "the host's MPI adapter serves its collectives (checked by the ccl "
                           "suite)")
    if int(t.struct_size) <= ffi.sizeof("size_t"):
        raise NotSupported(f"the CCL table is bare (struct_size {t.struct_size}, a 1.0/1.1 "
                           f"table): the host's MPI adapter serves its collectives")
    return t


def _fn(t, name: str) -> Any:
    from ..direct_host import member

    return member(t, "HWP_CclTable", name)


def _executable_ranges() -> tuple[tuple[int, int], ...]:
    out = []
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            for line in f:
                addr, perms = line.split()[:2]
                if "x" in perms:
                    lo, hi = (int(v, 16) for v in addr.split("-"))
                    out.append((lo, hi))
    except OSError:
        return ()
    return tuple(out)


def _executable(address: int) -> bool | None:
    """Whether `address` lies in an executable mapping (None: cannot tell on this system)."""
    ranges = _executable_ranges()  # read each time: the plugin's copy is mapped late
    if not ranges:
        return None
    return any(lo <= address < hi for lo, hi in ranges)


def _check_table(t) -> dict[str, Any]:
    from ..direct_host import ffi, field_end

    size = int(t.struct_size)
    need = field_end("HWP_CclTable", "group_end")
    require(size >= need, f"HWP_CclTable.struct_size {size}: a table larger than bare "
            f"({ffi.sizeof('size_t')}) must cover unique_id_size through group_end ({need} "
            f"bytes); {IGNORED}")
    missing = [name for name in REQUIRED if _fn(t, name) is None]
    require(not missing, f"HWP_CclTable.{', '.join(missing)} NULL (required in a 1.2 table); "
            f"{IGNORED}")
    id_size = int(t.unique_id_size)
    require(1 <= id_size <= MAX_ID, f"HWP_CclTable.unique_id_size {id_size}: must be 1..{MAX_ID} "
            f"(HWP_CCL_UNIQUE_ID_MAX_BYTES); {IGNORED}")
    wild = []
    for name in REQUIRED + OPTIONAL:
        fn = _fn(t, name)
        if fn is not None and _executable(int(ffi.cast("uintptr_t", fn))) is False:
            wild.append(f"{name} ({hex(int(ffi.cast('uintptr_t', fn)))})")
    require(not wild, f"HWP_CclTable.{', '.join(wild)}: not in executable memory (garbage "
            f"function pointers)")
    return {"struct_size": size, "unique_id_size": id_size,
            "optional": {name: _fn(t, name) is not None for name in OPTIONAL}}


def ccl_table(h, target, case) -> dict[str, Any]:
    return _check_table(_table(h))


def ccl_unique_id(h, target, case) -> dict[str, Any]:
    from ..direct_host import OK, STATUS_NAMES, ffi

    t = _table(h)
    try:
        _check_table(t)
    except CheckFailed as e:
        raise CheckFailed(f"not checked: abi::ccl_table failed: {e}") from None
    size = int(t.unique_id_size)
    pad = 64
    buf = ffi.new("unsigned char[]", size + pad)
    ffi.memmove(buf, b"\xab" * (size + pad), size + pad)
    status = t.get_unique_id(buf)
    require(status == OK, f"get_unique_id -> {STATUS_NAMES.get(status, status)}: "
            f"{h.last_error()}")
    tail = bytes(ffi.buffer(buf, size + pad))[size:]
    changed = [i for i, c in enumerate(tail) if c != 0xAB]
    require(not changed, f"get_unique_id wrote {changed[-1] + 1 if changed else 0} byte(s) past "
            f"unique_id_size ({size})")
    return {"unique_id_size": size}


CHECKS = {"ccl_table": ccl_table, "ccl_unique_id": ccl_unique_id}
