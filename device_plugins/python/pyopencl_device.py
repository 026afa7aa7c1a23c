"""pyopencl_device: a real OpenCL port through pyopencl (runs on PoCL here).

Buffers are ``cl.Buffer``, streams are in-order command queues, events are markers, kernels are
OpenCL C built by pyopencl on first use. Elementwise kernels take contiguous inputs (the host
makes strided ones contiguous with this plugin's ``copy`` kernel, which takes any view). Its
codegen target is pyopencl's build of "opencl-c-1.2" (codegen.h's conventions), launched on the
same queues: every other op runs as a kernel hwport's compiler generates.
"""

from __future__ import annotations

import hashlib
import threading

import numpy as np

from hwport.device_plugins.python import (
    CODEGEN_FLOAT16,
    CODEGEN_FLOAT64,
    CODEGEN_SERIALIZE,
    CODEGEN_SIMT,
    DTYPE_CODES,
    INVALID_ARGUMENT,
    NOT_FOUND,
    BufferArg,
    CodegenTarget,
    CompileError,
    Kernel,
    Plugin,
    PluginError,
)

try:
    import pyopencl as cl
except ImportError:  # the plugin then reports no device, and says why
    cl = None

CTYPES = {"float32": "float", "float64": "double", "bool": "uchar"}
EXPRESSIONS = {"add": "x + y", "subtract": "x - y", "multiply": "x * y", "divide": "x / y",
               "neg": "-x", "abs": "fabs(x)", "exp": "exp(x)", "log": "log(x)",
               "sqrt": "sqrt(x)", "sin": "sin(x)", "cos": "cos(x)", "tanh": "tanh(x)",
               "equal": "x == y", "less_than": "x < y"}

