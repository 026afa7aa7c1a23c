"""One rank of hwcheck's ccl suite: `mpirun -n N python -m hwport.conformance.ccl_worker
CASES.json OUT_DIR` (started by suites/ccl.py, never by hand).

Every rank loads the plugin as the runtime does (HWPORT_PLUGIN_PATH), starts the MPI adapter
(the bootstrap: rank, size, unique-id broadcast), takes device `local rank % device count` and
creates its communicator through the runtime (`_core.ccl_comm_init`: the plugin's own CCL
table when it has one, else the MPI adapter for that device). Then it runs the cases in order,
all ranks in step (a bootstrap barrier before each), and appends one JSON line per case to
OUT_DIR/rank<R>.jsonl: {"i", "status", "message", "details", "duration_s"}. The parent merges
the ranks' lines of a case into its result; a case some rank never finished is the one that
crashed or hung.

The checks that need the table itself (groups, a dtype code no tensor can have) call the
plugin's table directly through cffi (direct_host.DirectHost on a private copy of the plugin)
and are NOT_SUPPORTED when the MPI adapter serves the plugin: the host's adapter is not what
is being certified.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from .ccl_cases import (
    BUSBW_FACTOR,
    OP_CODES,
    compare,
    make_input,
    reduce_expected,
    sentinel,
)
from .model import CheckFailed, NotSupported


class Ctx:
    """This rank's view: the world, its place, the communicator (after ccl::comm_init)."""

    def __init__(self) -> None:
        from hwport.distributed.env import adapter_path
        from hwport.runtime import _core

        self.core = _core
        _core.ccl_load_adapter("mpi", str(adapter_path("mpi")))
        self.rank, self.n = _core.ccl_world()
        self.device_type = os.environ["HWPORT_CCL_DEVICE_TYPE"]
        rec = next((p for p in _core.plugins() if p["device_type"] == self.device_type), None)
        if rec is None:
            raise RuntimeError(f"no loaded plugin has device type {self.device_type!r}")
        self.plugin_path = rec["path"]
        local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", self.rank))
        self.place = f"custom:{self.device_type}:{local % max(1, rec['device_count'])}"
        self.backend = _core.ccl_backend(self.place)
        self.own_table = self.backend == self.device_type
        self.comm: Any = None
        self.comm_error = ""
        self._raw: Any = None

    # ---- bootstrap helpers (the MPI adapter's world, not the table under test) ----------
    def barrier(self) -> None:
        self.core.ccl_world_broadcast(b"b", 0)

    def max_over_ranks(self, value: float) -> float:
        out = value
        for r in range(self.n):
            raw = self.core.ccl_world_broadcast(struct.pack("<d", value) if r == self.rank
                                                else b"\0" * 8, r)
            out = max(out, struct.unpack("<d", raw)[0])
        return out

    def unique_id(self, make, size: int) -> bytes:
        raw = make() if self.rank == 0 else b""
        return self.core.ccl_world_broadcast(raw.ljust(128, b"\0"), 0)[:size]

    def tensor(self, a: np.ndarray) -> Any:
        import hwport

        return hwport.to_tensor(np.ascontiguousarray(a), place=self.place)

    def require_comm(self) -> Any:
        """The communicator; made here (collectively: every rank reaches the same case) when
        -k left ccl::comm_init out."""
        if self.comm is None and not self.comm_error:
            _comm_init(self, {})
        if self.comm is None:
            raise CheckFailed(f"not checked: ccl::comm_init failed: {self.comm_error}")
        return self.comm

    def raw(self) -> RawTable:
        """The plugin's own table through cffi (created on first use, collectively)."""
        if not self.own_table:
            raise NotSupported(f"the plugin has no CCL table of its own: the host's {self.backend}"
                               f" adapter serves {self.place} (its groups and argument checks "
                               f"are the host's, tested with hwport.distributed)")
        if self._raw is None:
            self._raw = RawTable(self)
        if isinstance(self._raw, str):
            raise CheckFailed(f"not checked: the table's own communicator failed: {self._raw}")
        return self._raw


