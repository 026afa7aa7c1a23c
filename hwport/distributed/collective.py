"""Collectives with Paddle's signatures, over the group's communicator on the tensor's device.

Each call is ordered on the device's current stream; with ``sync_op=False`` it returns a task
whose ``wait()`` returns once the result is usable. Send and receive run in a helper thread
when asked not to block (``isend``/``irecv``, ``sync_op=False``), so a rank can post both sides
of an exchange before waiting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from hwport.distributed import env
from hwport.distributed.group import Group, resolve
from hwport.runtime import _core


class ReduceOp:
    """Paddle's reduction codes."""

    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3
    AVG = 4


# Paddle's codes -> the CCL table's (HWP_CCL_SUM, PROD, MAX, MIN, AVG).
_ABI_OP = {ReduceOp.SUM: 0, ReduceOp.MAX: 2, ReduceOp.MIN: 3, ReduceOp.PROD: 1, ReduceOp.AVG: 4}
_OP_NAMES = {0: "SUM", 1: "MAX", 2: "MIN", 3: "PROD", 4: "AVG"}


class Task:
    """What a collective returns with ``sync_op=False``."""

    def __init__(self, thread: threading.Thread | None = None,
                 errors: list[BaseException] | None = None) -> None:
        self._thread = thread
        self._errors = errors if errors is not None else []

    def wait(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return False
        if self._errors:
            raise self._errors[0]
        return True

    def is_completed(self) -> bool:
        return self._thread is None or not self._thread.is_alive()


def _task(sync_op: bool) -> Task | None:
    return None if sync_op else Task()


def _in_background(fn: Callable[[], None]) -> Task:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as error:  # noqa: BLE001 (handed to wait())
            errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return Task(thread, errors)


def _abi_op(op: Any, what: str) -> int:
    code = int(op)
    if code not in _ABI_OP:
        raise ValueError(
            f"hwport.distributed.{what}: op must be one of ReduceOp.SUM, MAX, MIN, PROD, AVG, "
            f"got {op!r}"
        )
    return _ABI_OP[code]


def _check_tensor(tensor: Any, what: str, arg: str = "tensor") -> None:
    import hwport

    if not isinstance(tensor, hwport.Tensor):
        raise TypeError(
            f"hwport.distributed.{what}: {arg} must be a hwport Tensor, got "
            f"{type(tensor).__name__}"
        )


def _contiguous(tensor: Any) -> Any:
    return tensor if tensor.is_contiguous() else tensor.contiguous()


def _write_back(tensor: Any, result: Any) -> None:
    """Writes ``result`` into ``tensor`` when the collective ran on a copy."""
    if result is not tensor:
        tensor.set_value(result)


def _group_rank(group: Group, rank: int, what: str, arg: str) -> int:
    local = group.get_group_rank(int(rank))
    if local < 0:
        raise ValueError(
            f"hwport.distributed.{what}: {arg}={rank} is not a rank of {group!r}"
        )
    return local


def _recorded(call: str, comm: Any, src: Any, dst: Any, rebind: bool = True,
              **attrs: int) -> None:
    """Inside a jit.to_static capture, the collective just run becomes a dist.<call> op of the
    program (reading src, its result what dst holds now)."""
    from hwport.jit.capture import active_recorder

    rec = active_recorder()
    if rec is not None:
        rec.on_collective(call, comm, attrs, src, dst, rebind)


def _not_in_capture(what: str) -> None:
    """Background sends and receives cannot join a program (it runs its collectives in order
    on one stream, so an exchange that relied on their overlap would deadlock)."""
    from hwport.jit.capture import active_recorder

    rec = active_recorder()
    if rec is not None:
        rec.fail(f"hwport.distributed.{what} inside jit.to_static: a program runs its "
                 "collectives in order; use the blocking send / recv in an order that pairs "
                 "them, or call it outside the function")


def _comm(group: Group | None, tensor: Any, what: str) -> tuple[Group, Any]:
    g = resolve(group)
    return g, g._comm(str(tensor.place), what)


def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Group | None = None,
               sync_op: bool = True) -> Task | None:
    """Reduces ``tensor`` over the group's ranks, in place on every rank."""
    _check_tensor(tensor, "all_reduce")
    code = _abi_op(op, "all_reduce")
    _, comm = _comm(group, tensor, "all_reduce")
    work = _contiguous(tensor)
    comm.all_reduce(work, work, code)
    _recorded("all_reduce", comm, work, work, reduce_op=code)
    _write_back(tensor, work)
    return _task(sync_op)


