"""Tensor creation from Python data and the Python-side conveniences of Tensor (repr, numpy
protocol, scalars). The arithmetic itself is bound in C++ (hwport.runtime._core)."""

from __future__ import annotations

from typing import Any

import numpy as np

from hwport.phi_ops import api_args as _api_args
from hwport.runtime import _core
from hwport.runtime._core import Tensor

_DEFAULT_INT = np.int64


def _as_array(data: Any) -> np.ndarray:
    """numpy view/copy of `data`; Python floats become the default float dtype
    (get_default_dtype(), float32 unless changed) and ints int64."""
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, np.generic):
        return np.asarray(data)
    if hasattr(data, "__array__") or hasattr(data, "__array_interface__"):
        return np.asarray(data)
    if hasattr(data, "__dlpack__"):
        return np.from_dlpack(data)
    if isinstance(data, (bool, int, float, list, tuple)):
        try:
            arr = np.asarray(data)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"to_tensor: data could not become a tensor: {exc}") from None
        if arr.dtype == np.float64 and _api_args.get_default_dtype() != "float64":
            arr = arr.astype(_core.parse_dtype(_api_args.get_default_dtype(), "to_tensor",
                                               "dtype").to_numpy())
        elif arr.dtype.kind == "i":
            arr = arr.astype(_DEFAULT_INT)
        return arr
    raise TypeError(
        f"to_tensor: data of type {type(data).__name__} cannot become a tensor; expected a "
        "number, bool, (nested) list/tuple, numpy array, or an object with __array__/__dlpack__"
    )


def to_tensor(data: Any, dtype: Any = None, place: Any = None,
              stop_gradient: bool = True) -> Tensor:
    """A new tensor holding a copy of `data` on `place` (default: the current device).

    dtype: a hwport dtype, its name, a numpy dtype, or None to keep the data's own
    (Python floats become the default float dtype, float32 unless set_default_dtype changed
    it; ints int64). stop_gradient: Paddle's (False: the tensor records gradients)."""
    device_place = _core.resolve_place(place)
    target = None if dtype is None else _core.parse_dtype(dtype, "to_tensor", "dtype")
    if isinstance(data, Tensor):
        data = data.numpy()
    arr = _as_array(data)
    if arr.dtype.kind in "OUSVcMm" and arr.dtype.name != "bfloat16":
        raise TypeError(
            f"to_tensor: data of type {type(data).__name__} with numpy dtype {arr.dtype} cannot "
            f"become a tensor; supported dtypes: {', '.join(_core.DType.__members__)}"
        )
    if target is not None:
        arr = arr.astype(target.to_numpy(), copy=False)
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")  # (np.ascontiguousarray would turn 0-d into 1-d)
    out = _core.from_numpy(arr, device_place)
    if not stop_gradient:
        try:
            out.stop_gradient = False  # Tensor.stop_gradient: the autograd layer's
        except AttributeError:
            raise NotImplementedError("to_tensor: stop_gradient=False needs autograd "
                                      "(Tensor.stop_gradient), which this build lacks") from None
    return out


_DL_CPU, _DL_CUDA_HOST = 1, 3


def _capsule(data: Any, stream: int | None) -> Any:
    """The producer's DLPack capsule, versioned (1.0) when it can give one."""
    kwargs = {} if stream is None else {"stream": stream}
    try:
        return data.__dlpack__(max_version=(1, 0), **kwargs)
    except TypeError:  # a producer from before DLPack 1.0
        return data.__dlpack__(**kwargs)