class RawTable:
    """The plugin's HWP_CclTable called directly, with a communicator of its own."""

    def __init__(self, ctx: Ctx) -> None:
        from .direct_host import NULL, OK, DirectHost, ffi, member

        self.ffi, self.NULL, self.OK = ffi, NULL, OK
        self.h = DirectHost(ctx.plugin_path)
        self.h.init_devices()
        self.device = int(ctx.place.rsplit(":", 1)[1])
        self.t = member(self.h.api, "HWP_PluginApi", "ccl")
        size = int(self.t.unique_id_size)

        def make() -> bytes:
            buf = ffi.new("unsigned char[]", size)
            self.check(self.t.get_unique_id(buf), "get_unique_id")
            return bytes(ffi.buffer(buf, size))

        ident = ctx.unique_id(make, size)
        out = ffi.new("HWP_CclComm *")
        self.check(self.t.comm_init(ctx.n, ctx.rank, ffi.from_buffer(ident), self.device, out),
                   "comm_init")
        self.comm = out[0]

    def fn(self, name: str) -> Any:
        from .direct_host import member

        return member(self.t, "HWP_CclTable", name)

    def check(self, status: int, what: str) -> None:
        if status != self.OK:
            raise CheckFailed(f"{what} failed with {self.status_name(status)}: "
                              f"{self.h.last_error()}")

    def status_name(self, status: int) -> str:
        from .direct_host import STATUS_NAMES

        return STATUS_NAMES.get(status, str(status))

    def upload(self, a: np.ndarray) -> Any:
        buf = self.h.alloc(max(a.nbytes, 1), self.device)
        if a.nbytes:
            self.h.h2d(buf, a, device=self.device)
        return buf

    def read(self, buf: Any, like: np.ndarray) -> np.ndarray:
        return self.h.read(buf, like.dtype, like.shape, device=self.device).copy()


# ---- the cases ------------------------------------------------------------------------------

def _inputs(ctx: Ctx, case: dict[str, Any], count: int, kind: str) -> list[np.ndarray]:
    return [make_input(case["params"]["dtype"], count, r, case["seed"], kind)
            for r in range(ctx.n)]


def _verify(got: np.ndarray, want: np.ndarray, tol: np.ndarray | None, what: str) -> None:
    problem = compare(got, want, tol)
    if problem is not None:
        where = (f"element {problem['first_mismatch']} of {problem['elements']}: got "
                 f"{problem['got']!r}, expected {problem['want']!r}; {problem['mismatches']} "
                 f"element(s) wrong (first {problem['first_mismatch']}, last "
                 f"{problem['last_mismatch']})") if "first_mismatch" in problem \
            else problem["problem"]
        raise CheckFailed(f"{what}: {where}", **problem)


