"""The abi suite's checks of a plugin's codegen table (hwport/codegen.h, ABI 1.2).

A plugin without the table, or with a bare one (struct_size only: "no target"), is
NOT_SUPPORTED in every check but codegen_table; so is a device whose get_target_info says
HWP_ERROR_NOT_SUPPORTED (e.g. no C compiler on the machine). The kernels are the fill kernel of
conformance/codegen_host.py in the target's first dialect; a first dialect hwcheck does not
know ("c99", "opencl-c-1.2", "cuda-c++17" it does) is NOT_SUPPORTED with that reason.

  codegen_table         struct_size bare or covering get_target_info..unload, none of them
                        NULL; serialize and deserialize both or neither
  codegen_target_info   a sane HWP_CodegenTargetInfo on every device (a non-empty
                        NULL-terminated dialect list, sizes >= 1, known flags only, a "c99"
                        target not SIMT with max_group_size 1, SERIALIZE only with serialize),
                        nothing written past an older host's struct_size
  codegen_compile       the fill kernel compiles and get_function finds it
  codegen_compile_error broken source: an error status, *out untouched, a non-empty log that
                        ends inside log_capacity
  codegen_missing_function  get_function of a missing name: HWP_ERROR_NOT_FOUND, *out untouched
  codegen_launch        buffer (nonzero byte offset) + int64 + float64 arguments write exactly the
                        expected int64s, on the NULL stream and on a created stream
  codegen_launch_invalid  grid 0 and a NULL launch: HWP_ERROR_INVALID_ARGUMENT
  codegen_unload        unload returns HWP_OK, and a module compiled again from the same
                        source works after another was unloaded
  codegen_serialize     when SERIALIZE: size query, too small a capacity refused, the bytes
                        deserialize into a module whose function writes the same result;
                        garbage bytes refused with HWP_ERROR_INVALID_ARGUMENT
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..codegen_host import (
    ALL_FLAGS,
    FILL_NAME,
    KNOWN_DIALECTS,
    REQUIRED,
    SERIALIZE,
    SIMT,
    BufferArg,
    Codegen,
    TargetInfo,
    broken_source,
    fill_expected,
    fill_shape,
    fill_source,
    is_sentinel,
)
from ..model import Case, CheckFailed, NotSupported, Target
from .direct_common import require

N, BASE, F, PAD, TAIL = 100, (1 << 40) + 7, 1.5, 24, 16


def _status(code: int) -> str:
    from ..direct_host import STATUS_NAMES

    return STATUS_NAMES.get(code, str(code))


def _codegen(h) -> Codegen:
    """The table, or NotSupported when there is none or it is bare."""
    cg = Codegen(h)
    if not cg.present:
        raise NotSupported("the plugin has no codegen table (HWP_PluginApi.codegen is NULL; "
                           "optional)")
    if cg.bare:
        raise NotSupported(f"the codegen table is bare (struct_size {cg.table.struct_size}): "
                           f"no target")
    try:
        _check_table(cg)
    except CheckFailed as e:
        raise CheckFailed(f"not checked: abi::codegen_table failed: {e}") from None
    return cg


def _check_table(cg: Codegen) -> dict[str, Any]:
    """codegen_table's checks of a table that is not bare."""
    from ..direct_host import ffi, field_end

    size = int(cg.table.struct_size)
    need = field_end("HWP_CodegenTable", "unload")
    require(size >= need, f"HWP_CodegenTable.struct_size {size}: a table larger than bare "
            f"({ffi.sizeof('size_t')}) must cover get_target_info through unload ({need} bytes)")
    missing = [name for name in REQUIRED if cg.fn(name) is None]
    require(not missing, f"HWP_CodegenTable.{', '.join(missing)} NULL (required when the table "
            f"covers them)")
    has = [cg.fn(name) is not None for name in ("serialize", "deserialize")]
    require(has[0] == has[1], "HWP_CodegenTable has only one of serialize/deserialize: "
            "both or neither")
    return {"struct_size": size, "target": True, "serialize": has[0]}