def from_dlpack(data: Any, place: Any = None) -> Tensor:
    """Zero-copy import of a DLPack tensor (an object with __dlpack__, or a capsule).

    Host memory (e.g. a numpy array) lands on `place` (default: the current device), shared
    when that device is host-memory, else copied. Device memory (e.g. a CuPy array) lands on
    the device that holds it (the plugin whose properties name that DLPack device), shared, its
    producer's pending work ordered before hwport's through DLPack's stream exchange; with a
    `place` on another device it is then copied there. Device memory that no device here can
    take is asked of the producer as a host copy (DLPack's dl_device), then treated as host
    memory."""
    if not hasattr(data, "__dlpack__"):
        return _import_host(data, place)
    dtype = getattr(data, "dtype", None)
    if isinstance(dtype, np.dtype) and not dtype.isnative:
        # DLPack has no byte-order field: the producer refuses such memory (numpy says only
        # "DLPack only supports native byte order"); say what to do instead.
        raise BufferError(
            f"from_dlpack: data has non-native byte order (numpy dtype {dtype.str!r}); DLPack "
            "shares memory only in native byte order. Use hwport.to_tensor(data), which "
            "converts it (a copy), or data.astype(data.dtype.newbyteorder('=')) first")
    dl_type, dl_id = data.__dlpack_device__() if hasattr(data, "__dlpack_device__") else (1, 0)
    if dl_type in (_DL_CPU, _DL_CUDA_HOST):
        return _import_host(_capsule(data, None), place)
    try:
        source = _core.dlpack_place(int(dl_type), int(dl_id))
    except ValueError:
        # No device here takes that memory: ask the producer for a host copy (the array API's
        # dl_device/copy), as numpy does; a producer that cannot make one leaves our error.
        host = _host_copy(data)
        if host is None:
            raise
        return _import_host(host, place)
    tensor = _core.from_dlpack_capsule(_capsule(data, _core.dlpack_stream(source)), source)
    if place is None or _core.resolve_place(place) == source:
        return tensor
    return tensor.to(place)


def _host_copy(data: Any) -> Any:
    """The producer's capsule of a host copy of `data`, or None when it cannot give one."""
    try:
        return data.__dlpack__(max_version=(1, 0), dl_device=(_DL_CPU, 0), copy=True)
    except (TypeError, ValueError, BufferError, NotImplementedError, RuntimeError):
        return None


def _import_host(capsule: Any, place: Any) -> Tensor:
    """Host memory onto `place`: shared when it is a host-memory device, else copied there."""
    device_place = _core.resolve_place(place)
    if _core.is_host_memory(device_place):
        return _core.from_dlpack_capsule(capsule, device_place)
    return _core.from_dlpack_capsule(capsule, "cpu").to(device_place)


# Called with (tensor, what) before a tensor's values are read on the host: to_static's
# capture (hwport/jit/capture.py) turns a read of a traced tensor into a clear error or a graph
# break, since the program it records cannot see values. Empty outside a capture.
value_read_hooks: list[Any] = []
_to_numpy = Tensor.numpy  # the C++ method
_set_value_impl = Tensor.set_value  # the C++ method (bound by the autograd module)


def _reading(t: Tensor, what: str) -> None:
    for hook in value_read_hooks:
        hook(t, what)


# Called with (tensor, value) after Tensor.set_value wrote into a tensor: the capture records
# the write as a program output copied back after each run (or refuses it).
value_write_hooks: list[Any] = []


def _set_value(self: Tensor, value: Any) -> None:
    _set_value_impl(self, value)
    for hook in value_write_hooks:
        hook(self, value)


def _numpy(self: Tensor) -> np.ndarray:
    if value_read_hooks:
        _reading(self, "Tensor.numpy()")
    return _to_numpy(self)


_numpy.__doc__ = _to_numpy.__doc__


def _repr(self: Tensor) -> str:
    if value_read_hooks:
        _reading(self, "print/repr")
    prefix = "       "
    body = np.array2string(_to_numpy(self), separator=", ", prefix=prefix, threshold=200)
    return (
        f"Tensor(shape={list(self.shape)}, dtype={self.dtype!r}, place={self.place},\n"
        f"{prefix}{body})"
    )


def _array(self: Tensor, dtype: Any = None, copy: Any = None) -> np.ndarray:
    if value_read_hooks:
        _reading(self, "np.asarray")
    arr = _to_numpy(self)
    return arr if dtype is None else arr.astype(dtype, copy=False)


