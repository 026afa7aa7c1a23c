"""The CPU plugin's index, shape, creation and random kernels (concat, pad, gather,
take_along_axis, scatter, argsort, arange, uniform), driven directly through the C ABI with cffi
and checked against numpy: every dtype ops.yaml lists, strided / negative-stride / broadcast /
unaligned inputs, 0-d, zero-size, odd and large sizes, int32 and int64 indices; uniform
bit-exactly against a pure-numpy Philox-4x32-10 (itself checked on the Random123 known-answer
vectors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hwport.conformance.direct_host import (
    DEVICE_ERROR,
    DTYPE_CODE,
    INVALID_ARGUMENT,
    NULL,
    OK,
    DeviceArray,
    np_dtype,
)

yaml = pytest.importorskip("yaml")

OPS_YAML = Path(__file__).resolve().parents[2] / "phi_ops" / "ops.yaml"
INDEX_OPS = ("concat", "pad", "gather", "take_along_axis", "scatter", "argsort", "arange")
RANDOM_OPS = ("uniform",)
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "uint8", "int16", "int32", "int64")
MODES = ("contig", "unaligned", "strided", "negative", "transposed", "broadcast")
BIG = 1 << 21  # elements: large enough that the stream runs it asynchronously, in chunks


def _ops_yaml() -> dict:
    doc = yaml.safe_load(OPS_YAML.read_text())
    groups = doc["dtype_groups"]
    out = {}
    for op in doc["ops"]:
        d = op["dtypes"]
        out[op["name"]] = tuple(groups[d] if isinstance(d, str) else d)
    return out


OP_DTYPES = _ops_yaml()


def dtypes_of(op: str) -> tuple:
    return OP_DTYPES[op]


def dt(name: str) -> np.dtype:
    if name == "bfloat16":
        pytest.importorskip("ml_dtypes")
    return np_dtype(name)


@pytest.fixture(scope="module")
def h(load_cpu):
    host = load_cpu(HWPORT_CPU_DEVICES="1")
    assert host.init_status == OK
    return host


@pytest.fixture(scope="module")
def h_async(load_cpu):
    """Every kernel goes through the stream's worker (no inline execution)."""
    host = load_cpu(HWPORT_CPU_DEVICES="1", HWPORT_CPU_INLINE_ELEMENTS="0")
    assert host.init_status == OK
    return host


class Session:
    """Uploads inputs, runs kernels, frees everything and checks the allocator returns to its
    baseline."""

    def __init__(self, host, stream=NULL):
        self.h = host
        self.stream = stream
        self.arrays: list[DeviceArray] = []
        self.baseline = host.stats()["bytes_in_use"]

    def put(self, x: np.ndarray, mode: str = "contig"):
        """(DeviceArray, numpy view of its host copy, values the view holds) for input x, laid
        out as `mode` says."""
        d, v, expect = make_input(self.h, np.asarray(x), mode)
        self.arrays.append(d)
        return d, v, expect

    def run(self, op, key_dtype, inputs, out_shape, out_dtype, attrs=None, out_pad=0,
            expect=OK, needles=()):
        out = DeviceArray.empty(self.h, out_shape, out_dtype, pad=out_pad)
        self.arrays.append(out)
        views = [d.view(v) for d, v in inputs]
        st = self.h.call_kernel(op, DTYPE_CODE[key_dtype], views, [out.view()], attrs=attrs,
                                stream=self.stream)
        if expect != OK:
            self.h.expect_error(st, expect, *needles)
            return None
        self.h.check(st, op)
        if self.stream != NULL:
            self.h.sync_stream(self.stream)
        return out.read()

    def close(self):
        if self.stream != NULL:
            self.h.sync_stream(self.stream)
        for a in self.arrays:
            a.free()
        self.arrays.clear()
        assert self.h.stats()["bytes_in_use"] == self.baseline


@pytest.fixture
def s(h):
    stream = h.create_stream()
    sess = Session(h, stream)
    yield sess
    sess.close()
    h.destroy_stream(stream)


@pytest.fixture
def s_sync(h):
    sess = Session(h, NULL)
    yield sess
    sess.close()


def make_input(h, x: np.ndarray, mode: str):
    nd = x.ndim
    if mode in ("contig", "unaligned") or nd == 0:
        d = DeviceArray(h, x, pad=3 if mode == "unaligned" else 0)
        return d, d.host, x
    if mode == "strided":  # every other element, odd byte offset
        base = np.empty(tuple(2 * n + 1 for n in x.shape), dtype=x.dtype)
        base[...] = sentinel(x.dtype)
        sl = tuple(slice(1, None, 2) for _ in range(nd))
        base[sl] = x
        d = DeviceArray(h, base, pad=1)
        return d, d.host[sl], x
    if mode == "negative":  # every dim reversed
        flip = tuple(slice(None, None, -1) for _ in range(nd))
        d = DeviceArray(h, np.ascontiguousarray(x[flip]), pad=2)
        return d, d.host[flip], x
    if mode == "transposed":
        d = DeviceArray(h, np.ascontiguousarray(x.T))
        return d, d.host.T, x
    if mode == "broadcast":  # the first dim longer than 1 becomes a stride-0 dim
        ks = [k for k in range(nd) if x.shape[k] > 1]
        if not ks:
            d = DeviceArray(h, x)
            return d, d.host, x
        k = ks[0]
        small = np.ascontiguousarray(x[(slice(None),) * k + (slice(0, 1),)])
        d = DeviceArray(h, small, pad=1)
        return d, np.broadcast_to(d.host, x.shape), np.broadcast_to(small, x.shape)
    raise ValueError(mode)


def sentinel(dtype: np.dtype):
    return True if dtype == np.bool_ else 77


def values(name: str, shape, rng: np.random.Generator, bits: bool = False) -> np.ndarray:
    """Random values of dtype `name`; bits=True: any bit pattern for floats (NaN payloads,
    infinities, subnormals: data movement must keep them)."""
    d = dt(name)
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if name in INTS:
        info = np.iinfo(d)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=d)
    if bits:
        u = np.dtype(f"u{d.itemsize}")
        info = np.iinfo(u)
        return rng.integers(0, info.max, size=shape, endpoint=True, dtype=u).view(d)
    return (rng.standard_normal(size=shape) * 8).astype(d)


