"""numpy_device: the shortest port. Memory is numpy arrays, kernels are numpy expressions.

    HWPORT_PLUGIN_PATH=.../numpy_device.py python -c 'import hwport; print(hwport.to_tensor(
        [1.0, 2.0], place="custom:numpy").exp())'
"""

import numpy as np

from hwport.device_plugins.python import DTYPE_CODES, HOST_MEMORY, Kernel, Plugin, numpy_dtype

UFUNCS = {"abs": np.abs, "neg": np.negative, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
          "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "add": np.add, "subtract": np.subtract,
          "multiply": np.multiply, "divide": np.divide, "maximum": np.maximum,
          "minimum": np.minimum, "equal": np.equal, "less_than": np.less}


def array(v):  # the view as a numpy array over the buffer (strides may be 0 or negative)
    return np.ndarray(v.shape, numpy_dtype(v.dtype), v.buffer, v.byte_offset,
                      [s * v.itemsize for s in v.strides])


class NumpyDevice(Plugin):
    device_type = "numpy"
    flags = HOST_MEMORY

    def synchronize(self, device):
        pass  # every call below completes before it returns

    def allocate(self, device, nbytes):
        raw = np.empty(nbytes + 64, np.uint8)
        start = -raw.ctypes.data % 64  # 64-byte aligned, as properties say
        return raw[start:start + nbytes]

    def copy_h2d(self, device, dst, dst_offset, src):
        dst[dst_offset:dst_offset + len(src)] = src

    def copy_d2h(self, device, dst, src, src_offset):
        dst[:] = src.data[src_offset:src_offset + len(dst)]

    def copy_d2d(self, device, dst, dst_offset, src, src_offset, nbytes):
        dst[dst_offset:dst_offset + nbytes] = src[src_offset:src_offset + nbytes]

    def memset(self, device, stream, dst, dst_offset, value, nbytes):
        dst[dst_offset:dst_offset + nbytes] = value

    def host_address(self, device, buffer, offset):
        return buffer.ctypes.data + offset

    def kernels(self):
        for dtype in ("float32", "float64"):
            for op, fn in UFUNCS.items():
                yield Kernel(op, dtype, lambda c, fn=fn: fn(*map(array, c.inputs),
                                                            out=array(c.outputs[0])), True)
            yield Kernel("fill", dtype, lambda c: array(c.outputs[0]).fill(c.attr("value",
                                                                                "float")))
        for dtype in DTYPE_CODES:
            yield Kernel("copy", dtype, lambda c: np.copyto(array(c.outputs[0]),
                                                            array(c.inputs[0])), True)
