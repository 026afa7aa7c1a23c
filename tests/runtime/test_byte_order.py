"""Non-native byte order (e.g. '>f8' on a little-endian host): every path from numpy to a
device converts it to native order (the choke point is runtime/src/bind_tensor.cpp
tensor_from_numpy), so the values arrive intact; DLPack, which cannot describe byte order,
refuses it with an error that says what to do."""

from __future__ import annotations

import numpy as np
import pytest

import hwport
from hwport.runtime import _core

SWAPPED = ">" if np.little_endian else "<"  # the byte order this host does not use
DTYPES = ["i2", "i4", "i8", "f2", "f4", "f8"]
PLACES = ["custom:cpu:0", "custom:cpu:1"]


def _values(code: str) -> np.ndarray:
    native = np.array([0, 1, 2, 3, 100, 7, 12, 5], dtype=np.dtype(code))
    if native.dtype.kind == "f":
        native = native / 4 - 1.5
    return native.astype(code)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("code", DTYPES)
def test_to_tensor_converts_non_native_byte_order(code, place):
    want = _values(code)
    swapped = want.astype(want.dtype.newbyteorder(SWAPPED))
    assert not swapped.dtype.isnative
    got = hwport.to_tensor(swapped, place=place).numpy()
    assert got.dtype == want.dtype and got.dtype.isnative
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("code", DTYPES)
def test_core_from_numpy_converts_too(code):
    """The C++ choke point itself: a caller that skips to_tensor still gets the values,
    also from a strided (non-contiguous) non-native view."""
    want = _values(code).reshape(2, 4)
    swapped = want.astype(want.dtype.newbyteorder(SWAPPED))
    np.testing.assert_array_equal(_core.from_numpy(swapped, "custom:cpu:0").numpy(), want)
    np.testing.assert_array_equal(_core.from_numpy(swapped[:, ::2], "custom:cpu:0").numpy(),
                                  want[:, ::2])


def test_to_tensor_with_dtype_and_issue_reproducer():
    big = np.arange(3.0).astype(">f8")
    np.testing.assert_array_equal(hwport.to_tensor(big).numpy(), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(hwport.to_tensor(big, dtype="float32").numpy(),
                                  np.array([0, 1, 2], np.float32))
    assert hwport.to_tensor(big[::-1]).numpy().tolist() == [2.0, 1.0, 0.0]


def test_ops_see_native_values():
    big = np.array([1.5, -2.0, 4.0]).astype(">f8")
    got = hwport.add(hwport.to_tensor(big), 1.0).numpy()
    np.testing.assert_array_equal(got, np.array([2.5, -1.0, 5.0]))


def test_from_dlpack_refuses_non_native_clearly():
    big = np.arange(3.0).astype(">f8")
    with pytest.raises(BufferError, match=r"from_dlpack: .*non-native byte order.*to_tensor"):
        hwport.from_dlpack(big)
    native = np.arange(3.0)
    np.testing.assert_array_equal(hwport.from_dlpack(native).numpy(), native)
