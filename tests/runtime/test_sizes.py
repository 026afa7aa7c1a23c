"""Sizes never wrap around: every element count, byte count and view extent is checked, so a
huge shape fails with hwport.OutOfMemoryError (a valid tensor larger than any device can hold)
or ValueError (a size an int64 cannot represent, a negative size, a view outside its storage),
naming the public op and the shape, before anything is allocated or launched.

Before the fix these reproducers segfaulted, crashed later on the worker thread, or returned a
tensor over a buffer too small for it. So each runs in a child process (one per place, cases
one after another, each reporting as it finishes): a regression fails its test instead of
killing pytest. After every case the child checks that the allocator's allocated bytes are back
at their baseline and that a valid op still gives numpy's result."""

from __future__ import annotations

import ctypes as C
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import hwport
from tests.conftest import REPO_ROOT
from tests.runtime import dlpack_capsules as dl

PLACES = ["custom:cpu"] + (
    ["custom:opencl"] if "opencl" in hwport.device.get_all_custom_device_type() else [])

OOM, VALUE = "OutOfMemoryError", "ValueError"
# (case id, expression run with P = the place, expected exception type, words the message must
# hold: the public op and the shape).
CASES: list[tuple[str, str, str, list[str]]] = [
    ("zeros_2^62+16", "hwport.zeros([2**62 + 16], place=P)", OOM,
     ["zeros", "[4611686018427387920]", "float32"]),
    ("zeros_2^62-1", "hwport.zeros([2**62 - 1], place=P); hwport.device.synchronize(P)", OOM,
     ["zeros", "[4611686018427387903]"]),
    ("ones_numel_overflow", "hwport.ones([2**32, 2**32], place=P)", VALUE,
     ["ones", "[4294967296, 4294967296]"]),
    ("full_2^62", "hwport.full([2**62], 1.5, place=P)", OOM, ["full", "[4611686018427387904]"]),
    ("zeros_like_expand", "hwport.zeros_like(hwport.expand(hwport.ones([1], place=P), [2**60]),"
     " dtype='float64')", OOM, ["zeros_like", "[1152921504606846976]"]),
    ("empty_strides_overflow", "hwport.zeros([0, 2**62], place=P)", VALUE,
     ["zeros", "[0, 4611686018427387904]"]),
    ("tile_numel", "hwport.tile(hwport.ones([2], place=P), [2**62])", VALUE,
     ["tile", "[9223372036854775808]"]),
    ("tile_bytes", "hwport.tile(hwport.ones([2], place=P), [2**61])", OOM,
     ["tile", "[4611686018427387904]"]),
    # representable, but an intermediate of the decomposition is more than the device has
    ("tile_0d_intermediate", "hwport.tile(hwport.ones([], 'int8', place=P), [2**62 + 16])",
     OOM, ["tile:", "[4611686018427387920"]),
    ("pad", "hwport.pad(hwport.ones([2], place=P), [2**62, 0])", OOM,
     ["pad", "[4611686018427387906]"]),
    ("arange", "hwport.arange(2**62, place=P)", OOM, ["arange", "[4611686018427387904]", "int64"]),
    ("arange_infinite_count", "hwport.arange(0.0, 1e308, 1e-308, place=P)", VALUE,
     ["arange", "inf"]),
    # linspace computes in float64: 2**60 float32 elements fit, their float64 intermediate not;
    # the message must name linspace, not the arange it decomposes into.
    ("linspace_intermediate", "hwport.linspace(0.0, 1.0, 2**60, place=P)", OOM,
     ["linspace", "[1152921504606846976]"]),
    ("eye", "hwport.eye(2**32, place=P)", VALUE, ["eye", "[4294967296, 4294967296]"]),
    ("expand", "hwport.expand(hwport.ones([1], place=P), [2**62])", OOM,
     ["expand", "[4611686018427387904]"]),
    ("expand_sum", "hwport.expand(hwport.ones([1], place=P), [2**62]).sum()", OOM,
     ["expand", "[4611686018427387904]"]),
    ("expand_plus_1", "hwport.expand(hwport.ones([1], place=P), [2**60]) + 1", OOM,
     ["add", "[1152921504606846976]"]),
    ("broadcast_numel", "hwport.expand(hwport.ones([1, 1], place=P), [2**32, 1])"
     " + hwport.expand(hwport.ones([1, 1], place=P), [1, 2**32])", VALUE,
     ["add", "[4294967296, 4294967296]"]),
    ("broadcast_numel_dispatch", "hwport.multiply(hwport.expand(hwport.ones([1, 1], place=P),"
     " [2**32, 1]), hwport.expand(hwport.ones([1, 1], place=P), [1, 2**32]))", VALUE,
     ["multiply", "[4294967296, 4294967296]"]),
    # The caching allocator refuses before rounding the size up (which wrapped near 2**64).
    ("allocator_limit", "_core.empty([2**63 - 1], 'int8', P)", OOM,
     ["[9223372036854775807]", "more than any device can hold"]),
    # Views: the bounds check itself must not overflow.
    ("view_extent_overflow", "hwport.ones([4], place=P)._view([2, 2], [2**63 - 1, 1], 0).numpy()",
     VALUE, ["_view", "[2, 2]", "9223372036854775807"]),
    ("view_offset_overflow", "hwport.ones([4], place=P)._view([2], [1], 2**63 - 1).numpy()",
     VALUE, ["_view", "[2]", "outside the storage"]),
    ("view_negative_offset", "hwport.ones([4], place=P)._view([2], [1], -1).numpy()", VALUE,
     ["_view", "offset", "-1"]),
    ("view_stride_bytes", "hwport.ones([4], place=P)._view([1, 2], [2**62, 1], 0).sum(axis=1)",
     VALUE, ["_view", "[1, 2]", "4611686018427387904"]),
    ("view_numel", "hwport.ones([4], place=P)._view([2**40, 2**40], [0, 0], 0).numpy()", VALUE,
     ["_view", "[1099511627776, 1099511627776]"]),
    ("view_bytes", "hwport.ones([4], place=P)._view([2**62], [0], 0).numpy()", OOM,
     ["_view", "[4611686018427387904]"]),
    # DLPack imports: the producer's shape and strides are as untrusted as _view's.
    ("dlpack_numel", "lying_import([2**62, 8], [1, 1]).numpy()", VALUE,
     ["from_dlpack", "[4611686018427387904, 8]"]),
    ("dlpack_extent", "lying_import([3], [2**62]).numpy()", VALUE,
     ["from_dlpack", "[3]", "4611686018427387904"]),
    ("dlpack_negative_dim", "lying_import([-3], [1]).numpy()", VALUE, ["from_dlpack", "[-3]"]),
    ("dlpack_ndim", "lying_import([1] * 40, [1] * 40).numpy()", VALUE,
     ["from_dlpack", "ndim 40"]),
]

