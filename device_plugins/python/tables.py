"""Turns a Plugin instance into the C tables of the ABI: one cffi callback per function.

Called by the embedded runtime (_hwport_pyembed, see embed_build.py) from the plugin's
hwport_plugin_init. Every callback returns a status and never lets an exception out: errors
become HWP_Status values with their text in the calling thread's get_last_error; a failure of
the conversion itself is caught by cffi (``onerror``) and reported the same way. cffi's
callbacks take the GIL themselves, so the host may call them from any of its threads.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from . import codegen_table
from . import plugin as P
from .views import DTYPE_NAMES, KernelCall, View

_LIVE: list[Any] = []  # every bridge: the C side keeps pointers into it for the process's life


def _immortal(obj: Any) -> None:
    """One reference to ``obj`` that is never released, not even when the interpreter clears
    module globals at exit: the host may still call the tables then (a compiled module or a
    tensor released by the garbage collector calls unload or deallocate), and a freed cffi
    callback would be a jump into freed memory."""
    import ctypes

    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))

# Optional functions: table field -> the Plugin method that provides it.
_OPTIONAL_DEVICE = ("init_device", "deinit_device", "set_device")
_STREAM_FIELDS = ("create_stream", "destroy_stream", "synchronize_stream", "query_stream",
                  "create_event", "destroy_event", "record_event", "synchronize_event",
                  "query_event", "stream_wait_event")


def _write_text(ffi: Any, dst: Any, size: int, text: str) -> None:
    data = text.encode("utf-8", "replace")[: max(size - 1, 0)]
    ffi.memmove(dst, data, len(data))
    dst[len(data)] = b"\0"


def _describe(exc: BaseException) -> str:
    where = traceback.extract_tb(exc.__traceback__)
    at = f" (at {Path(where[-1].filename).name}:{where[-1].lineno})" if where else ""
    return f"{type(exc).__name__}: {exc}{at}"


class Bridge:
    """The C-side state of one plugin instance: handles, accounting, last errors, callbacks."""

    def __init__(self, ffi: Any, lib: Any, plugin: P.Plugin) -> None:
        self.ffi, self.lib, self.plugin = ffi, lib, plugin
        self.keep: list[Any] = []
        self.local = threading.local()
        self.empty = ffi.new("char[]", b"")
        self.lock = threading.Lock()
        self.objects: dict[int, Any] = {}
        self.sizes: dict[int, tuple[int, int]] = {}  # buffer handle -> (device, nbytes)
        self.wrapped: set[int] = set()
        self.next_handle = 0x1000
        self.count = int(plugin.device_count())
        self.streams = P.provides(plugin, "create_stream")
        self.stats = [dict(in_use=0, peak=0, allocs=0, frees=0) for _ in range(self.count)]
        self.limits = [self._limit(d) for d in range(self.count)]
        self.props: dict[int, dict[str, Any]] = {}

    # ---- errors ------------------------------------------------------------------------
    def fail(self, status: int, message: str) -> int:
        self.local.error = self.ffi.new("char[]", message.encode("utf-8", "replace")[:4000])
        return status

    def last_error(self) -> Any:
        return getattr(self.local, "error", self.empty)

    def callback(self, ctype: Any, name: str, fn: Any) -> Any:
        def call(*args: Any) -> Any:
            try:
                result = fn(*args)
                return P.OK if result is None else result
            except P.PluginError as exc:
                return self.fail(exc.status, f"{name}: {exc}")
            except MemoryError as exc:
                return self.fail(P.OUT_OF_MEMORY, f"{name}: out of memory ({exc})")
            except BaseException as exc:  # noqa: BLE001 - nothing may cross the C ABI
                return self.fail(P.INTERNAL, f"{name}: {_describe(exc)}")

        def onerror(exc_type: Any, exc: BaseException, tb: Any) -> None:
            self.fail(P.INTERNAL, f"{name}: {exc_type.__name__}: {exc}")

        returns = ctype.result  # a status, or (get_last_error, shutdown) a pointer or void
        error = P.INTERNAL if returns.kind == "primitive" else None
        if returns.kind == "pointer":
            fallback = self.empty

            def call(*args: Any, _fn: Any = fn) -> Any:  # get_last_error: never raises
                try:
                    return _fn(*args)
                except BaseException:  # noqa: BLE001 - get_last_error never fails
                    return fallback

        cb = self.ffi.callback(ctype, call, error=error, onerror=onerror)
        self.keep.append(cb)
        return cb

    # ---- handles and arguments ---------------------------------------------------------
    def put(self, obj: Any) -> int:
        with self.lock:
            handle = self.next_handle
            self.next_handle += 16
            self.objects[handle] = obj
        return handle

    def get(self, ptr: Any, what: str) -> Any:
        handle = int(self.ffi.cast("uintptr_t", ptr))
        try:
            return self.objects[handle]
        except KeyError:
            raise P.PluginError(P.INVALID_ARGUMENT, f"{what} {handle:#x} is not one of this "
                                "plugin's handles") from None

    def stream_obj(self, ptr: Any) -> Any:
        return None if ptr == self.ffi.NULL else self.get(ptr, "stream")

    def device(self, device: int) -> int:
        if not 0 <= device < self.count:
            raise P.PluginError(P.INVALID_ARGUMENT, f"no device {device} (this plugin has "
                                f"{self.count})")
        return device

    def out_ptr(self, out: Any, what: str) -> None:
        if out == self.ffi.NULL:
            raise P.PluginError(P.INVALID_ARGUMENT, f"{what} is NULL")

    def buffer(self, ptr: Any, offset: int, nbytes: int, what: str) -> Any:
        if ptr == self.ffi.NULL:
            raise P.PluginError(P.INVALID_ARGUMENT, f"{what} buffer is NULL")
        obj = self.get(ptr, f"{what} buffer")
        size = self.sizes[int(self.ffi.cast("uintptr_t", ptr))][1]
        if offset + nbytes > size:
            raise P.PluginError(P.INVALID_ARGUMENT, f"{what} range [{offset}, {offset + nbytes})"
                                f" is outside its buffer of {size} bytes")
        return obj

    def host(self, ptr: Any, nbytes: int, what: str) -> memoryview:
        if nbytes and ptr == self.ffi.NULL:
            raise P.PluginError(P.INVALID_ARGUMENT, f"{what} host pointer is NULL")
        return memoryview(self.ffi.buffer(ptr, nbytes)) if nbytes else memoryview(bytearray())

    def _limit(self, device: int) -> int:
        return int(self.plugin.memory_limit(device) or 0)

    # ---- ordering: a NULL stream means after all of the device's work, complete on return ----
    def ordered(self, device: int, stream: Any, fn: Any, *args: Any, nbytes: int = 1) -> None:
        if nbytes == 0:  # an empty copy or fill: nothing to enqueue
            return
        null = stream is None and self.streams
        if null:
            self.plugin.synchronize(device)
        fn(*args)
        if null:
            self.plugin.synchronize(device)

    # ---- the tables --------------------------------------------------------------------
    def build(self, host: Any) -> Any:
        ffi, plugin = self.ffi, self.plugin
        api = ffi.new("HWP_PluginApi *")
        device = ffi.new("HWP_DeviceTable *")
        memory = ffi.new("HWP_MemoryTable *")
        self.keep += [api, device, memory]
        device.struct_size = ffi.sizeof("HWP_DeviceTable")
        memory.struct_size = ffi.sizeof("HWP_MemoryTable")
        self._device_table(device)
        self._memory_table(memory)
        api.struct_size = ffi.sizeof("HWP_PluginApi")
        api.abi_major = self.lib.HWP_ABI_VERSION_MAJOR
        api.abi_minor = self.lib.HWP_ABI_VERSION_MINOR
        for field, text in (("device_type", plugin.device_type),
                            ("plugin_version", plugin.version)):
            value = ffi.new("char[]", text.encode())
            self.keep.append(value)
            setattr(api, field, value)
        api.device, api.memory = device, memory
        t = ffi.typeof("HWP_PluginApi")
        api.get_last_error = self.callback(dict(t.fields)["get_last_error"].type,
                                           "get_last_error", self.last_error)
        if self.streams:
            stream = ffi.new("HWP_StreamTable *")
            self.keep.append(stream)
            stream.struct_size = ffi.sizeof("HWP_StreamTable")
            self._stream_table(stream)
            api.stream = stream
        if codegen_table.check_methods(plugin):
            api.codegen = codegen_table.CodegenBridge(self).table()
        if P.provides(plugin, "shutdown"):
            api.shutdown = self.callback(dict(t.fields)["shutdown"].type, "shutdown",
                                         plugin.shutdown)
        self._register_kernels(host)
        return api

    def _set(self, table: Any, field: str, fn: Any) -> None:
        ctype = dict(self.ffi.typeof(table[0]).fields)[field].type
        setattr(table, field, self.callback(ctype, field, fn))

    def _device_table(self, t: Any) -> None:
        ffi, plugin = self.ffi, self.plugin

        def get_device_count(count: Any) -> None:
            self.out_ptr(count, "count")
            count[0] = self.count
            if self.count == 0 and plugin.device_count_note:
                self.fail(P.OK, plugin.device_count_note)

        def get_properties(device: int, props: Any) -> None:
            self.device(device)
            self.out_ptr(props, "props")
            fill_struct(ffi, props, "HWP_DeviceProperties", self.properties(device))

        self._set(t, "get_device_count", get_device_count)
        self._set(t, "synchronize_device", lambda d: plugin.synchronize(self.device(d)))
        self._set(t, "get_properties", get_properties)
        for name in _OPTIONAL_DEVICE:
            if P.provides(plugin, name):
                method = getattr(plugin, name)
                self._set(t, name, lambda d, m=method: m(self.device(d)))

    def properties(self, device: int) -> dict[str, Any]:
        if device not in self.props:  # fixed for the process, as the host reads them once
            self.props[device] = self._properties(device)
        return self.props[device]

    def _properties(self, device: int) -> dict[str, Any]:
        props: dict[str, Any] = {"name": f"{self.plugin.device_type} (Python plugin)",
                                 "memory_alignment": 64, "simd_width": 1, "compute_units": 1,
                                 "max_work_group_size": 1, "flags": self.plugin.flags}
        props.update(self.plugin.properties(device))
        limit = self.limits[device]
        if limit:
            props["total_memory"] = min(limit, props.get("total_memory") or limit)
        elif not props.get("total_memory"):
            props["total_memory"] = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        return props

    def _memory_table(self, t: Any) -> None:
        ffi, plugin = self.ffi, self.plugin
        set_ = lambda field, fn: self._set(t, field, fn)  # noqa: E731

        def allocate(device: int, nbytes: int, out: Any) -> None:
            self.device(device)
            self.out_ptr(out, "out")
            if nbytes == 0:
                raise P.PluginError(P.INVALID_ARGUMENT, "nbytes is 0")
            props = self.properties(device)
            limit = self.limits[device] or props["total_memory"]
            if nbytes > (props.get("max_allocation") or limit):
                raise P.PluginError(P.OUT_OF_MEMORY, f"{nbytes} bytes is more than one "
                                    f"allocation may hold ({props.get('max_allocation')})")
            stats = self.stats[device]
            with self.lock:  # reserve first: concurrent allocations never pass the limit
                if stats["in_use"] + nbytes > limit:
                    raise P.PluginError(P.OUT_OF_MEMORY, f"{nbytes} bytes requested, "
                                        f"{stats['in_use']} of {limit} in use")
                stats["in_use"] += nbytes
            try:
                obj = plugin.allocate(device, nbytes)
            except BaseException:
                with self.lock:
                    stats["in_use"] -= nbytes
                raise
            handle = self.put(obj)
            with self.lock:
                self.sizes[handle] = (device, nbytes)
                stats["allocs"] += 1
                stats["peak"] = max(stats["peak"], stats["in_use"])
            out[0] = ffi.cast("HWP_Buffer", handle)

        def deallocate(device: int, buffer: Any) -> None:
            self.device(device)
            if buffer == ffi.NULL:
                return
            obj = self.get(buffer, "buffer")
            plugin.deallocate(device, obj)
            self.drop(buffer, device)

        def copy_h2d(device: int, dst: Any, dst_offset: int, src: Any, nbytes: int) -> None:
            obj = self.buffer(dst, dst_offset, nbytes, "dst")
            view = self.host(src, nbytes, "src")
            if self.streams:
                plugin.synchronize(self.device(device))
            if nbytes:
                plugin.copy_h2d(self.device(device), obj, dst_offset, view)

        def copy_d2h(device: int, dst: Any, src: Any, src_offset: int, nbytes: int) -> None:
            obj = self.buffer(src, src_offset, nbytes, "src")
            view = self.host(dst, nbytes, "dst")
            if self.streams:
                plugin.synchronize(self.device(device))
            if nbytes:
                plugin.copy_d2h(self.device(device), view, obj, src_offset)

        def copy_d2d(device: int, dst: Any, dst_offset: int, src: Any, src_offset: int,
                     nbytes: int) -> None:
            d = self.buffer(dst, dst_offset, nbytes, "dst")
            s = self.buffer(src, src_offset, nbytes, "src")
            if self.streams:
                plugin.synchronize(self.device(device))
            if nbytes:
                plugin.copy_d2d(self.device(device), d, dst_offset, s, src_offset, nbytes)

        def get_memory_stats(device: int, out: Any) -> None:
            self.device(device)
            self.out_ptr(out, "stats")
            s = self.stats[device]
            fill_struct(ffi, out, "HWP_MemoryStats", {
                "bytes_in_use": s["in_use"], "peak_bytes_in_use": s["peak"],
                "bytes_limit": self.limits[device], "num_allocs": s["allocs"],
                "num_frees": s["frees"]})

        set_("allocate", allocate)
        set_("deallocate", deallocate)
        set_("copy_h2d", copy_h2d)
        set_("copy_d2h", copy_d2h)
        set_("copy_d2d", copy_d2d)
        set_("get_memory_stats", get_memory_stats)
        self._optional_memory(set_)

    def drop(self, buffer: Any, device: int) -> None:
        handle = int(self.ffi.cast("uintptr_t", buffer))
        with self.lock:
            self.objects.pop(handle, None)
            _, nbytes = self.sizes.pop(handle, (device, 0))
            if handle in self.wrapped:
                self.wrapped.discard(handle)
            else:
                self.stats[device]["in_use"] -= nbytes
                self.stats[device]["frees"] += 1

    def _optional_memory(self, set_: Any) -> None:
        ffi, plugin = self.ffi, self.plugin
        if P.provides(plugin, "copy_h2d_async"):
            def h2d(device, stream, dst, dst_offset, src, nbytes):
                obj = self.buffer(dst, dst_offset, nbytes, "dst")
                view, s = self.host(src, nbytes, "src"), self.stream_obj(stream)
                self.ordered(self.device(device), s, plugin.copy_h2d_async, device, s, obj,
                             dst_offset, view, nbytes=nbytes)
            set_("copy_h2d_async", h2d)
        if P.provides(plugin, "copy_d2h_async"):
            def d2h(device, stream, dst, src, src_offset, nbytes):
                obj = self.buffer(src, src_offset, nbytes, "src")
                view, s = self.host(dst, nbytes, "dst"), self.stream_obj(stream)
                self.ordered(self.device(device), s, plugin.copy_d2h_async, device, s, view,
                             obj, src_offset, nbytes=nbytes)
            set_("copy_d2h_async", d2h)
        if P.provides(plugin, "copy_d2d_async"):
            def d2d(device, stream, dst, dst_offset, src, src_offset, nbytes):
                d = self.buffer(dst, dst_offset, nbytes, "dst")
                s_ = self.buffer(src, src_offset, nbytes, "src")
                s = self.stream_obj(stream)
                self.ordered(self.device(device), s, plugin.copy_d2d_async, device, s, d,
                             dst_offset, s_, src_offset, nbytes, nbytes=nbytes)
            set_("copy_d2d_async", d2d)
        if P.provides(plugin, "memset"):
            def memset(device, stream, dst, dst_offset, value, nbytes):
                obj = self.buffer(dst, dst_offset, nbytes, "dst")
                s = self.stream_obj(stream)
                self.ordered(self.device(device), s, plugin.memset, device, s, obj, dst_offset,
                             value, nbytes, nbytes=nbytes)
            set_("memset_async", memset)
        for field in ("host_address", "device_address"):
            if P.provides(plugin, field):
                method = getattr(plugin, field)

                def address(device, buffer, offset, out, m=method, f=field):
                    self.out_ptr(out, "out")
                    obj = self.buffer(buffer, offset, 0, f)
                    out[0] = ffi.cast("void *", int(m(self.device(device), obj, offset)))
                set_(field, address)
        if P.provides(plugin, "wrap_host_memory"):
            def wrap(device, ptr, nbytes, out):
                self.out_ptr(out, "out")
                address = int(ffi.cast("uintptr_t", ptr))
                obj = plugin.wrap_host_memory(self.device(device), address, nbytes)
                handle = self.put(obj)
                with self.lock:
                    self.sizes[handle] = (device, nbytes)
                    self.wrapped.add(handle)
                out[0] = ffi.cast("HWP_Buffer", handle)

            def release(device, buffer):
                if buffer != ffi.NULL:
                    self.get(buffer, "buffer")
                    self.drop(buffer, self.device(device))
            set_("wrap_host_memory", wrap)
            set_("release_host_buffer", release)

    def _stream_table(self, t: Any) -> None:
        ffi, plugin = self.ffi, self.plugin

        def creator(method: Any) -> Any:
            def create(device: int, out: Any) -> None:
                self.out_ptr(out, "out")
                out[0] = ffi.cast(ffi.typeof(out).item, self.put(method(self.device(device))))
            return create

        def destroyer(method: Any, what: str) -> Any:
            def destroy(device: int, handle: Any) -> None:
                self.device(device)
                if handle == ffi.NULL:
                    return
                method(device, self.get(handle, what))
                with self.lock:
                    self.objects.pop(int(ffi.cast("uintptr_t", handle)), None)
            return destroy

        def query(method: Any, what: str) -> Any:
            def q(device: int, handle: Any) -> int:
                done = method(self.device(device), self.get(handle, what)
                              if what == "event" else self.stream_obj(handle))
                return P.OK if done else P.NOT_READY
            return q

        self._set(t, "create_stream", creator(plugin.create_stream))
        self._set(t, "destroy_stream", destroyer(plugin.destroy_stream, "stream"))
        self._set(t, "synchronize_stream", lambda d, s: plugin.synchronize_stream(
            self.device(d), self.stream_obj(s)))
        if P.provides(plugin, "query_stream"):
            self._set(t, "query_stream", query(plugin.query_stream, "stream"))
        self._set(t, "create_event", creator(plugin.create_event))
        self._set(t, "destroy_event", destroyer(plugin.destroy_event, "event"))
        self._set(t, "record_event", lambda d, s, e: plugin.record_event(
            self.device(d), self.stream_obj(s), self.get(e, "event")))
        self._set(t, "synchronize_event", lambda d, e: plugin.synchronize_event(
            self.device(d), self.get(e, "event")))
        if P.provides(plugin, "query_event"):
            self._set(t, "query_event", query(plugin.query_event, "event"))
        self._set(t, "stream_wait_event", lambda d, s, e: plugin.stream_wait_event(
            self.device(d), self.stream_obj(s), self.get(e, "event")))

    # ---- kernels -----------------------------------------------------------------------
    def view(self, tv: Any) -> View:
        ndim = tv.ndim
        if not ndim:
            shape = strides = ()
        elif tv.strides != self.ffi.NULL:
            shape, strides = tuple(tv.shape[0:ndim]), tuple(tv.strides[0:ndim])
        else:
            shape, acc, inner = tuple(tv.shape[0:ndim]), 1, []
            for n in reversed(shape):
                inner.append(acc)
                acc *= n
            strides = tuple(reversed(inner))
        buffer = self.objects.get(int(self.ffi.cast("uintptr_t", tv.buffer)))
        if buffer is None:
            buffer = self.get(tv.buffer, "tensor buffer")  # raises, naming the handle
        return View(buffer, tv.byte_offset, DTYPE_NAMES.get(tv.dtype) or str(tv.dtype), shape,
                    strides)

    def _register_kernels(self, host: Any) -> None:
        ffi = self.ffi
        ctype = ffi.typeof("HWP_KernelFn")
        for k in self.plugin.kernels():
            code = P.check_dtype(k.dtype)

            def launch(ctx: Any, fn: Any = k.fn) -> None:
                inputs = [self.view(ctx.inputs[i]) for i in range(ctx.num_inputs)]
                outputs = [self.view(ctx.outputs[i]) for i in range(ctx.num_outputs)]
                stream = self.stream_obj(ctx.stream)
                call = KernelCall(ffi, ctx, self.device(ctx.device), stream, inputs, outputs)
                self.ordered(ctx.device, stream, fn, call)

            reg = ffi.new("HWP_KernelRegistration *")
            name = ffi.new("char[]", k.op.encode())
            reg.struct_size = ffi.sizeof("HWP_KernelRegistration")
            reg.op_name, reg.dtype = name, code
            reg.flags = P.ACCEPTS_STRIDED if k.strided else 0
            reg.fn = self.callback(ctype, f"kernel {k.op}[{k.dtype}]", launch)
            status = host.register_kernel(host.host_context, reg)
            if status != P.OK:
                raise P.PluginError(status, f"register_kernel({k.op}, {k.dtype}) failed with "
                                    f"status {status}")


def fill_struct(ffi: Any, out: Any, type_name: str, values: dict[str, Any]) -> None:
    """Writes ``values`` into the out-struct ``out`` only as far as its struct_size reaches
    (the host's struct may be older, so shorter, than the headers this was built with)."""
    size = out.struct_size
    fields = dict(ffi.typeof(type_name).fields)
    for name, value in values.items():
        f = fields.get(name)
        if f is None or f.offset + ffi.sizeof(f.type) > size:
            continue
        if f.type.kind == "array":
            _write_text(ffi, getattr(out, name), f.type.length, str(value))
        else:
            setattr(out, name, int(value))


# ---- finding the plugin ---------------------------------------------------------------------

def load_target(target: dict[str, str]) -> P.Plugin:
    """The Plugin instance a payload names: {"file": path} or {"module": m, "attr": a}."""
    if "file" in target:
        path = Path(target["file"])
        digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
        name = "_hwport_pyplugin_" + re.sub(r"\W", "_", path.stem) + "_" + digest
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise P.PluginError(P.NOT_FOUND, f"{path} is not a Python file")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        obj = getattr(module, "hwport_plugin", None)
        if obj is None:
            found = [v for v in vars(module).values() if isinstance(v, type)
                     and issubclass(v, P.Plugin) and v.__module__ == module.__name__]
            if len(found) != 1:
                raise P.PluginError(P.NOT_FOUND, f"{path} defines {len(found)} Plugin "
                                    "subclasses; define one, or name it hwport_plugin")
            obj = found[0]
    else:
        obj = getattr(importlib.import_module(target["module"]), target["attr"])
    instance = obj() if callable(obj) and not isinstance(obj, P.Plugin) else obj
    if not isinstance(instance, P.Plugin):
        raise P.PluginError(P.INVALID_ARGUMENT, f"{target} is not a "
                            "hwport.device_plugins.python.Plugin (got "
                            f"{type(instance).__name__})")
    return instance


def init(ffi: Any, lib: Any, config: dict[str, Any], host: Any, out: Any, error: Any,
         error_size: int) -> int:
    """hwport_plugin_init of the plugin ``config["target"]`` names."""
    where = config.get("target", {})
    where = where.get("file") or f"{where.get('module')}:{where.get('attr')}"
    try:
        if host == ffi.NULL or out == ffi.NULL:
            raise P.PluginError(P.INVALID_ARGUMENT, "init: NULL argument")
        if host.abi_major != lib.HWP_ABI_VERSION_MAJOR:
            raise P.PluginError(P.VERSION_MISMATCH, f"built for ABI {lib.HWP_ABI_VERSION_MAJOR}"
                                f", host has {host.abi_major}")
        bridge = Bridge(ffi, lib, load_target(config["target"]))
        api = bridge.build(host)
        _LIVE.append(bridge)
        _immortal(bridge)
        out[0] = api
        return P.OK
    except P.PluginError as exc:
        _write_text(ffi, error, error_size, f"Python plugin {where}: {exc}")
        return exc.status
    except BaseException as exc:  # noqa: BLE001 - nothing may cross the C ABI
        _write_text(ffi, error, error_size, f"Python plugin {where}: {_describe(exc)}")
        return P.INTERNAL