def _target(h, device: int = 0) -> tuple[Codegen, TargetInfo]:
    from ..direct_host import NOT_SUPPORTED

    cg = _codegen(h)
    h.init_devices()
    if h.device_count() == 0:
        raise NotSupported("the plugin reports no device to check its codegen target on")
    status, info = cg.target_info(device)
    if status == NOT_SUPPORTED:
        raise NotSupported(f"get_target_info({device}) says HWP_ERROR_NOT_SUPPORTED: "
                           f"{h.last_error()}")
    require(status == 0 and info is not None,
            f"get_target_info({device}) -> {_status(status)}: {h.last_error()}")
    return cg, info


def _dialect(info: TargetInfo) -> str:
    dialect = info.dialects[0] if info.dialects else ""
    if dialect not in KNOWN_DIALECTS:
        raise NotSupported(f"the target's first dialect {dialect!r} is not one hwcheck has a "
                           f"kernel for ({', '.join(KNOWN_DIALECTS)})")
    return dialect


def _compiled(h, device: int = 0):
    """(cg, info, dialect, module, function) of the fill kernel; the caller unloads."""
    cg, info = _target(h, device)
    dialect = _dialect(info)
    source = fill_source(dialect, info)
    status, module, log = cg.compile(device, dialect, source)
    require(status == 0, f"compile of hwcheck's trivial {dialect} kernel -> {_status(status)}: "
            f"{h.last_error()}; log: {(log or '(empty)')[:2000]}", source=source)
    require(not is_sentinel(module) and module != _null(),
            "compile returned HWP_OK but no module (*out is NULL or untouched)")
    status, function = cg.get_function(module, FILL_NAME)
    if status != 0 or is_sentinel(function) or function == _null():
        cg.unload(module)
    require(status == 0, f"get_function({FILL_NAME!r}) of the compiled module -> "
            f"{_status(status)}: {h.last_error()}")
    require(not is_sentinel(function) and function != _null(),
            "get_function returned HWP_OK but no function")
    return cg, info, dialect, module, function


def _null():
    from ..direct_host import NULL

    return NULL


def _run_fill(h, cg: Codegen, info: TargetInfo, function, stream, device: int = 0,
              pad: int = PAD, correlation_id: int = 0) -> dict[str, Any]:
    """Launches the fill kernel into a buffer at byte offset `pad` (guard bytes around it) and
    checks every byte of the buffer. The profiler suite passes a correlation id."""
    total = pad + N * 8 + TAIL
    buf = h.alloc(total, device)
    try:
        h.h2d(buf, np.full(total, 0xAB, np.uint8), device=device)
        grid, group = fill_shape(info, N)
        status = cg.launch(device, function, grid, group,
                           [BufferArg(buf, pad), N, BASE, F], stream=stream,
                           correlation_id=correlation_id)
        require(status == 0, f"launch of {FILL_NAME} (grid {grid}, group {group}) -> "
                f"{_status(status)}: {h.last_error()}")
        if stream != _null():
            h.sync_stream(stream, device)
        h.sync_device(device)
        raw = np.frombuffer(h.d2h(buf, total, device=device), np.uint8)
    finally:
        h.free(buf, device)
    where = "on a created stream" if stream != _null() else "on the NULL stream"
    head, tail = raw[:pad], raw[pad + N * 8:]
    require(bool(np.all(head == 0xAB)), f"launch {where}: bytes before the buffer argument's "
            f"byte_offset {pad} were written (is byte_offset applied?)")
    require(bool(np.all(tail == 0xAB)), f"launch {where}: bytes after the {N} int64s were "
            f"written (threads past n ran, or the offset was ignored)")
    got = raw[pad:pad + N * 8].view(np.int64)
    want = fill_expected(N, BASE, F)
    bad = np.flatnonzero(got != want)
    require(bad.size == 0, f"launch {where}: out[i] = base + 3*i + (int64)(2*f) with base "
            f"{BASE}, f {F}: {bad.size} of {N} wrong, first at i={bad[0] if bad.size else 0}: "
            f"got {got[bad[0]] if bad.size else 0}, expected {want[bad[0]] if bad.size else 0} "
            f"(check the int64/float64 argument passing and the buffer's byte offset)")
    return {"grid": list(grid), "group": list(group)}


# ---- the checks -------------------------------------------------------------------------------

