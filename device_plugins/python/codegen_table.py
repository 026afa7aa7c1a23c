"""The codegen table (hwport/codegen.h, ABI 1.2) of a Python plugin, built from its codegen_*
methods (plugin.py lists them) by tables.Bridge, one cffi callback per function.

It keeps the C table's contract (docs/abi.md, section 4, "HWP_CodegenTable") for every plugin:
- get_target_info fills the host's struct only up to its struct_size; the dialect list and the
  architecture string stay alive as long as the plugin (the target is read once per device);
  a device without a target (codegen_target returns None, or raises PluginError(NOT_SUPPORTED))
  answers HWP_ERROR_NOT_SUPPORTED;
- compile refuses a dialect the target does not list (HWP_ERROR_NOT_SUPPORTED) before the
  plugin sees it; on any failure the log buffer gets the compiler's output (CompileError.log)
  or the error's text, NUL-terminated within log_capacity; *out is written only on success;
- modules and functions are opaque handles (a function is cached per name in its module and
  dies with it); a launch checks the function is live and of the device, the launch and each
  argument's struct_size, grid and group sizes in [1, 2^31 - 1] within the target's
  max_grid_size (dimension 0) and max_group_size (their product), and the argument kinds; a
  buffer argument's byte offset lies within its buffer;
- a NULL-stream launch is ordered after all of the device's work and complete on return (the
  base class's rule for every NULL-stream call), a stream's launch only enqueued;
- serialize answers the size query and refuses too small a capacity; deserialize turns any
  failure to load the bytes into HWP_ERROR_INVALID_ARGUMENT (the host then compiles again).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from . import plugin as P

MAX_SIZE = 2**31 - 1
REQUIRED = ("codegen_compile", "codegen_function", "codegen_launch")


@dataclass
class _Module:
    device: int
    obj: Any
    functions: dict[str, int] = field(default_factory=dict)  # name -> function handle
    serialized: bytes | None = None


@dataclass
class _Function:
    module: int  # its module's handle
    device: int
    obj: Any


def check_methods(plugin: P.Plugin) -> bool:
    """Whether the plugin has a codegen target; raises PluginError when it is incomplete."""
    if not P.provides(plugin, "codegen_target"):
        return False
    missing = [m for m in REQUIRED if not P.provides(plugin, m)]
    if missing:
        raise P.PluginError(P.INVALID_ARGUMENT, f"the plugin defines codegen_target but not "
                            f"{', '.join(missing)} (required with it)")
    ser = [P.provides(plugin, m) for m in ("codegen_serialize", "codegen_deserialize")]
    if ser[0] != ser[1]:
        raise P.PluginError(P.INVALID_ARGUMENT, "the plugin defines only one of "
                            "codegen_serialize / codegen_deserialize: both or neither")
    return True


class CodegenBridge:
    """The HWP_CodegenTable of one Bridge (its handles, errors and NULL-stream ordering)."""

    def __init__(self, bridge: Any) -> None:
        self.b, self.ffi, self.plugin = bridge, bridge.ffi, bridge.plugin
        self.serialize = P.provides(self.plugin, "codegen_serialize")
        self.lock = threading.RLock()
        self.targets: dict[int, tuple[P.CodegenTarget, Any]] = {}

    # ---- helpers -----------------------------------------------------------------------
    def field_end(self, type_name: str, name: str) -> int:
        f = dict(self.ffi.typeof(type_name).fields)[name]
        return f.offset + self.ffi.sizeof(f.type)

    def handle(self, ptr: Any, kind: type, what: str) -> tuple[int, Any]:
        h = int(self.ffi.cast("uintptr_t", ptr))
        obj = self.b.objects.get(h)
        if not isinstance(obj, kind):
            raise P.PluginError(P.INVALID_ARGUMENT, f"{h:#x} is not a live codegen {what} of "
                                "this plugin")
        return h, obj

    def target(self, device: int) -> tuple[P.CodegenTarget, Any]:
        """The device's target and its C struct, read once (the strings live with it)."""
        self.b.device(device)
        with self.lock:
            if device in self.targets:
                return self.targets[device]
        t = self.plugin.codegen_target(device)
        if t is None:
            raise P.PluginError(P.NOT_SUPPORTED, f"device {device} has no codegen target")
        if not t.dialects or not all(isinstance(d, str) and d for d in t.dialects):
            raise P.PluginError(P.INTERNAL, f"codegen_target({device}) lists no dialect, or an "
                                f"empty one: {t.dialects!r}")
        if t.flags & P.CODEGEN_SERIALIZE and not self.serialize:
            raise P.PluginError(P.INTERNAL, "codegen_target sets CODEGEN_SERIALIZE but the "
                                "plugin has no codegen_serialize")
        ffi = self.ffi
        names = [ffi.new("char[]", d.encode()) for d in t.dialects]
        arch = ffi.new("char[]", t.architecture.encode())
        dialects = ffi.new("const char *[]", [*names, ffi.NULL])
        c = ffi.new("HWP_CodegenTargetInfo *")
        c.struct_size = ffi.sizeof("HWP_CodegenTargetInfo")
        c.dialects, c.architecture = dialects, arch
        for name in ("flags", "simd_width", "preferred_vector_width", "max_group_size",
                     "compute_units", "local_memory_bytes", "max_grid_size"):
            setattr(c, name, int(getattr(t, name)))
        with self.lock:
            self.b.keep += [names, arch, dialects, c]
            return self.targets.setdefault(device, (t, c))

    def dialect(self, device: int, dialect: Any) -> str:
        t, _ = self.target(device)
        name = self.ffi.string(dialect).decode() if dialect != self.ffi.NULL else "(null)"
        if name not in t.dialects:
            raise P.PluginError(P.NOT_SUPPORTED, f"dialect {name!r} is not accepted by "
                                f"{self.plugin.device_type} device {device} (it accepts "
                                f"{', '.join(t.dialects)})")
        return name

    def new_module(self, device: int, obj: Any, out: Any) -> None:
        out[0] = self.ffi.cast("HWP_CodegenModule", self.b.put(_Module(device, obj)))

    # ---- the functions -----------------------------------------------------------------
    def get_target_info(self, device: int, info: Any) -> None:
        if info == self.ffi.NULL:
            raise P.PluginError(P.INVALID_ARGUMENT, "info is NULL")
        head = self.ffi.sizeof("size_t")
        if info.struct_size < head:
            raise P.PluginError(P.INVALID_ARGUMENT, f"info->struct_size {info.struct_size} is "
                                "too small")
        _, c = self.target(device)
        n = min(int(info.struct_size), self.ffi.sizeof("HWP_CodegenTargetInfo"))
        self.ffi.memmove(self.ffi.cast("char *", info) + head,
                         self.ffi.cast("char *", c) + head, n - head)

    def compile(self, device: int, dialect: Any, source: Any, options: Any, out: Any,
                log: Any, capacity: int) -> None:
        try:
            if source == self.ffi.NULL or out == self.ffi.NULL:
                what = "source" if source == self.ffi.NULL else "out"
                raise P.PluginError(P.INVALID_ARGUMENT, f"{what} is NULL")
            name = self.dialect(device, dialect)
            opts = self.ffi.string(options).decode() if options != self.ffi.NULL else ""
            module = self.plugin.codegen_compile(device, name, self.ffi.string(source).decode(),
                                                 opts)
        except BaseException as exc:
            if log != self.ffi.NULL and capacity > 0:
                from .tables import _describe, _write_text

                text = exc.log if isinstance(exc, P.CompileError) else (
                    str(exc) if isinstance(exc, P.PluginError) else _describe(exc))
                _write_text(self.ffi, log, capacity, text or "(the compiler wrote no output)")
            raise
        self.new_module(device, module, out)

    def get_function(self, module: Any, name: Any, out: Any) -> None:
        mh, m = self.handle(module, _Module, "module")
        if name == self.ffi.NULL or out == self.ffi.NULL:
            raise P.PluginError(P.INVALID_ARGUMENT, f"{'name' if name == self.ffi.NULL else 'out'}"
                                " is NULL")
        text = self.ffi.string(name).decode()
        with self.lock:
            handle = m.functions.get(text)
            if handle is None:
                obj = self.plugin.codegen_function(m.obj, text)
                handle = m.functions[text] = self.b.put(_Function(mh, m.device, obj))
        out[0] = self.ffi.cast("HWP_CodegenFunction", handle)

    def launch(self, device: int, function: Any, stream: Any, launch: Any) -> None:
        ffi = self.ffi
        _, f = self.handle(function, _Function, "function")
        if f.device != self.b.device(device):
            raise P.PluginError(P.INVALID_ARGUMENT, f"the function was compiled for device "
                                f"{f.device}, not {device}")
        if launch == ffi.NULL:
            raise P.PluginError(P.INVALID_ARGUMENT, "launch is NULL")
        if launch.struct_size < self.field_end("HWP_CodegenLaunch", "args"):
            raise P.PluginError(P.INVALID_ARGUMENT, f"launch->struct_size {launch.struct_size} "
                                "is too small")
        grid, group = tuple(launch.grid[0:3]), tuple(launch.group[0:3])
        t, _ = self.target(device)
        threads = group[0] * group[1] * group[2]
        if (min(grid + group) < 1 or max(grid + group) > MAX_SIZE
                or grid[0] > (t.max_grid_size or MAX_SIZE) or threads > t.max_group_size):
            raise P.PluginError(P.INVALID_ARGUMENT, f"grid {grid}, group {group}: every size in "
                                f"[1, 2^31 - 1], grid[0] at most {t.max_grid_size or MAX_SIZE},"
                                f" at most {t.max_group_size} threads in a group")
        n = launch.num_args
        if n < 0 or (n > 0 and launch.args == ffi.NULL):
            raise P.PluginError(P.INVALID_ARGUMENT, f"{n} arguments at {launch.args}")
        need = self.field_end("HWP_CodegenArg", "value")
        args: list[Any] = []
        for i in range(n):
            a = launch.args[i]
            if a.struct_size < need:
                raise P.PluginError(P.INVALID_ARGUMENT, f"argument {i}: struct_size "
                                    f"{a.struct_size} is too small")
            if a.kind == 0:  # HWP_CODEGEN_ARG_BUFFER
                buf, off = a.value.buffer.buffer, int(a.value.buffer.byte_offset)
                obj = None if buf == ffi.NULL else self.b.buffer(buf, off, 0, f"argument {i}")
                args.append(P.BufferArg(obj, off))
            elif a.kind == 1:
                args.append(int(a.value.i64))
            elif a.kind == 2:
                args.append(float(a.value.f64))
            else:
                raise P.PluginError(P.INVALID_ARGUMENT, f"argument {i} has unknown kind "
                                    f"{a.kind}")
        s = self.b.stream_obj(stream)
        self.b.ordered(device, s, self.plugin.codegen_launch, device, f.obj, s, grid, group,
                       args)

    def unload(self, module: Any) -> None:
        mh, m = self.handle(module, _Module, "module")
        if P.provides(self.plugin, "codegen_unload"):
            self.plugin.codegen_unload(m.obj)
        with self.b.lock:
            for h in (mh, *m.functions.values()):
                self.b.objects.pop(h, None)

    def serialize_(self, module: Any, data: Any, capacity: int, size: Any) -> None:
        _, m = self.handle(module, _Module, "module")
        self.b.out_ptr(size, "size")
        if m.serialized is None:  # the size query and the copy that follows read it once
            m.serialized = bytes(self.plugin.codegen_serialize(m.obj))
        n = len(m.serialized)
        if data != self.ffi.NULL:
            if capacity < n:
                raise P.PluginError(P.INVALID_ARGUMENT, f"capacity {capacity} < the {n} bytes "
                                    "needed")
            self.ffi.memmove(data, m.serialized, n)
        size[0] = n

    def deserialize(self, device: int, dialect: Any, data: Any, size: int, out: Any) -> None:
        if data == self.ffi.NULL or out == self.ffi.NULL:
            raise P.PluginError(P.INVALID_ARGUMENT, f"{'data' if data == self.ffi.NULL else 'out'}"
                                " is NULL")
        name = self.dialect(device, dialect)
        raw = bytes(self.ffi.buffer(data, size))
        try:
            module = self.plugin.codegen_deserialize(device, name, raw)
        except P.PluginError:
            raise
        except Exception as exc:  # noqa: BLE001 - bytes it cannot load: the host compiles again
            raise P.PluginError(P.INVALID_ARGUMENT, f"cannot load the {size} bytes: "
                                f"{type(exc).__name__}: {exc}") from None
        self.new_module(device, module, out)

    # ---- the table ---------------------------------------------------------------------
    def table(self) -> Any:
        ffi = self.ffi
        t = ffi.new("HWP_CodegenTable *")
        self.b.keep.append(t)
        t.struct_size = ffi.sizeof("HWP_CodegenTable")
        fields = dict(ffi.typeof("HWP_CodegenTable").fields)
        fns = {"get_target_info": self.get_target_info, "compile": self.compile,
               "get_function": self.get_function, "launch": self.launch,
               "unload": self.unload}
        if self.serialize:
            fns.update(serialize=self.serialize_, deserialize=self.deserialize)
        for name, fn in fns.items():
            setattr(t, name, self.b.callback(fields[name].type, f"codegen.{name}", fn))
        return t