def assert_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    """Bit-identical (same dtype, shape and bytes)."""
    expected = np.array(expected, order="C")  # (ascontiguousarray would make 0-d 1-d)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    a = np.array(actual, order="C").reshape(-1).view(np.uint8)
    e = expected.reshape(-1).view(np.uint8)
    if not np.array_equal(a, e):
        bad = np.flatnonzero((actual != expected).reshape(-1) if actual.dtype.kind != "f" else
                             (a.reshape(actual.size, -1) != e.reshape(actual.size, -1)).any(1))
        raise AssertionError(f"{len(bad)} of {actual.size} elements differ, first at flat "
                             f"{bad[:5]}: got {actual.reshape(-1)[bad[:5]]}, expected "
                             f"{expected.reshape(-1)[bad[:5]]}")


def f64_to_bf16_exact(x: np.ndarray) -> np.ndarray:
    """float64 -> bfloat16 rounded once (to nearest even): round-to-odd into float32 first."""
    import ml_dtypes

    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        inexact = (f.astype(np.float64) != x) & np.isfinite(x)
        too_far = inexact & (np.abs(f.astype(np.float64)) > np.abs(x))
        f = np.where(too_far, np.nextafter(f, np.float32(0)), f)
        bits = f.view(np.uint32) | np.where(inexact, np.uint32(1), np.uint32(0))
    return bits.view(np.float32).astype(ml_dtypes.bfloat16)


def from_f64(x: np.ndarray, name: str) -> np.ndarray:
    """float64 values rounded once to dtype `name` (the plugin's rule for float results)."""
    if name == "bfloat16":
        return f64_to_bf16_exact(x)
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float64).astype(dt(name))


# ---- registration ----------------------------------------------------------------------------

def test_registrations_match_ops_yaml(h):
    for op in INDEX_OPS + RANDOM_OPS:
        got = {DTYPE_CODE_NAME[d] for (o, d) in h.registrations if o == op}
        assert got == set(dtypes_of(op)), op
        for (o, _), reg in h.registrations.items():
            if o == op:
                assert reg.flags == 1  # HWP_KERNEL_ACCEPTS_STRIDED


DTYPE_CODE_NAME = {v: k for k, v in DTYPE_CODE.items()}


# ---- concat ----------------------------------------------------------------------------------

