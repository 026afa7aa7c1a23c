"""What the compiler knows about a device's codegen target (HWP_CodegenTargetInfo), as the
dict hwport.runtime._core.codegen_target_info(place) returns it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TargetInfo:
    dialects: tuple[str, ...]
    architecture: str = ""
    is_simt: bool = False
    subgroup_shuffle: bool = False
    float16: bool = False
    float64: bool = True
    serialize: bool = False
    simd_width: int = 8
    preferred_vector_width: int = 8
    max_group_size: int = 1
    compute_units: int = 1
    local_memory_bytes: int = 0
    max_grid_size: int = 2**31 - 1
    flags: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def dialect(self) -> str:
        """The preferred dialect (the first the device lists)."""
        return self.dialects[0]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TargetInfo:
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        kw: dict[str, Any] = {k: v for k, v in d.items() if k in known}
        kw["dialects"] = tuple(d.get("dialects") or ())
        if not kw["dialects"]:
            raise ValueError("codegen target info lists no dialects")
        if not kw.get("max_grid_size"):
            kw["max_grid_size"] = 2**31 - 1
        for k in ("simd_width", "preferred_vector_width", "max_group_size", "compute_units"):
            if k in kw:
                kw[k] = max(1, int(kw[k]))
        return cls(**kw, extra={k: v for k, v in d.items() if k not in known})

    def key(self) -> tuple:
        """What a compiled kernel depends on (part of a cache key)."""
        return (self.dialects, self.architecture, self.is_simt, self.subgroup_shuffle,
                self.float16, self.float64, self.simd_width, self.preferred_vector_width,
                self.max_group_size, self.compute_units, self.local_memory_bytes)


def cpu_target(compute_units: int = 2, vector_width: int = 8) -> TargetInfo:
    """A host CPU target (c99), as the CPU plugin describes itself."""
    return TargetInfo(dialects=("c99",), architecture="host", simd_width=vector_width,
                      preferred_vector_width=vector_width, max_group_size=1,
                      compute_units=compute_units)
