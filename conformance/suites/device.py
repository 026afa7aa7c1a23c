"""The device suite: the device table, driven directly through the C ABI (device.h).

Cases: device_count, bad_device_index, properties, properties_1_1 (the ABI 1.1 fields),
init_device, set_device, synchronize, synchronize_all_streams (ordering.py), multi_device,
concurrent_threads. An optional function
the plugin lacks gives NOT_SUPPORTED; a plugin that does not load gives one FAIL,
device::plugin-loads (see direct_common).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..model import Case, CheckFailed, NotSupported, Result, Target
from . import abi11_common, direct_common, ordering
from .direct_common import expect_error, require

NAME = "device"


def collect(target: Target, options: dict[str, Any]) -> list[Case]:
    failed = direct_common.load_gate(NAME, target, options)
    return failed or [Case(NAME, name) for name in CHECKS]


def run(target: Target, case: Case, state: dict[str, Any]) -> Result:
    return direct_common.run_check(CHECKS, target, case, state)


def device_count(h, case: Case) -> dict[str, Any]:
    from ..direct_host import INVALID_ARGUMENT, NULL

    counts = [h.device_count() for _ in range(3)]
    require(len(set(counts)) == 1, f"get_device_count is not stable: {counts}")
    require(1 <= counts[0] <= 1 << 16, f"implausible device count {counts[0]}")
    expect_error(h, h.dev.get_device_count(NULL), "get_device_count(NULL)", INVALID_ARGUMENT)
    return {"device_count": counts[0]}


def bad_device_index(h, case: Case) -> dict[str, Any]:
    """device.h: an index out of [0, count) is HWP_ERROR_INVALID_ARGUMENT, outs untouched."""
    from ..direct_host import INVALID_ARGUMENT, ffi

    n = h.device_count()
    get_props = h.optional("device", "get_properties")
    for d in (n, -1, 1 << 30):
        expect_error(h, h.dev.synchronize_device(d), f"synchronize_device({d})",
                      INVALID_ARGUMENT)
        out = ffi.new("HWP_Buffer *")
        sentinel = ffi.cast("HWP_Buffer", 0x5A5A)
        out[0] = sentinel
        expect_error(h, h.mem.allocate(d, 16, out), f"allocate({d}, 16)", INVALID_ARGUMENT)
        require(out[0] == sentinel, f"allocate({d}) failed but wrote its out parameter")
        if get_props is not None:
            props = ffi.new("HWP_DeviceProperties *")
            props.struct_size = ffi.sizeof("HWP_DeviceProperties")
            expect_error(h, get_props(d, props), f"get_properties({d})", INVALID_ARGUMENT)
    return {"indices": [n, -1, 1 << 30]}


def _c_string(arr, field: str, device: int) -> str:
    from ..direct_host import ffi

    raw = bytes(ffi.buffer(arr))
    require(b"\0" in raw, f"device {device}: {field} is not NUL-terminated")
    try:
        return raw.split(b"\0", 1)[0].decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckFailed(f"device {device}: {field} is not UTF-8 ({e})") from None


def properties(h, case: Case) -> dict[str, Any]:
    h.require("device", "get_properties")
    seen = []
    for d in range(h.device_count()):
        p = h.properties(d)
        name = _c_string(p.name, "name", d)
        vendor = _c_string(p.vendor, "vendor", d)
        driver = _c_string(p.driver_version, "driver_version", d)
        require(bool(name.strip()), f"device {d}: empty name")
        require(p.total_memory > 0, f"device {d}: total_memory is 0")
        align = p.memory_alignment
        require(align >= 1 and align & (align - 1) == 0,
                f"device {d}: memory_alignment {align} is not a power of two")
        require(p.compute_units >= 1, f"device {d}: compute_units {p.compute_units} < 1")
        require(p.max_work_group_size >= 1,
                f"device {d}: max_work_group_size {p.max_work_group_size} < 1")
        unknown = p.flags & ~abi11_common.known_flags()
        require(unknown == 0, f"device {d}: unknown flag bits {unknown:#x}")
        seen.append({"name": name, "vendor": vendor, "driver_version": driver,
                     "total_memory": p.total_memory, "memory_alignment": align,
                     "compute_units": p.compute_units, "flags": p.flags})
    return {"devices": seen}


# memory functions a device that names a DLPack device must have (device.h, ABI 1.1)
DLPACK_MEMORY = ("device_address", "wrap_device_memory", "release_device_buffer")


def _problems_1_1(h, d: int, p, names: dict[tuple[int, int], int]) -> list[str]:
    """What is wrong with device d's ABI 1.1 properties (device.h's comments are the rules)."""
    from ..direct_host import ffi

    raw = bytes(ffi.buffer(p.architecture))
    problems = []
    if b"\0" not in raw:
        problems.append("architecture is not NUL-terminated")
    else:
        try:
            raw.split(b"\0", 1)[0].decode("utf-8")
        except UnicodeDecodeError as e:
            problems.append(f"architecture is not UTF-8 ({e})")
    for field, least, why in (
            ("architecture_major", 0, "0 if none"), ("architecture_minor", 0, "0 if none"),
            ("simd_width", 1, "1 if none"), ("max_threads_per_compute_unit", 0, "0 if unknown")):
        if getattr(p, field) < least:
            problems.append(f"{field} {getattr(p, field)} < {least} (device.h: {why})")
    if p.max_allocation > p.total_memory:
        problems.append(f"max_allocation {p.max_allocation} > total_memory {p.total_memory}")
    unknown = p.flags & ~abi11_common.known_flags()
    if unknown:
        problems.append(f"unknown flag bits {unknown:#x}")
    kind, dl_id = int(p.dlpack_device_type), int(p.dlpack_device_id)
    if kind not in abi11_common.dlpack_types():
        problems.append(f"dlpack_device_type {kind} is not an HWP_DLPackDeviceType value")
    elif kind:
        missing = [f for f in DLPACK_MEMORY if h.optional("memory", f) is None]
        if missing:
            problems.append(f"names DLPack device ({kind}, {dl_id}) but has no memory."
                            + ", memory.".join(missing))
        if p.flags & 1:  # HWP_DEVICE_HOST_MEMORY: such devices exchange as kDLCPU
            problems.append("names a DLPack device but also sets HWP_DEVICE_HOST_MEMORY "
                            "(host-memory devices exchange as kDLCPU; set dlpack_device_type 0)")
        if (kind, dl_id) in names:
            problems.append(f"DLPack device ({kind}, {dl_id}) is also device "
                            f"{names[kind, dl_id]}'s")
        names.setdefault((kind, dl_id), d)
    return [f"device {d}: {m}" for m in problems]


def _refuses_over_max_allocation(h, d: int, p) -> str | None:
    """An allocation of max_allocation + 1 bytes is refused (only asked where max_allocation
    is below total_memory; if the plugin grants it, it is freed at once). Returns the refusal's
    message, or None when there is nothing to ask."""
    from ..direct_host import INVALID_ARGUMENT, OK, OUT_OF_MEMORY, STATUS_NAMES, ffi

    if not 0 < p.max_allocation < p.total_memory:
        return None
    nbytes = int(p.max_allocation) + 1
    out = ffi.new("HWP_Buffer *")
    status = h.mem.allocate(d, nbytes, out)
    if status == OK:
        h.mem.deallocate(d, out[0])
    what = f"device {d}: allocate({nbytes} bytes, max_allocation + 1)"
    msg = expect_error(h, status, what)
    require(status in (OUT_OF_MEMORY, INVALID_ARGUMENT), f"{what} returned "
            f"{STATUS_NAMES.get(status, status)}, expected HWP_ERROR_OUT_OF_MEMORY or "
            f"HWP_ERROR_INVALID_ARGUMENT ({msg})")
    return msg


def properties_1_1(h, case: Case) -> dict[str, Any]:
    """The ABI 1.1 device properties are filled as device.h says (every problem of every device
    is reported at once), and max_allocation is enforced."""
    from ..direct_host import ffi

    abi11_common.require_abi_1_1(h)
    problems: list[str] = []
    names: dict[tuple[int, int], int] = {}
    seen = []
    for d in range(h.device_count()):
        p = h.properties(d)
        problems += _problems_1_1(h, d, p, names)
        arch = bytes(ffi.buffer(p.architecture)).split(b"\0", 1)[0]
        seen.append({"architecture": arch.decode("utf-8", errors="replace"),
                     "architecture_version": [p.architecture_major, p.architecture_minor],
                     "max_allocation": p.max_allocation, "simd_width": p.simd_width,
                     "max_threads_per_compute_unit": p.max_threads_per_compute_unit,
                     "dlpack_device": [p.dlpack_device_type, p.dlpack_device_id],
                     "flags": p.flags})
    require(not problems, "; ".join(problems), devices=seen)
    refused = {d: m for d in range(h.device_count())
               if (m := _refuses_over_max_allocation(h, d, h.properties(d))) is not None}
    return {"devices": seen, "over_max_allocation_refused": refused}


def init_device(h, case: Case) -> dict[str, Any]:
    """init_device already ran for every device when the host loaded the plugin (a failure
    there FAILs every case); here: a bad index is refused, and deinit_device is paired."""
    from ..direct_host import INVALID_ARGUMENT

    init = h.require("device", "init_device")
    n = h.device_count()
    expect_error(h, init(n), f"init_device({n})", INVALID_ARGUMENT)
    deinit = h.optional("device", "deinit_device")
    if deinit is not None:
        expect_error(h, deinit(n), f"deinit_device({n})", INVALID_ARGUMENT)
    return {"deinit_device": deinit is not None}


def _roundtrip(h, device: int, nbytes: int, rng: np.random.Generator) -> None:
    data = rng.integers(0, 256, nbytes, dtype=np.uint8)
    buf = h.alloc(nbytes, device)
    try:
        h.h2d(buf, data, device=device)
        got = np.frombuffer(h.d2h(buf, nbytes, device=device), np.uint8)
        require(np.array_equal(got, data), f"device {device}: data read back differs from "
                f"what was written ({int(np.count_nonzero(got != data))} of {nbytes} bytes)")
    finally:
        h.free(buf, device)


def set_device(h, case: Case) -> dict[str, Any]:
    """Valid indices are accepted and bad ones refused; the current device is per thread and
    never overrides the device argument of a call (each thread below sets one device current
    and works on the other)."""
    from ..direct_host import INVALID_ARGUMENT

    set_dev = h.require("device", "set_device")
    n = h.device_count()
    for d in range(n):
        h.check(set_dev(d), f"set_device({d})")
    expect_error(h, set_dev(n), f"set_device({n})", INVALID_ARGUMENT)
    errors: list[str] = []

    def worker(current: int, used: int, seed: int) -> None:
        try:
            h.check(set_dev(current), f"set_device({current})")
            rng = np.random.default_rng(seed)
            for _ in range(20):
                _roundtrip(h, used, int(rng.integers(1, 5000)), rng)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(f"thread (current {current}, using {used}): {e}")

    threads = [threading.Thread(target=worker, args=(i % n, (i + 1) % n, case.seed + i))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    require(not errors, "; ".join(errors))
    return {"devices": n}


def synchronize(h, case: Case) -> dict[str, Any]:
    rng = np.random.default_rng(case.seed)
    for d in range(h.device_count()):
        h.sync_device(d)  # idle
        data = rng.integers(0, 256, 1 << 16, dtype=np.uint8)
        buf = h.alloc(data.nbytes, d)
        try:
            h.h2d(buf, data, device=d)
            h.sync_device(d)
            got = np.frombuffer(h.d2h(buf, data.nbytes, device=d), np.uint8)
            require(np.array_equal(got, data), f"device {d}: data differs after synchronize")
        finally:
            h.free(buf, d)
    return None


def multi_device(h, case: Case) -> dict[str, Any]:
    """Each device holds its own data (writing one device never changes another's)."""
    n = h.device_count()
    if n < 2:
        raise NotSupported(f"the plugin has {n} device")
    nbytes = 1 << 15
    datas = [np.full(nbytes, 17 * d + 3, np.uint8) for d in range(n)]
    bufs = []
    try:
        for d in range(n):
            bufs.append(h.alloc(nbytes, d))
            h.h2d(bufs[d], datas[d], device=d)
        for d in range(n):
            got = np.frombuffer(h.d2h(bufs[d], nbytes, device=d), np.uint8)
            require(np.array_equal(got, datas[d]), f"device {d}: its data changed after "
                    f"writing the other devices")
    finally:
        for d, b in enumerate(bufs):
            h.free(b, d)
    return {"devices": n}


def concurrent_threads(h, case: Case) -> dict[str, Any]:
    """device.h: every function may be called concurrently from any host thread."""
    n = h.device_count()
    errors: list[str] = []

    def worker(i: int) -> None:
        rng = np.random.default_rng(case.seed * 31 + i)
        try:
            for _ in range(40):
                _roundtrip(h, i % n, int(rng.integers(1, 1 << 14)), rng)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(f"thread {i}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    require(not errors, "; ".join(errors[:3]))
    return {"threads": len(threads)}


CHECKS = {
    "device_count": device_count,
    "bad_device_index": bad_device_index,
    "properties": properties,
    "properties_1_1": properties_1_1,
    "init_device": init_device,
    "set_device": set_device,
    "synchronize": synchronize,
    "synchronize_all_streams": ordering.synchronize_all_streams,
    "multi_device": multi_device,
    "concurrent_threads": concurrent_threads,
}
