"""dist: collectives inside a program (DESIGN.md, "Distribution"), what a captured distributed
step holds where eager called hwport.distributed (Paddle's PIR has them as c_allreduce_sum,
all_gather, send_v2, ...).

Each op runs one call of a communicator (hwport.runtime._core.CclComm, ccl.h) on the device's
current stream, in program order. A communicator is no attribute: the op carries `comm_id`,
which indexes this module's registry (register_comm), so a program naming one is meaningful
only in the process that made it, as kernel.codegen_launch's function ids are.

- dist.all_reduce(x) {comm_id, reduce_op}            -> x's type
- dist.broadcast(x) {comm_id, root}                  -> x's type (the root's x on every rank)
- dist.reduce(x) {comm_id, reduce_op, root}          -> x's type (the reduction at the root)
- dist.all_gather(x) {comm_id}                       -> [nranks, *x.shape]
- dist.reduce_scatter(x) {comm_id, reduce_op}        -> x.shape[1:] (x is [nranks, ...])
- dist.all_to_all(x) {comm_id}                       -> x's type (x is [nranks, ...])
- dist.send(x) {comm_id, peer}                       -> nothing
- dist.recv() {comm_id, peer}                        -> the type it was created with

reduce_op is ccl.h's HWP_CclReduceOp (Paddle's ReduceOp codes). None of them is Pure: a
collective is an exchange with other processes, never merged with another (cse) nor dropped
when its result is unused (dce), and the passes keep their order. lower_to_kernel keeps them
as they are (inputs made contiguous); the executor runs them (runtime/src/executor.h)."""

from __future__ import annotations

import itertools
import threading
from typing import Any

from ..core import Operation
from ..dialect import AttrSpec, Dialect, OperandSpec, OpInfo, register_dialect
from ..types import TensorType

DIALECT = register_dialect(Dialect("dist"))

CALLS = ("all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all",
         "send", "recv")

_lock = threading.Lock()
_ids = itertools.count(1)
_comms: dict[int, Any] = {}
_by_object: dict[int, int] = {}


def register_comm(comm: Any) -> int:
    """The id of `comm` (a CclComm) in this process's registry (one id per communicator; it
    lives as long as the process)."""
    with _lock:
        known = _by_object.get(id(comm))
        if known is not None and _comms[known] is comm:
            return known
        cid = next(_ids)
        _comms[cid] = comm
        _by_object[id(comm)] = cid
        return cid


def lookup_comm(comm_id: int) -> Any:
    with _lock:
        comm = _comms.get(int(comm_id))
    if comm is None:
        raise KeyError(f"dist: communicator id {comm_id} is not registered in this process (a "
                       "program holding collectives runs only in the process that captured it)")
    return comm


def result_types(call: str, x: TensorType | None, nranks: int) -> list[TensorType]:
    """The result types of dist.<call> on an operand of type `x` in a group of `nranks`."""
    if call == "send":
        return []
    assert x is not None
    if call == "all_gather":
        return [TensorType((nranks, *x.shape), x.dtype)]
    if call == "reduce_scatter":
        return [TensorType(tuple(x.shape[1:]), x.dtype)]
    return [x]


def _verify(op: Operation) -> list[str]:
    call = op.name.split(".", 1)[1]
    try:
        comm = lookup_comm(op.attr("comm_id"))
    except KeyError as e:
        return [str(e.args[0])]
    if call == "recv":
        return []
    x = op.operand(0).type
    if call in ("reduce_scatter", "all_to_all") and (not x.shape or x.shape[0] != comm.nranks):
        return [f"the operand must be [nranks={comm.nranks}, ...], got {x}"]
    want = result_types(call, x, comm.nranks)
    got = [r.type for r in op.results]
    if got != want:
        return [f"results {[str(t) for t in got]}, expected {[str(t) for t in want]}"]
    return []


def _attrs(call: str) -> tuple[AttrSpec, ...]:
    specs = [AttrSpec("comm_id", "int")]
    if call in ("all_reduce", "reduce", "reduce_scatter"):
        specs.append(AttrSpec("reduce_op", "int", 0))
    if call in ("broadcast", "reduce"):
        specs.append(AttrSpec("root", "int", 0))
    if call in ("send", "recv"):
        specs.append(AttrSpec("peer", "int"))
    return tuple(specs)


for _call in CALLS:
    DIALECT.register(OpInfo(
        f"dist.{_call}",
        operands=() if _call == "recv" else (OperandSpec("x"),),
        results=() if _call == "send" else (OperandSpec("out"),),
        attrs=_attrs(_call), verify=_verify))


def instruction(op: Operation, slot: Any) -> tuple[Any, ...]:
    """The executor's instruction for a dist op: ("ccl", comm, call, reduce_op, root or peer,
    input slots, output slots); `slot(value)` gives a value's slot."""
    call = op.name.split(".", 1)[1]
    a = op.attributes
    reduce_op = a["reduce_op"].value if "reduce_op" in a else 0
    peer = a["root"].value if "root" in a else a["peer"].value if "peer" in a else 0
    return ("ccl", lookup_comm(op.attr("comm_id")), call, int(reduce_op), int(peer),
            [slot(v) for v in op.operands], [slot(r) for r in op.results])
