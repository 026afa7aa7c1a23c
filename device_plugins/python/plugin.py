"""The base class of a device plugin written in Python.

A subclass sets ``device_type`` and implements the required methods (``synchronize``,
``allocate``, ``copy_h2d``, ``copy_d2h``, ``copy_d2d``) and any optional ones; ``tables.py``
turns it into the C tables of the ABI (docs/abi.md), so the host cannot tell it from a plugin
written in C. An optional method counts as provided when the subclass overrides it: the C
table then holds a function, else NULL (and the host's documented fallback applies).

What the base class does for every plugin, so that a port need not:
- checks device indices, NULL pointers, zero-byte allocations and copy bounds (a buffer's size
  is known from its allocation) and answers HWP_ERROR_INVALID_ARGUMENT;
- keeps the memory accounting (``get_memory_stats``) and enforces a limit, from
  ``memory_limit()`` (default: the environment variable ``HWPORT_<DEVICE_TYPE>_MEMORY_LIMIT``)
  with HWP_ERROR_OUT_OF_MEMORY;
- maps every buffer, stream and event object to an opaque handle;
- turns exceptions into status values: ``PluginError(status, text)`` keeps its status,
  ``MemoryError`` is OUT_OF_MEMORY, anything else INTERNAL, with the text in get_last_error.

Methods may be called from any host thread (each call holds the GIL while it runs).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from .views import DTYPE_CODES, KernelCall, header_enum

# HWP_Status codes, device flags and kernel flags, from the ABI headers.
_STATUS = header_enum("HWP_StatusCode")
OK = _STATUS["HWP_OK"]
INVALID_ARGUMENT = _STATUS["HWP_ERROR_INVALID_ARGUMENT"]
OUT_OF_MEMORY = _STATUS["HWP_ERROR_OUT_OF_MEMORY"]
NOT_SUPPORTED = _STATUS["HWP_ERROR_NOT_SUPPORTED"]
NOT_READY = _STATUS["HWP_ERROR_NOT_READY"]
NOT_FOUND = _STATUS["HWP_ERROR_NOT_FOUND"]
DEVICE_ERROR = _STATUS["HWP_ERROR_DEVICE"]
VERSION_MISMATCH = _STATUS["HWP_ERROR_VERSION_MISMATCH"]
INTERNAL = _STATUS["HWP_ERROR_INTERNAL"]

_DEVICE_FLAGS = header_enum("HWP_DeviceFlag", "device.h")
HOST_MEMORY = _DEVICE_FLAGS["HWP_DEVICE_HOST_MEMORY"]
FLOAT16_ARITHMETIC = _DEVICE_FLAGS["HWP_DEVICE_FLOAT16_ARITHMETIC"]
BFLOAT16_ARITHMETIC = _DEVICE_FLAGS["HWP_DEVICE_BFLOAT16_ARITHMETIC"]

ACCEPTS_STRIDED = header_enum("HWP_KernelFlag", "kernel.h")["HWP_KERNEL_ACCEPTS_STRIDED"]

# HWP_CodegenFlag bits of a codegen target (codegen.h).
_CODEGEN_FLAGS = header_enum("HWP_CodegenFlag", "codegen.h")
CODEGEN_SIMT = _CODEGEN_FLAGS["HWP_CODEGEN_SIMT"]
CODEGEN_SUBGROUP_SHUFFLE = _CODEGEN_FLAGS["HWP_CODEGEN_SUBGROUP_SHUFFLE"]
CODEGEN_FLOAT16 = _CODEGEN_FLAGS["HWP_CODEGEN_FLOAT16"]
CODEGEN_FLOAT64 = _CODEGEN_FLAGS["HWP_CODEGEN_FLOAT64"]
CODEGEN_SERIALIZE = _CODEGEN_FLAGS["HWP_CODEGEN_SERIALIZE"]


class PluginError(Exception):
    """Raised by a plugin method: the call returns ``status`` with the message as its error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class CompileError(PluginError):
    """Raised by ``codegen_compile`` for source that does not compile: the call returns
    HWP_ERROR_INVALID_ARGUMENT and ``log`` (the compiler's output) goes into the host's log
    buffer, truncated to its capacity."""

    def __init__(self, log: str, message: str = "the source does not compile") -> None:
        super().__init__(INVALID_ARGUMENT, message)
        self.log = log


