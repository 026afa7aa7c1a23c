"""Placements: how a distributed tensor lies on one dimension of a ProcessMesh (Paddle 3.0's
`paddle.distributed.Shard / Replicate / Partial` and `ReduceType`)."""

from __future__ import annotations

import enum


class ReduceType(enum.IntEnum):
    """How the ranks' values of a Partial tensor combine (Paddle's values)."""

    kRedSum = 0
    kRedMax = 1
    kRedMin = 2
    kRedProd = 3
    kRedAvg = 4
    kRedAny = 5
    kRedAll = 6


_SHORT = {ReduceType.kRedSum: "SUM", ReduceType.kRedMax: "MAX", ReduceType.kRedMin: "MIN",
          ReduceType.kRedProd: "PROD", ReduceType.kRedAvg: "AVG", ReduceType.kRedAny: "ANY",
          ReduceType.kRedAll: "ALL"}
_BY_NAME = {"sum": ReduceType.kRedSum, "max": ReduceType.kRedMax, "min": ReduceType.kRedMin,
            "prod": ReduceType.kRedProd, "avg": ReduceType.kRedAvg, "any": ReduceType.kRedAny,
            "all": ReduceType.kRedAll}


def reduce_type_of(name: str | int | ReduceType) -> ReduceType:
    """A ReduceType from itself, its value or a short name ("sum", "max", ...)."""
    if isinstance(name, str):
        try:
            return _BY_NAME[name.lower()]
        except KeyError:
            raise ValueError(f"unknown reduce type {name!r}; expected one of "
                             f"{sorted(_BY_NAME)}") from None
    return ReduceType(name)


class Placement:
    """Base of Shard, Replicate and Partial."""

    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicated(self) -> bool:
        return False

    def is_partial(self) -> bool:
        return False


class Shard(Placement):
    """The tensor is split along its dimension `dim` over this mesh dimension (chunks of
    ceil(size / n), the last ones shorter or empty when size does not divide)."""

    def __init__(self, dim: int) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"Shard: dim must be an int, got {dim!r}")
        self._dim = int(dim)

    def get_dim(self) -> int:
        return self._dim

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self._dim

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shard) and other._dim == self._dim

    def __hash__(self) -> int:
        return hash(("Shard", self._dim))

    def __repr__(self) -> str:
        return f"Shard(dim={self._dim})"


class Replicate(Placement):
    """Every rank along this mesh dimension holds the whole tensor."""

    def is_replicated(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Replicate)

    def __hash__(self) -> int:
        return hash("Replicate")

    def __repr__(self) -> str:
        return "Replicate()"


class Partial(Placement):
    """Every rank along this mesh dimension holds a partial value; the tensor is their
    reduction (sum by default)."""

    def __init__(self, reduce_type: ReduceType | int | str = ReduceType.kRedSum) -> None:
        self._reduce_type = reduce_type_of(reduce_type)

    def reduce_type(self) -> ReduceType:
        return self._reduce_type

    def is_partial(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Partial) and other._reduce_type == self._reduce_type

    def __hash__(self) -> int:
        return hash(("Partial", int(self._reduce_type)))

    def __repr__(self) -> str:
        return f"Partial(reduce_type={_SHORT[self._reduce_type]})"
