"""hwport.save / hwport.load: state dicts in the safetensors format (readable by the
`safetensors` package: safetensors.numpy.load_file).

The file: an 8-byte little-endian header length N, N bytes of JSON (space-padded to a
multiple of 8) mapping each tensor name to {dtype, shape, data_offsets} plus "__metadata__"
(str -> str), then the raw little-endian bytes of the tensors, back to back.

A flat dict name -> Tensor (a Layer's state_dict) is stored as is: the file's names are the
dict's keys. Nested dicts / lists and plain values (numbers, strings, None, bools), as an
optimizer's state dict holds, are stored with their tensors named by their path (keys joined
by '.') and the structure as JSON in __metadata__["hwport.structure"], so load() gives the
same object back. Paddle's file formats (pickle) are not read or written."""

from __future__ import annotations

import json
import os
import struct
import sys
from collections import OrderedDict
from typing import Any

import numpy as np

from hwport.runtime import _core
from hwport.runtime._core import Tensor

__all__ = ["load", "save"]

_TO_CODE = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
            "int64": "I64", "float16": "F16", "bfloat16": "BF16", "float32": "F32",
            "float64": "F64"}
_FROM_CODE = {v: k for k, v in _TO_CODE.items()}
_STRUCTURE_KEY = "hwport.structure"
_MAX_HEADER = 100 * 1024 * 1024


def _array_of(value: Any, where: str) -> np.ndarray:
    arr = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    if arr.dtype.name not in _TO_CODE:
        raise TypeError(f"save: {where} has dtype {arr.dtype}, which safetensors cannot hold; "
                        f"supported: {', '.join(_TO_CODE)}")
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return arr if arr.flags.c_contiguous else arr.copy(order="C")  # (0-d stays 0-d)


def _flatten(obj: Any, path: str, tensors: dict[str, np.ndarray]) -> Any:
    """The JSON structure of obj; tensors land in `tensors` under their path."""
    if isinstance(obj, (Tensor, np.ndarray)):
        if path in tensors:
            raise ValueError(f"save: two entries map to the tensor name {path!r}; rename one")
        tensors[path] = _array_of(obj, repr(path))
        return {"__tensor__": path}
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError(f"save: dict keys must be str, got {type(key).__name__} "
                                f"{key!r} at {path or 'the top level'}")
            out[key] = _flatten(value, f"{path}.{key}" if path else key, tensors)
        return {"__dict__": out}
    if isinstance(obj, (list, tuple)):
        items = [_flatten(v, f"{path}.{i}" if path else str(i), tensors)
                 for i, v in enumerate(obj)]
        return {"__tuple__" if isinstance(obj, tuple) else "__list__": items}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"save: cannot store a {type(obj).__name__} at {path or 'the top level'}; "
                    "expected Tensors, numpy arrays, dicts, lists, numbers, str or None")


def _unflatten(node: Any, tensors: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "__tensor__" in node:
            return tensors[node["__tensor__"]]
        if "__dict__" in node:
            return OrderedDict((k, _unflatten(v, tensors)) for k, v in node["__dict__"].items())
        if "__list__" in node:
            return [_unflatten(v, tensors) for v in node["__list__"]]
        if "__tuple__" in node:
            return tuple(_unflatten(v, tensors) for v in node["__tuple__"])
    return node


def _is_flat(obj: Any) -> bool:
    return isinstance(obj, dict) and all(
        isinstance(k, str) and isinstance(v, (Tensor, np.ndarray)) for k, v in obj.items())


def save(obj: Any, path: Any, protocol: int = 4, **configs: Any) -> None:
    """Writes `obj` (a state dict: name -> Tensor, or nested dicts/lists of tensors and plain
    values) to `path` (a file name or a binary file object) in the safetensors format.
    protocol and configs are accepted for Paddle compatibility and ignored."""
    if not isinstance(obj, (dict, list, tuple)):
        if isinstance(obj, (Tensor, np.ndarray)):
            obj = {"__tensor__": obj}  # (one tensor: stored under that name)
        else:
            raise TypeError(f"save: obj must be a state dict (dict of name -> Tensor) or "
                            f"nested dicts/lists of tensors, got {type(obj).__name__}")
    tensors: dict[str, np.ndarray] = {}
    metadata: dict[str, str] = {}
    if _is_flat(obj):
        for key, value in obj.items():
            tensors[key] = _array_of(value, repr(key))
        if list(obj) == ["__tensor__"]:
            metadata[_STRUCTURE_KEY] = json.dumps({"__tensor__": "__tensor__"})
    else:
        metadata[_STRUCTURE_KEY] = json.dumps(_flatten(obj, "", tensors))
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for key, arr in tensors.items():
        header[key] = {"dtype": _TO_CODE[arr.dtype.name], "shape": list(arr.shape),
                       "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    if hasattr(path, "write"):
        _write(path, raw, tensors)
        return
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"save: path must be a str, os.PathLike or a binary file object, got "
                        f"{type(path).__name__}")
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, exist_ok=True)
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        _write(f, raw, tensors)
    os.replace(tmp, path)