def codegen_table(h, target: Target, case: Case) -> dict[str, Any]:
    cg = Codegen(h)
    if not cg.present:
        raise NotSupported("the plugin has no codegen table (HWP_PluginApi.codegen is NULL; "
                           "optional)")
    if cg.bare:
        return {"struct_size": int(cg.table.struct_size), "target": False}
    return _check_table(cg)


def codegen_target_info(h, target: Target, case: Case) -> dict[str, Any]:
    from . import abi

    cg, _ = _target(h)
    infos = {}
    for device in range(h.device_count()):
        status, info = cg.target_info(device)
        if status != 0:
            require(status == 3, f"get_target_info({device}) -> {_status(status)}: "
                    f"{h.last_error()}")
            infos[str(device)] = "not supported"
            continue
        where = f"get_target_info({device})"
        problems = []
        if not info.dialects:
            problems.append("dialects is NULL or empty")
        elif not info.dialects_terminated:
            problems.append("dialects is not NULL-terminated")
        elif not all(info.dialects):
            problems.append("dialects holds an empty name")
        if info.architecture is None:
            problems.append("architecture is NULL")
        for name in ("simd_width", "preferred_vector_width", "max_group_size", "compute_units"):
            if getattr(info, name) < 1:
                problems.append(f"{name} is {getattr(info, name)} (must be >= 1)")
        if info.flags & ~ALL_FLAGS:
            problems.append(f"unknown flag bits {info.flags & ~ALL_FLAGS:#x}")
        if info.dialects and info.dialects[0] == "c99":
            if info.flags & SIMT:
                problems.append("a \"c99\" target is not SIMT (its kernels run one group per "
                                "call), but HWP_CODEGEN_SIMT is set")
            if info.max_group_size != 1:
                problems.append(f"a \"c99\" target has max_group_size 1, not "
                                f"{info.max_group_size}")
        if info.flags & SERIALIZE and cg.fn("serialize") is None:
            problems.append("HWP_CODEGEN_SERIALIZE is set but the table has no serialize")
        require(not problems, f"{where}: {'; '.join(problems)}", info=info.to_json())
        infos[str(device)] = info.to_json()
    abi._struct_size_respected(
        "HWP_CodegenTargetInfo", "flags",
        lambda p: h.check(cg.fn("get_target_info")(0, p), "get_target_info"))
    return {"devices": infos}


def codegen_compile(h, target: Target, case: Case) -> dict[str, Any]:
    cg, info, dialect, module, _ = _compiled(h)
    status = cg.unload(module)
    require(status == 0, f"unload -> {_status(status)}: {h.last_error()}")
    return {"dialect": dialect, "architecture": info.architecture}


def codegen_compile_error(h, target: Target, case: Case) -> dict[str, Any]:
    cg, info = _target(h)
    dialect = _dialect(info)
    capacity = 4096
    status, module, log = cg.compile(0, dialect, broken_source(dialect), log_capacity=capacity)
    if status == 0 and not is_sentinel(module):
        cg.unload(module)
    require(status != 0, f"compile of broken {dialect} source (an undeclared name and a syntax "
            f"error) returned HWP_OK", source=broken_source(dialect))
    require(is_sentinel(module), f"compile failed ({_status(status)}) but changed *out (it must "
            f"stay untouched on error)")
    require(status == 1, f"compile of source that does not compile -> {_status(status)}, "
            f"expected HWP_ERROR_INVALID_ARGUMENT ({h.last_error()})")
    require(log is not None, f"compile failed but the log holds no NUL-terminated text within "
            f"its log_capacity ({capacity}): write the compiler's output, truncated")
    require(log.strip() != "", "compile failed with an empty log: write the compiler's output "
            "(the error) into log")
    past = cg.last_log_raw[capacity:]
    require(past == b"\xab" * len(past), f"compile wrote past log_capacity ({capacity})")
    return {"status": _status(status), "log": log[:500]}


def codegen_missing_function(h, target: Target, case: Case) -> dict[str, Any]:
    cg, _, _, module, _ = _compiled(h)
    try:
        status, function = cg.get_function(module, "hwcheck_no_such_kernel")
        require(status == 5, f"get_function of a name the module lacks -> {_status(status)}, "
                f"expected HWP_ERROR_NOT_FOUND ({h.last_error()})")
        require(is_sentinel(function), "get_function failed but changed *out")
    finally:
        cg.unload(module)
    return {}