def _collective(ctx: Ctx, case: dict[str, Any]) -> dict[str, Any]:
    """all_reduce / broadcast / reduce / all_gather / reduce_scatter / all_to_all /
    send_recv, out of place or in place, checked exactly or within tolerance."""
    comm = ctx.require_comm()
    p = case["params"]
    kind, dtype, c, inplace = p["collective"], p["dtype"], p["count"], p.get("inplace", False)
    op = p.get("op")
    n, rank = ctx.n, ctx.rank
    root = n - 1
    tol = None
    if kind == "all_reduce":
        xs = _inputs(ctx, case, c, op)
        x = ctx.tensor(xs[rank])
        out = x if inplace else ctx.tensor(sentinel(dtype, c))
        comm.all_reduce(x, out, OP_CODES[op])
        want, tol = reduce_expected(np.stack(xs), op)
    elif kind == "broadcast":
        xs = _inputs(ctx, case, c, "data")
        x = ctx.tensor(xs[rank])
        out = x if inplace else ctx.tensor(sentinel(dtype, c))
        comm.broadcast(x, out, root)
        want = xs[root]
    elif kind == "reduce":
        xs = _inputs(ctx, case, c, op)
        x = ctx.tensor(xs[rank])
        out = x if inplace else ctx.tensor(sentinel(dtype, c))
        comm.reduce(x, out, OP_CODES[op], root)
        if rank == root:
            want, tol = reduce_expected(np.stack(xs), op)
        else:  # only root's recv receives the result; the others' is untouched
            want = xs[rank] if inplace else sentinel(dtype, c)
    elif kind == "all_gather":
        xs = _inputs(ctx, case, c, "data")
        if inplace:
            host = sentinel(dtype, n * c)
            host[rank * c:(rank + 1) * c] = xs[rank]
            out = ctx.tensor(host)
            x = out[rank * c:(rank + 1) * c]
        else:
            x = ctx.tensor(xs[rank])
            out = ctx.tensor(sentinel(dtype, n * c))
        comm.all_gather(x, out)
        want = np.concatenate(xs)
    elif kind == "reduce_scatter":
        xs = _inputs(ctx, case, n * c, op)
        out = ctx.tensor(sentinel(dtype, c))
        comm.reduce_scatter(ctx.tensor(xs[rank]), out, OP_CODES[op])
        full, ftol = reduce_expected(np.stack(xs), op)
        want = full[rank * c:(rank + 1) * c]
        tol = None if ftol is None else ftol[rank * c:(rank + 1) * c]
    elif kind == "all_to_all":
        xs = _inputs(ctx, case, n * c, "data")
        out = ctx.tensor(sentinel(dtype, n * c))
        comm.all_to_all(ctx.tensor(xs[rank]), out)
        want = np.concatenate([xs[i][rank * c:(rank + 1) * c] for i in range(n)]) if c else \
            xs[0][:0]
    elif kind == "send_recv":
        if n < 2:
            raise NotSupported("send/recv needs at least 2 ranks")
        xs = _inputs(ctx, case, c, "data")
        nxt, prev = (rank + 1) % n, (rank - 1) % n
        x, out = ctx.tensor(xs[rank]), ctx.tensor(sentinel(dtype, c))
        if rank % 2 == 0:  # a ring without a deadlock: even ranks send first
            comm.send(x, nxt)
            comm.recv(out, prev)
        else:
            comm.recv(out, prev)
            comm.send(x, nxt)
        want = xs[prev]
    else:
        raise ValueError(f"unknown collective {kind!r}")
    what = f"{kind}{'/' + op if op else ''} of {c} {dtype} element(s) per rank" + \
        (" in place" if inplace else "") + (f" (root {root})" if kind in ("broadcast", "reduce")
                                           else "")
    _verify(out.numpy().reshape(-1), want, tol, what)
    return {"backend": ctx.backend}


def _ordering(ctx: Ctx, case: dict[str, Any]) -> dict[str, Any]:
    """A kernel on a created stream writes the collective's input right before it (no host
    sync), the collective runs on that stream, and a kernel after it reads its result."""
    import hwport

    comm = ctx.require_comm()
    kind = case["params"]["collective"]
    c, n, rank = case["params"]["count"], ctx.n, ctx.rank
    if kind == "send_recv" and n < 2:
        raise NotSupported("send/recv needs at least 2 ranks")
    try:
        stream = hwport.device.Stream(ctx.place)
    except Exception as e:  # noqa: BLE001 - a plugin without streams: nothing to order
        raise NotSupported(f"no created stream on {ctx.place}: {e}") from None
    xs = _inputs(ctx, {**case, "params": {**case["params"], "dtype": "float32"}}, c, "sum")
    lhs = [x - np.float32(1) for x in xs]  # on the device: lhs + 1, in float32 as numpy does
    vals = [(v + np.float32(1)).astype(np.float32) for v in lhs]
    a, one = ctx.tensor(lhs[rank]), ctx.tensor(np.ones(c, np.float32))
    zero = ctx.tensor(np.zeros(c * (n if kind == "all_gather" else 1), np.float32))
    out = ctx.tensor(sentinel("float32", c * (n if kind == "all_gather" else 1)))
    hwport.device.synchronize(ctx.place)
    with hwport.device.stream_guard(stream):
        b = a + one  # enqueued on `stream`; the collective must see it
        if kind == "all_reduce":
            comm.all_reduce(b, out, OP_CODES["sum"])
            want, tol = reduce_expected(np.stack(vals), "sum")
        elif kind == "broadcast":
            comm.broadcast(b, out, n - 1)
            want, tol = vals[n - 1], None
        elif kind == "all_gather":
            comm.all_gather(b, out)
            want, tol = np.concatenate(vals), None
        else:
            nxt, prev = (rank + 1) % n, (rank - 1) % n
            if rank % 2 == 0:
                comm.send(b, nxt)
                comm.recv(out, prev)
            else:
                comm.recv(out, prev)
                comm.send(b, nxt)
            want, tol = vals[prev], None
        result = out + zero  # enqueued after the collective; must see its result
    _verify(result.numpy().reshape(-1), want, tol,
            f"{kind} on a created stream, its input written by a kernel just before it and its "
            f"output read by one just after (no host synchronization)")
    return {"backend": ctx.backend}


