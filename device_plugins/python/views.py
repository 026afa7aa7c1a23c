"""What a Python kernel sees: the call's tensor views and attributes (HWP_KernelContext)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# HWP_DType codes (runtime/include/hwport/types.h); the names are the ops' dtype names.
DTYPE_CODES = {"bool": 0, "int8": 1, "uint8": 2, "int16": 3, "int32": 4, "int64": 5,
               "float16": 6, "bfloat16": 7, "float32": 8, "float64": 9}
DTYPE_NAMES = {code: name for name, code in DTYPE_CODES.items()}


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of an op dtype name (bfloat16 through ml_dtypes)."""
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


ITEMSIZE = {name: numpy_dtype(name).itemsize if name != "bfloat16" else 2
            for name in DTYPE_CODES}

# HWP_AttrType codes, by the name a kernel asks for.
ATTR_TYPES = {"bool": 0, "int": 1, "float": 2, "str": 3, "ints": 4, "floats": 5, "dtype": 6}


@dataclass(frozen=True)
class View:
    """A strided view of a plugin buffer (HWP_TensorView): element (i0, ..) lives at byte
    ``byte_offset + itemsize * sum(i_k * strides[k])`` of ``buffer`` (the plugin's own object).
    Strides are in elements, may be 0 or negative."""

    buffer: Any
    byte_offset: int
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def itemsize(self) -> int:
        return ITEMSIZE[self.dtype]

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    def is_contiguous(self) -> bool:
        expected = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True


class KernelCall:
    """One launch: ``device``, ``stream`` (the plugin's stream object, None for the NULL
    stream), ``inputs`` and ``outputs`` (Views; outputs are contiguous) and ``attr()``."""

    def __init__(self, ffi: Any, ctx: Any, device: int, stream: Any, inputs: list[View],
                 outputs: list[View]) -> None:
        self._ffi, self._ctx = ffi, ctx
        self.device, self.stream, self.inputs, self.outputs = device, stream, inputs, outputs

    def attr(self, name: str, kind: str, default: Any = None) -> Any:
        """Attribute ``name`` as ``kind`` (bool, int, float, str, ints, floats, dtype), or
        ``default`` when the op call has none (or not of that kind)."""
        ffi = self._ffi
        type_code = ATTR_TYPES[kind]
        out_type = {0: "uint8_t *", 1: "int64_t *", 2: "double *", 3: "const char **",
                    4: "const int64_t **", 5: "const double **", 6: "int32_t *"}[type_code]
        out = ffi.new(out_type)
        count = ffi.new("int64_t *")
        if self._ctx.get_attr(self._ctx, name.encode(), type_code, out, count) != 0:
            return default
        if kind == "bool":
            return bool(out[0])
        if kind == "str":
            return ffi.string(out[0]).decode()
        if kind in ("ints", "floats"):
            return [out[0][i] for i in range(count[0])]
        if kind == "dtype":
            return DTYPE_NAMES.get(out[0], str(out[0]))
        return out[0]
