"""What a Python kernel sees: the call's tensor views and attributes (HWP_KernelContext)."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import numpy as np


def header_enum(name: str, header: str = "types.h") -> dict[str, int]:
    """The members of C enum ``name`` of an ABI header, {NAME: value}: the headers are the
    contract, read here (no compiler needed) from the installed or the source tree's copy."""
    root = Path(__file__).resolve().parents[2] / "runtime" / "include" / "hwport"
    text = re.sub(r"/\*.*?\*/", "", (root / header).read_text(), flags=re.S)
    body = re.search(rf"enum {name} \{{(.*?)\}};", text, flags=re.S)
    if body is None:
        raise LookupError(f"enum {name} is not in {root / header}")
    return {m.group(1): int(m.group(2), 0) if m.group(3) is None
            else int(m.group(2), 0) << int(m.group(3))
            for m in re.finditer(r"(\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)[uU]?(?:\s*<<\s*(\d+))?",
                                 body.group(1))}


# HWP_DType codes; the names are the ops' dtype names (HWP_DTYPE_FLOAT32 -> "float32").
DTYPE_CODES = {k.removeprefix("HWP_DTYPE_").lower(): v
               for k, v in header_enum("HWP_DTypeCode").items() if k != "HWP_DTYPE_COUNT"}
DTYPE_NAMES = {code: name for name, code in DTYPE_CODES.items()}


@functools.cache
def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of an op dtype name (bfloat16 through ml_dtypes)."""
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


ITEMSIZE = {name: numpy_dtype(name).itemsize if name != "bfloat16" else 2
            for name in DTYPE_CODES}

# What get_attr writes for each kind a kernel asks for: (HWP_AttrType, the out pointer's type).
_ATTR = header_enum("HWP_AttrTypeCode", "kernel.h")
ATTR_KINDS = {"bool": (_ATTR["HWP_ATTR_BOOL"], "uint8_t *"),
              "int": (_ATTR["HWP_ATTR_INT64"], "int64_t *"),
              "float": (_ATTR["HWP_ATTR_FLOAT64"], "double *"),
              "str": (_ATTR["HWP_ATTR_STRING"], "const char **"),
              "ints": (_ATTR["HWP_ATTR_INT64_ARRAY"], "const int64_t **"),
              "floats": (_ATTR["HWP_ATTR_FLOAT64_ARRAY"], "const double **"),
              "dtype": (_ATTR["HWP_ATTR_DTYPE"], "int32_t *")}


class View:
    """A strided view of a plugin buffer (HWP_TensorView): element (i0, ..) lives at byte
    ``byte_offset + itemsize * sum(i_k * strides[k])`` of ``buffer`` (the plugin's own object).
    Strides are in elements, may be 0 or negative."""

    __slots__ = ("buffer", "byte_offset", "dtype", "shape", "strides")  # one per launch: cheap

    def __init__(self, buffer: Any, byte_offset: int, dtype: str, shape: tuple[int, ...],
                 strides: tuple[int, ...]) -> None:
        self.buffer, self.byte_offset, self.dtype = buffer, byte_offset, dtype
        self.shape, self.strides = shape, strides

    def __repr__(self) -> str:
        return (f"View({self.dtype}, shape={self.shape}, strides={self.strides}, "
                f"byte_offset={self.byte_offset})")

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
        type_code, out_type = ATTR_KINDS[kind]
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