CONCAT_CASES = [  # (shapes of the inputs, axis)
    ([(3, 4), (2, 4), (5, 4)], 0),
    ([(3, 4), (3, 1), (3, 7)], 1),
    ([(2, 3, 5), (2, 0, 5), (2, 4, 5)], 1),  # an empty input in the middle
    ([(7,)], 0),  # one input
    ([(1, 5), (0, 5)], 0),
    ([(0, 3), (0, 3)], 0),  # zero-size output
    ([(2, 3, 4), (2, 3, 1)], 2),
    ([(4, 1, 3), (4, 2, 3)], 1),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", OP_DTYPES["concat"])
def test_concat(s, name, mode):
    rng = np.random.default_rng(DTYPE_CODE[name] * 11 + MODES.index(mode))
    for shapes, axis in CONCAT_CASES:
        xs = [values(name, sh, rng, bits=True) for sh in shapes]
        puts = [s.put(x, mode) for x in xs]
        expected = np.concatenate([e for _, _, e in puts], axis=axis)
        got = s.run("concat", name, [(d, v) for d, v, _ in puts], expected.shape, dt(name),
                    attrs={"axis": axis}, out_pad=mode == "unaligned")
        assert_bits(got, expected)


def test_concat_many_and_large(s):
    rng = np.random.default_rng(5)
    xs = [values("int16", (3, int(n)), rng) for n in rng.integers(0, 9, size=200)]
    puts = [s.put(x, "strided" if i % 3 else "negative") for i, x in enumerate(xs)]
    expected = np.concatenate(xs, axis=1)
    got = s.run("concat", "int16", [(d, v) for d, v, _ in puts], expected.shape, np.int16,
                attrs={"axis": 1})
    assert_bits(got, expected)
    for axis in (0, 1):  # large: threads engage
        a = values("float32", (1024, 1024), rng, bits=True)
        b = values("float32", (1024, 1024), rng, bits=True)
        pa, pb = s.put(a, "transposed"), s.put(b, "negative")
        expected = np.concatenate([a, b], axis=axis)
        got = s.run("concat", "float32", [pa[:2], pb[:2]], expected.shape, np.float32,
                    attrs={"axis": axis})
        assert_bits(got, expected)


def test_concat_validation(s):
    a, b = s.put(np.zeros((2, 3), np.float32)), s.put(np.zeros((2, 4), np.float32))
    s.run("concat", "float32", [a[:2], b[:2]], (4, 3), np.float32, attrs={"axis": 0},
          expect=INVALID_ARGUMENT, needles=("concat", "shape"))
    s.run("concat", "float32", [a[:2], a[:2]], (5, 3), np.float32, attrs={"axis": 0},
          expect=INVALID_ARGUMENT, needles=("concat", "add up"))
    c = s.put(np.zeros((2, 3), np.float64))
    s.run("concat", "float32", [a[:2], c[:2]], (4, 3), np.float32, attrs={"axis": 0},
          expect=INVALID_ARGUMENT, needles=("dtype",))
    s.run("concat", "float32", [a[:2]], (2, 3), np.float32, attrs={"axis": 2},
          expect=INVALID_ARGUMENT, needles=("axis",))


# ---- pad -------------------------------------------------------------------------------------

PAD_CASES = [  # (input shape, pad)
    ((3, 4), [1, 2, 0, 3]),
    ((5,), [0, 0]),
    ((5,), [3, 1]),
    ((2, 3, 4), [1, 0, 0, 2, 2, 1]),
    ((0, 3), [1, 1, 2, 0]),  # empty input: all padding
    ((2, 0), [0, 0, 1, 1]),
    ((3, 4), [0, 0, 0, 0]),
    ((), []),  # 0-d
]


def pad_value(name: str):
    if name == "bool":
        return True
    if name in INTS:
        return {"int8": -5, "uint8": 200, "int16": -3000, "int32": 123456,
                "int64": 2**62 + 7}[name]
    return 0.1  # rounds in every float dtype


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", OP_DTYPES["pad"])
def test_pad(s, name, mode):
    rng = np.random.default_rng(DTYPE_CODE[name] * 13 + MODES.index(mode))
    value = pad_value(name)
    fill = from_f64(np.array(value), name) if name in FLOATS else np.array(value, dt(name))
    for shape, pads in PAD_CASES:
        x = values(name, shape, rng, bits=True)
        d, v, e = s.put(x, mode)
        widths = [(pads[2 * k], pads[2 * k + 1]) for k in range(len(shape))]
        expected = np.pad(e, widths, mode="constant") if widths else np.array(e)
        expected = np.array(expected, dtype=dt(name))
        mask = np.pad(np.zeros(shape, bool), widths, constant_values=True) if widths else \
            np.zeros((), bool)
        expected[mask] = fill
        got = s.run("pad", name, [(d, v)], expected.shape, dt(name),
                    attrs={"pad": pads, "value": value}, out_pad=mode == "unaligned")
        assert_bits(got, expected)


def test_pad_values_and_large(s):
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    d = s.put(x)
    got = s.run("pad", "int64", [d[:2]], (2, 5), np.int64,
                attrs={"pad": [0, 0, 1, 1], "value": -(2**63)})
    assert got[0, 0] == -(2**63) and got[1, 4] == -(2**63)
    got = s.run("pad", "int64", [d[:2]], (2, 5), np.int64, attrs={"pad": [0, 0, 1, 1]})
    assert got[0, 0] == 0  # value defaults to 0
    got = s.run("pad", "int64", [d[:2]], (5, 3), np.int64, attrs={"pad": [2, 1], "value": 4})
    assert_bits(got, np.pad(x, ((2, 1), (0, 0)), constant_values=4))  # last dims unpadded
    f = s.put(np.ones((1, 1), np.float16))
    got = s.run("pad", "float16", [f[:2]], (1, 3), np.float16,
                attrs={"pad": [0, 0, 1, 1], "value": 65520.0})
    assert np.isinf(got[0, 0]) and got[0, 1] == 1  # rounds to nearest even: inf
    got = s.run("pad", "float32", [s.put(np.ones(1, np.float32))[:2]], (2,), np.float32,
                attrs={"pad": [1, 0], "value": float("nan")})
    assert np.isnan(got[0])
    rng = np.random.default_rng(3)
    big = values("uint8", (1500, 1400), rng)
    pb = s.put(big, "strided")
    expected = np.pad(big, ((3, 5), (700, 1)), constant_values=9)
    got = s.run("pad", "uint8", [pb[:2]], expected.shape, np.uint8,
                attrs={"pad": [3, 5, 700, 1], "value": 9})
    assert_bits(got, expected)


def test_pad_validation(s):
    d = s.put(np.zeros((2, 3), np.float32))
    s.run("pad", "float32", [d[:2]], (2, 3), np.float32, attrs={"pad": [0, 0, 0]},
          expect=INVALID_ARGUMENT, needles=("pad", "pairs"))
    s.run("pad", "float32", [d[:2]], (2, 3), np.float32, attrs={"pad": [0] * 6},
          expect=INVALID_ARGUMENT, needles=("pad", "pairs"))
    s.run("pad", "float32", [d[:2]], (2, 3), np.float32, attrs={"pad": [1, -1, 0, 0]},
          expect=INVALID_ARGUMENT, needles=("non-negative",))
    s.run("pad", "float32", [d[:2]], (3, 3), np.float32, attrs={"pad": [0, 0, 0, 0]},
          expect=INVALID_ARGUMENT, needles=("pad",))
    s.run("pad", "float32", [d[:2]], (2, 3), np.float32, attrs={},
          expect=INVALID_ARGUMENT, needles=("'pad'", "missing"))


# ---- gather ----------------------------------------------------------------------------------

GATHER_CASES = [  # (x shape, axis, index length)
    ((5, 3), 0, 7),
    ((5, 3), 1, 4),
    ((4, 3, 6), 1, 5),
    ((4, 3, 6), 2, 9),
    ((9,), 0, 9),
    ((4, 3), 0, 0),  # empty index
    ((0, 3), 1, 2),  # zero-size x (and output)
    ((3, 1, 2), 1, 3),
]


def index_array(rng, n: int, size, idt: str, mode: str = "contig"):
    idx = rng.integers(0, n, size=size).astype(idt) if n > 0 else np.zeros(size, idt)
    return idx


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("idt", ["int32", "int64"])
@pytest.mark.parametrize("name", OP_DTYPES["gather"])
def test_gather(s, name, idt, mode):
    rng = np.random.default_rng(DTYPE_CODE[name] * 17 + MODES.index(mode) + len(idt))
    for shape, axis, n in GATHER_CASES:
        x = values(name, shape, rng, bits=True)
        d, v, e = s.put(x, mode)
        idx = index_array(rng, shape[axis], (n,), idt)
        imode = "negative" if mode in ("negative", "strided") else "unaligned"
        di, vi, ei = s.put(idx, imode)
        expected = np.take(e, ei, axis=axis)
        got = s.run("gather", name, [(d, v), (di, vi)], expected.shape, dt(name),
                    attrs={"axis": axis}, out_pad=mode == "unaligned")
        assert_bits(got, expected)


def test_gather_large_and_broadcast_index(s):
    rng = np.random.default_rng(9)
    for axis, shape in ((0, (3000, 700)), (1, (700, 3000))):
        x = values("float32", shape, rng, bits=True)
        d = s.put(x, "transposed")
        idx = rng.integers(0, 3000, size=3000).astype(np.int64)
        di = s.put(idx, "strided")
        expected = np.take(x, idx, axis=axis)
        got = s.run("gather", "float32", [d[:2], di[:2]], expected.shape, np.float32,
                    attrs={"axis": axis})
        assert_bits(got, expected)
    # the same row over and over (index of stride 0)
    x = values("int64", (10, 4), rng)
    d = s.put(x)
    di = s.put(np.array([7], np.int32))
    view = np.broadcast_to(di[0].host, (5,))
    got = s.run("gather", "int64", [d[:2], (di[0], view)], (5, 4), np.int64, attrs={"axis": 0})
    assert_bits(got, np.repeat(x[7:8], 5, axis=0))


def test_gather_out_of_range_index_fails(h):
    for stream_kind in ("null", "stream"):
        stream = h.create_stream() if stream_kind == "stream" else NULL
        sess = Session(h, stream)
        try:
            d = sess.put(np.arange(12, dtype=np.float32).reshape(4, 3))
            for bad, axis in (([0, 4], 0), ([-1], 0), ([3], 1)):
                di = sess.put(np.array(bad, np.int64))
                out_shape = (len(bad), 3) if axis == 0 else (4, len(bad))
                out = DeviceArray.empty(h, out_shape, np.float32)
                sess.arrays.append(out)
                st = h.call_kernel("gather", DTYPE_CODE["float32"], [d[0].view(), di[0].view()],
                                   [out.view()], attrs={"axis": axis}, stream=stream)
                if stream == NULL or st != OK:
                    h.expect_error(st, INVALID_ARGUMENT, "gather", "out of range")
                else:  # ran on the worker: the stream reports it
                    with pytest.raises(Exception, match="out of range"):
                        h.sync_stream(stream)
        finally:
            sess.close()
            if stream != NULL:
                h.destroy_stream(stream)


def test_gather_validation(s):
    d = s.put(np.zeros((4, 3), np.float32))
    bad_dtype = s.put(np.zeros(2, np.int16))
    s.run("gather", "float32", [d[:2], bad_dtype[:2]], (2, 3), np.float32, attrs={"axis": 0},
          expect=INVALID_ARGUMENT, needles=("index", "int32 or int64"))
    i2 = s.put(np.zeros((2, 1), np.int64))
    s.run("gather", "float32", [d[:2], i2[:2]], (2, 3), np.float32, attrs={"axis": 0},
          expect=INVALID_ARGUMENT, needles=("index", "ndim"))
    i1 = s.put(np.zeros(2, np.int64))
    s.run("gather", "float32", [d[:2], i1[:2]], (3, 3), np.float32, attrs={"axis": 0},
          expect=INVALID_ARGUMENT, needles=("gather",))


# ---- take_along_axis ---------------------------------------------------------------------------

TAKE_CASES = [  # (x shape, index shape, axis)
    ((4, 5), (4, 3), 1),
    ((4, 5), (6, 5), 0),
    ((2, 3, 4), (2, 3, 7), 2),
    ((2, 3, 4), (2, 5, 4), 1),
    ((7,), (11,), 0),
    ((3, 4), (3, 0), 1),  # zero-size index
    ((0, 4), (0, 4), 0),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("idt", ["int32", "int64"])
@pytest.mark.parametrize("name", OP_DTYPES["take_along_axis"])
def test_take_along_axis(s, name, idt, mode):
    rng = np.random.default_rng(DTYPE_CODE[name] * 19 + MODES.index(mode) + len(idt))
    for xshape, ishape, axis in TAKE_CASES:
        x = values(name, xshape, rng, bits=True)
        d, v, e = s.put(x, mode)
        idx = index_array(rng, xshape[axis], ishape, idt)
        di, vi, ei = s.put(idx, {"broadcast": "broadcast", "negative": "transposed"}.get(
            mode, "strided"))
        expected = np.take_along_axis(e, ei, axis)
        got = s.run("take_along_axis", name, [(d, v), (di, vi)], expected.shape, dt(name),
                    attrs={"axis": axis}, out_pad=mode == "unaligned")
        assert_bits(got, expected)


def test_take_along_axis_broadcast_x_and_index(s):
    rng = np.random.default_rng(21)
    # x with size-1 dims (broadcast by the kernel) and index of size-1 dims
    x = values("float64", (1, 6, 1), rng)
    idx = rng.integers(0, 6, size=(4, 3, 1)).astype(np.int32)
    out_shape = (4, 3, 5)
    d, di = s.put(x), s.put(idx, "negative")
    expected = np.take_along_axis(np.broadcast_to(x, (4, 6, 5)),
                                  np.broadcast_to(idx, out_shape), 1)
    got = s.run("take_along_axis", "float64", [d[:2], di[:2]], out_shape, np.float64,
                attrs={"axis": 1})
    assert_bits(got, expected)


def test_take_along_axis_large(s):
    rng = np.random.default_rng(22)
    x = values("int32", (512, 4096), rng)
    for axis in (0, 1):
        idx = rng.integers(0, x.shape[axis], size=x.shape).astype(np.int64)
        d, di = s.put(x, "negative"), s.put(idx)
        expected = np.take_along_axis(x, idx, axis)
        got = s.run("take_along_axis", "int32", [d[:2], di[:2]], x.shape, np.int32,
                    attrs={"axis": axis})
        assert_bits(got, expected)


def test_take_along_axis_bad_index_and_validation(h, s):
    d = s.put(np.zeros((3, 4), np.float32))
    di = s.put(np.array([[0], [4], [1]], np.int64))
    s_sync = Session(h)
    try:
        s_sync.run("take_along_axis", "float32", [d[:2], di[:2]], (3, 1), np.float32,
                   attrs={"axis": 1}, expect=INVALID_ARGUMENT, needles=("out of range",))
    finally:
        s_sync.close()
    ok = s.put(np.zeros((3, 1), np.int64))
    s.run("take_along_axis", "float32", [d[:2], ok[:2]], (3, 1), np.float32, attrs={},
          expect=INVALID_ARGUMENT, needles=("'axis'", "missing"))
    wrong = s.put(np.zeros((2, 1), np.int64))
    s.run("take_along_axis", "float32", [d[:2], wrong[:2]], (3, 1), np.float32,
          attrs={"axis": 1}, expect=INVALID_ARGUMENT, needles=("index", "shape"))


# ---- scatter ---------------------------------------------------------------------------------

def scatter_ref(x, index, updates, axis, reduce, name):
    """Rows in index order; assign: the last wins; add: bool ors, integers wrap, floats
    accumulate in float64 (x, then the updates in index order) and round once (as
    phi_ops/reference.py decides)."""
    floats = reduce == "add" and name in FLOATS
    out = np.array(x, dtype=np.float64) if floats else np.array(x, copy=True)
    upd = np.asarray(updates, dtype=np.float64) if floats else updates
    for j, t in enumerate(index):
        so = [slice(None)] * x.ndim
        su = [slice(None)] * x.ndim
        so[axis], su[axis] = int(t), j
        so, su = tuple(so), tuple(su)
        if reduce == "assign":
            out[so] = upd[su]
        elif name == "bool":
            out[so] = out[so] | upd[su]
        else:
            with np.errstate(over="ignore"):
                out[so] = out[so] + upd[su]
    if floats:
        touched = np.zeros(x.shape, bool)
        sel = [slice(None)] * x.ndim
        sel[axis] = np.asarray(index, np.int64)
        touched[tuple(sel)] = True
        rounded = from_f64(out, name)
        return np.where(touched, rounded, x)  # rows never touched keep their bits
    return out


SCATTER_CASES = [  # (x shape, axis, number of index rows)
    ((5, 3), 0, 12),  # duplicates
    ((5, 3), 1, 7),
    ((3, 4, 5), 1, 9),
    ((3, 4, 5), 2, 3),
    ((6,), 0, 20),
    ((4, 3), 0, 0),  # no rows: a copy
    ((0, 3), 1, 4),  # zero-size
]


@pytest.mark.parametrize("reduce", ["assign", "add"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("idt", ["int32", "int64"])
@pytest.mark.parametrize("name", OP_DTYPES["scatter"])
def test_scatter(s, name, idt, mode, reduce):
    rng = np.random.default_rng(DTYPE_CODE[name] * 23 + MODES.index(mode) + len(idt) +
                                len(reduce))
    for shape, axis, rows in SCATTER_CASES:
        x = values(name, shape, rng, bits=reduce == "assign")
        ushape = list(shape)
        ushape[axis] = rows
        upd = values(name, tuple(ushape), rng, bits=reduce == "assign")
        idx = index_array(rng, shape[axis], (rows,), idt)
        d, v, e = s.put(x, mode)
        du, vu, eu = s.put(upd, "negative" if mode == "broadcast" else mode)
        di, vi, ei = s.put(idx, "negative" if mode == "strided" else "contig")
        expected = scatter_ref(e, ei, eu, axis, reduce, name)
        got = s.run("scatter", name, [(d, v), (di, vi), (du, vu)], shape, dt(name),
                    attrs={"axis": axis, "reduce": reduce}, out_pad=mode == "unaligned")
        assert_bits(got, expected)


def test_scatter_add_semantics(s):
    # integers wrap, bool add is or, later rows win for assign, float16 through float32
    x = np.array([120, -128, 5], np.int8)
    d = s.put(x)
    di = s.put(np.array([0, 0, 1], np.int64))
    du = s.put(np.array([5, 10, -1], np.int8))
    got = s.run("scatter", "int8", [d[:2], di[:2], du[:2]], (3,), np.int8,
                attrs={"reduce": "add"})
    assert got.tolist() == [-121, 127, 5]
    got = s.run("scatter", "int8", [d[:2], di[:2], du[:2]], (3,), np.int8,
                attrs={"reduce": "assign"})
    assert got.tolist() == [10, -1, 5]
    got = s.run("scatter", "int8", [d[:2], di[:2], du[:2]], (3,), np.int8, attrs={})
    assert got.tolist() == [10, -1, 5]  # reduce defaults to assign
    b = s.put(np.array([False, True]))
    bi = s.put(np.array([0, 0, 1], np.int32))
    bu = s.put(np.array([True, True, False]))
    got = s.run("scatter", "bool", [b[:2], bi[:2], bu[:2]], (2,), np.bool_,
                attrs={"reduce": "add"})
    assert got.tolist() == [True, True]
    # floats accumulate in float64 and round once: 2048 + 1 + 1 = 2050 in float16 (adding
    # in float16 twice would give 2048: 2049 ties to even both times)
    h16 = s.put(np.array([2048.0], np.float16))
    hi = s.put(np.zeros(2, np.int64))
    hu = s.put(np.array([1.0, 1.0], np.float16))
    got = s.run("scatter", "float16", [h16[:2], hi[:2], hu[:2]], (1,), np.float16,
                attrs={"reduce": "add"})
    assert got[0] == 2050.0
    f32 = s.put(np.array([1.0, 5.0], np.float32))
    fi = s.put(np.zeros(3, np.int32))
    fu = s.put(np.array([2.0**-24, 2.0**-24, 2.0**-24], np.float32))
    got = s.run("scatter", "float32", [f32[:2], fi[:2], fu[:2]], (2,), np.float32,
                attrs={"reduce": "add"})
    assert got.tolist() == [np.float32(1.0 + 3 * 2.0**-24), 5.0]


def test_scatter_large(s):
    rng = np.random.default_rng(31)
    for axis in (0, 1):
        x = values("float32", (1024, 1024), rng)
        rows = 1500
        ushape = [1024, 1024]
        ushape[axis] = rows
        upd = values("float32", tuple(ushape), rng)
        idx = rng.integers(0, 1024, size=rows).astype(np.int32)
        d, du, di = s.put(x, "transposed"), s.put(upd, "negative"), s.put(idx)
        for reduce in ("assign", "add"):
            expected = scatter_ref(x, idx, upd, axis, reduce, "float32")
            got = s.run("scatter", "float32", [d[:2], di[:2], du[:2]], x.shape, np.float32,
                        attrs={"axis": axis, "reduce": reduce})
            assert_bits(got, expected)


def test_scatter_validation(h, s):
    d = s.put(np.zeros((3, 2), np.float32))
    di = s.put(np.array([0, 3], np.int64))
    du = s.put(np.zeros((2, 2), np.float32))
    s.run("scatter", "float32", [d[:2], di[:2], du[:2]], (3, 2), np.float32,
          attrs={"reduce": "max"}, expect=INVALID_ARGUMENT, needles=("reduce", "max"))
    bad = Session(h)
    try:
        bad.run("scatter", "float32", [d[:2], di[:2], du[:2]], (3, 2), np.float32,
                attrs={"reduce": "add"}, expect=INVALID_ARGUMENT, needles=("out of range",))
    finally:
        bad.close()
    du3 = s.put(np.zeros((3, 2), np.float32))
    s.run("scatter", "float32", [d[:2], di[:2], du3[:2]], (3, 2), np.float32,
          expect=INVALID_ARGUMENT, needles=("updates",))
    du64 = s.put(np.zeros((2, 2), np.float64))
    s.run("scatter", "float32", [d[:2], di[:2], du64[:2]], (3, 2), np.float32,
          expect=INVALID_ARGUMENT, needles=("updates", "dtype"))


# ---- argsort ---------------------------------------------------------------------------------

def argsort_ref(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable; NaN last ascending, first descending; descending keeps ties in input order."""
    if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
        x = x.astype(np.float64)
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64)
    n = x.shape[axis]
    r = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - r, axis).astype(np.int64)


def sort_values(name, shape, rng, kind):
    if kind == "ties":  # few distinct values: stability shows
        v = rng.integers(0, 4, size=shape)
        if name in FLOATS:
            v = v - 1.5
            v = np.where(v == -1.5, -0.0, v)  # -0.0 ties with 0.0 (below it is 0.5)
            v = np.where(rng.random(shape) < 0.2, 0.0, v)
        return np.asarray(v).astype(dt(name))
    if kind == "special" and name in FLOATS:
        pool = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, -1.0, 3.5, np.nan])
        return pool[rng.integers(0, len(pool), size=shape)].astype(dt(name))
    return values(name, shape, rng)


ARGSORT_CASES = [((17,), 0), ((5, 9), 1), ((5, 9), 0), ((3, 4, 6), 1), ((2, 1, 300), 2),
                 ((0, 5), 1), ((4, 0), 1), ((), 0), ((1,), 0)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("name", OP_DTYPES["argsort"])
def test_argsort(s, name, descending, mode):
    rng = np.random.default_rng(DTYPE_CODE[name] * 29 + MODES.index(mode) + descending)
    for kind in ("random", "ties", "special"):
        for shape, axis in ARGSORT_CASES:
            x = sort_values(name, shape, rng, kind)
            d, v, e = s.put(x, mode)
            expected = argsort_ref(e, axis, descending)
            got = s.run("argsort", name, [(d, v)], x.shape, np.int64,
                        attrs={"axis": axis, "descending": descending},
                        out_pad=mode == "unaligned")
            assert_bits(got, expected)


def test_argsort_nan_and_signed_zero_order(s):
    x = np.array([np.nan, 1.0, -0.0, np.inf, 0.0, -np.inf, np.nan, -1.0], np.float32)
    d = s.put(x)
    asc = s.run("argsort", "float32", [d[:2]], x.shape, np.int64, attrs={"axis": 0})
    assert asc.tolist() == [5, 7, 2, 4, 1, 3, 0, 6]
    desc = s.run("argsort", "float32", [d[:2]], x.shape, np.int64,
                 attrs={"axis": 0, "descending": True})
    assert desc.tolist() == [0, 6, 3, 1, 2, 4, 7, 5]
    # descending defaults to false; axis -1 (last) is accepted too
    got = s.run("argsort", "float32", [d[:2]], x.shape, np.int64, attrs={"axis": -1})
    assert got.tolist() == asc.tolist()


def test_argsort_large(s):
    rng = np.random.default_rng(37)
    x = rng.integers(-1000, 1000, size=1 << 20).astype(np.int32)  # one long row with ties
    d = s.put(x, "negative")
    for descending in (False, True):
        got = s.run("argsort", "int32", [d[:2]], x.shape, np.int64,
                    attrs={"axis": 0, "descending": descending})
        assert_bits(got, argsort_ref(x, 0, descending))
    y = values("float64", (4096, 300), rng)  # many rows over the parallel loop
    y[rng.random(y.shape) < 0.01] = np.nan
    dy = s.put(y, "transposed")
    for axis in (0, 1):
        got = s.run("argsort", "float64", [dy[:2]], y.shape, np.int64,
                    attrs={"axis": axis, "descending": True})
        assert_bits(got, argsort_ref(y, axis, True))


def test_argsort_validation(s):
    d = s.put(np.zeros((3, 2), np.float32))
    s.run("argsort", "float32", [d[:2]], (3, 2), np.int32, attrs={"axis": 0},
          expect=INVALID_ARGUMENT, needles=("int64",))
    s.run("argsort", "float32", [d[:2]], (3, 2), np.int64, attrs={"axis": 2},
          expect=INVALID_ARGUMENT, needles=("axis",))
    s.run("argsort", "float32", [d[:2]], (2, 3), np.int64, attrs={"axis": 0},
          expect=INVALID_ARGUMENT, needles=("shape",))


# ---- arange ----------------------------------------------------------------------------------

def arange_ref(name, start, step, n):
    if name in FLOATS:
        return from_f64(float(start) + np.arange(n, dtype=np.float64) * float(step), name)
    with np.errstate(over="ignore"):
        v = np.int64(start) + np.arange(n, dtype=np.int64) * np.int64(step)
    return v.astype(dt(name))


ARANGE_CASES = [(0, 1, 10), (5, -3, 7), (-100, 7, 33), (0, 1, 0), (3, 2, 1)]


@pytest.mark.parametrize("name", OP_DTYPES["arange"])
def test_arange(s, name):
    cases = list(ARANGE_CASES)
    if name in FLOATS:
        cases += [(0.1, 0.3, 50), (-2.5, 0.001, 999), (1e5, -1e-3, 17)]
    if name == "int64":
        cases += [(2**62, 2**60, 3), (-(2**63), 1, 4)]  # exact (no trip through double)
    if name in ("int8", "uint8"):
        cases += [(100, 50, 6)]  # wraps like astype
    for start, step, n in cases:
        got = s.run("arange", name, [], (n,), dt(name), attrs={"start": start, "step": step},
                    out_pad=n % 2)
        assert_bits(got, arange_ref(name, start, step, n))


def test_arange_large_and_defaults(s):
    got = s.run("arange", "float32", [], (BIG + 3,), np.float32,
                attrs={"start": 0.5, "step": 0.25})
    assert_bits(got, arange_ref("float32", 0.5, 0.25, BIG + 3))
    got = s.run("arange", "int64", [], (BIG,), np.int64, attrs={"start": 7, "step": -2})
    assert_bits(got, arange_ref("int64", 7, -2, BIG))
    got = s.run("arange", "int32", [], (4,), np.int32, attrs={})  # start 0, step 1
    assert got.tolist() == [0, 1, 2, 3]
    got = s.run("arange", "int32", [], (4,), np.int32, attrs={"start": 2.5, "step": -1.5})
    assert got.tolist() == [2, 1, 0, -1]  # non-integral start/step truncate toward zero first


# ---- uniform: Philox-4x32-10 -----------------------------------------------------------------

M32 = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    """Pure-numpy Philox-4x32-10: ctr = 4 arrays of uint32 words (word 0 lowest), key = 2
    words; returns the 4 output words as uint64 arrays holding uint32 values."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in ctr)
    k0, k1 = int(key[0]) & M32, int(key[1]) & M32
    m0, m1, mask = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57), np.uint64(M32)
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
        p0, p1 = c0 * m0, c2 * m1  # < 2**64: exact
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & mask,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & mask)
    return c0, c1, c2, c3


def philox_counters(offset: int, n: int):
    """Counter words of elements 0..n-1: (offset + i) mod 2**128, offset sign-extended."""
    base = offset % (1 << 128)
    lo0 = np.uint64(base & ((1 << 64) - 1))
    hi0 = base >> 64
    lo = lo0 + np.arange(n, dtype=np.uint64)  # wraps
    carry = (lo < lo0).astype(np.uint64)
    hi = np.uint64(hi0) + carry  # wraps
    s32, mask = np.uint64(32), np.uint64(M32)
    return lo & mask, lo >> s32, hi & mask, hi >> s32


def uniform_ref(name, n, low, high, seed, offset):
    w = philox4x32_10(philox_counters(offset, n), (seed & M32, (seed >> 32) & M32))
    if name == "float64":
        u = ((w[1] << np.uint64(21)) ^ (w[0] >> np.uint64(11))).astype(np.float64) * 2.0**-53
    else:
        u = (w[0] >> np.uint64(8)).astype(np.float64) * 2.0**-24
    return from_f64(low + (high - low) * u, name)


KATS = [  # Random123 kat_vectors, philox4x32 10 rounds: counter, key -> output (word 0 first)
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32, M32, M32, M32), (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr, key, expected", KATS)
def test_numpy_philox_reference_known_answers(ctr, key, expected):
    out = philox4x32_10([np.array([c], np.uint64) for c in ctr], key)
    assert tuple(int(w[0]) for w in out) == expected


def test_uniform_raw_words_match_known_answers(s):
    """With low=0 and high=2**53 (float64) or 2**24 (float32) the output is the raw bits the
    mapping takes from the words: check them on the KATs a (seed, offset) can address."""
    for (ctr, key, (w0, w1, _, _)), seed, offset in ((KATS[0], 0, 0), (KATS[1], -1, -1)):
        assert tuple(int(w[0]) for w in philox_counters(offset, 1)) == ctr
        assert (seed & M32, (seed >> 32) & M32) == key
        got = s.run("uniform", "float64", [], (1,), np.float64,
                    attrs={"low": 0.0, "high": 2.0**53, "seed": seed, "offset": offset})
        assert int(got[0]) == (w1 << 21) ^ (w0 >> 11)
        got = s.run("uniform", "float32", [], (1,), np.float32,
                    attrs={"low": 0.0, "high": 2.0**24, "seed": seed, "offset": offset})
        assert int(got[0]) == w0 >> 8


SEEDS = [0, 1, 42, -1, 2**40 + 5, 2**63 - 1, -(2**63)]
OFFSETS = [0, 7, 2**32 - 3, 2**63 - 5, -3]


@pytest.mark.parametrize("name", OP_DTYPES["uniform"])
def test_uniform_bit_exact(s, name):
    for seed in SEEDS:
        for offset in OFFSETS:
            for n, low, high in ((1, 0.0, 1.0), (37, -2.0, 3.0), (1000, 10.0, 10.5)):
                got = s.run("uniform", name, [], (n,), dt(name),
                            attrs={"low": low, "high": high, "seed": seed, "offset": offset},
                            out_pad=n % 2)
                assert_bits(got, uniform_ref(name, n, low, high, seed, offset))


@pytest.mark.parametrize("name", OP_DTYPES["uniform"])
def test_uniform_matches_the_op_librarys_reference(s, name):
    """phi_ops.philox is the oracle every plugin is certified against."""
    philox = pytest.importorskip("phi_ops.philox")
    for seed, offset, shape, low, high in ((0, 0, (64,), 0.0, 1.0), (-7, -40, (5, 13), -1.0, 4.0),
                                           (2**63 - 1, 2**32 - 9, (300,), 3.0, 3.5)):
        got = s.run("uniform", name, [], shape, dt(name),
                    attrs={"low": low, "high": high, "seed": seed, "offset": offset})
        assert_bits(got, philox.uniform(shape, low, high, seed, offset, name))


@pytest.mark.parametrize("name", OP_DTYPES["uniform"])
def test_uniform_shapes_defaults_and_continuation(s, name):
    got = s.run("uniform", name, [], (), dt(name), attrs={"seed": 3})  # 0-d; low 0, high 1
    assert_bits(got, uniform_ref(name, 1, 0.0, 1.0, 3, 0).reshape(()))
    got = s.run("uniform", name, [], (3, 0, 2), dt(name), attrs={"seed": 3})
    assert got.shape == (3, 0, 2)
    got = s.run("uniform", name, [], (5, 7, 3), dt(name), attrs={"seed": 9, "offset": 11})
    assert_bits(got, uniform_ref(name, 105, 0.0, 1.0, 9, 11).reshape(5, 7, 3))
    whole = s.run("uniform", name, [], (300,), dt(name), attrs={"seed": 77, "offset": 1000})
    for k in (1, 37, 299):
        tail = s.run("uniform", name, [], (300 - k,), dt(name),
                     attrs={"seed": 77, "offset": 1000 + k})
        assert_bits(tail, whole[k:])
    other = s.run("uniform", name, [], (300,), dt(name), attrs={"seed": 78, "offset": 1000})
    assert not np.array_equal(other.astype(np.float64), whole.astype(np.float64))


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_uniform_statistics(s, name):
    n = 1 << 20
    for low, high in ((0.0, 1.0), (-3.0, 5.0)):
        x = s.run("uniform", name, [], (n,), dt(name),
                  attrs={"low": low, "high": high, "seed": 1234, "offset": 0}).astype(np.float64)
        assert x.min() >= low and x.max() < high
        u = (x - low) / (high - low)
        se_mean = np.sqrt(1 / 12 / n)
        se_var = np.sqrt((1 / 80 - 1 / 144) / n)
        assert abs(u.mean() - 0.5) < 5 * se_mean
        assert abs(u.var() - 1 / 12) < 5 * se_var
        counts = np.bincount(np.minimum((u * 64).astype(np.int64), 63), minlength=64)
        p = 1 / 64
        assert np.all(np.abs(counts - n * p) < 6 * np.sqrt(n * p * (1 - p)))
        assert_bits(x[:4096].astype(dt(name)),
                    uniform_ref(name, 4096, low, high, 1234, 0))


def test_uniform_large_matches_reference(s):
    n = BIG + 1
    got = s.run("uniform", "float32", [], (n,), np.float32,
                attrs={"low": -1.0, "high": 1.0, "seed": 2024, "offset": 5})
    assert_bits(got, uniform_ref("float32", n, -1.0, 1.0, 2024, 5))


def test_uniform_validation(s):
    s.run("uniform", "float32", [], (3,), np.float32, attrs={"low": 0.0},
          expect=INVALID_ARGUMENT, needles=("'seed'", "missing"))
    s.run("uniform", "float32", [], (3,), np.float32, attrs={"seed": 1.5},
          expect=INVALID_ARGUMENT, needles=("seed",))
    s.run("uniform", "float32", [], (3,), np.int32, attrs={"seed": 1},
          expect=INVALID_ARGUMENT, needles=("float",))


# ---- asynchronous execution ------------------------------------------------------------------

def test_every_kernel_on_an_async_stream(h_async):
    """Each kernel runs later on the stream worker: it must have copied every shape, stride and
    attribute (DirectHost scrambles them when the call returns)."""
    rng = np.random.default_rng(99)
    stream = h_async.create_stream()
    sess = Session(h_async, stream)
    try:
        x = values("float32", (6, 5), rng)
        d = sess.put(x, "negative")
        assert_bits(sess.run("concat", "float32", [d[:2], d[:2]], (12, 5), np.float32,
                             attrs={"axis": 0}), np.concatenate([x, x]))
        assert_bits(sess.run("pad", "float32", [d[:2]], (7, 8), np.float32,
                             attrs={"pad": [1, 0, 2, 1], "value": 2.5}),
                    np.pad(x, ((1, 0), (2, 1)), constant_values=2.5))
        idx = np.array([4, 0, 4, 2], np.int32)
        di = sess.put(idx, "strided")
        assert_bits(sess.run("gather", "float32", [d[:2], di[:2]], (6, 4), np.float32,
                             attrs={"axis": 1}), np.take(x, idx, axis=1))
        t = rng.integers(0, 6, size=(3, 5)).astype(np.int64)
        dt_ = sess.put(t)
        assert_bits(sess.run("take_along_axis", "float32", [d[:2], dt_[:2]], (3, 5),
                             np.float32, attrs={"axis": 0}), np.take_along_axis(x, t, 0))
        u = values("float32", (6, 4), rng)
        du = sess.put(u)
        assert_bits(sess.run("scatter", "float32", [d[:2], di[:2], du[:2]], (6, 5), np.float32,
                             attrs={"axis": 1, "reduce": "add"}),
                    scatter_ref(x, idx, u, 1, "add", "float32"))
        assert_bits(sess.run("argsort", "float32", [d[:2]], (6, 5), np.int64,
                             attrs={"axis": 1, "descending": True}), argsort_ref(x, 1, True))
        assert_bits(sess.run("arange", "float64", [], (9,), np.float64,
                             attrs={"start": 1.0, "step": 0.5}), arange_ref("float64", 1, .5, 9))
        assert_bits(sess.run("uniform", "bfloat16", [], (9,), dt("bfloat16"),
                             attrs={"seed": 5, "offset": 2}),
                    uniform_ref("bfloat16", 9, 0.0, 1.0, 5, 2))
        # a bad index fails the stream's work, reported by the next synchronize
        bad = sess.put(np.array([9], np.int64))
        out = DeviceArray.empty(h_async, (1, 5), np.float32)
        sess.arrays.append(out)
        h_async.check(h_async.call_kernel("gather", DTYPE_CODE["float32"],
                                          [d[0].view(d[1]), bad[0].view()], [out.view()],
                                          attrs={"axis": 0}, stream=stream), "gather")
        with pytest.raises(Exception, match="out of range") as info:
            h_async.sync_stream(stream)
        assert info.value.status == DEVICE_ERROR
        # again, now seen by a NULL-stream launch (it drains the device first): that kernel
        # fails before it runs, and its payload is freed exactly once
        h_async.check(h_async.call_kernel("gather", DTYPE_CODE["float32"],
                                          [d[0].view(d[1]), bad[0].view()], [out.view()],
                                          attrs={"axis": 0}, stream=stream), "gather")
        st = h_async.call_kernel("uniform", DTYPE_CODE["float32"], [], [out.view()],
                                 attrs={"seed": 1}, stream=NULL)
        h_async.expect_error(st, DEVICE_ERROR, "out of range")
        h_async.sync_stream(stream)  # the error was reported (and cleared) once
    finally:
        sess.close()
        h_async.destroy_stream(stream)


def test_sync_path_matches(s_sync):
    """The NULL stream (synchronous) path gives the same results."""
    rng = np.random.default_rng(7)
    x = values("int64", (50, 40), rng)
    d = s_sync.put(x, "transposed")
    assert_bits(s_sync.run("argsort", "int64", [d[:2]], x.shape, np.int64, attrs={"axis": 0}),
                argsort_ref(x, 0, False))
    assert_bits(s_sync.run("uniform", "float64", [], (BIG,), np.float64,
                           attrs={"seed": 1, "offset": 0}),
                uniform_ref("float64", BIG, 0.0, 1.0, 1, 0))
