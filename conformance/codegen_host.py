"""The codegen table (hwport/codegen.h) driven through a DirectHost, and the kernels hwcheck
knows in each standard dialect.

    cg = Codegen(h)                    # h: a DirectHost
    status, info = cg.target_info(0)
    status, module, log = cg.compile(0, info.dialects[0], fill_source(info.dialects[0], info))

Every wrapper returns the plugin's status and leaves judging it to the caller; out parameters
that the plugin must leave untouched on error start as SENTINEL so a check can tell.

The fill kernel (FILL_NAME) takes, in codegen.h's convention of each dialect, a buffer of
int64 `out`, then int64 n, int64 base and float64 f, and writes
``out[i] = base + 3 * i + (int64)(2 * f)`` for every i < n (one thread per i; fill_expected).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .direct_host import NULL, ffi, member

SIMT, SUBGROUP_SHUFFLE, FLOAT16, FLOAT64, SERIALIZE = (1 << i for i in range(5))
FLAG_NAMES = {SIMT: "SIMT", SUBGROUP_SHUFFLE: "SUBGROUP_SHUFFLE", FLOAT16: "FLOAT16",
              FLOAT64: "FLOAT64", SERIALIZE: "SERIALIZE"}
ALL_FLAGS = SIMT | SUBGROUP_SHUFFLE | FLOAT16 | FLOAT64 | SERIALIZE
ARG_BUFFER, ARG_INT64, ARG_FLOAT64 = 0, 1, 2
REQUIRED = ("get_target_info", "compile", "get_function", "launch", "unload")
SENTINEL = 0x5EED  # what *out holds before a call that must leave it untouched on error
MAX_DIALECTS = 64  # a dialects list longer than this is taken as not NULL-terminated

FILL_NAME = "hwcheck_fill"
BROKEN_NAME = "hwcheck_broken"

_FILL = {
    "c99": """#include <stdint.h>
void hwcheck_fill(int64_t gx, int64_t gy, int64_t gz, void *const *args) {
  int64_t *out = (int64_t *)args[0];
  int64_t n = *(const int64_t *)args[1];
  int64_t base = *(const int64_t *)args[2];
  double f = *(const double *)args[3];
  (void)gy;
  (void)gz;
  if (gx < n) out[gx] = base + 3 * gx + (int64_t)(2.0 * f);
}
""",
    "opencl-c-1.2": """{pragma}
__kernel void hwcheck_fill(__global long *out, ulong out_offset, long n, long base, {real} f) {{
  __global long *o = (__global long *)((__global char *)out + out_offset);
  long i = (long)get_global_id(0);
  if (i < n) o[i] = base + 3 * i + (long)(({real})2 * f);
}}
""",
    "cuda-c++17": """extern "C" __global__
void hwcheck_fill(long long *out, long long n, long long base, double f) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = base + 3 * i + (long long)(2.0 * f);
}
""",
}
_BROKEN = {
    "c99": "void hwcheck_broken(void) { int x = hwcheck_undeclared_name + ; }\n",
    "opencl-c-1.2": "__kernel void hwcheck_broken(__global int *p) "
                    "{ p[0] = hwcheck_undeclared_name + ; }\n",
    "cuda-c++17": 'extern "C" __global__ void hwcheck_broken(int *p) '
                  "{ p[0] = hwcheck_undeclared_name + ; }\n",
}
KNOWN_DIALECTS = tuple(_FILL)


def fill_source(dialect: str, info: TargetInfo) -> str:
    """The fill kernel in `dialect` (one of KNOWN_DIALECTS) for a target with `info`'s flags."""
    src = _FILL[dialect]
    if dialect == "opencl-c-1.2":
        fp64 = bool(info.flags & FLOAT64)
        src = src.format(pragma="#pragma OPENCL EXTENSION cl_khr_fp64 : enable" if fp64 else "",
                         real="double" if fp64 else "float")
    return src


def broken_source(dialect: str) -> str:
    return _BROKEN[dialect]


def fill_expected(n: int, base: int, f: float) -> np.ndarray:
    return base + 3 * np.arange(n, dtype=np.int64) + np.int64(int(2.0 * f))