def broadcast(tensor: Any, src: int, group: Group | None = None,
              sync_op: bool = True) -> Task | None:
    """Global rank ``src``'s ``tensor`` replaces every rank's."""
    _check_tensor(tensor, "broadcast")
    g, comm = _comm(group, tensor, "broadcast")
    root = _group_rank(g, src, "broadcast", "src")
    work = _contiguous(tensor)
    comm.broadcast(work, work, root)
    _recorded("broadcast", comm, work, work, root=root)
    _write_back(tensor, work)
    return _task(sync_op)


def reduce(tensor: Any, dst: int, op: Any = ReduceOp.SUM, group: Group | None = None,
           sync_op: bool = True) -> Task | None:
    """Reduces ``tensor`` over the group into global rank ``dst``'s (others keep theirs)."""
    _check_tensor(tensor, "reduce")
    code = _abi_op(op, "reduce")
    g, comm = _comm(group, tensor, "reduce")
    root = _group_rank(g, dst, "reduce", "dst")
    work = _contiguous(tensor)
    comm.reduce(work, work, code, root)
    _recorded("reduce", comm, work, work, g.rank == root, reduce_op=code, root=root)
    if g.rank == root:
        _write_back(tensor, work)
    return _task(sync_op)


def _stacked(tensors: Sequence[Any], what: str, arg: str, like: Any) -> Any:
    import hwport

    if not tensors:
        raise ValueError(f"hwport.distributed.{what}: {arg} is empty")
    for i, t in enumerate(tensors):
        _check_tensor(t, what, f"{arg}[{i}]")
        if list(t.shape) != list(like.shape) or t.dtype != like.dtype:
            raise ValueError(
                f"hwport.distributed.{what}: {arg}[{i}] has shape {list(t.shape)} and dtype "
                f"{t.dtype}; every entry must match {list(like.shape)} {like.dtype}"
            )
    return _contiguous(hwport.stack(list(tensors), axis=0))


def _unstack_into(out: Any, tensor_list: list[Any], n: int) -> None:
    parts = [out[i] for i in range(n)]
    if tensor_list:
        if len(tensor_list) != n:
            raise ValueError(
                f"hwport.distributed: the output list has {len(tensor_list)} tensors, the group "
                f"{n} ranks"
            )
        for dst, src in zip(tensor_list, parts, strict=True):
            dst.set_value(src)
    else:
        tensor_list.extend(parts)


def all_gather(tensor_list: list[Any], tensor: Any, group: Group | None = None,
               sync_op: bool = True) -> Task | None:
    """Every rank's ``tensor``, in rank order, into ``tensor_list`` (filled when empty)."""
    import hwport

    _check_tensor(tensor, "all_gather")
    g, comm = _comm(group, tensor, "all_gather")
    src = _contiguous(tensor)
    out = hwport.zeros([g.nranks, *tensor.shape], dtype=tensor.dtype, place=tensor.place)
    comm.all_gather(src, out)
    _recorded("all_gather", comm, src, out)
    _unstack_into(out, tensor_list, g.nranks)
    return _task(sync_op)


def reduce_scatter(tensor: Any, tensor_list: Sequence[Any], op: Any = ReduceOp.SUM,
                   group: Group | None = None, sync_op: bool = True) -> Task | None:
    """Rank r's ``tensor`` becomes the reduction over ranks of their ``tensor_list[r]``."""
    _check_tensor(tensor, "reduce_scatter")
    code = _abi_op(op, "reduce_scatter")
    g, comm = _comm(group, tensor, "reduce_scatter")
    if len(tensor_list) != g.nranks:
        raise ValueError(
            f"hwport.distributed.reduce_scatter: tensor_list has {len(tensor_list)} tensors, "
            f"the group {g.nranks} ranks"
        )
    src = _stacked(tensor_list, "reduce_scatter", "tensor_list", tensor)
    work = _contiguous(tensor)
    comm.reduce_scatter(src, work, code)
    _recorded("reduce_scatter", comm, src, work, reduce_op=code)
    _write_back(tensor, work)
    return _task(sync_op)