def _usable_after(ctx: Ctx, what: str) -> None:
    """After an error status the communicator still works: a small all_reduce."""
    comm = ctx.require_comm()
    x = ctx.tensor(np.full(5, ctx.rank + 1, np.int32))
    out = ctx.tensor(np.zeros(5, np.int32))
    try:
        comm.all_reduce(x, out, OP_CODES["sum"])
        got = out.numpy()
    except Exception as e:  # noqa: BLE001
        raise CheckFailed(f"after {what}, an all_reduce on the same communicator failed: "
                          f"{type(e).__name__}: {e}") from None
    want = ctx.n * (ctx.n + 1) // 2
    if not np.all(got == want):
        raise CheckFailed(f"after {what}, an all_reduce on the same communicator gave "
                          f"{got.tolist()}, expected {want} everywhere")


def _expect_error(ctx: Ctx, what: str, call) -> dict[str, Any]:
    try:
        call()
    except Exception as e:  # noqa: BLE001 - any clean error status is right
        message = f"{type(e).__name__}: {e}"
    else:
        raise CheckFailed(f"{what} returned HWP_OK (expected an error status)")
    _usable_after(ctx, what)
    return {"error": message}


def _raw_expect_error(ctx: Ctx, what: str, call) -> dict[str, Any]:
    """A plugin's own table called directly (the host checks roots and peers itself before
    they reach a table, so only a direct call tests the table's own checks)."""
    raw = ctx.raw()
    buf = raw.upload(np.zeros(8, np.float32))
    try:
        status = call(raw, buf)
    finally:
        raw.h.free(buf, raw.device)
    if status == raw.OK:
        raise CheckFailed(f"{what} returned HWP_OK (expected an error status)")
    _usable_after(ctx, what)
    return {"status": raw.status_name(status), "error": raw.h.last_error()}


def _errors(ctx: Ctx, case: dict[str, Any]) -> dict[str, Any]:
    comm = ctx.require_comm()
    check = case["params"]["check"]
    n = ctx.n
    x = ctx.tensor(np.arange(7, dtype=np.float32))
    out = ctx.tensor(np.zeros(7, np.float32))
    f32 = 8  # HWP_DTYPE_FLOAT32
    if check == "broadcast_bad_root" and ctx.own_table:
        d = _raw_expect_error(ctx, f"broadcast with root {n} (of {n} ranks)",
                              lambda raw, b: raw.t.broadcast(b, 0, b, 0, 7, f32, n, raw.comm,
                                                             raw.NULL))
        d.update(_raw_expect_error(ctx, "broadcast with root -1",
                                   lambda raw, b: raw.t.broadcast(b, 0, b, 0, 7, f32, -1,
                                                                  raw.comm, raw.NULL)))
        return d
    if check == "send_bad_peer" and ctx.own_table:
        return _raw_expect_error(ctx, f"send to peer {n} (of {n} ranks)",
                                 lambda raw, b: raw.t.send(b, 0, 7, f32, n, raw.comm, raw.NULL))
    if check == "broadcast_bad_root":
        d = _expect_error(ctx, f"broadcast with root {n} (of {n} ranks)",
                          lambda: comm.broadcast(x, out, n))
        d.update(_expect_error(ctx, "broadcast with root -1", lambda: comm.broadcast(x, out, -1)))
        return d
    if check == "reduce_bad_root":
        if ctx.own_table and ctx.raw().fn("reduce") is None:
            raise NotSupported("the table's reduce is NULL: the host's fallback (all_reduce, "
                               "then root keeps the result) serves it")
        if ctx.own_table:
            return _raw_expect_error(ctx, f"reduce with root {n} (of {n} ranks)",
                                     lambda raw, b: raw.t.reduce(b, 0, b, 0, 7, f32, 0, n,
                                                                 raw.comm, raw.NULL))
        return _expect_error(ctx, f"reduce with root {n} (of {n} ranks)",
                             lambda: comm.reduce(x, out, OP_CODES["sum"], n))
    if check == "send_bad_peer":
        return _expect_error(ctx, f"send to peer {n} (of {n} ranks)", lambda: comm.send(x, n))
    if check == "all_reduce_bad_op":
        return _expect_error(ctx, f"all_reduce with reduction code {len(OP_CODES)}",
                             lambda: comm.all_reduce(x, out, len(OP_CODES)))
    if check == "all_reduce_bool_avg":
        b = ctx.tensor(np.ones(7, bool))
        bo = ctx.tensor(np.zeros(7, bool))
        return _expect_error(ctx, "all_reduce AVG of bool (ccl.h: not supported)",
                             lambda: comm.all_reduce(b, bo, OP_CODES["avg"]))
    if check == "bad_dtype":
        raw = ctx.raw()
        code = 10 + 7  # past HWP_DTYPE_COUNT
        buf = raw.upload(np.zeros(8, np.uint8))
        status = raw.t.all_reduce(buf, 0, buf, 0, 1, code, 0, raw.comm, raw.NULL)
        if status == raw.OK:
            raise CheckFailed(f"all_reduce with dtype code {code} returned HWP_OK (expected "
                              f"HWP_ERROR_INVALID_ARGUMENT or HWP_ERROR_NOT_SUPPORTED)")
        _usable_after(ctx, f"all_reduce with dtype code {code}")
        return {"status": raw.status_name(status), "error": raw.h.last_error()}
    raise ValueError(f"unknown error check {check!r}")


