"""hwport.save / hwport.load: safetensors files, readable and writable by the safetensors
package; state dicts round-trip; nested objects; bfloat16; bad files give clear errors."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import hwport
import hwport.nn as nn
from tests.nn.helpers import Net, opencl_place


def test_state_dict_round_trip(tmp_path: Path) -> None:
    hwport.seed(4)
    net = Net()
    path = tmp_path / "sub" / "model.pdparams"
    hwport.save(net.state_dict(), str(path))
    loaded = hwport.load(path)
    assert list(loaded) == list(net.state_dict())
    for k, v in net.state_dict().items():
        assert isinstance(loaded[k], hwport.Tensor) and loaded[k].dtype == v.dtype
        np.testing.assert_array_equal(loaded[k].numpy(), v.numpy())
    other = Net()
    assert other.set_state_dict(loaded) == ([], [])
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[k].numpy(), v.numpy())
    arrays = hwport.load(path, return_numpy=True)
    assert isinstance(arrays["w"], np.ndarray)


def test_readable_by_safetensors(tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.numpy")
    sd = {
        "f32": hwport.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "f64": hwport.to_tensor(np.array([1.5, -2.0])),
        "f16": hwport.to_tensor(np.array([0.5, 3.0], np.float16)),
        "i64": hwport.to_tensor(np.array([[1, -2]], np.int64)),
        "i32": hwport.to_tensor(np.array([7], np.int32)),
        "u8": hwport.to_tensor(np.array([255, 0], np.uint8)),
        "b": hwport.to_tensor(np.array([True, False])),
        "scalar": hwport.to_tensor(np.float32(2.5)),
        "empty": hwport.to_tensor(np.zeros((0, 3), np.float32)),
    }
    path = tmp_path / "x.safetensors"
    hwport.save(sd, path)
    got = st.load_file(str(path))
    assert set(got) == set(sd)
    for k, v in sd.items():
        assert got[k].dtype == v.numpy().dtype and got[k].shape == v.numpy().shape, k
        np.testing.assert_array_equal(got[k], v.numpy())
    # and the other way: a file the safetensors package wrote
    theirs = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "c": np.array([1, 2], np.int16)}
    st.save_file(theirs, str(tmp_path / "theirs.safetensors"), metadata={"format": "np"})
    back = hwport.load(tmp_path / "theirs.safetensors")
    assert set(back) == {"a", "c"}
    for k, v in theirs.items():
        np.testing.assert_array_equal(back[k].numpy(), v)


def test_bfloat16_and_raw_layout(tmp_path: Path) -> None:
    vals = np.array([1.0, -2.5, 3.140625], ml_dtypes.bfloat16)
    path = tmp_path / "bf.safetensors"
    hwport.save({"w": hwport.to_tensor(vals)}, path)
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0
    header = json.loads(data[8:8 + n])
    assert header["w"] == {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}
    assert data[8 + n:] == vals.tobytes()  # little-endian raw bytes
    back = hwport.load(path)["w"]
    assert back.dtype == hwport.bfloat16
    np.testing.assert_array_equal(back.numpy(), vals)
    torch_st = pytest.importorskip("safetensors.torch")
    pytest.importorskip("torch")
    tw = torch_st.load_file(str(path))["w"]
    np.testing.assert_array_equal(tw.float().numpy(), vals.astype(np.float32))


def test_nested_objects_and_file_objects(tmp_path: Path) -> None:
    obj = {
        "model": {"lin.weight": hwport.to_tensor(np.ones((2, 2), np.float32))},
        "opt": {"step": 3, "lr": 0.5, "name": "adamw", "betas": (0.9, 0.99), "none": None,
                "moments": [hwport.to_tensor(np.zeros(2)), np.array([1, 2], np.int64)]},
    }
    buf = io.BytesIO()
    hwport.save(obj, buf)
    buf.seek(0)
    back = hwport.load(buf)
    assert back["opt"]["step"] == 3 and back["opt"]["lr"] == 0.5
    assert back["opt"]["betas"] == (0.9, 0.99) and back["opt"]["none"] is None
    np.testing.assert_array_equal(back["model"]["lin.weight"].numpy(), np.ones((2, 2)))
    np.testing.assert_array_equal(back["opt"]["moments"][1].numpy(), [1, 2])
    st = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "nested.safetensors"
    hwport.save(obj, path)
    flat = st.load_file(str(path))
    assert set(flat) == {"model.lin.weight", "opt.moments.0", "opt.moments.1"}
    single = tmp_path / "one.safetensors"
    hwport.save(hwport.to_tensor([1.0, 2.0]), single)
    np.testing.assert_array_equal(hwport.load(single).numpy(), [1.0, 2.0])


def test_load_onto_a_place(tmp_path: Path) -> None:
    place = opencl_place()
    if place is None:
        pytest.skip("no OpenCL device")
    src = hwport.to_tensor(np.arange(4.0, dtype=np.float32), place=place)
    hwport.save({"x": src}, tmp_path / "cl.safetensors")
    back = hwport.load(tmp_path / "cl.safetensors", place=place)["x"]
    assert str(back.place) == place
    np.testing.assert_array_equal(back.numpy(), np.arange(4.0))


def test_bad_input(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="save: obj must be a state dict"):
        hwport.save(3, tmp_path / "a")
    with pytest.raises(TypeError, match="save: dict keys must be str"):
        hwport.save({1: hwport.ones([1])}, tmp_path / "a")
    with pytest.raises(TypeError, match="save: cannot store a Linear"):
        hwport.save({"m": nn.Linear(2, 2)}, tmp_path / "a")
    with pytest.raises(ValueError, match=r"two entries map to the tensor name 'a\.b'"):
        hwport.save({"a.b": hwport.ones([1]), "a": {"b": hwport.ones([1])}}, tmp_path / "a")
    with pytest.raises(TypeError, match="save: path must be"):
        hwport.save({"x": hwport.ones([1])}, 3)
    with pytest.raises(FileNotFoundError, match="load: no such file"):
        hwport.load(tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.write_bytes(b"abc")
    with pytest.raises(ValueError, match="not a valid safetensors file: 3 bytes"):
        hwport.load(bad)
    bad.write_bytes(struct.pack("<Q", 4) + b"nope")
    with pytest.raises(ValueError, match="the header is not JSON"):
        hwport.load(bad)
    header = json.dumps({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
    bad.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    with pytest.raises(ValueError, match=r"'x': data_offsets \[0, 8\] do not match shape \[4\]"):
        hwport.load(bad)
    header = json.dumps({"x": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}).encode()
    bad.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    with pytest.raises(ValueError, match="dtype 'C64'"):
        hwport.load(bad)
    with pytest.raises(TypeError, match="load: unexpected options"):
        hwport.load(bad, keep_name_table=True)