CHILD = """
import json, sys
import numpy as np
import hwport
from hwport.runtime import _core
from tests.runtime.test_sizes import lying_import, released

P = sys.argv[1]
warm = hwport.ones([3], place=P)  # the allocator and the device are set up before the baseline
for name, code in json.loads(sys.argv[2]):
    hwport.device.synchronize(P)
    base, base_released = hwport.device.memory_stats(P)["allocated_bytes"], released()
    out = {"name": name, "type": None}
    try:
        exec(code)
    except Exception as e:
        out.update(type=type(e).__name__, msg=str(e), memory=isinstance(e, MemoryError),
                   value=isinstance(e, ValueError))
    hwport.device.synchronize(P)
    out["leaked"] = hwport.device.memory_stats(P)["allocated_bytes"] - base
    out["released"] = released() - base_released
    out["after"] = (hwport.arange(5, place=P) * 3 + warm.sum()).numpy().tolist()
    print(json.dumps(out), flush=True)
"""


def run_child(place: str, cases: list[tuple[str, str]], env: dict[str, str] | None = None,
              code: str = CHILD) -> tuple[dict[str, dict], subprocess.CompletedProcess]:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), place, json.dumps(cases)],
                          cwd=REPO_ROOT, env={**os.environ, **(env or {})}, capture_output=True,
                          text=True, timeout=600)
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["name"]] = r
    return results, proc