def _item(self: Tensor, *args: int) -> Any:
    """The element as a Python scalar: of a 1-element tensor, or (Paddle) at a flat index
    item(i) or at coordinates item(i, j, ...)."""
    if value_read_hooks:
        _reading(self, "Tensor.item()")
    if not args:
        if _numel_int(self) != 1:
            raise ValueError(f"item(): tensor of shape {list(self.shape)} has {self.size} "
                             "elements, expected exactly 1 (or give an index)")
        return _to_numpy(self).reshape(()).item()
    if not all(isinstance(i, int | np.integer) and not isinstance(i, bool) for i in args):
        raise TypeError(f"item(): indices must be ints, got {args!r}")
    arr = _to_numpy(self)
    try:
        return arr.item(*args)
    except IndexError:
        raise IndexError(f"item(): index {args if len(args) > 1 else args[0]} is out of range "
                         f"for a tensor of shape {list(self.shape)}") from None


def _bind_ops() -> None:
    """Tensor methods and operators from the op library (generated from ops.yaml)."""
    from hwport.indexing import getitem
    from hwport.phi_ops import functional

    for name, fn in functional.METHODS.items():
        setattr(Tensor, name, fn)
    # Bound in C++ by runtime/src/bind_tensor.cpp (they return NotImplemented for operands
    # that are neither tensors nor scalars, and raise its own broadcast message).
    fast = {"__add__", "__radd__", "__mul__", "__rmul__"}
    for dunder, (fn, reflected) in functional.OPERATORS.items():
        if dunder in fast:
            continue
        if dunder in functional.PIPELINE_OPERATORS:  # the C++ op pipeline, else Python's path
            op_id, swapped = functional.PIPELINE_OPERATORS[dunder]
            setattr(Tensor, dunder, _core._pipeline_operator(op_id, swapped, dunder))
            continue
        setattr(Tensor, dunder, _reflected(fn) if reflected else fn)
    Tensor.__getitem__ = _core._getitem_method(getitem)  # basic forms in C++, else getitem
    Tensor.__hash__ = object.__hash__  # __eq__ is elementwise; identity stays hashable
    Tensor.T = property(functional.transpose)
    Tensor.astype = lambda self, dtype: functional.cast(self, dtype=dtype)


def _reflected(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Any:
        return fn(other, self)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


Tensor.numpy = _numpy
_set_value.__doc__ = _set_value_impl.__doc__
Tensor.set_value = _set_value
Tensor.__repr__ = _repr
Tensor.__str__ = _repr
Tensor.__array__ = _array
Tensor.__array_priority__ = 1000  # numpy defers `ndarray + tensor` to Tensor.__radd__
Tensor.item = _item


def _read_as(what: str, convert: Any) -> Any:
    def method(self: Tensor) -> Any:
        if value_read_hooks:
            _reading(self, what)
        return convert(_item(self))
    return method


Tensor.__bool__ = _read_as("bool() (a Python if/while/and/or on a tensor)", bool)
Tensor.__float__ = _read_as("float()", float)
Tensor.__int__ = _read_as("int()", int)
Tensor.tolist = lambda self: self.numpy().tolist()
_bind_ops()


# ---- Paddle-compatible conveniences (docs/paddle-compat.md) ------------------------------


class Size(list):
    """Tensor.shape as Paddle 3 gives it (paddle.Size): a list of ints that also equals the
    tuple of the same dims and concatenates with tuples; numel() is their product."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, tuple):
            other = list(other)
        return list.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        same = self.__eq__(other)
        return same if same is NotImplemented else not same

    def __lt__(self, other: Any) -> bool:
        return list.__lt__(self, list(other) if isinstance(other, tuple) else other)

    def __le__(self, other: Any) -> bool:
        return list.__le__(self, list(other) if isinstance(other, tuple) else other)

    def __gt__(self, other: Any) -> bool:
        return list.__gt__(self, list(other) if isinstance(other, tuple) else other)

    def __ge__(self, other: Any) -> bool:
        return list.__ge__(self, list(other) if isinstance(other, tuple) else other)

    __hash__ = None  # type: ignore[assignment]  (a list, as paddle.Size is)

    def __add__(self, other: Any) -> Size:  # type: ignore[override]
        return Size(list(self) + list(other))

    def __radd__(self, other: Any) -> Size:
        return Size(list(other) + list(self))

    def __getitem__(self, key: Any) -> Any:
        out = list.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __repr__(self) -> str:
        return list.__repr__(self)

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n


class TensorSize(int):
    """Tensor.size as Paddle 3 gives it: the element count (an int), and callable as
    PyTorch's size: x.size() is the shape, x.size(dim) one dim."""

    def __new__(cls, numel: int, shape: tuple[int, ...]) -> TensorSize:
        out = super().__new__(cls, numel)
        out._shape = shape
        return out

    def __call__(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self._shape)
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"size(): dim expected an int, got {type(dim).__name__}")
        if not -len(self._shape) <= dim < max(len(self._shape), 1) or not self._shape:
            raise IndexError(f"size(): dim {dim} is out of range for a tensor of "
                             f"{len(self._shape)} dims")
        return self._shape[dim]


