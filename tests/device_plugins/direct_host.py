"""A minimal host, in Python over cffi, that drives a device plugin directly through the C ABI
(no runtime core involved): it loads a private copy of the plugin library, collects kernel
registrations, and wraps the device/memory/stream tables and kernel calls."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import abi_ffi
import numpy as np

ffi = abi_ffi.make_ffi()
NULL = ffi.NULL

STATUS_NAMES = {
    0: "HWP_OK",
    1: "HWP_ERROR_INVALID_ARGUMENT",
    2: "HWP_ERROR_OUT_OF_MEMORY",
    3: "HWP_ERROR_NOT_SUPPORTED",
    4: "HWP_ERROR_NOT_READY",
    5: "HWP_ERROR_NOT_FOUND",
    6: "HWP_ERROR_DEVICE",
    7: "HWP_ERROR_VERSION_MISMATCH",
    8: "HWP_ERROR_INTERNAL",
}
OK = 0
INVALID_ARGUMENT = 1
OUT_OF_MEMORY = 2
NOT_READY = 4
NOT_FOUND = 5
DEVICE_ERROR = 6
VERSION_MISMATCH = 7

DTYPE_NAMES = [
    "bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
]
DTYPE_CODE = {name: code for code, name in enumerate(DTYPE_NAMES)}


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(np.bool_ if name == "bool" else name)


class PluginError(RuntimeError):
    def __init__(self, what: str, status: int, message: str):
        super().__init__(f"{what} -> {STATUS_NAMES.get(status, status)}: {message}")
        self.status = status
        self.message = message


@dataclass
class Registration:
    op: str
    dtype: int
    flags: int
    fn: object
    user_data: object


@dataclass
class View:
    """An HWP_TensorView plus the host-owned arrays its shape/strides point to."""

    buffer: object
    byte_offset: int
    dtype: int
    shape: tuple
    strides: tuple | None  # in elements; None = pass strides NULL (contiguous)
    _keep: list = field(default_factory=list)

    def fill_struct(self, tv) -> None:
        tv.struct_size = ffi.sizeof("HWP_TensorView")
        tv.buffer = self.buffer
        tv.byte_offset = self.byte_offset
        tv.dtype = self.dtype
        tv.ndim = len(self.shape)
        if self.shape:
            shp = ffi.new("int64_t[]", list(self.shape))
            self._keep.append(shp)
            tv.shape = shp
        else:
            tv.shape = NULL
        if self.strides is not None and self.shape:
            st = ffi.new("int64_t[]", list(self.strides))
            self._keep.append(st)
            tv.strides = st
        else:
            tv.strides = NULL

    def scramble(self) -> None:
        """Overwrites the host arrays: a plugin that kept pointers to them would now misbehave."""
        for arr in self._keep:
            for i in range(len(arr)):
                arr[i] = -(1 << 40)
        self._keep.clear()


def contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


class DirectHost:
    """Loads a fresh instance of the plugin (a private copy of the .so, so dlopen does not hand
    back an already-initialised one) with the given environment, and calls hwport_plugin_init."""

    def __init__(self, so_path, env: dict | None = None, abi_major: int = 1, abi_minor: int = 0):
        self.registrations: dict[tuple[str, int], Registration] = {}
        self.logs: list[tuple[int, str]] = []
        self._log_lock = threading.Lock()
        self._make_callbacks()

        tmpdir = tempfile.mkdtemp(prefix="hwport_cpu_copy_")
        copy = Path(tmpdir) / Path(so_path).name
        shutil.copy2(so_path, copy)
        saved = {k: os.environ.get(k) for k in (env or {})}
        try:
            for k, v in (env or {}).items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            self.lib = abi_ffi.load_plugin(ffi, copy)
            self.host = ffi.new("HWP_HostApi *")
            self.host.struct_size = ffi.sizeof("HWP_HostApi")
            self.host.abi_major = abi_major
            self.host.abi_minor = abi_minor
            self.host.host_context = NULL
            self.host.register_kernel = self._cb_register
            self.host.log = self._cb_log
            self.host.trace_event = self._cb_trace
            out = ffi.new("HWP_PluginApi **")
            self.init_status = self.lib.hwport_plugin_init(self.host, out)
            # On failure the ABI has no way to reach get_last_error (it lives in *out).
            self.api = out[0] if self.init_status == OK else None
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            shutil.rmtree(tmpdir, ignore_errors=True)  # the mapping stays valid
        if self.api is not None:
            self.dev = self.api.device
            self.mem = self.api.memory
            self.streams = self.api.stream

    # ---- callbacks --------------------------------------------------------------------
    def _make_callbacks(self) -> None:
        @ffi.callback("HWP_Status(void *, const HWP_KernelRegistration *)")
        def register(_ctx, reg):
            try:
                op = ffi.string(reg.op_name).decode()
                if not op or reg.fn == NULL or not 0 <= reg.dtype < 10:
                    return INVALID_ARGUMENT
                self.registrations[(op, reg.dtype)] = Registration(
                    op, reg.dtype, reg.flags, reg.fn, reg.user_data
                )
                return OK
            except Exception:  # noqa: BLE001 -- never let a Python error cross the C boundary
                return 8

        @ffi.callback("void(void *, HWP_LogLevel, const char *)")
        def log(_ctx, level, message):
            with self._log_lock:
                self.logs.append((level, ffi.string(message).decode()))

        @ffi.callback("void(void *, const char *, int32_t, uint64_t, uint64_t)")
        def trace(_ctx, _name, _device, _b, _e):
            pass

        @ffi.callback("HWP_Status(const HWP_KernelContext *, const char *, HWP_AttrType, "
                      "void *, int64_t *)")
        def get_attr(ctx, name, type_, out, count):
            try:
                attrs = ffi.from_handle(ctx.host_context)
                key = ffi.string(name).decode()
                if key not in attrs:
                    return NOT_FOUND
                v = attrs[key]
                if type_ == 1:  # INT64
                    if isinstance(v, (bool, int)) and -(1 << 63) <= int(v) < (1 << 63):
                        ffi.cast("int64_t *", out)[0] = int(v)
                        return OK
                    if isinstance(v, float) and v.is_integer() and -(2.0**63) <= v < 2.0**63:
                        ffi.cast("int64_t *", out)[0] = int(v)
                        return OK
                    return INVALID_ARGUMENT
                if type_ == 2:  # FLOAT64
                    if isinstance(v, float):
                        ffi.cast("double *", out)[0] = v
                        return OK
                    if isinstance(v, (bool, int)) and int(float(v)) == int(v):
                        ffi.cast("double *", out)[0] = float(v)
                        return OK
                    return INVALID_ARGUMENT
                if type_ == 0 and isinstance(v, bool):  # BOOL
                    ffi.cast("uint8_t *", out)[0] = int(v)
                    return OK
                return INVALID_ARGUMENT
            except Exception:  # noqa: BLE001 -- HWP_ERROR_INTERNAL instead of unwinding into C
                return 8

        @ffi.callback("HWP_Status(const HWP_KernelContext *, uint64_t, HWP_Buffer *)")
        def allocate_workspace(_ctx, _nbytes, _out):
            return 3  # NOT_SUPPORTED: none of the reference kernels needs workspace

        self._cb_register, self._cb_log, self._cb_trace = register, log, trace
        self._cb_get_attr, self._cb_workspace = get_attr, allocate_workspace

    # ---- errors -----------------------------------------------------------------------
    def last_error(self) -> str:
        return ffi.string(self.api.get_last_error()).decode()

    def check(self, status: int, what: str) -> None:
        if status != OK:
            raise PluginError(what, status, self.last_error())

    def expect_error(self, status: int, expected: int, *needles: str) -> str:
        msg = self.last_error()
        got = STATUS_NAMES.get(status, status)
        assert status == expected, f"expected {STATUS_NAMES[expected]}, got {got} ({msg})"
        assert msg, "an error must come with a message"
        for needle in needles:
            assert needle in msg, f"{needle!r} not in {msg!r}"
        return msg

    # ---- device -----------------------------------------------------------------------
    def device_count(self) -> int:
        out = ffi.new("int32_t *")
        self.check(self.dev.get_device_count(out), "get_device_count")
        return out[0]

    def properties(self, device: int = 0):
        props = ffi.new("HWP_DeviceProperties *")
        props.struct_size = ffi.sizeof("HWP_DeviceProperties")
        self.check(self.dev.get_properties(device, props), "get_properties")
        return props

    def sync_device(self, device: int = 0) -> None:
        self.check(self.dev.synchronize_device(device), "synchronize_device")

    # ---- memory -----------------------------------------------------------------------
    def alloc(self, nbytes: int, device: int = 0):
        out = ffi.new("HWP_Buffer *")
        self.check(self.mem.allocate(device, nbytes, out), "allocate")
        return out[0]

    def free(self, buf, device: int = 0) -> None:
        self.check(self.mem.deallocate(device, buf), "deallocate")

    def stats(self, device: int = 0) -> dict:
        s = ffi.new("HWP_MemoryStats *")
        s.struct_size = ffi.sizeof("HWP_MemoryStats")
        self.check(self.mem.get_memory_stats(device, s), "get_memory_stats")
        return {k: getattr(s, k) for k in
                ("bytes_in_use", "peak_bytes_in_use", "bytes_limit", "num_allocs", "num_frees")}

    def h2d(self, buf, data: np.ndarray, offset: int = 0, device: int = 0) -> None:
        data = np.ascontiguousarray(data)
        self.check(self.mem.copy_h2d(device, buf, offset, ffi.from_buffer(data), data.nbytes),
                   "copy_h2d")

    def d2h(self, buf, nbytes: int, offset: int = 0, device: int = 0) -> bytes:
        out = bytearray(nbytes)
        self.check(self.mem.copy_d2h(device, ffi.from_buffer(out), buf, offset, nbytes), "copy_d2h")
        return bytes(out)

    def read(self, buf, dtype: np.dtype, shape, offset: int = 0, device: int = 0) -> np.ndarray:
        n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return np.frombuffer(self.d2h(buf, n, offset, device), dtype=dtype).reshape(shape)

    # ---- streams ----------------------------------------------------------------------
    def create_stream(self, device: int = 0):
        out = ffi.new("HWP_Stream *")
        self.check(self.streams.create_stream(device, out), "create_stream")
        return out[0]

    def destroy_stream(self, stream, device: int = 0) -> None:
        self.check(self.streams.destroy_stream(device, stream), "destroy_stream")

    def sync_stream(self, stream, device: int = 0) -> None:
        self.check(self.streams.synchronize_stream(device, stream), "synchronize_stream")

    def create_event(self, device: int = 0):
        out = ffi.new("HWP_Event *")
        self.check(self.streams.create_event(device, out), "create_event")
        return out[0]

    # ---- kernels ----------------------------------------------------------------------
    def call_kernel(self, op: str, dtype: int, inputs: list[View], outputs: list[View],
                    attrs: dict | None = None, stream=NULL, device: int = 0,
                    scramble: bool = True) -> int:
        reg = self.registrations[(op, dtype)]
        ctx = ffi.new("HWP_KernelContext *")
        ctx.struct_size = ffi.sizeof("HWP_KernelContext")
        ctx.device = device
        ctx.stream = stream
        ctx.num_inputs = len(inputs)
        ctx.num_outputs = len(outputs)
        tin = ffi.new("HWP_TensorView[]", max(len(inputs), 1))
        tout = ffi.new("HWP_TensorView[]", max(len(outputs), 1))
        for i, v in enumerate(inputs):
            v.fill_struct(tin[i])
        for i, v in enumerate(outputs):
            v.fill_struct(tout[i])
        ctx.inputs = tin if inputs else NULL
        ctx.outputs = tout
        ctx.user_data = reg.user_data
        handle = ffi.new_handle(dict(attrs or {}))
        ctx.host_context = handle
        ctx.get_attr = self._cb_get_attr
        ctx.allocate_workspace = self._cb_workspace
        status = reg.fn(ctx)
        if scramble:  # everything reachable from ctx dies with the call
            for v in [*inputs, *outputs]:
                v.scramble()
            for arr in (tin, tout):
                for i in range(len(arr)):
                    arr[i].shape = NULL
                    arr[i].buffer = NULL
        return status


class DeviceArray:
    """A contiguous numpy array uploaded to one device allocation; numpy views of `host` map to
    tensor views of the buffer (same byte offsets, element strides)."""

    def __init__(self, h: DirectHost, host: np.ndarray, device: int = 0, pad: int = 0):
        self.h, self.device = h, device
        host = np.asarray(host)
        self.host = host.copy(order="C") if not host.flags.c_contiguous else host
        self.pad = pad  # bytes before the data, to exercise byte_offset
        self.buffer = h.alloc(max(self.host.nbytes + pad, 1), device)
        if self.host.nbytes:
            h.h2d(self.buffer, self.host, offset=pad, device=device)

    @classmethod
    def empty(cls, h: DirectHost, shape, dtype: np.dtype, device: int = 0, pad: int = 0):
        return cls(h, np.zeros(shape, dtype=dtype), device, pad)

    def view(self, v: np.ndarray | None = None) -> View:
        """The tensor view of numpy view `v` of self.host (default: all of it, contiguous)."""
        if v is None:
            v = self.host
        item = self.host.dtype.itemsize
        if v.size == 0:
            offset = 0
        else:
            assert np.may_share_memory(v, self.host), "not a view of this DeviceArray's host array"
            offset = v.__array_interface__["data"][0] - self.host.__array_interface__["data"][0]
        strides = tuple(s // item for s in v.strides)
        return View(self.buffer, self.pad + offset, DTYPE_CODE[_name(self.host.dtype)],
                    tuple(v.shape), strides)

    def read(self) -> np.ndarray:
        if self.host.nbytes == 0:
            return self.host.copy()
        return self.h.read(self.buffer, self.host.dtype, self.host.shape, offset=self.pad,
                           device=self.device)

    def free(self) -> None:
        self.h.free(self.buffer, self.device)


def _name(dt: np.dtype) -> str:
    if dt == np.bool_:
        return "bool"
    return dt.name