@dataclass(frozen=True)
class CodegenTarget:
    """What ``codegen_target(device)`` returns: HWP_CodegenTargetInfo's fields (codegen.h,
    docs/codegen.md says how the compiler reads each). ``dialects`` preferred first;
    ``flags`` are CODEGEN_* bits (set CODEGEN_SERIALIZE only where codegen_serialize works)."""

    dialects: tuple[str, ...]
    architecture: str
    flags: int = 0
    simd_width: int = 1
    preferred_vector_width: int = 1
    max_group_size: int = 1
    compute_units: int = 1
    local_memory_bytes: int = 0
    max_grid_size: int = 0  # groups in grid dimension 0; 0 = 2^31 - 1


class BufferArg(NamedTuple):
    """A buffer argument of a codegen launch: the plugin's buffer object (None for a NULL
    buffer) and a byte offset into it. int64 arguments arrive as ``int``, float64 as
    ``float``."""

    buffer: Any
    byte_offset: int


@dataclass(frozen=True)
class Kernel:
    """One kernel registration: ``fn(call: KernelCall)`` for (op, dtype)."""

    op: str
    dtype: str
    fn: Callable[[KernelCall], Any]
    strided: bool = False


def kernel(op: str, dtypes: Iterable[str], strided: bool = False) -> Callable:
    """Marks a method ``fn(self, call)`` as the kernel of ``op`` for each of ``dtypes``."""

    def mark(fn: Callable) -> Callable:
        fn.__hwport_kernel__ = [*getattr(fn, "__hwport_kernel__", []),
                                (op, tuple(dtypes), strided)]
        return fn

    return mark


