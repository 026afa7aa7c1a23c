"""Streams and events on custom:cpu, whose streams are real worker threads."""

from __future__ import annotations

import numpy as np

import hwport
from hwport.device import Event, Stream, stream_guard

N = 1 << 21  # large enough to run on the stream's worker thread, not inline


def test_two_streams_ordered_by_an_event_are_always_correct():
    rng = np.random.default_rng(0)
    xa = rng.standard_normal(N).astype(np.float32)
    xb = rng.standard_normal(N).astype(np.float32)
    a, b = hwport.to_tensor(xa), hwport.to_tensor(xb)
    want = (xa + xb) * xa
    producer, consumer = Stream(), Stream()
    for _ in range(30):
        with stream_guard(producer):
            c = a + b
        done = producer.record_event()
        consumer.wait_event(done)
        with stream_guard(consumer):
            d = c * a
        del c  # freed while the consumer may still read it: reuse must wait for it
        with stream_guard(producer):
            scratch = a * b  # would overwrite c's memory if reuse ignored the consumer
        consumer.synchronize()
        np.testing.assert_array_equal(d.numpy(), want)
        del scratch


def test_query_and_synchronize():
    s = Stream()
    x = hwport.to_tensor(np.ones(N, np.float32))
    with stream_guard(s):
        y = x
        for _ in range(20):
            y = y + x
    s.synchronize()
    assert s.query() is True
    np.testing.assert_array_equal(y.numpy()[:3], [21.0, 21.0, 21.0])


def test_event_record_synchronize_query():
    s = Stream()
    e = Event()
    x = hwport.to_tensor(np.ones(N, np.float32))
    with stream_guard(s):
        y = x * x
    e.record(s)
    e.synchronize()
    assert e.query() is True
    np.testing.assert_array_equal(y.numpy()[-2:], [1.0, 1.0])


def test_stream_guard_restores_the_previous_stream():
    default = hwport.device.current_stream()
    s = Stream()
    with stream_guard(s):
        assert hwport.device.current_stream() == s
    assert hwport.device.current_stream() == default


def test_event_on_another_device_is_rejected():
    s = Stream("custom:cpu:0")
    e = Event("custom:cpu:1")
    try:
        s.wait_event(e)
    except ValueError as exc:
        assert "custom:cpu:0" in str(exc) and "custom:cpu:1" in str(exc)
    else:
        raise AssertionError("no error")
