"""DLPack exchange of device memory (ABI 1.1), end to end through the runtime, on the test
plugin `dlpack` (tests/plugins): its devices call their memory DLPack device (kDLExtDev,
100 + index), so export gives memory.device_address and import wraps foreign memory with
memory.wrap_device_memory. Producer and reader of capsules are independent of hwport's own
DLPack code (tests/runtime/dlpack_capsules.py, ctypes). The same paths serve CuPy on the CUDA
plugin (tests/device_plugins/test_cuda_plugin.py, on a GPU).

Plugins are discovered once per process, so each test runs its body in a fresh interpreter
with the test plugins on HWPORT_PLUGIN_PATH."""

from __future__ import annotations

import os

import pytest

from tests.conftest import REPO_ROOT, run_isolated, zoo_plugin_path

PRELUDE = f"""
import gc, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
import numpy as np, pytest, hwport
from hwport.runtime import _core
from tests.runtime.dlpack_capsules import ForeignArray, consume
EXT = 12
P0, P1 = "custom:test_dlpack:0", "custom:test_dlpack:1"
"""


def run(body: str) -> None:
    env = {"HWPORT_PLUGIN_PATH": os.pathsep.join(
        str(zoo_plugin_path(v)) for v in ("dlpack", "good_streams"))}
    proc = run_isolated(PRELUDE + body + "\nprint('ok')\n", env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (
        proc.stdout + proc.stderr)


def test_the_plugin_names_its_dlpack_devices():
    run("""
import hwport.runtime as rt
props = hwport.device.get_device_properties(P1)
assert props["dlpack_device"] == (EXT, 101), props
assert props["architecture"] == "hwport-test-1" and props["architecture_version"] == (1, 0)
assert props["simd_width"] == 1 and props["max_allocation"] == 1 << 32
assert hwport.device.get_device_properties(P0)["dlpack_device"] == (EXT, 100)
entry = [p for p in rt.plugins() if p["device_type"] == "test_dlpack"][0]
for part in ("memory.device_address", "memory.wrap_device_memory", "stream.native_stream",
             "stream.native_stream_wait"):
    assert part in entry["optional"], entry["optional"]
plain = [p for p in rt.plugins() if p["device_type"] == "test_good_streams"][0]
assert "memory.device_address" not in plain["optional"]
assert hwport.device.get_device_properties("custom:test_good_streams")["dlpack_device"] is None
""")


def test_export_gives_the_device_address_of_each_view():
    run("""
x = np.arange(12, dtype=np.float32).reshape(3, 4)
t = hwport.to_tensor(x, place=P1)
assert t.__dlpack_device__() == (EXT, 101)
for view, expect in ((t, x), (t.T, x.T), (t[1:, ::2], x[1:, ::2]), (t[::-1], x[::-1])):
    got = consume(view.__dlpack__(max_version=(1, 0)))
    assert got.version == (1, 0) and got.device == (EXT, 101), got
    assert got.shape == expect.shape and got.code == 2 and got.bits == 32, got
    assert got.strides == tuple(s // 4 for s in expect.strides), got
    np.testing.assert_array_equal(got.read(np.float32), expect)
old = consume(t.__dlpack__())  # a consumer from before DLPack 1.0
assert old.version is None
np.testing.assert_array_equal(old.read(np.float32), x)
# Both exports of the same storage name the same device memory.
assert consume(t.__dlpack__()).data == consume(t[0].__dlpack__()).data
assert consume(t[1].__dlpack__()).data == old.data + 16
""")


def test_export_orders_work_for_the_consumers_stream():
    run("""
t = hwport.to_tensor(np.ones(1000, np.float32), place=P0)
s = hwport.device.Stream(P0)
with hwport.device.stream_guard(s):
    native = _core.dlpack_stream(P0)
    u = t + t  # queued on s
assert native not in (None, 0, 1), native
# The consumer's stream waits for s (native_stream_wait), -1 = no ordering, None = at once.
for stream in (native, 1, -1, None):
    with hwport.device.stream_guard(s):
        got = consume(u.__dlpack__(stream=stream))
    s.synchronize()
    np.testing.assert_array_equal(got.read(np.float32), np.full(1000, 2, np.float32))
with pytest.raises(Exception, match="native_stream_wait.*ambiguous"):
    t.__dlpack__(stream=0)
with pytest.raises(ValueError, match="stream must be -1, None or a stream handle"):
    t.__dlpack__(stream=-2)
with pytest.raises(TypeError, match="stream must be an int or None"):
    t.__dlpack__(stream="s")
with pytest.raises(ValueError, match=r"own DLPack device \\(12, 100\\).*not to \\(2, 0\\)"):
    t.__dlpack__(dl_device=(2, 0))
with pytest.raises(ValueError, match=r"not to \\(1, 0\\) kDLCPU with copy=False"):
    t.__dlpack__(dl_device=(1, 0), copy=False)
np.testing.assert_array_equal(t.numpy(), np.ones(1000, np.float32))  # nothing corrupted
""")


def test_import_of_foreign_device_memory_shares_it():
    run("""
base = np.arange(24, dtype=np.float32).reshape(4, 6)
f = ForeignArray(base, (EXT, 101))
stats0 = hwport.device.memory_stats(P1)
t = hwport.from_dlpack(f)
assert t.place == P1 and t.shape == (4, 6) and t.dtype == hwport.float32
stats = hwport.device.memory_stats(P1)  # wrapped, not allocated: no byte counted
assert stats["device_bytes_in_use"] == stats0["device_bytes_in_use"]
assert stats["allocated_bytes"] == stats0["allocated_bytes"]
# The producer was told the stream hwport will use the memory on.
assert f.streams == [_core.dlpack_stream(P1)] and f.streams[0] not in (None, 0)
np.testing.assert_array_equal(t.numpy(), base)
base[2, 3] = -7  # zero-copy: the producer's write is hwport's data
assert t.numpy()[2, 3] == -7
np.testing.assert_array_equal((t + t).numpy(), base + base)  # kernels run on it
stats = hwport.device.memory_stats(P1)
assert stats["device_bytes_in_use"] == stats0["device_bytes_in_use"] + 96 or \\
    stats["allocated_bytes"] >= stats0["allocated_bytes"]  # only t + t allocated
assert f.released == 0
del t
gc.collect()
assert f.released == 1  # the deleter ran once, after hwport let go
# Strided and reversed foreign views, other dtypes.
for arr in (base[:, ::2], base.T, base[::-1, 1:], np.arange(10, dtype=np.int64)[::-3],
            np.array([True, False, True]), np.float16([1.5, -2.25])):
    g = ForeignArray(arr, (EXT, 100))
    u = hwport.from_dlpack(g)
    assert u.place == P0 and u.shape == arr.shape and u.strides == tuple(
        s // arr.itemsize for s in arr.strides), (u.strides, arr.strides)
    np.testing.assert_array_equal(u.numpy(), arr)
    del u
    gc.collect()
    assert g.released == 1
""")


def test_import_with_another_place_copies():
    run("""
base = np.arange(6, dtype=np.float32)
f = ForeignArray(base, (EXT, 101))
c = hwport.from_dlpack(f, place="cpu")
assert c.place == "custom:cpu:0"
base[0] = 42
assert c.numpy()[0] == 0  # a copy
gc.collect()
assert f.released == 1  # the shared intermediate is gone
same = hwport.from_dlpack(ForeignArray(base, (EXT, 101)), place=P1)
base[1] = 43
assert same.numpy()[1] == 43  # place = the holder: still shared
""")


def test_import_errors_name_the_device_and_release_the_capsule():
    run("""
base = np.arange(6, dtype=np.float32)
class NoHostCopy(ForeignArray):
    def __dlpack__(self, *, dl_device=None, **kw):
        if dl_device is not None:
            raise BufferError("no host copies here")
        return super().__dlpack__(**kw)

with pytest.raises(ValueError, match=r"no device imports memory of DLPack device \\(12, 999\\)"
                   r".*test_dlpack:0 \\(12, 100\\)"):
    hwport.from_dlpack(NoHostCopy(base, (EXT, 999)))
with pytest.raises(ValueError, match=r"\\(2, 0\\) kDLCUDA"):
    hwport.from_dlpack(NoHostCopy(base, (2, 0)))
liar = ForeignArray(base, (EXT, 101), capsule_device=(EXT, 100))
with pytest.raises(ValueError, match=r"test_dlpack:1 cannot take memory of DLPack device "
                   r"\\(12, 100\\)"):
    hwport.from_dlpack(liar)
assert liar.released == 1
odd = ForeignArray(np.zeros(3, np.complex64), (EXT, 101))
with pytest.raises(TypeError, match="unsupported DLPack dtype"):
    hwport.from_dlpack(odd)
assert odd.released == 1
""")


def test_round_trip_shares_the_storage_without_wrapping():
    run("""
x = np.arange(8, dtype=np.float32)
t = hwport.to_tensor(x, place=P0)[2:]
u = hwport.from_dlpack(t)
assert u.place == P0 and u.shape == (6,)
assert consume(u.__dlpack__()).data == consume(t.__dlpack__()).data
del t
gc.collect()
np.testing.assert_array_equal(u.numpy(), x[2:])  # u keeps the storage alive
""")


def test_a_device_that_exchanges_nothing_refuses_export():
    run("""
t = hwport.to_tensor(np.ones(3, np.float32), place="custom:test_good_streams")
with pytest.raises(RuntimeError, match="neither host-addressable nor exchanged by its plugin"):
    t.__dlpack__()
""")


@pytest.mark.parametrize("place", ["cpu", "custom:cpu:1"])
def test_host_memory_devices_still_exchange_as_cpu(place):
    import numpy as np

    import hwport

    t = hwport.to_tensor(np.arange(5, dtype=np.float32), place=place)
    assert t.__dlpack_device__() == (1, 0)
    assert hwport.device.get_device_properties(place)["dlpack_device"] == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(t), np.arange(5, dtype=np.float32))