_shape_tuple = Tensor.shape.fget  # the C++ property (a tuple)
_numel_int = Tensor.size.fget  # the C++ property (an int)


def _size(self: Tensor) -> TensorSize:
    return TensorSize(_numel_int(self), _shape_tuple(self))


def _shape(self: Tensor) -> Size:
    return Size(_shape_tuple(self))


def numel(x: Tensor, name: str | None = None) -> Tensor:
    """The number of elements as a 0-d int64 tensor on x's place (Paddle's numel; x.size is
    the same number as a Python int)."""
    from hwport.phi_ops import functional
    if not isinstance(x, Tensor):
        raise TypeError(f"numel: x expected a Tensor, got {type(x).__name__}")
    return functional.fill([], x.size, "int64", place=x.place)


def t(input: Tensor, name: str | None = None) -> Tensor:
    """Paddle's t: a 0-D or 1-D tensor as it is, a 2-D one transposed (a view)."""
    from hwport.phi_ops import functional
    if not isinstance(input, Tensor):
        raise TypeError(f"t: input expected a Tensor, got {type(input).__name__}")
    if input.ndim > 2:
        raise ValueError(f"t: input expected at most 2 dims, got {input.ndim} (shape "
                         f"{list(input.shape)}); use transpose(x, perm)")
    return input if input.ndim < 2 else functional.transpose(input, [1, 0])


def clone(x: Tensor, name: str | None = None) -> Tensor:
    """A copy of x with its own storage (contiguous), same dtype, shape and place."""
    from hwport.phi_ops import functional
    if not isinstance(x, Tensor):
        raise TypeError(f"clone: x expected a Tensor, got {type(x).__name__}")
    return functional.copy(x)


def chunk(x: Tensor, chunks: int, axis: int = 0, name: str | None = None) -> list[Tensor]:
    """Paddle's chunk: split(x, chunks, axis) into `chunks` equal parts (views)."""
    from hwport.phi_ops import functional
    if isinstance(chunks, bool) or not isinstance(chunks, int):
        raise TypeError(f"chunk: chunks expected an int, got {type(chunks).__name__}")
    return functional.split(x, chunks, axis)


def is_tensor(x: Any) -> bool:
    """Whether x is a hwport Tensor."""
    return isinstance(x, Tensor)


def _index(self: Tensor) -> int:
    """operator.index of a 0-d integer/bool tensor (range(n), list indexing), as Paddle has."""
    if self.ndim != 0 or self.dtype.name not in ("bool", "int8", "uint8", "int16", "int32",
                                                  "int64"):
        raise TypeError(f"only 0-d integer tensors can be used as an index, got dtype "
                        f"{self.dtype.name} shape {list(self.shape)}")
    if value_read_hooks:
        _reading(self, "operator.index (a tensor used as a Python int)")
    return int(_to_numpy(self).item())


_ELEMENT_SIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "float16": 2, "bfloat16": 2,
                 "int32": 4, "float32": 4, "int64": 8, "float64": 8}

Tensor.shape = property(_shape, doc="The dims as a list (hwport.tensor.Size, Paddle's Size).")
Tensor.size = property(_size, doc="The element count (an int; x.size() / x.size(d): shape).")
Tensor.numel = numel
Tensor.dim = lambda self: self.ndim
Tensor.ndimension = lambda self: self.ndim
Tensor.t = t
Tensor.clone = clone
Tensor.chunk = chunk
Tensor.element_size = lambda self: _ELEMENT_SIZE[self.dtype.name]
Tensor.__index__ = _index