class Plugin:
    """Subclass it; one instance serves the process (built at ``hwport_plugin_init``)."""

    device_type: str = ""
    version: str = "0.1.0"
    flags: int = 0  # HWP_DeviceFlag bits of every device (HOST_MEMORY, ...)

    # ---- device table ------------------------------------------------------------------
    def device_count(self) -> int:
        """Number of devices (0 is valid: ``device_count_note`` then says why)."""
        return 1

    device_count_note: str = ""

    def synchronize(self, device: int) -> None:
        """REQUIRED. Returns once all work submitted to ``device``, on every stream, is done."""
        raise NotImplementedError

    def properties(self, device: int) -> dict[str, Any]:
        """Device properties (HWP_DeviceProperties field names). The base class fills
        name, total_memory (the memory limit, if any), memory_alignment and simd_width."""
        return {}

    # init_device(device), deinit_device(device), set_device(device): optional, override.

    # ---- memory table ------------------------------------------------------------------
    def memory_limit(self, device: int) -> int:
        """Bytes this device hands out at most (0: unlimited); allocations past it are
        OUT_OF_MEMORY. Default: ``HWPORT_<DEVICE_TYPE>_MEMORY_LIMIT`` (bytes)."""
        raw = os.environ.get(f"HWPORT_{self.device_type.upper()}_MEMORY_LIMIT", "")
        try:
            return max(int(raw), 0)
        except ValueError:
            return 0

    def allocate(self, device: int, nbytes: int) -> Any:
        """REQUIRED. A new buffer object of ``nbytes`` (> 0) bytes."""
        raise NotImplementedError

    def deallocate(self, device: int, buffer: Any) -> None:
        """Releases a buffer (default: drops the reference)."""

    def copy_h2d(self, device: int, dst: Any, dst_offset: int, src: memoryview) -> None:
        """REQUIRED. Synchronous: after the device's earlier work, ``src`` into ``dst``."""
        raise NotImplementedError

    def copy_d2h(self, device: int, dst: memoryview, src: Any, src_offset: int) -> None:
        """REQUIRED. Synchronous: ``len(dst)`` bytes of ``src`` from ``src_offset``."""
        raise NotImplementedError

    def copy_d2d(self, device: int, dst: Any, dst_offset: int, src: Any, src_offset: int,
                 nbytes: int) -> None:
        """REQUIRED. Synchronous device-to-device copy (the ranges may overlap)."""
        raise NotImplementedError

    # Optional, override to provide (stream is None for the NULL stream):
    #   copy_h2d_async(device, stream, dst, dst_offset, src: memoryview)
    #   copy_d2h_async(device, stream, dst: memoryview, src, src_offset)
    #   copy_d2d_async(device, stream, dst, dst_offset, src, src_offset, nbytes)
    #   memset(device, stream, dst, dst_offset, value, nbytes)
    #   host_address(device, buffer, offset) -> int       (HOST_MEMORY devices)
    #   device_address(device, buffer, offset) -> int     (DLPack export, ABI 1.1)

    # ---- stream and event table (optional as a whole: override create_stream) ----------
    #   create_stream(device) -> obj; destroy_stream(device, s); synchronize_stream(device, s)
    #   query_stream(device, s) -> bool (True: done)
    #   create_event(device) -> obj; destroy_event(device, e); record_event(device, s, e)
    #   synchronize_event(device, e); query_event(device, e) -> bool
    #   stream_wait_event(device, s, e)

    # ---- codegen table (optional as a whole: override codegen_target) -------------------
    # A device runtime plus a codegen target is a complete port: hwport's compiler renders
    # every op it has no kernel for in one of the target's dialects (docs/codegen.md: the
    # kernel conventions of "c99", "opencl-c-1.2", "cuda-c++17") and the methods below build
    # and launch it. The base class checks devices, dialects (compile and deserialize only see
    # one the target lists), handles, grid and group sizes (>= 1, within max_grid_size and
    # max_group_size) and argument kinds; a NULL stream launch is complete on return.
    #   codegen_target(device) -> CodegenTarget | None    (None: HWP_ERROR_NOT_SUPPORTED)
    #   codegen_compile(device, dialect, source, options: str) -> module   REQUIRED with it;
    #       raise CompileError(log) for source that does not compile
    #   codegen_function(module, name) -> function   REQUIRED; PluginError(NOT_FOUND) if none
    #   codegen_launch(device, function, stream, grid, group, args)   REQUIRED: enqueue on the
    #       stream and return; grid and group are (x, y, z), args [BufferArg | int | float]
    #   codegen_unload(module)   (default: drops the reference)
    #   codegen_serialize(module) -> bytes and codegen_deserialize(device, dialect, data) ->
    #       module: both or neither (any exception in deserialize: HWP_ERROR_INVALID_ARGUMENT,
    #       the host compiles the source again)

    # ---- kernels -----------------------------------------------------------------------
    def kernels(self) -> Iterator[Kernel]:
        """The kernels to register. Default: the methods marked with ``@kernel``."""
        for name in dir(type(self)):
            fn = getattr(type(self), name, None)
            for op, dtypes, strided in getattr(fn, "__hwport_kernel__", ()):
                bound = getattr(self, name)
                for dtype in dtypes:
                    yield Kernel(op, dtype, bound, strided)

    def shutdown(self) -> None:
        """Called once at host shutdown, after every device is synchronized."""


def provides(plugin: Plugin, name: str) -> bool:
    """True when ``plugin`` implements the optional method ``name`` (its class or a base
    other than Plugin defines it)."""
    for klass in type(plugin).__mro__:
        if klass is Plugin:
            return False
        if name in vars(klass):
            return True
    return False


def check_dtype(name: str) -> int:
    if name not in DTYPE_CODES:
        raise PluginError(INVALID_ARGUMENT, f"unknown dtype {name!r}; expected one of "
                          f"{', '.join(DTYPE_CODES)}")
    return DTYPE_CODES[name]
