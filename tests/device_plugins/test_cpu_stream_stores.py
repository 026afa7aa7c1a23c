"""The CPU plugin's non-temporal stores for big elementwise outputs (elementwise_iter.h): with
HWPORT_CPU_STREAM_BYTES=4096 every pooled launch (>= 32768 elements) whose output rows are
contiguous computes 512-byte blocks in L1 and streams them out (ops that call vector math keep
ordinary stores). The results must be those of the
ordinary path for every output alignment (64-byte aligned, off by whole elements, off by a
fraction of an element: not streamed), element size (1, 2, 4, 8 bytes, bool results of float
inputs), broadcast inputs, in-place launches and strided outputs, and the bytes around the
output must stay as they were."""

from __future__ import annotations

import numpy as np
import pytest

from hwport.conformance.direct_host import DTYPE_CODE, DirectHost, View, contiguous_strides

N = 32768 + 4099  # pooled (>= 32768 elements), several 4 KiB blocks, a tail
GUARD = 256  # bytes checked untouched on each side of the output


@pytest.fixture(scope="module")
def streaming(cpu_plugin_so):
    h = DirectHost(cpu_plugin_so, env={"HWPORT_CPU_STREAM_BYTES": "4096",
                                       "HWPORT_CPU_DEVICES": None})
    assert h.init_status == 0
    h.init_devices()
    return h


def _upload(h: DirectHost, arr: np.ndarray, offset: int):
    raw = np.frombuffer(arr.tobytes(), np.uint8)
    buf = h.alloc(offset + raw.size + GUARD)
    h.h2d(buf, np.full(offset + raw.size + GUARD, 0xA5, np.uint8))
    h.h2d(buf, raw, offset)
    return buf


def _run(h: DirectHost, op: str, inputs: list[np.ndarray], out_dtype: str, out_offset: int,
         in_dtype: str | None = None) -> np.ndarray:
    """op over `inputs` (each uploaded at byte offset 0) into an output at `out_offset` bytes
    inside a buffer whose other bytes are 0xA5; returns the output after checking them."""
    shape = np.broadcast_shapes(*(a.shape for a in inputs))
    out_dt = np.dtype(out_dtype)
    nbytes = int(np.prod(shape)) * out_dt.itemsize
    total = out_offset + nbytes + GUARD
    obuf = h.alloc(total)
    h.h2d(obuf, np.full(total, 0xA5, np.uint8))
    views, bufs = [], [obuf]
    for a in inputs:
        ibuf = _upload(h, a, 0)
        bufs.append(ibuf)
        strides = tuple(0 if n == 1 and m != 1 else s for n, m, s in
                        zip(a.shape, shape, contiguous_strides(a.shape), strict=True))
        views.append(View(ibuf, 0, DTYPE_CODE[str(a.dtype)], shape, strides))
    out = View(obuf, out_offset, DTYPE_CODE[out_dtype], shape, None)
    dtype = DTYPE_CODE[in_dtype or str(inputs[0].dtype)]
    h.check(h.call_kernel(op, dtype, views, [out]), op)
    h.sync_device()
    raw = np.frombuffer(h.d2h(obuf, total), np.uint8)
    for b in bufs:
        h.free(b)
    assert (raw[:out_offset] == 0xA5).all(), "bytes before the output were written"
    assert (raw[out_offset + nbytes:] == 0xA5).all(), "bytes after the output were written"
    return raw[out_offset:out_offset + nbytes].view(out_dt).reshape(shape)


@pytest.mark.parametrize("offset", [0, 4, 8, 60, 64 + 12, 2])
@pytest.mark.parametrize("n", [N, 32768, 65536 + 1])
def test_float32_unary_every_alignment(streaming, offset: int, n: int) -> None:
    x = np.random.default_rng(n + offset).standard_normal(n).astype(np.float32)
    got = _run(streaming, "neg", [x], "float32", offset)
    np.testing.assert_array_equal(got, -x)
    got = _run(streaming, "exp", [x], "float32", offset)
    np.testing.assert_allclose(got, np.exp(x.astype(np.float64)), rtol=2e-6)


@pytest.mark.parametrize("dtype,offset", [("int8", 0), ("int8", 33), ("float16", 6),
                                          ("int64", 8), ("float64", 0), ("float64", 24)])
def test_element_sizes(streaming, dtype: str, offset: int) -> None:
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(N) * 40).astype(dtype)
    np.testing.assert_array_equal(_run(streaming, "neg", [x], dtype, offset),
                                  (-x.astype(np.float64)).astype(dtype))


def test_bool_result_of_float_input(streaming) -> None:
    x = np.random.default_rng(8).standard_normal(N).astype(np.float32)
    x[::7] = np.nan
    np.testing.assert_array_equal(_run(streaming, "isnan", [x], "bool", 5), np.isnan(x))


@pytest.mark.parametrize("offset", [0, 4])
def test_broadcast_binary_rows(streaming, offset: int) -> None:
    rng = np.random.default_rng(9)
    a = rng.standard_normal((37, 1500)).astype(np.float32)  # rows of 6000 bytes: streamed
    b = rng.standard_normal((1, 1500)).astype(np.float32)   # in part, tails in place
    np.testing.assert_array_equal(_run(streaming, "subtract", [a, b], "float32", offset), a - b)
    c = rng.standard_normal((37, 1)).astype(np.float32)
    np.testing.assert_array_equal(_run(streaming, "maximum", [a, c], "float32", offset),
                                  np.maximum(a, c))


def test_in_place_and_strided_output(streaming) -> None:
    h = streaming
    x = np.random.default_rng(10).standard_normal(2 * N).astype(np.float32)
    buf = _upload(h, x, 0)
    # in place at a 4-byte offset: the output is the input
    v_in = View(buf, 4, DTYPE_CODE["float32"], (N,), None)
    v_out = View(buf, 4, DTYPE_CODE["float32"], (N,), None)
    h.check(h.call_kernel("neg", DTYPE_CODE["float32"], [v_in], [v_out]), "neg")
    h.sync_device()
    got = h.read(buf, np.dtype(np.float32), (2 * N,))
    want = x.copy()
    want[1:N + 1] = -want[1:N + 1]
    np.testing.assert_array_equal(got, want)
    # a strided output (every other element): not streamed, the gaps untouched
    v_in = View(buf, 0, DTYPE_CODE["float32"], (N,), (2,))
    v_out = View(buf, 4, DTYPE_CODE["float32"], (N,), (2,))
    h.check(h.call_kernel("abs", DTYPE_CODE["float32"], [v_in], [v_out]), "abs")
    h.sync_device()
    got2 = h.read(buf, np.dtype(np.float32), (2 * N,))
    want[1::2] = np.abs(want[0::2])
    np.testing.assert_array_equal(got2, want)
    h.free(buf)


def test_a_bad_setting_is_reported_and_ignored(cpu_plugin_so) -> None:
    h = DirectHost(cpu_plugin_so, env={"HWPORT_CPU_STREAM_BYTES": "lots"})
    assert h.init_status == 0
    h.init_devices()
    x = np.arange(N, dtype=np.float32)
    assert np.array_equal(_run(h, "neg", [x], "float32", 4), -x)
    assert any("HWPORT_CPU_STREAM_BYTES='lots'" in m for _, m in h.logs)