def _group(ctx: Ctx, case: dict[str, Any]) -> dict[str, Any]:
    """group_start; send to the next rank and receive from the previous one, in an order that
    deadlocks without the group (every rank posts its blocking-size send first); group_end."""
    raw = ctx.raw()
    c, n, rank = case["params"]["count"], ctx.n, ctx.rank
    if n < 2:
        raise NotSupported("send/recv needs at least 2 ranks")
    xs = _inputs(ctx, {**case, "params": {**case["params"], "dtype": "float32"}}, c, "data")
    send, recv = raw.upload(xs[rank]), raw.upload(sentinel("float32", c))
    nxt, prev = (rank + 1) % n, (rank - 1) % n
    dt = 8  # HWP_DTYPE_FLOAT32
    raw.check(raw.t.group_start(), "group_start")
    first = raw.t.send(send, 0, c, dt, nxt, raw.comm, raw.NULL)
    second = raw.t.recv(recv, 0, c, dt, prev, raw.comm, raw.NULL)
    end = raw.t.group_end()
    raw.check(first, "send (in a group)")
    raw.check(second, "recv (in a group)")
    raw.check(end, "group_end")
    raw.h.sync_device(raw.device)
    got = raw.read(recv, sentinel("float32", c))
    for b in (send, recv):
        raw.h.free(b, raw.device)
    _verify(got, xs[prev], None, f"grouped send/recv of {c} float32 element(s) around the ring")
    return {}


def _busbw(ctx: Ctx, case: dict[str, Any]) -> dict[str, Any]:
    """nccl-tests' algbw and busbw per size, float32: size S is all_reduce's / broadcast's
    buffer, all_gather's output, reduce_scatter's input, all_to_all's send buffer; time is
    the slowest rank's mean per iteration."""
    import hwport

    comm = ctx.require_comm()
    kind = case["params"]["collective"]
    n = ctx.n
    rows = []
    for size in case["params"]["bytes"]:
        per = size // 4 if kind in ("all_reduce", "broadcast") else size // (4 * n)
        if per < 1:
            continue
        big = per * (1 if kind in ("all_reduce", "broadcast") else n)
        x = ctx.tensor(np.ones(big if kind in ("reduce_scatter", "all_to_all") else per,
                               np.float32))
        out = ctx.tensor(np.zeros(big if kind in ("all_gather", "all_to_all") else per,
                                  np.float32))

        def once(x: Any = x, out: Any = out) -> None:
            if kind == "all_reduce":
                comm.all_reduce(x, out, OP_CODES["sum"])
            elif kind == "broadcast":
                comm.broadcast(x, out, 0)
            elif kind == "all_gather":
                comm.all_gather(x, out)
            elif kind == "reduce_scatter":
                comm.reduce_scatter(x, out, OP_CODES["sum"])
            else:
                comm.all_to_all(x, out)

        iters = 20 if size <= (1 << 20) else 10 if size <= (4 << 20) else 3
        once()
        hwport.device.synchronize(ctx.place)
        ctx.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            once()
        hwport.device.synchronize(ctx.place)
        t = ctx.max_over_ranks((time.perf_counter() - t0) / iters)
        got = out.numpy().reshape(-1)
        want = float(n) if kind in ("all_reduce", "reduce_scatter") else 1.0
        _verify(got, np.full(got.size, want, np.float32), None,
                f"{kind} of {size} bytes (float32 ones), timed")
        algbw = size / t / 1e9
        rows.append({"bytes": size, "count": per, "iters": iters, "time_us": round(t * 1e6, 2),
                     "algbw_GBps": round(algbw, 4),
                     "busbw_GBps": round(algbw * BUSBW_FACTOR[kind](n), 4)})
    return {"collective": kind, "ranks": n, "dtype": "float32", "backend": ctx.backend,
            "rows": rows}