def alltoall(out_tensor_list: list[Any], in_tensor_list: Sequence[Any],
             group: Group | None = None, sync_op: bool = True) -> Task | None:
    """``in_tensor_list[j]`` of rank i becomes ``out_tensor_list[i]`` of rank j."""
    import hwport

    g = resolve(group)
    if len(in_tensor_list) != g.nranks:
        raise ValueError(
            f"hwport.distributed.alltoall: in_tensor_list has {len(in_tensor_list)} tensors, "
            f"the group {g.nranks} ranks"
        )
    first = in_tensor_list[0]
    _check_tensor(first, "alltoall", "in_tensor_list[0]")
    _, comm = _comm(g, first, "alltoall")
    src = _stacked(in_tensor_list, "alltoall", "in_tensor_list", first)
    out = hwport.zeros(list(src.shape), dtype=first.dtype, place=first.place)
    comm.all_to_all(src, out)
    _recorded("all_to_all", comm, src, out)
    _unstack_into(out, out_tensor_list, g.nranks)
    return _task(sync_op)


def alltoall_single(out_tensor: Any, in_tensor: Any, in_split_sizes: list[int] | None = None,
                    out_split_sizes: list[int] | None = None, group: Group | None = None,
                    sync_op: bool = True) -> Task | None:
    """All-to-all of equal blocks along axis 0 of ``in_tensor`` into ``out_tensor``."""
    _check_tensor(in_tensor, "alltoall_single", "in_tensor")
    _check_tensor(out_tensor, "alltoall_single", "out_tensor")
    _, comm = _comm(group, in_tensor, "alltoall_single")
    splits = (("in_split_sizes", in_split_sizes), ("out_split_sizes", out_split_sizes))
    for name, sizes in splits:
        if sizes and len(set(sizes)) > 1:
            raise NotImplementedError(
                f"hwport.distributed.alltoall_single: unequal {name} {sizes} are not supported"
            )
    work, src = _contiguous(out_tensor), _contiguous(in_tensor)
    comm.all_to_all(src, work)
    _recorded("all_to_all", comm, src, work)
    _write_back(out_tensor, work)
    return _task(sync_op)


def send(tensor: Any, dst: int = 0, group: Group | None = None,
         sync_op: bool = True) -> Task | None:
    """Sends ``tensor`` to global rank ``dst``."""
    _check_tensor(tensor, "send")
    g, comm = _comm(group, tensor, "send")
    peer = _group_rank(g, dst, "send", "dst")
    work = _contiguous(tensor)
    if sync_op:
        comm.send(work, peer)
        _recorded("send", comm, work, None, peer=peer)
        return None
    _not_in_capture("isend")
    return _in_background(lambda: comm.send(work, peer))


def recv(tensor: Any, src: int = 0, group: Group | None = None,
         sync_op: bool = True) -> Task | None:
    """Receives into ``tensor`` from global rank ``src``."""
    _check_tensor(tensor, "recv")
    g, comm = _comm(group, tensor, "recv")
    peer = _group_rank(g, src, "recv", "src")
    work = _contiguous(tensor)

    def run() -> None:
        comm.recv(work, peer)
        _write_back(tensor, work)

    if sync_op:
        comm.recv(work, peer)
        _recorded("recv", comm, None, work, peer=peer)
        _write_back(tensor, work)
        return None
    _not_in_capture("irecv")
    return _in_background(run)


def isend(tensor: Any, dst: int, group: Group | None = None) -> Task:
    """Non-blocking send: the returned task's ``wait()`` ends it."""
    task = send(tensor, dst, group, sync_op=False)
    assert task is not None
    return task