def test_export_copies_when_asked():
    run("""
x = np.arange(12, dtype=np.float32).reshape(3, 4)
t = hwport.to_tensor(x, place=P1)
shared = consume(t.__dlpack__())
# A host copy for a consumer that asks for kDLCPU (np.from_dlpack(t, device="cpu")).
host = consume(t.T.__dlpack__(dl_device=(1, 0), max_version=(1, 0)))
assert host.device == (1, 0) and host.data != shared.data
np.testing.assert_array_equal(host.read(np.float32), x.T)
# copy=True: fresh memory on the same device, contiguous.
mine = consume(t.T.__dlpack__(copy=True))
assert mine.device == (EXT, 101) and mine.data != shared.data and mine.strides == (3, 1)
np.testing.assert_array_equal(mine.read(np.float32), x.T)
""")


@pytest.mark.parametrize("place", ["cpu", "custom:opencl"])
def test_numpy_asks_for_copies_through_the_protocol(place):
    import numpy as np

    import hwport

    if place == "custom:opencl" and "opencl" not in hwport.device.get_all_custom_device_type():
        pytest.skip("no OpenCL plugin")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = hwport.to_tensor(x, place=place)
    if place == "cpu":
        shared, copied = np.from_dlpack(t), np.from_dlpack(t, copy=True)
        assert shared.ctypes.data != copied.ctypes.data
        np.testing.assert_array_equal(copied, x)
    else:  # memory no one else can address: only a host copy leaves
        with pytest.raises(RuntimeError, match=r"np.from_dlpack\(t, device='cpu'\)"):
            np.from_dlpack(t)
        np.testing.assert_array_equal(np.from_dlpack(t.T, device="cpu"), x.T)
        with pytest.raises(ValueError, match=r"custom:opencl:0 can export only to \(1, 0\) "
                           r"kDLCPU as a copy.*copy=False"):
            np.from_dlpack(t, device="cpu", copy=False)


def test_memory_no_device_takes_comes_as_the_producers_host_copy():
    run("""
base = np.arange(6, dtype=np.float32)
f = ForeignArray(base, (2, 0))  # kDLCUDA, and no CUDA device in this process
t = hwport.from_dlpack(f)
assert t.place == "custom:cpu:0" and f.streams == [None]
base[0] = 9
np.testing.assert_array_equal(t.numpy(), np.arange(6, dtype=np.float32))  # a copy
u = hwport.from_dlpack(ForeignArray(base, (EXT, 999)), place=P1)  # then onto the place
assert u.place == P1 and u.numpy()[0] == 9
""")