def fill_shape(info: TargetInfo, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, group) covering n threads: groups of min(64, max_group_size) on SIMT targets,
    one item per group ({1,1,1}) otherwise."""
    group = min(64, max(1, info.max_group_size)) if info.flags & SIMT else 1
    return ((n + group - 1) // group, 1, 1), (group, 1, 1)


@dataclass
class TargetInfo:
    dialects: list[str]
    architecture: str | None
    flags: int
    simd_width: int
    preferred_vector_width: int
    max_group_size: int
    compute_units: int
    local_memory_bytes: int
    max_grid_size: int
    dialects_terminated: bool = True

    def flag_names(self) -> list[str]:
        return [name for bit, name in FLAG_NAMES.items() if self.flags & bit]

    def to_json(self) -> dict[str, Any]:
        return {"dialects": self.dialects, "architecture": self.architecture,
                "flags": self.flag_names(), "simd_width": self.simd_width,
                "preferred_vector_width": self.preferred_vector_width,
                "max_group_size": self.max_group_size, "compute_units": self.compute_units,
                "local_memory_bytes": self.local_memory_bytes,
                "max_grid_size": self.max_grid_size}


@dataclass
class BufferArg:
    buffer: Any
    byte_offset: int = 0


def _text(ptr) -> str | None:
    return None if ptr == NULL else ffi.string(ptr).decode("utf-8", errors="replace")


class Codegen:
    """The plugin's HWP_CodegenTable, read as far as its struct_size reaches."""

    def __init__(self, h) -> None:
        self.h = h
        self.table = member(h.api, "HWP_PluginApi", "codegen")

    @property
    def present(self) -> bool:
        return self.table is not None

    @property
    def bare(self) -> bool:
        """A table of struct_size only (ABI 1.0/1.1): no target."""
        return self.table is not None and self.table.struct_size <= ffi.sizeof("size_t")

    def fn(self, name: str):
        return None if self.table is None else member(self.table, "HWP_CodegenTable", name)

    def raw_target_info(self, device: int, struct_size: int | None = None):
        """(status, the HWP_CodegenTargetInfo struct as filled)."""
        info = ffi.new("HWP_CodegenTargetInfo *")
        info.struct_size = struct_size or ffi.sizeof("HWP_CodegenTargetInfo")
        return self.fn("get_target_info")(device, info), info

    def target_info(self, device: int = 0) -> tuple[int, TargetInfo | None]:
        status, raw = self.raw_target_info(device)
        if status != 0:
            return status, None
        dialects, terminated = [], False
        if raw.dialects != NULL:
            for i in range(MAX_DIALECTS):
                if raw.dialects[i] == NULL:
                    terminated = True
                    break
                dialects.append(_text(raw.dialects[i]) or "")
        return status, TargetInfo(
            dialects, _text(raw.architecture), int(raw.flags), int(raw.simd_width),
            int(raw.preferred_vector_width), int(raw.max_group_size), int(raw.compute_units),
            int(raw.local_memory_bytes), int(raw.max_grid_size), terminated or not dialects)

    def compile(self, device: int, dialect: str, source: str, options: str | None = "",
                log_capacity: int = 16384) -> tuple[int, Any, str | None]:
        """(status, module or SENTINEL-cast handle, the log or None when none was written).
        The log buffer is pre-filled with 0xAB: bytes the plugin did not write stay so."""
        out = ffi.new("HWP_CodegenModule *", ffi.cast("HWP_CodegenModule", SENTINEL))
        log = ffi.new("char[]", log_capacity + 64)
        ffi.memmove(log, b"\xab" * (log_capacity + 64), log_capacity + 64)
        opts = NULL if options is None else options.encode()
        status = self.fn("compile")(device, dialect.encode(), source.encode(), opts, out, log,
                                    log_capacity)
        raw = bytes(ffi.buffer(log, log_capacity + 64))
        self.last_log_raw = raw
        text = None
        if b"\0" in raw[:log_capacity]:
            text = raw[:raw.index(b"\0")].decode("utf-8", errors="replace")
        return status, out[0], text

    def get_function(self, module, name: str) -> tuple[int, Any]:
        out = ffi.new("HWP_CodegenFunction *", ffi.cast("HWP_CodegenFunction", SENTINEL))
        return self.fn("get_function")(module, name.encode(), out), out[0]

    def launch(self, device: int, function, grid, group, args: list, stream=NULL,
               null_launch: bool = False, correlation_id: int = 0) -> int:
        """Launches with `args`: BufferArg, int (int64) or float (float64); a nonzero
        `correlation_id` asks a profiled device for the launch's device time."""
        if null_launch:
            return self.fn("launch")(device, function, stream, NULL)
        cargs = ffi.new("HWP_CodegenArg[]", max(1, len(args)))
        for i, a in enumerate(args):
            cargs[i].struct_size = ffi.sizeof("HWP_CodegenArg")
            if isinstance(a, BufferArg):
                cargs[i].kind = ARG_BUFFER
                cargs[i].value.buffer.buffer = a.buffer
                cargs[i].value.buffer.byte_offset = a.byte_offset
            elif isinstance(a, (int, np.integer)):
                cargs[i].kind = ARG_INT64
                cargs[i].value.i64 = int(a)
            else:
                cargs[i].kind = ARG_FLOAT64
                cargs[i].value.f64 = float(a)
        launch = ffi.new("HWP_CodegenLaunch *")
        launch.struct_size = ffi.sizeof("HWP_CodegenLaunch")
        launch.grid = list(grid)
        launch.group = list(group)
        launch.num_args = len(args)
        launch.args = cargs
        launch.correlation_id = correlation_id
        return self.fn("launch")(device, function, stream, launch)

    def unload(self, module) -> int:
        return self.fn("unload")(module)

    def serialize(self, module) -> tuple[int, bytes]:
        """(status, bytes): the size query, then the bytes."""
        size = ffi.new("size_t *")
        status = self.fn("serialize")(module, NULL, 0, size)
        if status != 0:
            return status, b""
        data = ffi.new("unsigned char[]", max(1, size[0]))
        status = self.fn("serialize")(module, data, size[0], size)
        return status, bytes(ffi.buffer(data, size[0])) if status == 0 else b""

    def serialize_into(self, module, capacity: int) -> int:
        size = ffi.new("size_t *", SENTINEL)
        data = ffi.new("unsigned char[]", max(1, capacity))
        return self.fn("serialize")(module, data, capacity, size)

    def deserialize(self, device: int, dialect: str, data: bytes) -> tuple[int, Any]:
        out = ffi.new("HWP_CodegenModule *", ffi.cast("HWP_CodegenModule", SENTINEL))
        buf = ffi.from_buffer(data) if data else ffi.new("char[]", 1)
        return self.fn("deserialize")(device, dialect.encode(), buf, len(data), out), out[0]


def is_sentinel(handle) -> bool:
    return int(ffi.cast("uintptr_t", handle)) == SENTINEL