def _write(f: Any, header: bytes, tensors: dict[str, np.ndarray]) -> None:
    f.write(struct.pack("<Q", len(header)))
    f.write(header)
    for arr in tensors.values():
        out = arr.byteswap() if sys.byteorder != "little" and arr.dtype.itemsize > 1 else arr
        f.write(out.tobytes())


def load(path: Any, **configs: Any) -> Any:
    """Reads a safetensors file (from save(), or any safetensors writer) back: the state dict
    (name -> Tensor on the current device, in file order) or the nested object that was saved.
    configs: return_numpy=True gives numpy arrays instead of Tensors; place=... a device."""
    return_numpy = bool(configs.pop("return_numpy", False))
    place = configs.pop("place", None)
    if configs:
        raise TypeError(f"load: unexpected options {sorted(configs)}; supported: "
                        "return_numpy, place")
    if hasattr(path, "read"):
        data = path.read()
    else:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"load: path must be a str, os.PathLike or a binary file object, "
                            f"got {type(path).__name__}")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"load: no such file: {os.fspath(path)!r}")
        with open(path, "rb") as f:
            data = f.read()
    header, base = _parse_header(data, path)
    metadata = header.pop("__metadata__", None) or {}
    device = None if return_numpy else _core.resolve_place(place)
    tensors: dict[str, Any] = OrderedDict()
    for key, info in header.items():
        arr = _read_tensor(data, base, key, info, path)
        tensors[key] = arr if return_numpy else _core.from_numpy(arr, device)
    structure = metadata.get(_STRUCTURE_KEY)
    if structure is None:
        return tensors
    return _unflatten(json.loads(structure), tensors)


def _bad(path: Any, why: str) -> ValueError:
    name = path if isinstance(path, (str, os.PathLike)) else type(path).__name__
    return ValueError(f"load: {name!s} is not a valid safetensors file: {why}")


def _parse_header(data: bytes, path: Any) -> tuple[dict[str, Any], int]:
    if len(data) < 8:
        raise _bad(path, f"{len(data)} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > _MAX_HEADER or 8 + n > len(data):
        raise _bad(path, f"header length {n} does not fit the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(path, f"the header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _bad(path, "the header is not a JSON object")
    return header, 8 + n


def _read_tensor(data: bytes, base: int, key: str, info: Any, path: Any) -> np.ndarray:
    try:
        code, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
    except (TypeError, KeyError, ValueError):
        raise _bad(path, f"entry {key!r} lacks dtype, shape or data_offsets") from None
    if code not in _FROM_CODE:
        raise _bad(path, f"entry {key!r} has dtype {code!r}; hwport reads "
                         f"{', '.join(_FROM_CODE)}")
    np_dtype = _core.parse_dtype(_FROM_CODE[code], "load", "dtype").to_numpy()
    expected = int(np.prod(shape, dtype=np.int64)) * np.dtype(np_dtype).itemsize
    if end - begin != expected or begin < 0 or base + end > len(data):
        raise _bad(path, f"entry {key!r}: data_offsets {[begin, end]} do not match shape "
                         f"{shape} of {code} within the file")
    itemsize = np.dtype(np_dtype).itemsize
    arr = np.frombuffer(data, dtype=np_dtype, count=expected // itemsize, offset=base + begin)
    if sys.byteorder != "little" and itemsize > 1:
        arr = arr.byteswap()
    return arr.reshape(shape).copy()