@pytest.fixture(scope="module", params=PLACES)
def reports(request) -> tuple[str, dict[str, dict], subprocess.CompletedProcess]:
    results, proc = run_child(request.param, [(name, code) for name, code, _, _ in CASES])
    return request.param, results, proc


@pytest.mark.parametrize("name,code,expected,needles", CASES, ids=[c[0] for c in CASES])
def test_huge_sizes_fail_cleanly(reports, name, code, expected, needles):
    place, results, proc = reports
    assert name in results, (f"{code} on {place} ended the process (exit {proc.returncode}) "
                             f"before reporting:\n{proc.stderr[-3000:]}")
    r = results[name]
    assert r["type"] == expected, f"{code} on {place}: {r}"
    # OutOfMemoryError is a MemoryError, so generic handlers catch it.
    assert r["memory"] if expected == OOM else r["value"], r
    for needle in needles:
        assert needle in r["msg"], f"{needle!r} not in {r['msg']!r}"
    assert r["leaked"] == 0, f"{code} left {r['leaked']} bytes allocated on {place}"
    if name.startswith("dlpack"):
        assert r["released"] == 1, f"the producer's tensor was released {r['released']} times"
    assert r["after"] == (np.arange(5) * 3 + 3).tolist(), r


# ---- a DLPack producer that lies about its shape -------------------------------------------

_RELEASED = [0]


def released() -> int:
    return _RELEASED[0]


def lying_import(shape: list[int], strides: list[int]) -> Any:
    """hwport.from_dlpack of a host capsule claiming `shape` and `strides` (float32 elements)
    over a real 16-element buffer."""
    backing = np.zeros(16, np.float32)
    n = max(len(shape), 1)
    c_shape, c_strides = (C.c_int64 * n)(*shape), (C.c_int64 * n)(*strides)
    managed = dl.DLManagedTensorVersioned()
    managed.version = dl.DLPackVersion(1, 0)
    managed.dl_tensor = dl.DLTensor(
        backing.ctypes.data, dl.DLDevice(1, 0), len(shape), dl.DLDataType(2, 32, 1),
        C.cast(c_shape, C.POINTER(C.c_int64)), C.cast(c_strides, C.POINTER(C.c_int64)), 0)

    def release(_: Any) -> None:
        _RELEASED[0] += 1

    deleter = dl.DELETER_V(release)
    managed.deleter = deleter
    keep = (backing, c_shape, c_strides, managed, deleter)
    C.pythonapi.Py_IncRef(C.py_object(keep))  # immortal, as a C producer's context would be
    capsule = dl._capsule_new(C.addressof(managed), b"dltensor_versioned", None)
    return hwport.from_dlpack(capsule, place="custom:cpu")


# ---- valid views and sizes keep working -----------------------------------------------------

@pytest.mark.parametrize("place", PLACES)
def test_valid_views_at_the_edges_still_work(place):
    data = np.arange(6, dtype=np.float32)
    t = hwport.to_tensor(data, place=place)
    # Reversed, stride-0 and last-element views: the extents reach exactly the storage's ends.
    np.testing.assert_array_equal(t._view([6], [-1], 5).numpy(), data[::-1])
    np.testing.assert_array_equal(t._view([2, 3], [0, 1], 3).numpy(), np.tile(data[3:], (2, 1)))
    np.testing.assert_array_equal(t._view([1], [1], 5).numpy(), data[5:])
    # A size-1 dim's stride never moves; a moderate one is accepted (numpy allows any).
    np.testing.assert_array_equal(t._view([1, 3], [2**40, 2], 0).numpy(), data[None, ::2])
    # Empty views may start anywhere and take any strides that fit in bytes.
    assert t._view([0, 4], [2**40, 1], 0).numpy().shape == (0, 4)
    with pytest.raises(ValueError, match="outside the storage"):
        t._view([6], [1], 1)
    # A huge expand view is fine as long as it is representable and nothing needs its bytes.
    big = hwport.expand(t._view([1], [1], 2), [2**40])
    assert big.shape == (2**40,) and big.strides == (0,)
    np.testing.assert_array_equal(big._view([3], [0], big._offset).numpy(), [2.0, 2.0, 2.0])


