"""ProcessMesh: an N-D array of global ranks with named dimensions (Paddle 3.0's
`paddle.distributed.ProcessMesh`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


def current_rank() -> int:
    """This process's global rank: hwport.distributed's when it is initialized, else the
    launcher's environment (Open MPI, PMI, Paddle), else 0."""
    try:
        from hwport.distributed import get_rank  # the process-group layer, when present
    except ImportError:
        get_rank = None
    if get_rank is not None:
        try:
            return int(get_rank())
        except Exception:  # noqa: BLE001 - not initialized yet: fall back to the environment
            pass
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "PADDLE_TRAINER_ID", "RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


class ProcessMesh:
    """The Cartesian topology of processes: `mesh` an N-D nested list (or array) of unique
    non-negative global ranks; `dim_names` one unique name per dimension (d0, d1, ... when
    None). Alternatively `shape` and `process_ids`."""

    def __init__(self, mesh: Any = None, dim_names: list[str] | None = None,
                 shape: Sequence[int] | None = None,
                 process_ids: Iterable[int] | None = None) -> None:
        if mesh is None:
            if shape is None or process_ids is None:
                raise ValueError("ProcessMesh: give mesh, or shape and process_ids")
            mesh = np.array(list(process_ids)).reshape(tuple(shape))
        if isinstance(mesh, ProcessMesh):
            mesh = mesh.mesh
        if not isinstance(mesh, list | tuple | np.ndarray):
            raise ValueError("ProcessMesh: mesh must be a list or a numpy array, got "
                             f"{type(mesh).__name__}")
        arr = np.array(mesh)
        if arr.ndim == 0 or arr.size == 0:
            raise ValueError("ProcessMesh: mesh must hold at least one rank in >= 1 dims")
        if arr.dtype.kind not in "iu":
            raise ValueError(f"ProcessMesh: every element must be an int, got {arr.dtype}")
        arr = arr.astype(np.int64)
        ids = arr.reshape(-1).tolist()
        if min(ids) < 0:
            raise ValueError(f"ProcessMesh: ranks must be >= 0, got {ids}")
        if len(set(ids)) != len(ids):
            raise ValueError(f"ProcessMesh: ranks must be unique, got {ids}")
        if dim_names is None:
            names = [f"d{i}" for i in range(arr.ndim)]
        else:
            if not isinstance(dim_names, list | tuple):
                raise ValueError("ProcessMesh: dim_names must be a list")
            names = [str(n) for n in dim_names]
            if len(names) != arr.ndim:
                raise ValueError(f"ProcessMesh: {len(names)} dim_names for a mesh of "
                                 f"{arr.ndim} dims")
        if len(set(names)) != len(names):
            raise ValueError(f"ProcessMesh: dim_names {names} must be unique")
        arr.setflags(write=False)
        self._mesh = arr
        self._dim_names = names

    # ---- Paddle's attributes --------------------------------------------------------------
    @property
    def mesh(self) -> np.ndarray:
        return self._mesh

    @property
    def shape(self) -> list[int]:
        return list(self._mesh.shape)

    @property
    def ndim(self) -> int:
        return self._mesh.ndim

    @property
    def size(self) -> int:
        return int(self._mesh.size)

    @property
    def process_ids(self) -> list[int]:
        return self._mesh.reshape(-1).tolist()

    @property
    def dim_names(self) -> list[str]:
        return list(self._dim_names)

    def contains(self, process_id: int) -> bool:
        return int(process_id) in self.process_ids

    def _dim_index(self, dim: str | int) -> int:
        if isinstance(dim, str):
            if dim not in self._dim_names:
                raise ValueError(f"ProcessMesh: {dim!r} is not a dim name of {self._dim_names}")
            return self._dim_names.index(dim)
        if not -self.ndim <= dim < self.ndim:
            raise ValueError(f"ProcessMesh: dim {dim} is out of range for {self.ndim} dims")
        return dim % self.ndim

    def get_dim_size(self, dim: str | int | None) -> int:
        if dim is None:
            return 1
        return self.shape[self._dim_index(dim)]

    dim_size = get_dim_size

    # ---- coordinates ----------------------------------------------------------------------
    def get_rank_coord(self, process_id: int) -> tuple[int, ...] | None:
        """The coordinate of `process_id` in the mesh (None when it is not in it)."""
        hits = np.argwhere(self._mesh == int(process_id))
        return tuple(int(c) for c in hits[0]) if len(hits) else None

    def get_rank_by_dim_and_process_id(self, dim: str | int | None, process_id: int) -> int:
        """The coordinate of `process_id` along `dim` (-1 when it is not in the mesh)."""
        coord = self.get_rank_coord(process_id)
        if coord is None:
            return -1
        if dim is None:
            return 0
        return coord[self._dim_index(dim)]

    def process_id_at(self, coord: Sequence[int]) -> int:
        return int(self._mesh[tuple(coord)])

    def coords(self) -> list[tuple[int, ...]]:
        """Every coordinate, in process_ids order."""
        return [tuple(int(i) for i in c) for c in np.ndindex(*self._mesh.shape)]

    def group_along(self, dim: str | int, process_id: int) -> list[int]:
        """The ranks that differ from `process_id` only along `dim` (its communication group
        for a collective over that mesh dimension), in coordinate order."""
        coord = self.get_rank_coord(process_id)
        if coord is None:
            raise ValueError(f"ProcessMesh: rank {process_id} is not in {self}")
        d = self._dim_index(dim)
        return [self.process_id_at(coord[:d] + (i,) + coord[d + 1:])
                for i in range(self.shape[d])]

    # ---- sub-meshes -----------------------------------------------------------------------
    def get_mesh_with_dim(self, dim_name: str, index: Any = None) -> ProcessMesh:
        """The mesh with `dim_name` moved first; with `index`, that slice of it."""
        d = self._dim_index(dim_name)
        order = [d] + [i for i in range(self.ndim) if i != d]
        names = [self._dim_names[i] for i in order]
        moved = self._mesh.transpose(order)
        if index is None:
            return ProcessMesh(moved, names)
        if self.ndim > 1:
            return ProcessMesh(moved[index], names[1:])
        return ProcessMesh(np.atleast_1d(moved[index]), names)

    def get_submesh_with_dim(self, dim_name: str, process_id: int | None = None
                             ) -> ProcessMesh | None:
        """The 1-D mesh along `dim_name` through `process_id` (this process by default);
        None when that rank is not in the mesh (as Paddle)."""
        pid = current_rank() if process_id is None else int(process_id)
        if not self.contains(pid):
            return None
        return ProcessMesh(self.group_along(dim_name, pid), [dim_name])

    def __getitem__(self, index: Any) -> ProcessMesh | None:
        if isinstance(index, str):
            return self.get_submesh_with_dim(index)
        if isinstance(index, tuple):
            names = [self._dim_names[i] for i, item in enumerate(index)
                     if isinstance(item, slice)]
            names += self._dim_names[len(index):]
        elif isinstance(index, slice):
            names = list(self._dim_names)
        else:
            names = self._dim_names[1:]
        sub = self._mesh[index]
        if sub.ndim == 0:
            return ProcessMesh([int(sub)])
        return ProcessMesh(sub, names)

    # ---- identity -------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        """Equal shape and process_ids (dim names do not matter, as in Paddle)."""
        if not isinstance(other, ProcessMesh):
            return False
        return self.shape == other.shape and self.process_ids == other.process_ids

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((tuple(self.shape), tuple(self.process_ids)))

    def __str__(self) -> str:
        return (f"shape {self.shape}, process_ids {self.process_ids}, "
                f"dim_names {self._dim_names}")

    def __repr__(self) -> str:
        return f"ProcessMesh({self._mesh.tolist()}, dim_names={self._dim_names})"
