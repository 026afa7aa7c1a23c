"""The Python API on custom:cpu against numpy: creation, places, dtypes, + and *, DLPack."""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

import hwport

ALL_DTYPES = [
    "bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64",
]


def np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def sample(name: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if name in ("int8", "uint8", "int16", "int32", "int64"):
        info = np.iinfo(name)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape).astype(name)
    return rng.standard_normal(shape).astype(np_dtype(name))


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_round_trip_every_dtype(name):
    arr = sample(name, (3, 5))
    t = hwport.to_tensor(arr, place="custom:cpu")
    assert t.shape == (3, 5)
    assert str(t.dtype) == name
    assert t.place == "custom:cpu:0"
    out = t.numpy()
    assert out.dtype == np_dtype(name)
    np.testing.assert_array_equal(out, arr)
    np.testing.assert_array_equal(np.asarray(t), arr)


def test_python_data_defaults():
    assert hwport.to_tensor([1.5, 2.0]).dtype == hwport.float32
    assert hwport.to_tensor([1, 2]).dtype == hwport.int64
    assert hwport.to_tensor([True, False]).dtype == hwport.bool_
    assert hwport.to_tensor(3.0).shape == ()
    assert hwport.to_tensor(np.float64(1.0)).dtype == hwport.float64
    assert hwport.to_tensor([[1, 2]], dtype="float16").dtype == hwport.float16
    assert hwport.to_tensor([1, 2], dtype=np.int32).dtype == hwport.int32
    assert hwport.to_tensor([1, 2], dtype=hwport.uint8).numpy().tolist() == [1, 2]
    t = hwport.to_tensor(np.zeros((0, 4), np.float32))
    assert t.shape == (0, 4) and t.numpy().shape == (0, 4)


@pytest.mark.parametrize(
    "place, expected",
    [
        ("cpu", "custom:cpu:0"),
        ("custom:cpu", "custom:cpu:0"),
        ("custom:cpu:1", "custom:cpu:1"),
        (hwport.CustomPlace("cpu", 1), "custom:cpu:1"),
    ],
)
def test_places(place, expected):
    t = hwport.to_tensor([1.0, 2.0], place=place)
    assert str(t.place) == expected
    assert repr(t.place) == f"Place({expected})"
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_to_moves_between_devices():
    a = hwport.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3), place="custom:cpu:0")
    b = a.to("custom:cpu:1")
    assert b.place == "custom:cpu:1"
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert a.to("custom:cpu:0") is a or a.to("custom:cpu:0").place == a.place


BINARY_CASES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (5, 1)), ((), (3, 2)), ((0, 3), (3,))]


@pytest.mark.parametrize("op", ["add", "multiply"])
@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("shapes", BINARY_CASES)
def test_binary_matches_numpy(op, name, shapes):
    x, y = sample(name, shapes[0], 1), sample(name, shapes[1], 2)
    tx, ty = hwport.to_tensor(x), hwport.to_tensor(y)
    got = (tx + ty) if op == "add" else (tx * ty)
    if name in ("float16", "bfloat16"):  # computed in float32, rounded once
        want = getattr(np, op)(x.astype(np.float32), y.astype(np.float32)).astype(np_dtype(name))
    else:
        want = getattr(np, op)(x, y)
    assert got.shape == want.shape
    assert got.dtype == tx.dtype
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("a", ALL_DTYPES)
@pytest.mark.parametrize("b", ALL_DTYPES)
def test_type_promotion_matches_numpy(a, b):
    x, y = sample(a, (4,), 3), sample(b, (4,), 4)
    got = hwport.to_tensor(x) + hwport.to_tensor(y)
    if "bfloat16" in (a, b) and a != b:
        # numpy has no bfloat16 promotion rules; ours: bfloat16 with float16 -> float32, with
        # any integer or bool -> bfloat16, with float32/64 -> that.
        other = b if a == "bfloat16" else a
        expected = {"float16": "float32", "float32": "float32", "float64": "float64"}.get(
            other, "bfloat16")
        assert str(got.dtype) == expected
        return
    floats = [d for d in (a, b) if d.startswith(("float", "bfloat"))]
    if len(floats) == 1:
        # Like PyTorch and Paddle (and unlike numpy), an integer or bool never widens a float:
        # int32 + float16 stays float16 instead of becoming float64.
        assert str(got.dtype) == floats[0]
        want = np_dtype(floats[0])
        ref = x.astype(np.float32) + y.astype(np.float32) if want == np.float16 else None
        if ref is None:
            ref = x.astype(want) + y.astype(want)
        np.testing.assert_array_equal(got.numpy(), ref.astype(want))
        return
    want = np.promote_types(np_dtype(a), np_dtype(b))
    assert got.numpy().dtype == want
    wx, wy = x.astype(want), y.astype(want)
    if want == np.float16:
        ref = (wx.astype(np.float32) + wy.astype(np.float32)).astype(np.float16)
    else:
        ref = wx + wy
    np.testing.assert_array_equal(got.numpy(), ref)


def test_python_scalars_are_weakly_typed():
    f16 = hwport.to_tensor(np.array([1, 2], np.float16))
    assert (f16 + 1.5).dtype == hwport.float16
    np.testing.assert_array_equal((f16 * 2).numpy(), np.array([2, 4], np.float16))
    i32 = hwport.to_tensor(np.array([1, 2], np.int32))
    assert (i32 + 1).dtype == hwport.int32
    r = 2.5 * i32
    assert r.dtype == hwport.float32
    np.testing.assert_allclose(r.numpy(), [2.5, 5.0])
    b = hwport.to_tensor([True, False])
    assert (b + 1).dtype == hwport.int64
    np.testing.assert_array_equal((b + 1).numpy(), [2, 1])
    np.testing.assert_array_equal((1 + i32).numpy(), [2, 3])