def test_out_of_memory_error_is_a_memory_error():
    assert issubclass(hwport.OutOfMemoryError, MemoryError)
    assert issubclass(hwport.OutOfMemoryError, RuntimeError)  # as before


def test_a_real_out_of_memory_is_caught_as_memory_error():
    code = """
    import json, sys
    import hwport
    P = sys.argv[1]
    warm = hwport.ones([3], place=P)
    base = hwport.device.memory_stats(P)["allocated_bytes"]
    try:
        hwport.zeros([32 * 2**20], place=P)  # 128 MiB over a 64 MiB limit
        out = {"caught": None}
    except MemoryError as e:
        out = {"caught": type(e).__name__, "msg": str(e)}
    out["leaked"] = hwport.device.memory_stats(P)["allocated_bytes"] - base
    out["after"] = (hwport.ones([4], place=P) + warm.sum()).numpy().tolist()
    out["name"] = "oom"
    print(json.dumps(out), flush=True)
    """
    results, proc = run_child("custom:cpu", [], env={"HWPORT_CPU_MEMORY_LIMIT": "64M"},
                              code=code)
    assert "oom" in results, proc.stderr[-3000:]
    r = results["oom"]
    assert r["caught"] == "OutOfMemoryError", r
    assert "[33554432]" in r["msg"] and "float32" in r["msg"], r["msg"]
    assert "HWPORT_CPU_MEMORY_LIMIT" in r["msg"], r["msg"]
    assert r["leaked"] == 0 and r["after"] == [4.0] * 4, r


def test_check_size_in_infer_meta_is_exact_at_the_limit():
    from phi_ops.infer_meta import MAX_TENSOR_BYTES, Meta, check_size

    check_size("zeros", Meta((MAX_TENSOR_BYTES,), "int8"))  # exactly the limit: representable
    check_size("zeros", Meta((0, 2**61 - 1), "float32"))  # strides in bytes just fit
    with pytest.raises(hwport.OutOfMemoryError, match=r"zeros: .*\[9223372036854775807\]"):
        check_size("zeros", Meta((MAX_TENSOR_BYTES,), "int16"))
    with pytest.raises(ValueError, match=r"zeros: .*\[0, 2305843009213693952\]"):
        check_size("zeros", Meta((0, 2**61), "float32"))
    with pytest.raises(ValueError, match="negative"):
        check_size("zeros", Meta((3, -1), "float32"))
    before = hwport.device.memory_stats()["allocated_bytes"]
    with pytest.raises(hwport.OutOfMemoryError):
        hwport.ones([2**62])
    assert hwport.device.memory_stats()["allocated_bytes"] == before


# ---- plugins, driven directly through the C ABI ---------------------------------------------
# A plugin must not trust a view's sizes either (the ABI can be called without this runtime):
# each kernel below gets a view whose element count, byte strides or byte extent overflow int64
# over a real 64-byte buffer, and must answer HWP_ERROR_INVALID_ARGUMENT naming the operand;
# unchecked, the kernel's prologue overflows (UBSan) and the kernel writes or reads far outside
# the buffer. A valid call afterwards still computes numpy's result.