ELEMENTWISE = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void run(__global char *out, ulong out_off, ulong n,
                  __global const char *a, ulong a_off, __global const char *b, ulong b_off) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const T x = ((__global const T *)(a + a_off))[i];
  const T y = ((__global const T *)(b + b_off))[i];
  ((__global OUT *)(out + out_off))[i] = (OUT)(EXPR);
}
"""

# A strided view (shape, strides in elements, 0 or negative included) into a contiguous output;
# dtype-agnostic: it moves items of the view's size.
COPY = """
__kernel void run(__global char *out, ulong out_off, ulong n, __global const char *x,
                  ulong x_off, __constant long *meta, int ndim) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  long rest = (long)i, at = 0;
  for (int k = ndim - 1; k >= 0; --k) {
    at += (rest % meta[k]) * meta[ndim + k];
    rest /= meta[k];
  }
  ((__global T *)(out + out_off))[i] = ((__global const T *)(x + x_off))[at];
}
"""
ITEM_TYPES = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}


COMPLETE = cl.command_execution_status.COMPLETE if cl else 0
PROBE = "__kernel void probe(__global int *p) { p[get_global_id(0)] = 1; }"
MAGIC = b"HWPPYCL1"  # serialized modules: magic, device digest, binary digest, binary


class Event:
    marker = None  # the cl marker of the last record_event; never recorded: complete


class PyOpenCLDevice(Plugin):
    device_type = "pyopencl"

    def __init__(self):
        self.devices, self.note = [], ""
        try:
            platform = next(p for p in cl.get_platforms() if p.get_devices())
            self.devices = platform.get_devices()
            self.context = cl.Context(self.devices)
        except Exception as exc:  # noqa: BLE001 - no pyopencl, platform or device: 0 devices
            self.note = f"no OpenCL device: {exc!r}"
        self.default = [cl.CommandQueue(self.context, d) for d in self.devices]
        self.queues = [set() for _ in self.devices]  # the streams' queues, per device
        self.programs, self.lock, self.last = {}, threading.Lock(), {}

    # ---- device ------------------------------------------------------------------------
    def device_count(self):
        return len(self.devices)

    @property
    def device_count_note(self):
        return self.note

    def properties(self, device):
        d = self.devices[device]
        return {"name": d.name, "vendor": d.vendor, "driver_version": d.driver_version,
                "total_memory": d.global_mem_size, "max_allocation": d.max_mem_alloc_size,
                "memory_alignment": d.mem_base_addr_align // 8,
                "compute_units": d.max_compute_units, "max_work_group_size": d.max_work_group_size}

    def synchronize(self, device):
        self.default[device].finish()
        for q in list(self.queues[device]):
            q.finish()

    def queue(self, device, stream):
        return self.default[device] if stream is None else stream

    def enqueue(self, device, stream, fn, *args, **kwargs):
        """Runs an enqueue function on the stream's queue and remembers its event."""
        q = self.queue(device, stream)
        self.last[q] = fn(q, *args, **kwargs)

    # ---- memory ------------------------------------------------------------------------
    def allocate(self, device, nbytes):
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=nbytes)

    def deallocate(self, device, buffer):
        buffer.release()

    def copy_h2d(self, device, dst, dst_offset, src):
        self.copy_h2d_async(device, None, dst, dst_offset, src)
        self.default[device].finish()

    def copy_d2h(self, device, dst, src, src_offset):
        self.copy_d2h_async(device, None, dst, src, src_offset)
        self.default[device].finish()

    def copy_d2d(self, device, dst, dst_offset, src, src_offset, nbytes):
        self.copy_d2d_async(device, None, dst, dst_offset, src, src_offset, nbytes)
        self.default[device].finish()

    def copy_h2d_async(self, device, stream, dst, dst_offset, src):
        self.enqueue(device, stream, cl.enqueue_copy, dst, np.frombuffer(src, np.uint8),
                     dst_offset=dst_offset, is_blocking=False)

    def copy_d2h_async(self, device, stream, dst, src, src_offset):
        self.enqueue(device, stream, cl.enqueue_copy, np.frombuffer(dst, np.uint8), src,
                     src_offset=src_offset, is_blocking=False)

    def copy_d2d_async(self, device, stream, dst, dst_offset, src, src_offset, nbytes):
        if dst == src and abs(dst_offset - src_offset) < nbytes:  # OpenCL refuses overlap
            tmp = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=nbytes)
            self.enqueue(device, stream, cl.enqueue_copy, tmp, src, byte_count=nbytes,
                         src_offset=src_offset)
            src, src_offset = tmp, 0  # released by OpenCL once the copies are done
        self.enqueue(device, stream, cl.enqueue_copy, dst, src, byte_count=nbytes,
                     src_offset=src_offset, dst_offset=dst_offset)

    def memset(self, device, stream, dst, dst_offset, value, nbytes):
        self.enqueue(device, stream, cl.enqueue_fill_buffer, dst, np.uint8(value), dst_offset,
                     nbytes)

    # ---- streams and events ------------------------------------------------------------
    def create_stream(self, device):
        q = cl.CommandQueue(self.context, self.devices[device])
        self.queues[device].add(q)
        return q

    def destroy_stream(self, device, stream):
        stream.finish()
        self.queues[device].discard(stream)
        self.last.pop(stream, None)

    def synchronize_stream(self, device, stream):
        self.queue(device, stream).finish()

    def query_stream(self, device, stream):
        q = self.queue(device, stream)
        q.flush()
        last = self.last.get(q)  # in order: the last command done means all are
        return last is None or last.command_execution_status == COMPLETE

    def create_event(self, device):
        return Event()

    def destroy_event(self, device, event):
        pass

    def record_event(self, device, stream, event):
        q = self.queue(device, stream)
        event.marker = self.last[q] = cl.enqueue_marker(q)
        q.flush()

    def synchronize_event(self, device, event):
        if event.marker is not None:
            event.marker.wait()

    def query_event(self, device, event):
        return event.marker is None or event.marker.command_execution_status == COMPLETE

    def stream_wait_event(self, device, stream, event):
        if event.marker is not None:
            self.enqueue(device, stream, cl.enqueue_barrier, wait_for=[event.marker])

    # ---- kernels -----------------------------------------------------------------------
    def program(self, key, source, **defines):
        with self.lock:
            if key not in self.programs:
                options = [f"-D{k}={v}" for k, v in defines.items()]
                self.programs[key] = cl.Kernel(cl.Program(self.context, source).build(
                    options=options), "run")
            return self.programs[key]

    def launch(self, kernel, call, n, *args):
        if n:
            with self.lock:  # a cl.Kernel's arguments are shared state
                self.enqueue(call.device, call.stream, kernel, (n,), None, *args)

    def elementwise(self, op, call):
        x, out = call.inputs[0], call.outputs[0]
        y = call.inputs[1] if len(call.inputs) > 1 else x
        kernel = self.program((op, x.dtype, out.dtype), ELEMENTWISE, T=CTYPES[x.dtype],
                              OUT=CTYPES[out.dtype], EXPR=f"({EXPRESSIONS[op]})".replace(
                                  " ", ""))
        self.launch(kernel, call, out.numel, out.buffer, np.uint64(out.byte_offset),
                    np.uint64(out.numel), x.buffer, np.uint64(x.byte_offset), y.buffer,
                    np.uint64(y.byte_offset))

    def copy(self, call):
        x, out = call.inputs[0], call.outputs[0]
        kernel = self.program(("copy", x.itemsize), COPY, T=ITEM_TYPES[x.itemsize])
        meta = np.array([*x.shape, *x.strides] or [1], np.int64)
        meta_buf = cl.Buffer(self.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                             hostbuf=meta)
        self.launch(kernel, call, out.numel, out.buffer, np.uint64(out.byte_offset),
                    np.uint64(out.numel), x.buffer, np.uint64(x.byte_offset), meta_buf,
                    np.int32(len(x.shape)))

    def kernels(self):
        fp64 = all(d.double_fp_config for d in self.devices)
        for op in EXPRESSIONS:
            for dtype in ("float32", "float64") if fp64 else ("float32",):
                yield Kernel(op, dtype, lambda call, op=op: self.elementwise(op, call))
        for dtype in DTYPE_CODES:
            yield Kernel("copy", dtype, self.copy, strided=True)

    # ---- codegen target: dialect "opencl-c-1.2", pyopencl's build ----------------------
    def identity(self, device):
        d = self.devices[device]
        text = "\0".join((d.platform.name, d.name, d.vendor, d.driver_version))
        return hashlib.sha256(text.encode()).digest()[:16]

    def codegen_target(self, device):
        d = self.devices[device]
        if not d.opencl_c_version.startswith(("OpenCL C 1.2", "OpenCL C 2", "OpenCL C 3")):
            return None
        probe = cl.Program(self.context, PROBE).build(devices=[d])
        back = self.codegen_deserialize(device, "", self.codegen_serialize(probe))  # round trip
        simd = cl.Kernel(back, "probe").get_work_group_info(
            cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, d)
        flags = CODEGEN_SIMT | CODEGEN_SERIALIZE | (CODEGEN_FLOAT64 if d.double_fp_config else 0)
        return CodegenTarget(("opencl-c-1.2",), f"{d.name} (driver {d.driver_version})",
                             flags | (CODEGEN_FLOAT16 if "cl_khr_fp16" in d.extensions else 0),
                             simd_width=simd, preferred_vector_width=d.preferred_vector_width_float
                             or 1, max_group_size=d.max_work_group_size,
                             compute_units=d.max_compute_units, local_memory_bytes=d.local_mem_size)

    def codegen_compile(self, device, dialect, source, options):
        opts = ["-cl-opt-disable" if o == "-O0" else o for o in options.split()
                if o == "-O0" or not o.startswith("-O")]  # OpenCL optimizes by default
        if not any(o.startswith("-cl-std=") for o in opts):
            opts.append("-cl-std=CL1.2")
        program, d = cl.Program(self.context, source), self.devices[device]
        try:
            return program.build(opts, devices=[d])
        except cl.RuntimeError as exc:  # the build failed: the compiler's output is its log
            raise CompileError(program.get_build_info(d, cl.program_build_info.LOG) or str(exc),
                               f"the OpenCL C does not compile: {exc}") from None

    def codegen_function(self, module, name):
        try:
            kernel = cl.Kernel(module, name)
        except cl.Error as exc:
            raise PluginError(NOT_FOUND, f"the module has no kernel {name!r} ({exc})") from None
        return kernel, threading.Lock()  # one thread at a time sets a kernel's arguments

    def codegen_launch(self, device, function, stream, grid, group, args):
        kernel, lock = function
        values = [v for a in args for v in ((a.buffer, np.uint64(a.byte_offset))
                  if isinstance(a, BufferArg) else (np.int64(a),) if isinstance(a, int)
                  else (np.float64(a),))]
        if len(values) != kernel.num_args:
            raise PluginError(INVALID_ARGUMENT, f"{kernel.function_name} has {kernel.num_args} "
                              f"parameters, the arguments make {len(values)}")
        with lock:
            kernel.set_args(*values)
            self.enqueue(device, stream, cl.enqueue_nd_range_kernel, kernel,
                         [n * g for n, g in zip(grid, group, strict=True)], list(group))

    def codegen_serialize(self, module):
        built = zip(module.get_info(cl.program_info.DEVICES),
                    module.get_info(cl.program_info.BINARIES), strict=True)
        device, binary = next((self.devices.index(d), b) for d, b in built if b)
        return MAGIC + self.identity(device) + hashlib.sha256(binary).digest()[:16] + binary

    def codegen_deserialize(self, device, dialect, data):
        head, binary = data[:40], data[40:]
        if head != MAGIC + self.identity(device) + hashlib.sha256(binary).digest()[:16]:
            raise ValueError("not this device's serialized module, or corrupt")
        d = self.devices[device]
        return cl.Program(self.context, [d], [binary]).build(devices=[d])
