"""What the stream suite's cases and the implicit-ordering cases (ordering.py) share: the
Streams context, the NOT_SUPPORTED gate, and the chain of overlapping stream-ordered writes
whose result depends on their order."""

from __future__ import annotations

import numpy as np

from ..model import NotSupported
from .memory import Buffers, _read

CHAIN_BYTES = 1 << 20


class Streams(Buffers):
    """Buffers, streams and events released on exit (streams first: destroying one waits for
    its work, which may still use the buffers)."""

    def __init__(self, h, device: int = 0):
        _needs(h)
        super().__init__(h, device)
        self.streams: list = []
        self.events: list = []
        self.keep: list = []  # host memory that enqueued copies use

    def stream(self):
        s = self.h.create_stream(self.device)
        self.streams.append(s)
        return s

    def event(self):
        e = self.h.create_event(self.device)
        self.events.append(e)
        return e

    def host(self, arr: np.ndarray) -> np.ndarray:
        self.keep.append(arr)
        return arr

    def __exit__(self, *exc) -> None:
        for s in self.streams:
            self.h.streams.destroy_stream(self.device, s)
        destroy_event = self.h.optional("stream", "destroy_event")
        for e in self.events:
            if destroy_event is not None:
                destroy_event(self.device, e)
        self.streams.clear()
        self.events.clear()
        super().__exit__(*exc)
        self.keep.clear()


def _needs(h, *names: str) -> None:
    """NOT_SUPPORTED unless the plugin has a stream table and the named optional functions."""
    if h.streams is None:
        raise NotSupported("the plugin has no stream table (the host uses one implicit "
                           "in-order stream per device)")
    for name in names:
        table = "memory" if name.startswith(("copy_", "memset")) else "stream"
        h.require(table, name)


def _chain(h, st: Streams, s, buf, rng: np.random.Generator, nbytes: int,
           ops: int = 48, base: int = 0) -> np.ndarray:
    """Enqueues `ops` overlapping writes to bytes [base, base + nbytes) of `buf` (zeros
    before) on stream `s` (memsets of a shrinking prefix, host copies, copies within the
    range), whichever the plugin has; returns the content they leave there, as numpy computes
    it. Any reordering changes the result."""
    kinds = [k for k in ("memset_async", "copy_h2d_async", "copy_d2d_async")
             if h.optional("memory", k) is not None]
    if not {"memset_async", "copy_h2d_async"} & set(kinds):
        raise NotSupported("the plugin has neither memset_async nor copy_h2d_async")
    model = np.zeros(nbytes, np.uint8)
    step = nbytes // (ops + 1)
    for i in range(ops):
        kind = kinds[i % len(kinds)]
        if kind == "memset_async":
            n = nbytes - i * step
            h.memset(buf, i + 1, n, base, s, st.device)
            model[:n] = i + 1
        elif kind == "copy_h2d_async":
            off, n = (i * step) // 2, step * 3 + 1
            chunk = st.host(rng.integers(0, 256, n, dtype=np.uint8))
            h.h2d_async(buf, chunk, base + off, s, st.device)
            model[off:off + n] = chunk
        else:  # copy a late window over an early one: depends on both having been written
            n = step * 2
            src, dst = nbytes - n - i, i * 7
            h.d2d_async(buf, buf, n, base + dst, base + src, s, st.device)
            model[dst:dst + n] = model[src:src + n].copy()
    return model


def _read_back(h, st: Streams, s, buf, nbytes: int) -> np.ndarray:
    """The buffer's content as seen in order on stream `s` (d2h_async when there is one)."""
    if h.optional("memory", "copy_d2h_async") is not None:
        out = st.host(np.zeros(nbytes, np.uint8))
        h.d2h_async(out, buf, 0, s, st.device)
        h.sync_stream(s, st.device)
        return out
    h.sync_stream(s, st.device)
    return _read(h, buf, nbytes)
