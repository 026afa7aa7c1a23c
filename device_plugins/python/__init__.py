"""hwport.device_plugins.python: device plugins written in Python, over cffi.

    from hwport.device_plugins.python import Plugin, kernel

    class MyDevice(Plugin):
        device_type = "mydev"
        def synchronize(self, device): ...
        def allocate(self, device, nbytes): ...
        ...

A codegen target (the codegen_* methods: plugin.py) makes it a complete port: hwport's
compiler generates every op it has no kernel for, and the plugin builds and launches them.

A subclass becomes the same C tables a C plugin fills (tables.py) behind the same entry point
(an entry library per plugin, loader.py), so the runtime, the dispatcher and hwcheck load it
like any plugin: ``HWPORT_PLUGIN_PATH=mydev.py``, an entry point of the ``hwport.plugins``
group naming the file or the class, or ``hwcheck run --plugin mydev.py``. A plugin module
imports this package (and its own backend), never ``hwport`` itself: it runs while the
runtime loads, and in the isolated probe process where no runtime is loaded. Examples:
numpy_device.py, pyopencl_device.py, cupy_device.py; the guide is docs/porting.md.

Threads: every callback takes the GIL (cffi does), so a host thread may call any method at any
time. Known limit: the runtime's empty_cache releases the GIL and then holds its allocator lock
while it calls deallocate; another thread that allocates on the same device meanwhile, holding
the GIL, deadlocks with it (tests/device_plugins/python: the strict xfail that reproduces it).
"""

from .loader import PrepareError, prepare
from .plugin import (
    ACCEPTS_STRIDED,
    BFLOAT16_ARITHMETIC,
    CODEGEN_FLOAT16,
    CODEGEN_FLOAT64,
    CODEGEN_SERIALIZE,
    CODEGEN_SIMT,
    CODEGEN_SUBGROUP_SHUFFLE,
    DEVICE_ERROR,
    FLOAT16_ARITHMETIC,
    HOST_MEMORY,
    INTERNAL,
    INVALID_ARGUMENT,
    NOT_FOUND,
    NOT_READY,
    NOT_SUPPORTED,
    OK,
    OUT_OF_MEMORY,
    VERSION_MISMATCH,
    BufferArg,
    CodegenTarget,
    CompileError,
    Kernel,
    Plugin,
    PluginError,
    kernel,
)
from .views import DTYPE_CODES, KernelCall, View, numpy_dtype

__all__ = [
    "ACCEPTS_STRIDED", "BFLOAT16_ARITHMETIC", "CODEGEN_FLOAT16", "CODEGEN_FLOAT64",
    "CODEGEN_SERIALIZE", "CODEGEN_SIMT", "CODEGEN_SUBGROUP_SHUFFLE", "DEVICE_ERROR",
    "DTYPE_CODES", "FLOAT16_ARITHMETIC", "HOST_MEMORY", "INTERNAL", "INVALID_ARGUMENT",
    "NOT_FOUND", "NOT_READY", "NOT_SUPPORTED", "OK", "OUT_OF_MEMORY", "VERSION_MISMATCH",
    "BufferArg", "CodegenTarget", "CompileError", "Kernel", "KernelCall", "Plugin",
    "PluginError", "PrepareError", "View", "kernel", "numpy_dtype", "prepare",
]