def codegen_launch(h, target: Target, case: Case) -> dict[str, Any]:
    cg, info, _, module, function = _compiled(h)
    details: dict[str, Any] = {}
    try:
        details["null_stream"] = _run_fill(h, cg, info, function, _null())
        if h.streams is not None:
            stream = h.create_stream()
            try:
                details["stream"] = _run_fill(h, cg, info, function, stream, pad=PAD + 16)
            finally:
                h.destroy_stream(stream)
    finally:
        h.sync_device()
        cg.unload(module)
    return details


def codegen_launch_invalid(h, target: Target, case: Case) -> dict[str, Any]:
    cg, info, _, module, function = _compiled(h)
    buf = h.alloc(N * 8 + PAD)
    try:
        _, group = fill_shape(info, N)
        status = cg.launch(0, function, (0, 1, 1), group, [BufferArg(buf, PAD), N, BASE, F])
        require(status == 1, f"launch with grid {{0, 1, 1}} -> {_status(status)}, expected "
                f"HWP_ERROR_INVALID_ARGUMENT")
        status = cg.launch(0, function, (1, 1, 1), group, [], null_launch=True)
        require(status == 1, f"launch with a NULL HWP_CodegenLaunch -> {_status(status)}, "
                f"expected HWP_ERROR_INVALID_ARGUMENT")
    finally:
        h.sync_device()
        h.free(buf)
        cg.unload(module)
    return {}


def codegen_unload(h, target: Target, case: Case) -> dict[str, Any]:
    cg, info, dialect, first, function = _compiled(h)
    _run_fill(h, cg, info, function, _null())
    status, second, log = cg.compile(0, dialect, fill_source(dialect, info))
    require(status == 0, f"a second compile of the same source -> {_status(status)}: {log}")
    status = cg.unload(first)
    require(status == 0, f"unload -> {_status(status)}: {h.last_error()}")
    try:
        status, function = cg.get_function(second, FILL_NAME)
        require(status == 0, f"get_function on a module compiled from the same source as one "
                f"unloaded -> {_status(status)}: {h.last_error()}")
        _run_fill(h, cg, info, function, _null())
    finally:
        status = cg.unload(second)
    require(status == 0, f"unload -> {_status(status)}: {h.last_error()}")
    return {}


def codegen_serialize(h, target: Target, case: Case) -> dict[str, Any]:
    cg, info = _target(h)
    if not info.flags & SERIALIZE:
        raise NotSupported("the target does not set HWP_CODEGEN_SERIALIZE")
    cg, info, dialect, module, _ = _compiled(h)
    try:
        status, data = cg.serialize(module)
        require(status == 0 and data, f"serialize -> {_status(status)}: {h.last_error()}")
        status = cg.serialize_into(module, len(data) - 1)
        require(status == 1, f"serialize into {len(data) - 1} bytes (one too few) -> "
                f"{_status(status)}, expected HWP_ERROR_INVALID_ARGUMENT")
    finally:
        cg.unload(module)
    status, back = cg.deserialize(0, dialect, data)
    require(status == 0, f"deserialize of serialize's {len(data)} bytes -> {_status(status)}: "
            f"{h.last_error()}")
    try:
        status, function = cg.get_function(back, FILL_NAME)
        require(status == 0, f"get_function on the deserialized module -> {_status(status)}: "
                f"{h.last_error()}")
        _run_fill(h, cg, info, function, _null())
    finally:
        h.sync_device()
        cg.unload(back)
    status, junk = cg.deserialize(0, dialect, b"hwcheck: these bytes are no module " * 8)
    if status == 0 and not is_sentinel(junk):
        cg.unload(junk)
    require(status == 1, f"deserialize of garbage bytes -> {_status(status)}, expected "
            f"HWP_ERROR_INVALID_ARGUMENT")
    return {"bytes": len(data)}


CHECKS = {
    "codegen_table": codegen_table,
    "codegen_target_info": codegen_target_info,
    "codegen_compile": codegen_compile,
    "codegen_compile_error": codegen_compile_error,
    "codegen_missing_function": codegen_missing_function,
    "codegen_launch": codegen_launch,
    "codegen_launch_invalid": codegen_launch_invalid,
    "codegen_unload": codegen_unload,
    "codegen_serialize": codegen_serialize,
}