def _comm_init(ctx: Ctx, case: dict[str, Any]) -> dict[str, Any]:
    try:
        size = ctx.core.ccl_unique_id_size(ctx.place)
        ident = ctx.unique_id(lambda: ctx.core.ccl_unique_id(ctx.place), size)
        ctx.comm = ctx.core.ccl_comm_init(ctx.place, ctx.n, ctx.rank, ident)
    except Exception as e:  # noqa: BLE001
        ctx.comm_error = f"{type(e).__name__}: {e}"
        raise CheckFailed(f"creating the communicator on {ctx.place} ({ctx.backend} backend) "
                          f"failed: {ctx.comm_error}") from None
    return {"backend": ctx.backend, "own_table": ctx.own_table, "place": ctx.place,
            "ranks": ctx.n, "unique_id_size": size}


RUNNERS = {"comm_init": _comm_init, "collective": _collective, "ordering": _ordering,
           "error": _errors, "group": _group, "busbw": _busbw}


def run_one(ctx: Ctx, case: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        details = RUNNERS[case["params"]["run"]](ctx, case) or {}
        rec = {"status": "PASS", "message": "", "details": details}
    except CheckFailed as e:
        rec = {"status": "FAIL", "message": str(e), "details": dict(e.details)}
    except NotSupported as e:
        rec = {"status": "NOT_SUPPORTED", "message": str(e), "details": {}}
    except Exception as e:  # noqa: BLE001 - an error status of the table, as an exception
        kind = type(e).__name__
        if kind == "NotSupportedError" or "HWP_ERROR_NOT_SUPPORTED" in str(e):
            rec = {"status": "NOT_SUPPORTED", "message": f"{kind}: {e}", "details": {}}
        elif case["params"]["run"] in ("collective", "ordering", "busbw", "group"):
            rec = {"status": "FAIL", "message": f"{kind}: {e}", "details": {}}
        else:
            rec = {"status": "ERROR", "message": f"hwcheck error: {kind}: {e}",
                   "details": {"traceback": traceback.format_exc()[-3000:]}}
    rec["duration_s"] = round(time.perf_counter() - t0, 6)
    return rec


def _json_safe(obj: Any) -> Any:
    from .worker import _json_safe as safe

    return safe(obj)


def main(argv: list[str]) -> int:
    cases = json.loads(Path(argv[0]).read_text())
    out_dir = Path(argv[1])
    ctx = Ctx()
    log = open(out_dir / f"rank{ctx.rank}.jsonl", "a", encoding="utf-8")
    log.write(json.dumps({"ready": True, "rank": ctx.rank, "ranks": ctx.n, "place": ctx.place,
                          "backend": ctx.backend, "pid": os.getpid()}) + "\n")
    log.flush()
    for i, case in enumerate(cases):
        ctx.barrier()
        rec = run_one(ctx, case)
        log.write(json.dumps(_json_safe({"i": i, **rec})) + "\n")
        log.flush()
    ctx.barrier()
    log.close()
    return 0


if __name__ == "__main__":
    sys.stdout = sys.stderr
    raise SystemExit(main(sys.argv[1:]))
