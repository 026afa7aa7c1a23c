"""Process groups: which ranks take part, and their communicator on each device.

Every rank of the job calls ``new_group`` with the same ranks, in the same order (as in Paddle);
its members then share a communicator on their default device, created at once through the
device's CCL backend. Tensors on another device get a communicator of that device the first
time a collective needs one (its unique id travels over the default one).
"""

from __future__ import annotations

from typing import Any

from hwport.distributed import env
from hwport.runtime import _core

_ID_BYTES = 128  # HWP_CCL_UNIQUE_ID_MAX_BYTES: every backend's id fits


class Group:
    """A set of global ranks. ``rank`` is this process's rank in it (-1 when not a member)."""

    def __init__(self, ranks: list[int], id: int, name: str | None = None) -> None:
        self.ranks = list(ranks)
        self.id = id
        self.name = name or (f"_default_pg{id}" if id else "_default_pg")
        me = env.get_rank()
        self.rank = self.ranks.index(me) if me in self.ranks else -1
        self.nranks = len(self.ranks)
        self._comms: dict[str, Any] = {}

    @property
    def world_size(self) -> int:
        return self.nranks

    @property
    def process_ids(self) -> list[int]:
        return list(self.ranks)

    def is_member(self) -> bool:
        return self.rank >= 0

    def get_group_rank(self, rank: int) -> int:
        """The rank in this group of global rank ``rank`` (-1 when it is not a member)."""
        return self.ranks.index(rank) if rank in self.ranks else -1

    def __repr__(self) -> str:
        return f"Group(id={self.id}, ranks={self.ranks}, rank={self.rank})"

    # ---- communicators ----

    def _comm(self, place: str, what: str) -> Any:
        """This member's communicator for ``place``'s device type (made on first use,
        collectively). A rank uses one device per device type."""
        if not self.is_member():
            raise RuntimeError(
                f"hwport.distributed.{what}: rank {env.get_rank()} is not a member of {self!r}"
            )
        device_type = _device_type(place)
        comm = self._comms.get(device_type)
        if comm is None:
            comm = self._init_comm_over_default(place)
        elif comm.place != place:
            raise ValueError(
                f"hwport.distributed.{what}: the tensor is on {place}, but this rank's "
                f"communicator for {device_type} devices is on {comm.place} (one device per "
                "device type per rank: create the tensor there, e.g. with place=None after "
                "init_parallel_env, which makes it the current device)"
            )
        return comm

    def _init_comm_over_world(self, place: str) -> None:
        """Collective over the whole job: the group's first rank makes the id, every rank takes
        part in its broadcast, the members join."""
        root = self.ranks[0]
        me = env.get_rank()
        raw = _core.ccl_unique_id(place) if me == root else b""
        padded = _core.ccl_world_broadcast(raw.ljust(_ID_BYTES, b"\0"), root)
        if self.is_member():
            size = _core.ccl_unique_id_size(place)
            self._comms[_device_type(place)] = _core.ccl_comm_init(place, self.nranks,
                                                                   self.rank, padded[:size])

    def _init_comm_over_default(self, place: str) -> Any:
        """Collective over the members: the id travels over the default device's communicator."""
        import numpy as np

        import hwport

        default = env._State.place
        base = self._comms[_device_type(default)]
        raw = _core.ccl_unique_id(place) if self.rank == 0 else b""
        buffer = hwport.to_tensor(np.frombuffer(raw.ljust(_ID_BYTES, b"\0"), dtype=np.uint8),
                                  place=default)
        base.broadcast(buffer, buffer, 0)
        size = _core.ccl_unique_id_size(place)
        data = buffer.numpy().tobytes()[:size]
        comm = _core.ccl_comm_init(place, self.nranks, self.rank, data)
        self._comms[_device_type(place)] = comm
        return comm

    def _destroy(self) -> None:
        self._comms.clear()


def _device_type(place: str) -> str:
    """'custom:cpu:1' -> 'cpu'."""
    parts = str(place).split(":")
    return parts[1] if len(parts) > 1 else parts[0]


class _Registry:
    groups: dict[int, Group] = {}  # noqa: RUF012 (process-wide)
    next_id = 1


def _make_world_group() -> Group:
    world = Group(list(range(env.get_world_size())), 0)
    world._init_comm_over_world(env._State.place)
    _Registry.groups = {0: world}
    _Registry.next_id = 1
    return world


def new_group(ranks: list[int] | None = None, backend: str | None = None,
              timeout: Any = None, nccl_comm_init_option: int = 0,
              nccl_config: Any = None) -> Group:
    """A group of ``ranks`` (all ranks by default). Every rank of the job must call it, with
    the same ranks in the same order; non-members get a group whose ``rank`` is -1."""
    env._require_initialized("new_group")
    size = env.get_world_size()
    ranks = list(range(size)) if ranks is None else [int(r) for r in ranks]
    if not ranks:
        raise ValueError("hwport.distributed.new_group: ranks is empty")
    bad = [r for r in ranks if not 0 <= r < size]
    if bad or len(set(ranks)) != len(ranks):
        raise ValueError(
            f"hwport.distributed.new_group: ranks {ranks} must be distinct ranks of the job "
            f"(0..{size - 1})"
        )
    group = Group(ranks, _Registry.next_id)
    _Registry.next_id += 1
    group._init_comm_over_world(env._State.place)
    _Registry.groups[group.id] = group
    return group


def get_group(id: int = 0) -> Group:
    """The group with this id (0: the world)."""
    env._require_initialized("get_group")
    if id not in _Registry.groups:
        raise ValueError(f"hwport.distributed.get_group: no group with id {id}")
    return _Registry.groups[id]


def destroy_process_group(group: Group | None = None) -> None:
    """Releases ``group``'s communicators (all groups when None)."""
    if group is None:
        for g in list(_Registry.groups.values()):
            g._destroy()
        _Registry.groups.clear()
        return
    group._destroy()
    _Registry.groups.pop(group.id, None)


def resolve(group: Group | None) -> Group:
    env._require_initialized("collectives")
    return _Registry.groups[0] if group is None else group
