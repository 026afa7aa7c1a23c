"""Running lowered groups for real, independently of the interpreter: the c99 source compiled
with the system C compiler into a shared object and called through ctypes with the dialect's
convention (codegen.h: NAME(gx, gy, gz, args), one call per group, groups on threads), or
through the runtime's codegen binding where it exists; the OpenCL source through pyopencl."""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from hwport.cinn_backends.lower_group import LoweredGroup

_CACHE = Path(tempfile.gettempdir()) / "hwport_cinn_test_so"
_POOL = ThreadPoolExecutor(max_workers=4)


def have_cc() -> bool:
    return shutil.which("cc") is not None


def compile_c99(source: str, options: str) -> ctypes.CDLL:
    key = hashlib.sha256((source + options).encode()).hexdigest()[:24]
    _CACHE.mkdir(parents=True, exist_ok=True)
    so = _CACHE / f"k_{key}.so"
    if not so.exists():
        src = _CACHE / f"k_{key}.c"
        src.write_text(source)
        tmp = _CACHE / f"k_{key}.{id(source)}.so"
        cmd = ["cc", "-std=c99", "-shared", "-fPIC", "-march=native", *options.split(),
               "-o", str(tmp), str(src), "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise AssertionError(f"c99 source does not compile:\n{proc.stderr}\n{source}")
        tmp.replace(so)
    return ctypes.CDLL(str(so))


def _storage(a: np.ndarray) -> np.ndarray:
    return np.array(a, order="C", copy=True)


def _output(shape: tuple[int, ...], dt: Any, offset: int) -> np.ndarray:
    """An output array starting `offset` bytes past a 64-byte boundary, filled with a value
    the kernel must overwrite."""
    dt = np.dtype(dt)
    n = int(np.prod(shape)) * dt.itemsize
    raw = np.empty(n + offset + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + offset
    out = raw[start:start + n].view(dt).reshape(shape)
    out[...] = 0x7F if dt.kind != "f" else np.nan
    return out


def run_c99(lowered: LoweredGroup, inputs: list[np.ndarray],
            out_specs: list[tuple[tuple[int, ...], Any]], out_offset: int = 0
            ) -> list[np.ndarray]:
    """Compile and launch; out_specs: (shape, numpy dtype) per output; out_offset: the outputs
    start that many bytes past a 64-byte boundary (a multiple of their element size)."""
    lib = compile_c99(lowered.source, lowered.options)
    ins = [_storage(a) for a in inputs]
    outs = [_output(tuple(shape), dt, out_offset) for shape, dt in out_specs]
    shapes: dict[Any, tuple[int, ...]] = {("in", i): a.shape for i, a in enumerate(ins)}
    shapes.update({("out", j): o.shape for j, o in enumerate(outs)})
    for launch in lowered.launches(shapes):
        keep: list[Any] = []
        ptrs = (ctypes.c_void_p * len(launch.args))()
        for n, (kind, value) in enumerate(launch.args):
            if kind == "in":
                ptrs[n] = ins[value].ctypes.data
            elif kind == "out":
                ptrs[n] = outs[value].ctypes.data
            else:
                box = ctypes.c_int64(value) if kind == "i64" else ctypes.c_double(value)
                keep.append(box)
                ptrs[n] = ctypes.addressof(box)
        fn = getattr(lib, launch.kernel)
        fn.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        fn.restype = None
        gx, gy, gz = launch.grid
        jobs = [_POOL.submit(fn, x, y, z, ptrs) for z in range(gz) for y in range(gy)
                for x in range(gx)]
        for j in jobs:
            j.result()
    return [np.array(o) for o in outs]


def opencl_context() -> Any:
    try:
        import pyopencl as cl
    except ImportError:
        return None
    try:
        for platform in cl.get_platforms():
            devices = platform.get_devices()
            if devices:
                ctx = cl.Context([devices[0]])
                return ctx, cl.CommandQueue(ctx), devices[0]
    except Exception:  # noqa: BLE001 - no OpenCL here: the tests skip
        return None
    return None


def run_opencl(cl_env: Any, lowered: LoweredGroup, inputs: list[np.ndarray],
               out_specs: list[tuple[tuple[int, ...], Any]],
               out_offset: int = 0) -> list[np.ndarray]:
    """out_offset: the outputs start that many bytes into their buffers (a multiple of their
    element size), e.g. to write them misaligned."""
    import pyopencl as cl

    ctx, queue, _ = cl_env
    prg = cl.Program(ctx, lowered.source).build(options=lowered.options)
    mf = cl.mem_flags
    ins = [_storage(a) for a in inputs]
    in_bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a if a.size else
                         np.zeros(1, a.dtype)) for a in ins]
    outs = [np.zeros(shape, dtype=dt) for shape, dt in out_specs]
    out_bufs = [cl.Buffer(ctx, mf.READ_WRITE, size=max(1, o.nbytes + out_offset))
                for o in outs]
    shapes: dict[Any, tuple[int, ...]] = {("in", i): a.shape for i, a in enumerate(ins)}
    shapes.update({("out", j): o.shape for j, o in enumerate(outs)})
    for launch in lowered.launches(shapes):
        args: list[Any] = []
        for kind, value in launch.args:
            if kind in ("in", "out"):
                args += [(in_bufs if kind == "in" else out_bufs)[value],
                         np.uint64(0 if kind == "in" else out_offset)]
            elif kind == "i64":
                args.append(np.int64(value))
            else:
                args.append(np.float64(value))
        kernel = getattr(prg, launch.kernel)
        gsize = tuple(g * s for g, s in zip(launch.grid, launch.group, strict=True))
        kernel(queue, gsize, tuple(launch.group), *args)
    for o, b in zip(outs, out_bufs, strict=True):
        if o.size:
            cl.enqueue_copy(queue, o, b, src_offset=out_offset)
    queue.finish()
    return outs


def have_core_codegen(place: str = "custom:cpu") -> bool:
    try:
        from hwport.runtime import _core
    except ImportError:
        return False
    if not hasattr(_core, "codegen_compile"):
        return False
    try:
        return _core.codegen_target_info(place) is not None
    except Exception:  # noqa: BLE001 - no such place: no target
        return False


def run_core(lowered: LoweredGroup, inputs: list[np.ndarray],
             out_specs: list[tuple[tuple[int, ...], Any]], place: str = "custom:cpu"
             ) -> list[np.ndarray]:
    """Through the runtime: the plugin's codegen table compiles and launches (hwport Tensors
    as buffer arguments)."""
    import hwport
    from hwport.runtime import _core

    module = _core.codegen_compile(place, lowered.dialect, lowered.source, lowered.options)
    ins = [hwport.to_tensor(np.array(a, order="C"), place=place) for a in inputs]
    outs = [hwport.to_tensor(np.zeros(shape, dtype=dt), place=place) for shape, dt in out_specs]
    shapes: dict[Any, tuple[int, ...]] = {("in", i): np.shape(a) for i, a in enumerate(inputs)}
    shapes.update({("out", j): tuple(s) for j, (s, _) in enumerate(out_specs)})
    for launch in lowered.launches(shapes):
        args = [ins[v] if kind == "in" else outs[v] if kind == "out" else v
                for kind, v in launch.args]
        module.get_function(launch.kernel).launch(list(launch.grid), list(launch.group), args)
    return [o.numpy() for o in outs]
