"""A minimal host, in Python over cffi, that drives a device plugin directly through the C ABI
(no runtime core involved): it loads a private copy of the plugin library, collects kernel
registrations, and wraps the device/memory/stream tables and kernel calls.

It is a faithful HWP_HostApi: it reads every plugin struct only as far as its struct_size
reaches (an optional function beyond it, or NULL, is None here), and validate() applies the
checks a host makes before it accepts a plugin (major version, struct sizes, required functions),
each named by its stage so that hwcheck's abi suite can report exactly which one failed.

    python -m hwport.conformance.direct_host PLUGIN.so [ENV_JSON]

loads a plugin in this (throwaway) process and prints one JSON line: the first stage that
failed, or "ok" (hwcheck's isolated probe)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hwport.conformance import abi_ffi

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
NOT_SUPPORTED = 3
NOT_READY = 4
NOT_FOUND = 5
DEVICE_ERROR = 6
VERSION_MISMATCH = 7
INTERNAL = 8
ABI_MAJOR = abi_ffi.constants()["HWP_ABI_VERSION_MAJOR"]
ABI_MINOR = abi_ffi.constants()["HWP_ABI_VERSION_MINOR"]

# What a host checks before it accepts a plugin, in order; a later stage assumes the earlier
# ones passed (the abi suite reports each as its own case).
LOAD_STAGES = ("load", "entry", "init", "abi_major", "struct_sizes", "required_functions")

# The required prefix of each struct (plugin.h / device.h): its last required field.
REQUIRED_PREFIX = {
    "HWP_PluginApi": "get_last_error",
    "HWP_DeviceTable": "synchronize_device",
    "HWP_MemoryTable": "copy_d2d",
    "HWP_StreamTable": "synchronize_stream",
}
REQUIRED_FUNCTIONS = {
    "HWP_DeviceTable": ("get_device_count", "synchronize_device"),
    "HWP_MemoryTable": ("allocate", "deallocate", "copy_h2d", "copy_d2h", "copy_d2d"),
    "HWP_StreamTable": ("create_stream", "destroy_stream", "synchronize_stream"),
}


def field_end(ctype: str, name: str) -> int:
    """offsetof(ctype, name) + sizeof(that field): the struct_size that covers the field."""
    fields = dict(ffi.typeof(ctype).fields)
    return fields[name].offset + ffi.sizeof(fields[name].type)


def covers(ptr, ctype: str, name: str) -> bool:
    """HWP_HAS_FIELD: `ptr` (a struct that starts with struct_size) reaches field `name`."""
    return ptr != NULL and ptr.struct_size >= field_end(ctype, name)


def member(ptr, ctype: str, name: str):
    """The field when struct_size covers it and it is not NULL, else None."""
    if not covers(ptr, ctype, name):
        return None
    value = getattr(ptr, name)
    if isinstance(value, ffi.CData) and value == NULL:
        return None
    return value


class LoadFailed(RuntimeError):
    """The host would reject the plugin: `stage` is one of LOAD_STAGES."""

    def __init__(self, stage: str, message: str):
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message

DTYPE_NAMES = [
    "bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
]
DTYPE_CODE = {name: code for code, name in enumerate(DTYPE_NAMES)}


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(np.bool_ if name == "bool" else name)


class NotSupportedError(RuntimeError):
    """The plugin lacks an optional function or table."""


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


def open_library(so_path, on_pass=lambda stage: None):
    """dlopen()s a private copy of the plugin (so that dlopen does not hand back an instance
    already loaded) and finds its entry point, without calling it: (lib, hwport_plugin_init).
    Raises LoadFailed at stage "load" or "entry"."""
    tmpdir = tempfile.mkdtemp(prefix="hwport_plugin_copy_")
    try:
        copy = Path(tmpdir) / Path(so_path).name
        try:
            shutil.copy2(so_path, copy)
            lib = abi_ffi.load_plugin(ffi, copy)
        except OSError as e:
            raise LoadFailed("load", f"dlopen({so_path}) failed: {e}") from None
        on_pass("load")
        try:
            init = lib.hwport_plugin_init
        except AttributeError:
            raise LoadFailed("entry", f"{so_path} does not export hwport_plugin_init") from None
        on_pass("entry")
        return lib, init
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)  # the mapping stays valid


# The attrs dict key under which get_attr keeps arrays and strings alive until the kernel returns.
KEEP_ALIVE = "\0keep"


def _write_attr(v: Any, type_: int, out: Any, count: Any, keep: list[Any]) -> int:
    """get_attr's conversion of attribute value v to HWP_AttrType type_ (exact or refused)."""
    if type_ == 0:  # BOOL
        if isinstance(v, (bool, np.bool_)):
            ffi.cast("uint8_t *", out)[0] = int(v)
            return OK
        return INVALID_ARGUMENT
    if type_ == 1:  # INT64
        if isinstance(v, (bool, int, np.integer)) and -(1 << 63) <= int(v) < (1 << 63):
            ffi.cast("int64_t *", out)[0] = int(v)
            return OK
        if isinstance(v, float) and v.is_integer() and -(2.0**63) <= v < 2.0**63:
            ffi.cast("int64_t *", out)[0] = int(v)
            return OK
        return INVALID_ARGUMENT
    if type_ == 2:  # FLOAT64
        if isinstance(v, (float, np.floating)):
            ffi.cast("double *", out)[0] = float(v)
            return OK
        if isinstance(v, (bool, int, np.integer)) and int(float(v)) == int(v):
            ffi.cast("double *", out)[0] = float(v)
            return OK
        return INVALID_ARGUMENT
    if type_ == 3 and isinstance(v, str):  # STRING
        text = ffi.new("char[]", v.encode())
        keep.append(text)
        ffi.cast("const char **", out)[0] = text
        return OK
    if type_ == 4 and isinstance(v, (list, tuple)) and all(
            isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v):
        arr = ffi.new("int64_t[]", [int(e) for e in v] or [0])  # INT64_ARRAY
        keep.append(arr)
        ffi.cast("const int64_t **", out)[0] = arr
        if count != NULL:
            count[0] = len(v)
        return OK
    return INVALID_ARGUMENT