F32 = "float32"
# (case id, op, [input (shape, strides)], output (shape, strides), attrs, operand named)
DIRECT_CASES: list[tuple[str, str, list, tuple, dict, str]] = [
    ("fill_extent", "fill", [], ((2**61, 2), None), {"value": 1.0}, "output 0"),
    ("fill_numel", "fill", [], ((2**62, 4), None), {"value": 1.0}, "output 0"),
    ("copy_stride_bytes", "copy", [((3,), (2**62,))], ((3,), None), {}, "input 0"),
    ("add_extent_span", "add", [((2, 2), (2**60, -(2**60))), ((2, 2), None)], ((2, 2), None),
     {}, "input 0"),
    ("add_size1_stride", "add", [((1, 2), (2**62, 1)), ((1, 2), None)], ((1, 2), None), {},
     "input 0"),
    ("sum_numel", "sum", [((2**40, 2**40), (0, 0))], ((2**40,), None), {"axis": [1]}, "input 0"),
    ("max_extent", "max", [((3, 4), (2**60, 1))], ((3,), None), {"axis": [1]}, "input 0"),
    ("concat_extent", "concat", [((3,), (2**61,)), ((1,), None)], ((4,), None), {"axis": 0},
     "input"),
]

DIRECT_CHILD = """
import json, sys
import numpy as np
from hwport.conformance.direct_host import DTYPE_CODE, DeviceArray, DirectHost, View
from tests.runtime.test_sizes import DIRECT_CASES

h = DirectHost(sys.argv[1], env=json.loads(sys.argv[2]))
assert h.init_status == 0, h.init_status
f32 = DTYPE_CODE["float32"]
base = h.stats(0)["bytes_in_use"]
buf = h.alloc(64)
for name, op, ins, out, attrs, _ in DIRECT_CASES:
    if (op, f32) not in h.registrations:
        print(json.dumps({"name": name, "status": "unregistered"}), flush=True)
        continue
    views = [View(buf, 0, f32, shape, strides) for shape, strides in ins]
    st = h.call_kernel(op, f32, views, [View(buf, 0, f32, *out)], attrs=attrs)
    h.sync_device(0)
    print(json.dumps({"name": name, "status": st, "msg": h.last_error()}), flush=True)
x = DeviceArray(h, np.arange(6, dtype=np.float32).reshape(2, 3))
y = DeviceArray(h, np.full((2, 3), 10, np.float32))
o = DeviceArray.empty(h, (2, 3), np.float32)
st = h.call_kernel("add", f32, [x.view(), y.view()], [o.view()])
h.check(st, "add")
after = o.read().tolist()
for a in (x, y, o):
    a.free()
h.free(buf)
print(json.dumps({"name": "after", "value": after,
                  "leaked": h.stats(0)["bytes_in_use"] - base}), flush=True)
"""


def check_direct(plugin_so, env: dict[str, str | None]) -> None:
    proc = subprocess.run([sys.executable, "-c", DIRECT_CHILD, str(plugin_so), json.dumps(env)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["name"]] = r
    from hwport.conformance.direct_host import INVALID_ARGUMENT

    for name, op, _, _, _, operand in DIRECT_CASES:
        assert name in results, (f"{name} ({op}) ended the process (exit {proc.returncode}):\n"
                                 f"{proc.stderr[-3000:]}")
        r = results[name]
        if r["status"] == "unregistered":
            continue
        assert r["status"] == INVALID_ARGUMENT, f"{name}: {r}"
        assert op in r["msg"] and operand in r["msg"] and "int64" in r["msg"], f"{name}: {r}"
    assert "after" in results, proc.stderr[-3000:]
    expected = np.arange(6, dtype=np.float32).reshape(2, 3) + 10
    assert results["after"]["value"] == expected.tolist(), results["after"]
    assert results["after"]["leaked"] == 0, results["after"]


def test_cpu_plugin_rejects_views_whose_sizes_overflow():
    from tests.conftest import installed_plugin

    check_direct(installed_plugin("device_plugins/cpu/libhwport_cpu.so"),
                 {"HWPORT_CPU_DEVICES": "1", "HWPORT_CPU_MEMORY_LIMIT": None})
