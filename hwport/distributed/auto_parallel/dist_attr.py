"""TensorDistAttr: a tensor's placements as SPMD rules read them: `dims_mapping` (per tensor
dim, the mesh dim it is sharded over, -1 when none) and `partial` (mesh dim -> ReduceType)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .placement import Partial, Placement, ReduceType, Replicate, Shard


@dataclass(frozen=True)
class TensorDistAttr:
    dims_mapping: tuple[int, ...]
    partial: Mapping[int, ReduceType] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims_mapping", tuple(int(d) for d in self.dims_mapping))
        object.__setattr__(self, "partial", {int(k): ReduceType(v)
                                             for k, v in sorted(dict(self.partial).items())})
        used = [d for d in self.dims_mapping if d != -1]
        if len(set(used)) != len(used):
            raise ValueError(f"dims_mapping {list(self.dims_mapping)} uses a mesh dim twice")
        if set(used) & set(self.partial):
            raise ValueError(f"mesh dims {sorted(set(used) & set(self.partial))} both shard and "
                             "are partial")

    @staticmethod
    def replicated(ndim: int) -> TensorDistAttr:
        return TensorDistAttr((-1,) * ndim)

    @property
    def ndim(self) -> int:
        return len(self.dims_mapping)

    def is_replicated(self) -> bool:
        return all(d == -1 for d in self.dims_mapping) and not self.partial

    def to_placements(self, mesh_ndim: int) -> list[Placement]:
        out: list[Placement] = [Replicate() for _ in range(mesh_ndim)]
        for tdim, mdim in enumerate(self.dims_mapping):
            if mdim != -1:
                out[mdim] = Shard(tdim)
        for mdim, rt in self.partial.items():
            out[mdim] = Partial(rt)
        return out

    @staticmethod
    def from_placements(placements: Sequence[Placement], ndim: int) -> TensorDistAttr:
        """From one placement per mesh dim. A tensor dim sharded over several mesh dims keeps
        the first (the rule reshards the others to Replicate)."""
        dims = [-1] * ndim
        partial: dict[int, ReduceType] = {}
        for mdim, p in enumerate(placements):
            if isinstance(p, Shard):
                d = p.get_dim()
                if not -ndim <= d < max(ndim, 1) or ndim == 0:
                    raise ValueError(f"Shard({d}) on a tensor of {ndim} dims")
                d %= ndim
                if dims[d] == -1:
                    dims[d] = mdim
            elif isinstance(p, Partial):
                partial[mdim] = p.reduce_type()
            elif not isinstance(p, Replicate):
                raise TypeError(f"not a placement: {p!r}")
        return TensorDistAttr(tuple(dims), partial)

    def __repr__(self) -> str:
        part = ", ".join(f"{k}:{v.name}" for k, v in self.partial.items())
        tail = f", partial={{{part}}}" if part else ""
        return f"TensorDistAttr({list(self.dims_mapping)}{tail})"