class DirectHost:
    """Loads a fresh instance of the plugin (a private copy of the .so, so dlopen does not hand
    back an already-initialised one) with the given environment, and calls hwport_plugin_init.

    A library that cannot be opened or has no entry point raises LoadFailed ("load"/"entry");
    a failed init leaves `api` None with `init_status`/`init_message` saying why. `host_extra`
    appends that many zero bytes to the HWP_HostApi (a pretend newer minor of the host)."""

    def __init__(self, so_path, env: dict | None = None, abi_major: int = 1, abi_minor: int = 0,
                 host_extra: int = 0, on_pass=lambda stage: None):
        self.so_path = str(so_path)
        self.registrations: dict[tuple[str, int], Registration] = {}
        self.logs: list[tuple[int, str]] = []
        self._log_lock = threading.Lock()
        self._in_init = False
        self._make_callbacks()

        saved = {k: os.environ.get(k) for k in (env or {})}
        try:
            for k, v in (env or {}).items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            self.lib, init = open_library(so_path, on_pass)
            self._host_mem = ffi.new("char[]", ffi.sizeof("HWP_HostApi") + host_extra)
            self.host = ffi.cast("HWP_HostApi *", self._host_mem)
            self.host.struct_size = ffi.sizeof("HWP_HostApi") + host_extra
            self.host.abi_major = abi_major
            self.host.abi_minor = abi_minor
            self.host.host_context = NULL
            self.host.register_kernel = self._cb_register
            self.host.log = self._cb_log
            self.host.trace_event = self._cb_trace
            out = ffi.new("HWP_PluginApi **")
            self._in_init = True
            try:
                self.init_status = init(self.host, out)
            finally:
                self._in_init = False
            self.api_out = out[0]
            self.api = out[0] if self.init_status == OK and out[0] != NULL else None
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.init_message = self._describe_init()
        self.dev = self.mem = self.streams = self.profiler = None
        if self.api is not None:
            self.dev = member(self.api, "HWP_PluginApi", "device")
            self.mem = member(self.api, "HWP_PluginApi", "memory")
            self.streams = member(self.api, "HWP_PluginApi", "stream")
            self.profiler = member(self.api, "HWP_PluginApi", "profiler")

    def _describe_init(self) -> str:
        """Why init failed, with what the plugin said (plugin.h: on error *out may be set only
        so that the host can read get_last_error)."""
        if self.init_status == OK and self.api_out != NULL:
            return ""
        if self.init_status == OK:
            why = "hwport_plugin_init returned HWP_OK but no HWP_PluginApi (*out is NULL)"
        else:
            status = STATUS_NAMES.get(self.init_status, self.init_status)
            why = f"hwport_plugin_init failed with {status}"
            get_err = member(self.api_out, "HWP_PluginApi", "get_last_error")
            if get_err is not None:
                msg = get_err()
                if msg != NULL and ffi.string(msg):
                    why += f": {ffi.string(msg).decode(errors='replace')}"
        if self.logs:
            why += " (logged: " + "; ".join(m for _, m in self.logs) + ")"
        return why

    # ---- the host's acceptance checks ---------------------------------------------------
    def validate(self, on_pass=lambda stage: None) -> None:
        """Raises LoadFailed for the first check a host would reject this plugin for."""
        for stage in LOAD_STAGES[2:]:
            problem = self.check_stage(stage)
            if problem:
                raise LoadFailed(stage, problem)
            on_pass(stage)

    def check_stage(self, stage: str) -> str:
        """The problem found by one acceptance check ("" when it passes)."""
        return getattr(self, f"_check_{stage}")()

    def _check_init(self) -> str:
        return self.init_message

    def _check_abi_major(self) -> str:
        api = self.api
        if not covers(api, "HWP_PluginApi", "abi_minor"):
            return (f"HWP_PluginApi.struct_size {api.struct_size} does not reach the versions "
                    f"(needs {field_end('HWP_PluginApi', 'abi_minor')})")
        if api.abi_major != ABI_MAJOR:
            return (f"plugin ABI major version {api.abi_major}, host {ABI_MAJOR} "
                    f"(plugin {api.abi_major}.{api.abi_minor}): majors must be equal")
        return ""

    def _check_struct_sizes(self) -> str:
        problems = []
        tables = [("HWP_PluginApi", self.api)]
        if covers(self.api, "HWP_PluginApi", REQUIRED_PREFIX["HWP_PluginApi"]):
            tables += [("HWP_DeviceTable", self.dev), ("HWP_MemoryTable", self.mem),
                       ("HWP_StreamTable", self.streams)]
        for ctype, ptr in tables:
            if ptr is None:
                continue  # a missing table is required_functions' business
            need = field_end(ctype, REQUIRED_PREFIX[ctype])
            if ptr.struct_size < need:
                problems.append(f"{ctype}.struct_size {ptr.struct_size} < {need} (the v1 "
                                f"required part, up to {REQUIRED_PREFIX[ctype]})")
        return "; ".join(problems)

    def _check_required_functions(self) -> str:
        missing = []
        if member(self.api, "HWP_PluginApi", "get_last_error") is None:
            missing.append("HWP_PluginApi.get_last_error")
        for ctype, ptr, name in (("HWP_DeviceTable", self.dev, "device"),
                                 ("HWP_MemoryTable", self.mem, "memory"),
                                 ("HWP_StreamTable", self.streams, None)):
            if ptr is None:
                if name:
                    missing.append(f"HWP_PluginApi.{name} (the table)")
                continue
            missing += [f"{ctype}.{fn}" for fn in REQUIRED_FUNCTIONS[ctype]
                        if member(ptr, ctype, fn) is None]
        if not self.registrations and member(self.api, "HWP_PluginApi", "codegen") is None:
            missing.append("kernels (none registered) or a codegen table")
        return ", ".join(missing) + " missing (NULL or beyond struct_size)" if missing else ""

    # ---- optional functions -------------------------------------------------------------
    def optional(self, table: str, name: str):
        """An optional function of the device/memory/stream/profiler table, or None when
        absent."""
        ptr, ctype = {"device": (self.dev, "HWP_DeviceTable"),
                      "memory": (self.mem, "HWP_MemoryTable"),
                      "stream": (self.streams, "HWP_StreamTable"),
                      "profiler": (self.profiler, "HWP_ProfilerTable")}[table]
        return None if ptr is None else member(ptr, ctype, name)

    def require(self, table: str, name: str):
        """Like optional(), but a missing function raises NotSupportedError."""
        fn = self.optional(table, name)
        if fn is None:
            raise NotSupportedError(f"the plugin has no {table}.{name}")
        return fn

    # ---- callbacks --------------------------------------------------------------------
    def _make_callbacks(self) -> None:
        @ffi.callback("HWP_Status(void *, const HWP_KernelRegistration *)")
        def register(_ctx, reg):
            try:
                if not self._in_init:  # plugin.h: only valid during hwport_plugin_init
                    return INVALID_ARGUMENT
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
                if key not in attrs or key.startswith(KEEP_ALIVE):
                    return NOT_FOUND
                return _write_attr(attrs[key], type_, out, count,
                                   attrs.setdefault(KEEP_ALIVE, []))
            except Exception:  # noqa: BLE001 -- HWP_ERROR_INTERNAL instead of unwinding into C
                return 8

        @ffi.callback("HWP_Status(const HWP_KernelContext *, uint64_t, HWP_Buffer *)")
        def allocate_workspace(_ctx, _nbytes, _out):
            return 3  # NOT_SUPPORTED: none of the reference kernels needs workspace

        self._cb_register, self._cb_log, self._cb_trace = register, log, trace
        self._cb_get_attr, self._cb_workspace = get_attr, allocate_workspace

    # ---- errors -----------------------------------------------------------------------
    def last_error(self) -> str:
        msg = self.api.get_last_error()
        return "" if msg == NULL else ffi.string(msg).decode(errors="replace")

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

    def init_devices(self) -> None:
        """Calls the optional init_device for every device, as a host does before first use."""
        init = self.optional("device", "init_device")
        if init is not None:
            for d in range(self.device_count()):
                self.check(init(d), f"init_device({d})")

    # ---- memory -----------------------------------------------------------------------
    def alloc(self, nbytes: int, device: int = 0):
        out = ffi.new("HWP_Buffer *")
        self.check(self.mem.allocate(device, nbytes, out), "allocate")
        return out[0]

    def free(self, buf, device: int = 0) -> None:
        self.check(self.mem.deallocate(device, buf), "deallocate")

    def stats(self, device: int = 0) -> dict:
        fn = self.require("memory", "get_memory_stats")
        s = ffi.new("HWP_MemoryStats *")
        s.struct_size = ffi.sizeof("HWP_MemoryStats")
        self.check(fn(device, s), "get_memory_stats")
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

    def query_stream(self, stream, device: int = 0) -> int:
        """HWP_OK or HWP_ERROR_NOT_READY; any other status raises."""
        status = self.require("stream", "query_stream")(device, stream)
        if status not in (OK, NOT_READY):
            self.check(status, "query_stream")
        return status

    def create_event(self, device: int = 0):
        out = ffi.new("HWP_Event *")
        self.check(self.require("stream", "create_event")(device, out), "create_event")
        return out[0]

    def destroy_event(self, event, device: int = 0) -> None:
        self.check(self.require("stream", "destroy_event")(device, event), "destroy_event")

    def record_event(self, stream, event, device: int = 0) -> None:
        self.check(self.require("stream", "record_event")(device, stream, event), "record_event")

    def wait_event(self, stream, event, device: int = 0) -> None:
        self.check(self.require("stream", "stream_wait_event")(device, stream, event),
                   "stream_wait_event")

    def sync_event(self, event, device: int = 0) -> None:
        self.check(self.require("stream", "synchronize_event")(device, event),
                   "synchronize_event")

    def query_event(self, event, device: int = 0) -> int:
        status = self.require("stream", "query_event")(device, event)
        if status not in (OK, NOT_READY):
            self.check(status, "query_event")
        return status

    # ---- stream-ordered copies and memset (optional; a NULL stream means synchronous) ----
    # The host keeps `data`/`out` alive and unchanged until the stream has passed the copy.
    def h2d_async(self, buf, data: np.ndarray, offset: int = 0, stream=NULL,
                  device: int = 0) -> None:
        assert data.flags.c_contiguous
        fn = self.require("memory", "copy_h2d_async")
        self.check(fn(device, stream, buf, offset, ffi.from_buffer(data), data.nbytes),
                   "copy_h2d_async")

    def d2h_async(self, out: np.ndarray, buf, offset: int = 0, stream=NULL,
                  device: int = 0) -> None:
        assert out.flags.c_contiguous and out.flags.writeable
        fn = self.require("memory", "copy_d2h_async")
        self.check(fn(device, stream, ffi.from_buffer(out), buf, offset, out.nbytes),
                   "copy_d2h_async")

    def d2d(self, dst, src, nbytes: int, dst_offset: int = 0, src_offset: int = 0,
            device: int = 0) -> None:
        self.check(self.mem.copy_d2d(device, dst, dst_offset, src, src_offset, nbytes),
                   "copy_d2d")

    def d2d_async(self, dst, src, nbytes: int, dst_offset: int = 0, src_offset: int = 0,
                  stream=NULL, device: int = 0) -> None:
        fn = self.require("memory", "copy_d2d_async")
        self.check(fn(device, stream, dst, dst_offset, src, src_offset, nbytes),
                   "copy_d2d_async")

    def memset(self, buf, value: int, nbytes: int, offset: int = 0, stream=NULL,
               device: int = 0) -> None:
        fn = self.require("memory", "memset_async")
        self.check(fn(device, stream, buf, offset, value, nbytes), "memset_async")

    # ---- kernels ----------------------------------------------------------------------
    def call_kernel(self, op: str, dtype: int, inputs: list[View], outputs: list[View],
                    attrs: dict | None = None, stream=NULL, device: int = 0,
                    scramble: bool = True, correlation_id: int = 0) -> int:
        reg = self.registrations[(op, dtype)]
        ctx = ffi.new("HWP_KernelContext *")
        ctx.struct_size = ffi.sizeof("HWP_KernelContext")
        ctx.correlation_id = correlation_id
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


def probe(so_path: str, env: dict[str, str | None] | None = None,
          on_pass=lambda stage: None) -> dict[str, Any]:
    """Loads the plugin here and runs the host's acceptance checks: {"stage": the first that
    failed, or "ok"; "message": why}. on_pass(stage) is called as each stage passes, so that
    a parent watching this process knows where it was if it dies."""
    try:
        h = DirectHost(so_path, env=env, on_pass=on_pass)
        h.validate(on_pass)
    except LoadFailed as e:
        return {"stage": e.stage, "message": e.message}
    return {"stage": "ok", "message": "", "device_type": _device_type(h)}


def _device_type(h: DirectHost) -> str:
    value = member(h.api, "HWP_PluginApi", "device_type")
    return "" if value is None else ffi.string(value).decode(errors="replace")


def _main(argv: list[str]) -> int:
    path, env = argv[0], json.loads(argv[1]) if len(argv) > 1 else None
    mark = argv[2] if len(argv) > 2 else ""

    def say(obj: dict[str, Any]) -> None:
        print(mark + json.dumps(obj), flush=True)

    say({"ready": True})  # the harness is up: the parent's probe timeout starts now
    say(probe(path, env, lambda stage: say({"passed": stage})))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