def irecv(tensor: Any, src: int | None = None, group: Group | None = None) -> Task:
    """Non-blocking receive into ``tensor``."""
    if src is None:
        raise NotImplementedError(
            "hwport.distributed.irecv: src=None (any source) is not supported"
        )
    task = recv(tensor, src, group, sync_op=False)
    assert task is not None
    return task


class P2POp:
    """One send or receive of ``batch_isend_irecv`` (``op`` is ``isend`` or ``irecv``)."""

    def __init__(self, op: Callable[..., Any], tensor: Any, peer: int,
                 group: Group | None = None) -> None:
        if op not in (isend, irecv):
            raise ValueError(
                "hwport.distributed.P2POp: op must be hwport.distributed.isend or irecv, got "
                f"{op!r}"
            )
        _check_tensor(tensor, "P2POp")
        self.op, self.tensor, self.peer, self.group = op, tensor, int(peer), group


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Task]:
    """Issues every send and receive of the list together (the CCL table's group), so pairs in
    any order cannot deadlock; returns one completed task per op."""
    if not p2p_op_list:
        return []
    for i, p in enumerate(p2p_op_list):
        if not isinstance(p, P2POp):
            raise TypeError(
                f"hwport.distributed.batch_isend_irecv: p2p_op_list[{i}] is not a P2POp"
            )
    _not_in_capture("batch_isend_irecv")
    place = str(p2p_op_list[0].tensor.place)
    posted = []
    for p in p2p_op_list:
        g = resolve(p.group)
        comm = g._comm(str(p.tensor.place), "batch_isend_irecv")
        peer = _group_rank(g, p.peer, "batch_isend_irecv", "peer")
        posted.append((p, comm, peer, _contiguous(p.tensor)))
    _core.ccl_group_start(place)
    try:
        for p, comm, peer, work in posted:
            (comm.send if p.op is isend else comm.recv)(work, peer)
    finally:
        _core.ccl_group_end(place)
    for p, _, _, work in posted:
        if p.op is irecv:
            _write_back(p.tensor, work)
    return [Task() for _ in posted]


def barrier(group: Group | None = None) -> None:
    """Returns once every rank of the group has called it."""
    import hwport

    g = resolve(group)
    token = hwport.zeros([1], dtype="int32", place=env._State.place)
    g._comm(env._State.place, "barrier").all_reduce(token, token, 0)


def scatter(tensor: Any, tensor_list: Sequence[Any] | None = None, src: int = 0,
            group: Group | None = None, sync_op: bool = True) -> Task | None:
    """Rank r's ``tensor`` becomes global rank ``src``'s ``tensor_list[r]``."""
    _check_tensor(tensor, "scatter")
    g, comm = _comm(group, tensor, "scatter")
    root = _group_rank(g, src, "scatter", "src")
    import hwport

    if g.rank == root:
        if tensor_list is None or len(tensor_list) != g.nranks:
            raise ValueError(
                f"hwport.distributed.scatter: the source needs tensor_list with {g.nranks} "
                "tensors"
            )
        full = _stacked(tensor_list, "scatter", "tensor_list", tensor)
    else:
        full = hwport.zeros([g.nranks, *tensor.shape], dtype=tensor.dtype, place=tensor.place)
    comm.broadcast(full, full, root)
    _recorded("broadcast", comm, full, full, root=root)
    tensor.set_value(full[g.rank])
    return _task(sync_op)


def gather(tensor: Any, gather_list: list[Any] | None = None, dst: int = 0,
           group: Group | None = None, sync_op: bool = True) -> Task | None:
    """Global rank ``dst`` receives every rank's ``tensor`` in ``gather_list``."""
    g = resolve(group)
    gathered: list[Any] = []
    all_gather(gathered, tensor, g)
    if g.rank == _group_rank(g, dst, "gather", "dst") and gather_list is not None:
        _unstack_into_list(gathered, gather_list)
    return _task(sync_op)


def _unstack_into_list(parts: list[Any], out: list[Any]) -> None:
    if out:
        for dst, src in zip(out, parts, strict=True):
            dst.set_value(src)
    else:
        out.extend(parts)