def test_strided_views_from_dlpack():
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    for view in (base[::2, 1::3], base.T, base[::-1, ::-2], base[:, 3]):
        t = hwport.from_dlpack(view)
        assert not t.is_contiguous() or view.flags.c_contiguous
        np.testing.assert_array_equal(t.numpy(), view)
        np.testing.assert_array_equal((t + t).numpy(), view + view)
        np.testing.assert_array_equal((t * 3).numpy(), view * 3)


def test_dlpack_is_zero_copy_both_ways():
    arr = np.arange(10, dtype=np.float64)
    t = hwport.from_dlpack(arr)
    arr[0] = 42.0
    assert t.numpy()[0] == 42.0
    del arr  # the tensor keeps the numpy memory alive
    np.testing.assert_array_equal(t.numpy()[1:], np.arange(1, 10))

    t2 = hwport.to_tensor(np.ones(5, np.int32)) * 3
    view = np.from_dlpack(t2)
    np.testing.assert_array_equal(view, np.full(5, 3, np.int32))
    view[1] = 7
    assert t2.numpy()[1] == 7
    assert t2.__dlpack_device__() == (1, 0)


def test_repr_shows_shape_dtype_place_and_data():
    t = hwport.to_tensor([[1.0, 2.0]], place="custom:cpu:1")
    text = repr(t)
    assert "shape=[1, 2]" in text and "hwport.float32" in text and "custom:cpu:1" in text
    assert "1., 2." in text


def test_device_functions():
    assert "cpu" in hwport.device.get_all_custom_device_type()
    hwport.device.synchronize("custom:cpu")
    stats = hwport.device.memory_stats("custom:cpu")
    assert {"allocated_bytes", "reserved_bytes", "peak_allocated_bytes",
            "num_device_allocs"} <= set(stats)
    props = hwport.device.get_device_properties("custom:cpu:1")
    assert props["host_memory"] is True and props["total_memory"] > 0


def test_set_device_is_per_thread():
    assert hwport.get_device() == "custom:cpu:0"
    hwport.set_device("custom:cpu:1")
    try:
        assert hwport.get_device() == "custom:cpu:1"
        assert hwport.to_tensor([1.0]).place == "custom:cpu:1"
        seen = []
        worker = threading.Thread(target=lambda: seen.append(hwport.get_device()))
        worker.start()
        worker.join()
        assert seen == ["custom:cpu:0"]
    finally:
        hwport.set_device("custom:cpu:0")


# ---- bad input: a clear error, and nothing changes ---------------------------------------

def _allocated() -> int:
    hwport.device.synchronize("custom:cpu")
    return hwport.device.memory_stats("custom:cpu")["allocated_bytes"]


@pytest.mark.parametrize(
    "place, fragment",
    [
        ("gpu", "invalid place 'gpu'"),
        ("custom:", "invalid place"),
        ("custom:cpu:x", "invalid place"),
        ("custom:nope", "unknown device type 'nope'"),
        ("custom:cpu:7", "device index 7 is out of range for custom:cpu (2 devices)"),
    ],
)
def test_bad_places(place, fragment):
    before = _allocated()
    with pytest.raises(ValueError, match="available places: custom:cpu:0, custom:cpu:1") as info:
        hwport.to_tensor([1.0], place=place)
    assert fragment in str(info.value)
    with pytest.raises(ValueError):
        hwport.set_device(place)
    assert hwport.get_device() == "custom:cpu:0"
    assert _allocated() == before


def test_bad_place_type():
    with pytest.raises(TypeError, match="place must be a str"):
        hwport.to_tensor([1.0], place=3)


@pytest.mark.parametrize("dtype", ["complex64", np.complex128, "float128x", object, "str"])
def test_unsupported_dtype(dtype):
    before = _allocated()
    with pytest.raises(TypeError, match=r"to_tensor: dtype=.* is not a supported dtype; "
                                        r"supported: bool, int8"):
        hwport.to_tensor([1.0], dtype=dtype)
    assert _allocated() == before


@pytest.mark.parametrize(
    "data, exc, fragment",
    [
        (object(), TypeError, "data of type object cannot become a tensor"),
        ({"a": 1}, TypeError, "data of type dict cannot become a tensor"),
        (np.array([1 + 2j]), TypeError, "numpy dtype complex128 cannot become a tensor"),
        (np.array(["x"]), TypeError, "cannot become a tensor"),
        ([[1, 2], [3]], ValueError, "to_tensor: data could not become a tensor"),
    ],
)
def test_data_that_cannot_become_a_tensor(data, exc, fragment):
    before = _allocated()
    with pytest.raises(exc, match=fragment):
        hwport.to_tensor(data)
    assert _allocated() == before


def test_binary_errors_name_op_and_shapes():
    a = hwport.to_tensor(np.ones((2, 3), np.float32))
    b = hwport.to_tensor(np.ones((4,), np.float32))
    before = _allocated()
    with pytest.raises(ValueError, match=r"add: cannot broadcast x of shape \[2, 3\] with y of "
                                         r"shape \[4\]"):
        a + b
    with pytest.raises(ValueError, match=r"multiply: cannot broadcast"):
        a * b
    c = hwport.to_tensor(np.ones((2, 3), np.float32), place="custom:cpu:1")
    with pytest.raises(ValueError, match="add: x is on custom:cpu:0 but y is on custom:cpu:1"):
        a + c
    assert _allocated() == before
    with pytest.raises(TypeError):
        a + "x"
