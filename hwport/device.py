"""Devices, memory and streams: hwport.device.*"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hwport.runtime import _core
from hwport.runtime._core import Event, Stream

__all__ = [
    "Event", "Stream", "current_stream", "empty_cache", "get_all_custom_device_type",
    "get_device_properties", "memory_stats", "reset_peak_memory_stats", "stream_guard",
    "synchronize",
]


def get_all_custom_device_type() -> list[str]:
    """Device types of the loaded plugins, e.g. ['cpu', 'opencl']."""
    return [p["device_type"] for p in _core.plugins()]


def get_all_places() -> list[str]:
    return [str(p) for p in _core.places()]


def memory_stats(place: Any = None) -> dict[str, int]:
    """The caching allocator's counters for `place` (and the plugin's own, prefixed device_)."""
    return _core.memory_stats(place)


def reset_peak_memory_stats(place: Any = None) -> None:
    _core.reset_peak_memory_stats(place)


def empty_cache(place: Any = None) -> None:
    """Returns every cached, unused block of `place` to the plugin."""
    _core.empty_cache(place)


def synchronize(place: Any = None) -> None:
    """Blocks until all work submitted to `place` has completed."""
    _core.synchronize(place)


def get_device_properties(place: Any = None) -> dict[str, Any]:
    return _core.device_properties(place)


def current_stream(place: Any = None) -> Stream:
    return _core.current_stream(place)


@contextmanager
def stream_guard(stream: Stream) -> Iterator[Stream]:
    """Makes `stream` the current stream of its device on this thread inside the block."""
    previous = _core.current_stream(stream.place)
    _core.set_current_stream(stream)
    try:
        yield stream
    finally:
        _core.set_current_stream(previous)
