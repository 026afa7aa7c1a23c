"""cupy_device: a CUDA port through CuPy. Memory comes from CuPy's pool, streams and events are
CuPy's, kernels are CuPy's elementwise kernels (its ufuncs) over views of the plugin's memory.
Its codegen target is "cuda-c++17" through NVRTC (CuPy's compiler; modules are the compiled
images, loaded with cuModuleLoadData), so every other op runs as a generated kernel.
Without CuPy or a GPU it loads with 0 devices and says why (the host then skips it cleanly).
"""

from __future__ import annotations

import hashlib

import numpy as np

from hwport.device_plugins.python import (
    CODEGEN_FLOAT16,
    CODEGEN_FLOAT64,
    CODEGEN_SERIALIZE,
    CODEGEN_SIMT,
    CODEGEN_SUBGROUP_SHUFFLE,
    DTYPE_CODES,
    INVALID_ARGUMENT,
    NOT_FOUND,
    BufferArg,
    CodegenTarget,
    CompileError,
    Kernel,
    Plugin,
    PluginError,
    numpy_dtype,
)

try:
    import cupy
    import cupy.cuda.compiler
    import cupy.cuda.function
except ImportError:
    cupy = None

MAGIC = b"HWPCUPY1"  # serialized modules: magic, device digest, image digest, image
UFUNCS = ("abs", "negative:neg", "exp", "log", "sqrt", "sin", "cos", "tanh", "add",
          "subtract", "multiply", "divide", "maximum", "minimum", "equal", "less:less_than")


