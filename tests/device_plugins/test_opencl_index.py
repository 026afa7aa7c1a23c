"""The OpenCL plugin's index kernels concat, pad, gather, take_along_axis, scatter, argsort and
arange (device_plugins/opencl/kernels_index.c, index.cl, argsort.cl), through the public API on
custom:opencl and directly through the C ABI (cffi).

The oracle is phi_ops.reference (numpy), and every result must also equal the CPU plugin's bit
for bit: every registered (op, dtype); odd and 0-size shapes; strided inputs (transposed,
flipped, stepped); broadcast take_along_axis indices; int32 and int64 indices; scatter assign
with duplicates (the last row wins) and add (accumulated in double, rounded once); argsort of
rows of 1, 2, 1000 and 100003 elements with duplicates, NaN, -0.0, both directions (stable);
arange for integer and float dtypes. Out-of-range indices, negative ones included, are errors
naming the op and the value (from the dispatcher on the public API; from the kernel's device
flag when the kernel is called directly), never wrong data; the ops no longer fall back to the
CPU. Skipped when the plugin is not built or sees no OpenCL device."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from opencl_env import PLUGIN_SO, P, registration_line, require_opencl_device

import hwport
import hwport.runtime as rt
from hwport.device import Stream, stream_guard
from phi_ops.reference import reference
from tests.conftest import REPO_ROOT

require_opencl_device()
_LINE = registration_line("index")
if _LINE is None:
    pytest.fail("the OpenCL plugin logged no index-kernel registration")
FP64 = "float64: yes" in _LINE
FLOATS = ("float16", "bfloat16", "float32", "float64")
OPS = ("concat", "pad", "gather", "take_along_axis", "scatter", "argsort", "arange")
_DOC = yaml.safe_load((REPO_ROOT / "phi_ops" / "ops.yaml").read_text(encoding="utf-8"))
_SPEC = {o["name"]: o for o in _DOC["ops"]}


def registered(op: str) -> list[str]:
    names = _DOC["dtype_groups"][_SPEC[op]["dtypes"]]
    return [d for d in names if FP64 or (d != "float64" and not (op == "arange" and d in FLOATS))]


OP_DTYPES = [(op, d) for op in OPS for d in registered(op)]
IDS = [f"{o}-{d}" for o, d in OP_DTYPES]


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(np.bool_ if name == "bool" else name)


def values(name: str, shape, rng: np.random.Generator, *, dups: bool = False) -> np.ndarray:
    dt = np_dtype(name)
    if name == "bool":
        return rng.random(size=shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if dups:
            return rng.integers(max(info.min, -5), 6, size=shape).astype(dt)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)
    v = rng.standard_normal(size=shape) * 8
    if dups:
        v = np.round(v)
    return v.astype(dt)


def on(place: str, a: np.ndarray):
    return hwport.to_tensor(a, place=place)


def both(op: str, args: list, **attrs) -> np.ndarray:
    """hwport.<op>(*args, **attrs) on custom:opencl and on cpu (args: arrays, or lists of arrays
    for a variadic input): the results as numpy, which must be identical."""
    def put(place, a):
        return [on(place, x) for x in a] if isinstance(a, list) else on(place, a)

    got = getattr(hwport, op)(*[put(P, a) for a in args], **attrs)
    assert str(got.place).startswith(P), got.place
    cpu = getattr(hwport, op)(*[put("cpu", a) for a in args], **attrs).numpy()
    got = got.numpy()
    assert got.dtype == cpu.dtype and got.shape == cpu.shape, (got.dtype, cpu.dtype)
    assert got.tobytes() == cpu.tobytes(), (got, cpu)
    return got


def same(got: np.ndarray, want: np.ndarray) -> None:
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                  got.dtype, want.dtype)
    if got.dtype.kind == "f" or got.dtype.name == "bfloat16":
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    else:
        np.testing.assert_array_equal(got, want)


# ---- per op, every registered dtype -------------------------------------------------------

def test_registered_set():
    assert f"registered {len(OP_DTYPES)} index kernels" in _LINE, (_LINE, len(OP_DTYPES))


def _strided_views(t):
    """(numpy transform, hwport view) pairs: transposed, flipped and stepped views."""
    return [
        (lambda a: np.transpose(a, (1, 0, 2)), hwport.ops.transpose(t, perm=[1, 0, 2])),
        (lambda a: a[::-1, :, ::-1], hwport.ops.flip(t, axis=[0, 2])),
        (lambda a: a[:, 1::2, :], hwport.ops.slice(t, axes=[1], starts=[1], ends=[9],
                                                    strides=[2])),
    ]


@pytest.mark.parametrize("name", registered("concat"))
def test_concat(name):
    rng = np.random.default_rng(1)
    for shapes, axis in ((((3, 5), (2, 5), (1, 5)), 0), (((4, 1), (4, 7), (4, 0)), 1),
                         (((2, 3, 4), (2, 3, 4)), 2), (((0, 3), (0, 3)), 0), (((7,),), 0)):
        xs = [values(name, s, rng) for s in shapes]
        got = both("concat", [xs], axis=axis)
        same(got, reference("concat", [xs], {"axis": axis}))
    a = values(name, (4, 9, 3), rng)
    t = on(P, a)
    for f, v in _strided_views(t):
        got = hwport.concat([v, v], axis=1).numpy()
        same(got, np.concatenate([f(a), f(a)], axis=1))


@pytest.mark.parametrize("name", registered("pad"))
def test_pad(name):
    rng = np.random.default_rng(2)
    value = 3 if name not in FLOATS else -1.5
    for shape, pads in (((3, 5), [1, 2, 0, 3]), ((4,), [0, 0]), ((2, 3, 1), [1, 1, 2, 0, 0, 4]),
                        ((0, 3), [2, 1, 0, 0]), ((3, 5), [1, 1])):
        a = values(name, shape, rng)
        got = both("pad", [a], pad=pads, value=value)
        same(got, reference("pad", [a], {"pad": pads, "value": value}))
    a = values(name, (4, 9, 3), rng)
    for f, v in _strided_views(on(P, a)):
        got = hwport.pad(v, pad=[1, 0, 0, 2, 3, 1]).numpy()
        same(got, reference("pad", [np.ascontiguousarray(f(a))], {"pad": [1, 0, 0, 2, 3, 1]}))


@pytest.mark.parametrize("name", registered("gather"))
def test_gather(name):
    rng = np.random.default_rng(3)
    for idt in ("int32", "int64"):
        a = values(name, (5, 7, 3), rng)
        for axis, idx in ((0, [4, 0, 2, 2, 4, 1]), (1, [6]), (2, [2, 1, 0, 0]), (1, [])):
            ix = np.array(idx, dtype=idt)
            got = both("gather", [a, ix], axis=axis)
            same(got, reference("gather", [a, ix], {"axis": axis}))
        for f, v in _strided_views(on(P, a)):
            ix = np.array([1, 0, 2, 1], dtype=idt)
            got = hwport.gather(v, on(P, ix), axis=2).numpy()
            same(got, np.take(f(a), ix, axis=2))
    # a strided index (every other element of a longer one)
    a = values(name, (6, 4), rng)
    ix = np.array([5, 9, 0, 9, 3, 9, 5], np.int64)
    got = hwport.gather(on(P, a), hwport.ops.slice(on(P, ix), axes=[0], starts=[0], ends=[7],
                                                   strides=[2]), axis=0).numpy()
    same(got, a[[5, 0, 3, 5]])


@pytest.mark.parametrize("name", registered("take_along_axis"))
def test_take_along_axis(name):
    rng = np.random.default_rng(4)
    a = values(name, (4, 6, 5), rng)
    for axis in (0, 1, 2):
        for base in ((4, 6, 5), (1, 6, 5), (4, 3, 1), (2, 6, 5)):
            ishape = list(base)
            ishape[axis] = 3
            if any(n not in (1, m) for k, (n, m) in enumerate(zip(ishape, a.shape, strict=True))
                   if k != axis):
                continue
            ix = rng.integers(0, a.shape[axis], size=ishape).astype(
                np.int32 if axis == 1 else np.int64)
            got = both("take_along_axis", [a, ix], axis=axis)
            same(got, np.take_along_axis(a, ix, axis))
    for f, v in _strided_views(on(P, a)):
        va = f(a)
        ix = rng.integers(0, va.shape[2], size=va.shape[:2] + (7,))
        got = hwport.take_along_axis(v, on(P, ix), axis=2).numpy()
        same(got, np.take_along_axis(va, ix, 2))
    e = np.zeros((3, 0), np.int64)
    same(hwport.take_along_axis(on(P, a[:, :, 0].copy()[:3]), on(P, e), axis=1).numpy(),
         np.zeros((3, 0), a.dtype))


def _scatter_oracle(x, idx, upd, axis, reduce):
    return reference("scatter", [x, idx, upd], {"axis": axis, "reduce": reduce})


@pytest.mark.parametrize("name", registered("scatter"))
@pytest.mark.parametrize("reduce", ["assign", "add"])
def test_scatter(name, reduce):
    rng = np.random.default_rng(5)
    for shape, axis, idx in (((6, 4), 0, [5, 0, 5, 2, 5]), ((3, 7, 2), 1, [6, 6, 0]),
                             ((5, 3), 1, [2]), ((4, 3), 0, []), ((9,), 0, [8, 1, 8, 8, 0])):
        x = values(name, shape, rng, dups=True)
        ushape = list(shape)
        ushape[axis] = len(idx)
        upd = values(name, tuple(ushape), rng, dups=True)
        for idt in ("int32", "int64"):
            ix = np.array(idx, dtype=idt)
            got = both("scatter", [x, ix, upd], axis=axis, reduce=reduce)
            same(got, _scatter_oracle(x, ix, upd, axis, reduce))
    # strided x and updates
    x = values(name, (4, 9, 3), rng)
    ix = np.array([0, 2, 2], np.int64)
    for f, v in _strided_views(on(P, x)):
        vx = np.ascontiguousarray(f(x))
        upd = values(name, vx.shape[:2] + (3,), rng)
        tu = hwport.ops.flip(on(P, upd[:, ::-1].copy()), axis=[1])  # a negative-stride view
        got = hwport.scatter(v, on(P, ix), tu, axis=2, reduce=reduce).numpy()
        same(got, _scatter_oracle(vx, ix, upd, 2, reduce))


def test_scatter_add_rounds_once_in_double():
    # float16: 2048 + 1 + 1 is 2050 in double but 2048 when rounded after every add
    x = np.array([2048.0], np.float16)
    upd = np.array([1.0, 1.0], np.float16)
    ix = np.array([0, 0], np.int64)
    got = both("scatter", [x, ix, upd], reduce="add")
    assert got[0] == np.float16(2050.0), got


@pytest.mark.parametrize("name", registered("argsort"))
def test_argsort(name):
    rng = np.random.default_rng(6)
    for shape, axis in (((1,), 0), ((2,), 0), ((5, 7), 1), ((5, 7), 0), ((3, 4, 5), 1),
                        ((2, 1000), 1), ((0, 4), 1), ((3, 0), 1), ((), 0)):
        a = values(name, shape, rng, dups=True)
        if name in FLOATS and a.size > 3:
            flat = a.reshape(-1)
            flat[:: 5] = np.nan
            flat[1:: 7] = -0.0
            flat[2:: 9] = 0.0
            flat[3:: 11] = np.inf
        for desc in (False, True):
            got = both("argsort", [a], axis=axis, descending=desc)
            same(got, reference("argsort", [a], {"axis": axis, "descending": desc}))
    a = values(name, (4, 9, 3), rng, dups=True)
    for f, v in _strided_views(on(P, a)):
        va = np.ascontiguousarray(f(a))
        for axis in (0, 1, 2):
            got = hwport.argsort(v, axis=axis).numpy()
            same(got, reference("argsort", [va], {"axis": axis, "descending": False}))


@pytest.mark.parametrize("name", ["float32", "int16", "bfloat16", "uint8"])
def test_argsort_long_rows(name):
    """Rows longer than one local-memory block: the global merge steps."""
    rng = np.random.default_rng(7)
    for shape in ((100003,), (3, 4099), (2, 65536)):
        a = values(name, shape, rng, dups=name != "float32")
        if name == "float32":
            a.reshape(-1)[::13] = np.nan
        for desc in (False, True):
            got = hwport.argsort(on(P, a), axis=-1, descending=desc).numpy()
            same(got, reference("argsort", [a], {"axis": len(shape) - 1, "descending": desc}))


@pytest.mark.parametrize("name", registered("arange"))
def test_arange(name):
    if name in FLOATS:
        cases = [(0, 10, 1), (-3.5, 7.25, 0.3), (1.0, -2.0, -0.125), (0, 0, 1), (0.1, 1000.7, 0.7)]
    else:
        cases = [(0, 10, 1), (-20, 100, 7), (50, -50, -3), (5, 5, 1), (0, 300, 1)]
    for start, end, step in cases:
        got = hwport.arange(start, end, step, dtype=name, place=P)
        assert str(got.place).startswith(P)
        cpu = hwport.arange(start, end, step, dtype=name, place="cpu").numpy()
        got = got.numpy()
        assert got.tobytes() == cpu.tobytes(), (start, end, step, got, cpu)
        same(got, reference("arange", [], {"start": start, "end": end, "step": step,
                                           "dtype": name}))


# ---- errors, streams, fallback ---------------------------------------------------------------

@pytest.mark.parametrize("op", ["gather", "take_along_axis", "scatter"])
@pytest.mark.parametrize("bad", [7, -1])
def test_out_of_range_index_is_an_error(op, bad):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    ix = np.array([0, bad], np.int64)
    for place in ("cpu", P):
        t, i = on(place, x), on(place, ix)
        arg = "indices" if op == "take_along_axis" else "index"  # Paddle's names
        with pytest.raises(IndexError, match=f"{op}: {arg} holds {bad}, out of bounds") as info:
            if op == "gather":
                hwport.gather(t, i, axis=0)
            elif op == "take_along_axis":
                hwport.take_along_axis(t, on(place, ix.reshape(2, 1)), axis=0)
            else:
                hwport.scatter(t, i, on(place, x[:2].copy()), axis=0)
        assert str(info.value)
    # the device is still fine afterwards
    same(hwport.gather(on(P, x), on(P, np.array([3, 0])), axis=0).numpy(), x[[3, 0]])


def test_on_a_stream():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((64, 3000)).astype(np.float32)
    ix = rng.integers(0, 64, 50)
    s = Stream(P)
    with stream_guard(s):
        t = on(P, a)
        r1 = hwport.argsort(t, axis=1)
        r2 = hwport.gather(t, on(P, ix), axis=0)
        r3 = hwport.scatter(t, on(P, ix), on(P, a[:50]), axis=0, reduce="add")
        r4 = hwport.concat([t, t], axis=1)
        r5 = hwport.pad(t, pad=[1, 1, 2, 2], value=1.0)
    s.synchronize()
    same(r1.numpy(), np.argsort(a, axis=1, kind="stable"))
    same(r2.numpy(), a[ix])
    same(r3.numpy(), _scatter_oracle(a, ix, a[:50], 0, "add"))
    same(r4.numpy(), np.concatenate([a, a], axis=1))
    same(r5.numpy(), np.pad(a, [(1, 1), (2, 2)], constant_values=1.0))


def test_ops_no_longer_fall_back():
    rng = np.random.default_rng(9)
    rt.reset_fallback_stats()
    for op, name in OP_DTYPES:
        a = values(name, (4, 5), rng)
        t = on(P, a)
        ix = on(P, np.array([3, 0, 3]))
        if op == "concat":
            r = hwport.concat([t, t], axis=1)
        elif op == "pad":
            r = hwport.pad(t, pad=[1, 0, 0, 2])
        elif op == "gather":
            r = hwport.gather(t, ix, axis=0)
        elif op == "take_along_axis":
            r = hwport.take_along_axis(t, on(P, np.zeros((4, 2), np.int64)), axis=1)
        elif op == "scatter":
            r = hwport.scatter(t, ix, on(P, a[:3].copy()), axis=0, reduce="add")
        elif op == "argsort":
            r = hwport.argsort(t, axis=1, descending=True)
        else:
            r = hwport.arange(0, 9, 2, dtype=name, place=P)
        r.numpy()
    stats = rt.fallback_stats()
    leaked = {k: v for k, v in stats.items() if k[1] == "opencl" and k[0] in OPS}
    assert not leaked, leaked


# ---- the kernels called directly: the device-side index check --------------------------------

@pytest.fixture(scope="module")
def ocl():
    from hwport.conformance.direct_host import DirectHost

    h = DirectHost(PLUGIN_SO, env={"HWPORT_OPENCL_DEVICES": None,
                                   "HWPORT_OPENCL_MEMORY_LIMIT": None})
    assert h.init_status == 0
    return h


@pytest.mark.parametrize("use_stream", [False, True])
def test_direct_bad_index_is_flagged_by_the_device(ocl, use_stream):
    from hwport.conformance.direct_host import DTYPE_CODE, INVALID_ARGUMENT, NULL, OK, DeviceArray

    stream = ocl.create_stream() if use_stream else NULL
    x = DeviceArray(ocl, np.arange(12, dtype=np.float32).reshape(4, 3))
    arrays = [x]
    try:
        for op, bad in (("gather", 4), ("gather", -1), ("take_along_axis", 9),
                        ("take_along_axis", -5), ("scatter", 4), ("scatter", -2)):
            idx_host = np.array([1, bad, 0], np.int64)
            ix = DeviceArray(ocl, idx_host if op != "take_along_axis" else idx_host.reshape(3, 1))
            out = DeviceArray(ocl, np.full((3, 3) if op != "scatter" else (4, 3), 77, np.float32))
            arrays += [ix, out]
            inputs = [x.view(), ix.view()]
            if op == "scatter":
                upd = DeviceArray(ocl, np.ones((3, 3), np.float32))
                arrays.append(upd)
                inputs.append(upd.view())
            st = ocl.call_kernel(op, DTYPE_CODE["float32"], inputs, [out.view()],
                                 attrs={"axis": 0}, stream=stream)
            ocl.expect_error(st, INVALID_ARGUMENT, op, f"index {bad} is out of range [0, 4)")
            if use_stream:
                ocl.sync_stream(stream)
            if op == "scatter":  # checked before anything is written
                assert (out.read() == 77).all()
            # a good call right after works
            ix_ok = DeviceArray(ocl, np.array([3, 0, 3], np.int64).reshape(
                (3, 1) if op == "take_along_axis" else (3,)))
            arrays.append(ix_ok)
            inputs[1] = ix_ok.view()
            if op == "scatter":
                inputs[2] = upd.view()
            st = ocl.call_kernel(op, DTYPE_CODE["float32"], [x.view(), *inputs[1:]],
                                 [out.view()], attrs={"axis": 0}, stream=stream)
            assert st == OK, ocl.last_error()
            if use_stream:
                ocl.sync_stream(stream)
            xv = np.arange(12, dtype=np.float32).reshape(4, 3)
            if op == "gather":
                want = xv[[3, 0, 3]]
            elif op == "take_along_axis":
                want = np.take_along_axis(xv, np.array([[3], [0], [3]]), 0)
            else:
                want = xv.copy()
                want[[3, 0]] = 1
            same(out.read(), want)
    finally:
        for a in arrays:
            a.free()
        if use_stream:
            ocl.destroy_stream(stream)
    assert ocl.stats()["bytes_in_use"] == 0
