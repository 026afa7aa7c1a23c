"""A collectives backend over threads (one thread per rank, numpy values): runs
reshard_exec.py's executor for every rank of a mesh in one process, so its calls, padding and
trimming are checked without MPI."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hwport.distributed.auto_parallel.placement import ReduceType
from hwport.distributed.auto_parallel.reshard_exec import NumpyArrays
from hwport.distributed.auto_parallel.simulate import _combine


class ThreadWorld:
    def __init__(self, size: int) -> None:
        self.size = size
        self.lock = threading.Lock()
        self.barriers: dict[tuple[int, ...], threading.Barrier] = {}
        self.board: dict[tuple[Any, ...], dict[int, Any]] = {}
        self.mail: dict[tuple[int, int, int], np.ndarray] = {}
        self.mail_cv = threading.Condition()

    def barrier(self, ranks: tuple[int, ...]) -> threading.Barrier:
        with self.lock:
            if ranks not in self.barriers:
                self.barriers[ranks] = threading.Barrier(len(ranks), timeout=20)
            return self.barriers[ranks]

    def run(self, fn: Callable[[ThreadBackend], Any], np_dtype: Any = np.float64
            ) -> dict[int, Any]:
        out: dict[int, Any] = {}
        errors: list[BaseException] = []

        def body(rank: int) -> None:
            try:
                out[rank] = fn(ThreadBackend(self, rank, np_dtype))
            except BaseException as e:  # noqa: BLE001 - reported to the test thread
                errors.append(e)
                for b in list(self.barriers.values()):
                    b.abort()

        threads = [threading.Thread(target=body, args=(r,)) for r in range(self.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        if errors:
            raise errors[0]
        return out


class ThreadBackend(NumpyArrays):
    def __init__(self, world: ThreadWorld, rank: int, np_dtype: Any) -> None:
        self.world, self._rank, self.np_dtype = world, rank, np.dtype(np_dtype)
        self.seq: dict[Any, int] = {}
        self.calls: list[str] = []

    def rank(self) -> int:
        return self._rank

    def group(self, ranks: Sequence[int]) -> tuple[int, ...]:
        return tuple(ranks)

    def tensor(self, a: np.ndarray) -> np.ndarray:
        return np.array(a)

    def numpy(self, t: np.ndarray) -> np.ndarray:
        return np.asarray(t)

    def _collective(self, group: tuple[int, ...], value: Any) -> list[Any]:
        """Every member's value, in group order."""
        n = self.seq.get(group, 0)
        self.seq[group] = n + 1
        key = (group, n)
        with self.world.lock:
            self.world.board.setdefault(key, {})[self._rank] = value
        self.world.barrier(group).wait()
        vals = [self.world.board[key][r] for r in group]
        self.world.barrier(group).wait()
        return vals

    def all_gather(self, a: np.ndarray, group: tuple[int, ...]) -> list[np.ndarray]:
        self.calls.append("all_gather")
        vals = self._collective(group, a)
        assert len({v.shape for v in vals}) == 1, "all_gather needs equal shapes"
        return vals

    def all_reduce(self, a: np.ndarray, rt: ReduceType, group: tuple[int, ...]) -> np.ndarray:
        self.calls.append("all_reduce")
        return _combine(rt, self._collective(group, a))

    def reduce_scatter(self, parts: list[np.ndarray], rt: ReduceType,
                       group: tuple[int, ...]) -> np.ndarray:
        self.calls.append("reduce_scatter")
        assert len({p.shape for p in parts}) == 1
        vals = self._collective(group, parts)
        me = group.index(self._rank)
        return _combine(rt, [v[me] for v in vals])

    def alltoall(self, parts: list[np.ndarray], group: tuple[int, ...]) -> list[np.ndarray]:
        self.calls.append("alltoall")
        assert len({p.shape for p in parts}) == 1
        vals = self._collective(group, parts)
        me = group.index(self._rank)
        return [v[me] for v in vals]

    def exchange(self, sends: list[tuple[int, np.ndarray]],
                 recvs: list[tuple[int, tuple[int, ...], Any]],
                 order: list[tuple[str, int]] | None = None) -> list[np.ndarray]:
        self.calls.append("send_recv")
        w = self.world
        with w.mail_cv:
            for d, a in sends:
                n = self.seq.get(("p2p", d), 0)
                self.seq[("p2p", d)] = n + 1
                w.mail[(self._rank, d, n)] = np.array(a)
            w.mail_cv.notify_all()
        out = []
        for s, shape, dt in recvs:
            n = self.seq.get(("p2p-in", s), 0)
            self.seq[("p2p-in", s)] = n + 1
            with w.mail_cv:
                ok = w.mail_cv.wait_for(lambda s=s, n=n: (s, self._rank, n) in w.mail, 20)
                assert ok, f"rank {self._rank}: no message from {s}"
                got = w.mail.pop((s, self._rank, n))
            assert got.shape == tuple(shape) and got.dtype == dt, (got.shape, shape, got.dtype)
            out.append(got)
        return out