class CupyDevice(Plugin):
    device_type = "cupy"

    def __init__(self):
        self.count, self.note = 0, "CuPy is not installed"
        try:
            self.count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 - no driver or GPU: 0 devices
            if cupy is not None:
                self.note = f"no CUDA device through CuPy: {exc!r}"

    def device_count(self):
        return self.count

    @property
    def device_count_note(self):
        return self.note

    def properties(self, device):
        p = cupy.cuda.runtime.getDeviceProperties(device)
        return {"name": p["name"].decode(), "vendor": "NVIDIA", "total_memory": p["totalGlobalMem"],
                "memory_alignment": 256, "compute_units": p["multiProcessorCount"],
                "max_work_group_size": p["maxThreadsPerBlock"], "simd_width": p["warpSize"],
                "architecture": f"sm_{p['major']}{p['minor']}", "architecture_major": p["major"],
                "architecture_minor": p["minor"], "dlpack_device_type": 2,
                "dlpack_device_id": device}

    def stream(self, stream):
        return cupy.cuda.Stream.null if stream is None else stream

    def synchronize(self, device):
        cupy.cuda.Device(device).synchronize()

    def set_device(self, device):
        cupy.cuda.Device(device).use()

    # ---- memory: MemoryPointers of CuPy's pool; + offset is a MemoryPointer too ----------
    def allocate(self, device, nbytes):
        with cupy.cuda.Device(device):
            return cupy.cuda.alloc(nbytes)

    def copy_h2d(self, device, dst, dst_offset, src):
        self.copy_h2d_async(device, None, dst, dst_offset, src)
        self.synchronize(device)

    def copy_d2h(self, device, dst, src, src_offset):
        self.copy_d2h_async(device, None, dst, src, src_offset)
        self.synchronize(device)

    def copy_d2d(self, device, dst, dst_offset, src, src_offset, nbytes):
        self.copy_d2d_async(device, None, dst, dst_offset, src, src_offset, nbytes)
        self.synchronize(device)

    def copy_h2d_async(self, device, stream, dst, dst_offset, src):
        host = np.frombuffer(src, np.uint8)
        with cupy.cuda.Device(device):
            (dst + dst_offset).copy_from_host_async(host.ctypes.data, host.nbytes,
                                                    self.stream(stream))

    def copy_d2h_async(self, device, stream, dst, src, src_offset):
        host = np.frombuffer(dst, np.uint8)
        with cupy.cuda.Device(device):
            (src + src_offset).copy_to_host_async(host.ctypes.data, host.nbytes,
                                                  self.stream(stream))

    def copy_d2d_async(self, device, stream, dst, dst_offset, src, src_offset, nbytes):
        with cupy.cuda.Device(device):
            (dst + dst_offset).copy_from_device_async(src + src_offset, nbytes,
                                                      self.stream(stream))

    def memset(self, device, stream, dst, dst_offset, value, nbytes):
        with cupy.cuda.Device(device):
            (dst + dst_offset).memset_async(value, nbytes, self.stream(stream))

    def device_address(self, device, buffer, offset):
        return buffer.ptr + offset

    # ---- streams and events -------------------------------------------------------------
    def create_stream(self, device):
        with cupy.cuda.Device(device):
            return cupy.cuda.Stream(non_blocking=True)

    def destroy_stream(self, device, stream):
        stream.synchronize()

    def synchronize_stream(self, device, stream):
        self.stream(stream).synchronize()

    def query_stream(self, device, stream):
        return self.stream(stream).done

    def create_event(self, device):
        with cupy.cuda.Device(device):
            return cupy.cuda.Event(disable_timing=True)

    def destroy_event(self, device, event):
        pass

    def record_event(self, device, stream, event):
        event.record(self.stream(stream))

    def synchronize_event(self, device, event):
        event.synchronize()

    def query_event(self, device, event):
        return event.done

    def stream_wait_event(self, device, stream, event):
        self.stream(stream).wait_event(event)

    # ---- kernels ------------------------------------------------------------------------
    def array(self, v):
        return cupy.ndarray(v.shape, numpy_dtype(v.dtype), v.buffer + v.byte_offset,
                            [s * v.itemsize for s in v.strides])

    def launch(self, fn, call):
        with cupy.cuda.Device(call.device), self.stream(call.stream):
            fn(*map(self.array, call.inputs), out=self.array(call.outputs[0]))

    def kernels(self):
        if not self.count:
            return
        for entry in UFUNCS:
            name, _, op = entry.partition(":")
            fn = getattr(cupy, name)
            for dtype in ("float32", "float64"):
                yield Kernel(op or name, dtype, lambda c, fn=fn: self.launch(fn, c), True)
        for dtype in DTYPE_CODES:
            yield Kernel("copy", dtype, lambda c: self.launch(
                lambda x, out: cupy.copyto(out, x), c), True)

    # ---- codegen target: dialect "cuda-c++17" through NVRTC ----------------------------
    def identity(self, device):
        p = cupy.cuda.runtime.getDeviceProperties(device)
        text = f"{p['name']!r} sm_{p['major']}{p['minor']} {cupy.cuda.runtime.driverGetVersion()}"
        return hashlib.sha256(text.encode()).digest()[:16]

    def codegen_target(self, device):
        p = cupy.cuda.runtime.getDeviceProperties(device)
        flags = CODEGEN_SIMT | CODEGEN_SUBGROUP_SHUFFLE | CODEGEN_FLOAT64 | CODEGEN_SERIALIZE
        if (p["major"], p["minor"]) >= (5, 3):
            flags |= CODEGEN_FLOAT16
        return CodegenTarget(("cuda-c++17",), f"sm_{p['major']}{p['minor']}", flags,
                             simd_width=p["warpSize"], preferred_vector_width=4,
                             max_group_size=p["maxThreadsPerBlock"],
                             compute_units=p["multiProcessorCount"],
                             local_memory_bytes=p["sharedMemPerBlock"],
                             max_grid_size=p["maxGridSize"][0])

    def load(self, device, image):
        with cupy.cuda.Device(device):
            module = cupy.cuda.function.Module()
            module.load(image)
        return module, image, device

    def codegen_compile(self, device, dialect, source, options):
        opts = tuple(o for o in options.split() if not o.startswith("-O"))  # NVRTC takes no -O
        opts += () if any("-std=" in o for o in opts) else ("-std=c++17",)
        try:
            with cupy.cuda.Device(device):  # -arch: this device's
                image = cupy.cuda.compiler.compile_using_nvrtc(source, opts)
        except cupy.cuda.compiler.CompileException as exc:
            raise CompileError(str(exc)) from None
        image = image[0] if isinstance(image, tuple) else image  # (image, names) since v9
        return self.load(device, image.encode() if isinstance(image, str) else image)

    def codegen_function(self, module, name):
        try:
            return module[0].get_function(name), module[2]
        except cupy.cuda.driver.CUDADriverError as exc:
            raise PluginError(NOT_FOUND, f"the module has no kernel {name!r} ({exc})") from None

    def codegen_launch(self, device, function, stream, grid, group, args):
        fn, _ = function
        if max(grid[1], grid[2]) > 65535:
            raise PluginError(INVALID_ARGUMENT, f"grid {grid}: y and z at most 65535")
        values = [np.uint64(0 if a.buffer is None else a.buffer.ptr + a.byte_offset)  # T *
                  if isinstance(a, BufferArg) else np.int64(a) if isinstance(a, int)
                  else np.float64(a) for a in args]
        with cupy.cuda.Device(device):
            fn(grid, group, tuple(values), stream=self.stream(stream))

    def codegen_serialize(self, module):
        _, image, device = module
        return MAGIC + self.identity(device) + hashlib.sha256(image).digest()[:16] + image

    def codegen_deserialize(self, device, dialect, data):
        head, image = data[:40], data[40:]
        if head != MAGIC + self.identity(device) + hashlib.sha256(image).digest()[:16]:
            raise ValueError("not this device's serialized module, or corrupt")
        return self.load(device, image)
