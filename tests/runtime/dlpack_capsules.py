"""DLPack capsules made and read with ctypes, independently of hwport's own DLPack code: a
foreign producer whose "device memory" is a numpy array's (the test plugin's devices are host
malloc underneath, so any host address serves as their device memory), and a reader that
decodes what hwport exports."""

from __future__ import annotations

import ctypes as C
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", DLDevice), ("ndim", C.c_int32),
                ("dtype", DLDataType), ("shape", C.POINTER(C.c_int64)),
                ("strides", C.POINTER(C.c_int64)), ("byte_offset", C.c_uint64)]


class DLPackVersion(C.Structure):
    _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32)]


class DLManagedTensorVersioned(C.Structure):
    pass


class DLManagedTensor(C.Structure):
    pass


DELETER_V = C.CFUNCTYPE(None, C.POINTER(DLManagedTensorVersioned))
DELETER = C.CFUNCTYPE(None, C.POINTER(DLManagedTensor))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", C.c_void_p),
                                     ("deleter", DELETER_V), ("flags", C.c_uint64),
                                     ("dl_tensor", DLTensor)]
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", C.c_void_p),
                            ("deleter", DELETER)]

_capsule_new = C.pythonapi.PyCapsule_New
_capsule_new.restype = C.py_object
_capsule_new.argtypes = [C.c_void_p, C.c_char_p, C.c_void_p]
_capsule_get = C.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = C.c_void_p
_capsule_get.argtypes = [C.py_object, C.c_char_p]
_capsule_set_name = C.pythonapi.PyCapsule_SetName
_capsule_set_name.restype = C.c_int
_capsule_set_name.argtypes = [C.py_object, C.c_char_p]

_VERSIONED = b"dltensor_versioned"
_DL_CODES = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}


@dataclass
class ForeignArray:
    """Another framework's array on DLPack device `device` (type, id), backed by `array`.

    It records the `stream` each __dlpack__ call received and how often the consumer released
    the memory; `capsule_device` (default: `device`) lets a test make the capsule disagree with
    __dlpack_device__."""

    array: np.ndarray
    device: tuple[int, int]
    capsule_device: tuple[int, int] | None = None
    streams: list[Any] = field(default_factory=list)
    released: int = 0

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        self.streams.append(stream)
        a = self.array
        dev = self.capsule_device or self.device
        if dl_device is not None and tuple(dl_device) != dev:
            if tuple(dl_device) != (1, 0) or copy is False:
                raise BufferError(f"cannot export to {dl_device}")
            a, dev = a.copy(), (1, 0)  # a host copy, as the consumer asked
        shape = (C.c_int64 * max(a.ndim, 1))(*a.shape)
        strides = (C.c_int64 * max(a.ndim, 1))(*(s // a.itemsize for s in a.strides))
        managed = DLManagedTensorVersioned()
        managed.version = DLPackVersion(1, 0)
        managed.dl_tensor = DLTensor(
            a.ctypes.data, DLDevice(*dev), a.ndim,
            DLDataType(_DL_CODES[a.dtype.kind], a.itemsize * 8, 1),
            C.cast(shape, C.POINTER(C.c_int64)), C.cast(strides, C.POINTER(C.c_int64)), 0)

        def release(_: Any) -> None:
            self.released += 1

        deleter = DELETER_V(release)
        managed.deleter = deleter
        keep = (shape, strides, managed, deleter, a)
        # Immortal, like a C producer's code and context: a consumer may release the capsule
        # during interpreter shutdown, after this object's module is gone.
        C.pythonapi.Py_IncRef(C.py_object(keep))
        return _capsule_new(C.addressof(managed), _VERSIONED, None)


@dataclass
class Exported:
    """What an exported capsule says, decoded."""

    data: int
    device: tuple[int, int]
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    code: int
    bits: int
    byte_offset: int
    version: tuple[int, int] | None

    def read(self, dtype: np.dtype) -> np.ndarray:
        """The elements, read straight from the exported address (host memory underneath)."""
        dtype = np.dtype(dtype)
        assert dtype.itemsize * 8 == self.bits
        dims = list(zip(self.shape, self.strides, strict=True))
        n = 1 + sum((d - 1) * abs(s) for d, s in dims) if all(self.shape) else 0
        lo = sum((d - 1) * s for d, s in dims if s < 0)
        base = self.data + self.byte_offset + lo * dtype.itemsize
        flat = np.frombuffer((C.c_char * (n * dtype.itemsize)).from_address(base), dtype)
        first = flat[-lo:]  # the first element; negative strides reach back before it
        return np.lib.stride_tricks.as_strided(
            first, self.shape, [s * dtype.itemsize for s in self.strides]).copy()


# A capsule keeps the pointer to its name, not a copy: the names must outlive every capsule
# (a temporary bytes object would leave it pointing at freed memory; ASan reports it).
_USED_NAMES = {b"dltensor": b"used_dltensor", _VERSIONED: b"used_" + _VERSIONED}


def consume(capsule: Any) -> Exported:
    """Decodes an exported capsule and releases it (as a consumer that finished would)."""
    versioned = _capsule_name(capsule) == _VERSIONED
    name = _VERSIONED if versioned else b"dltensor"
    ptr = _capsule_get(capsule, name)
    managed = C.cast(ptr, C.POINTER(DLManagedTensorVersioned if versioned else DLManagedTensor))
    t = managed.contents.dl_tensor
    out = Exported(
        t.data or 0, (t.device.device_type, t.device.device_id),
        tuple(t.shape[i] for i in range(t.ndim)), tuple(t.strides[i] for i in range(t.ndim)),
        t.dtype.code, t.dtype.bits, t.byte_offset,
        (managed.contents.version.major, managed.contents.version.minor) if versioned else None)
    _capsule_set_name(capsule, _USED_NAMES[name])
    managed.contents.deleter(managed)
    return out


def _capsule_name(capsule: Any) -> bytes:
    get_name = C.pythonapi.PyCapsule_GetName
    get_name.restype = C.c_char_p
    get_name.argtypes = [C.py_object]
    return get_name(capsule)
