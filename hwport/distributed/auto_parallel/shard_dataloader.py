"""`shard_dataloader(dataloader, meshes, input_keys=None, shard_dims=None,
is_dataset_splitted=False, dense_tensor_idx=None)` (Paddle 3.0's signature): each batch the
loader yields becomes DistTensors, each rank keeping its piece.

The loader is any iterable of batches: a list/tuple (element i on meshes[i]) or a dict
(input_keys[i] on meshes[i]) of tensors, numpy arrays or nested lists of them. A single mesh
serves every element. `shard_dims` names the mesh dim (or index) that splits the batch dim
(dim 0) on each mesh; None replicates.

hwport has no DataLoader/DistributedBatchSampler: the loader yields the *global* batch on every
rank (the same data, e.g. the same seed) and each rank keeps its shard (shard_tensor), where
Paddle's loader reads only the local samples. With `is_dataset_splitted=True` the loader
already yields this rank's local batch (dtensor_from_local), as in Paddle."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .dist_tensor import DistTensor, dtensor_from_local, shard_tensor
from .placement import Placement, Replicate, Shard
from .process_mesh import ProcessMesh


class ShardDataloader:
    """Iterates the wrapped loader's batches as DistTensors."""

    def __init__(self, dataloader: Any, meshes: Sequence[ProcessMesh],
                 input_keys: Sequence[str] | None, shard_dims: Sequence[Any],
                 is_dataset_splitted: bool) -> None:
        self._loader = dataloader
        self._meshes = list(meshes)
        self._keys = None if input_keys is None else list(input_keys)
        self._dims = list(shard_dims)
        self._splitted = bool(is_dataset_splitted)

    def __len__(self) -> int:
        return len(self._loader)

    def _placements(self, i: int) -> tuple[ProcessMesh, list[Placement]]:
        k = min(i, len(self._meshes) - 1)
        mesh, dim = self._meshes[k], self._dims[min(i, len(self._dims) - 1)]
        out: list[Placement] = [Replicate() for _ in range(mesh.ndim)]
        if dim is not None:
            d = mesh.dim_names.index(dim) if isinstance(dim, str) else int(dim)
            out[d] = Shard(0)
        return mesh, out

    def _dist(self, value: Any, i: int) -> Any:
        if isinstance(value, list | tuple) and value and not _is_leaf(value):
            return [self._dist(v, i) for v in value]
        if isinstance(value, DistTensor):
            return value
        mesh, placements = self._placements(i)
        if self._splitted:
            import hwport

            t = value if hasattr(value, "place") else hwport.to_tensor(value)
            return dtensor_from_local(t, mesh, placements)
        return shard_tensor(value, mesh, placements)

    def __iter__(self) -> Iterator[Any]:
        for batch in self._loader:
            if isinstance(batch, dict):
                keys = self._keys if self._keys is not None else list(batch)
                yield {k: self._dist(v, keys.index(k)) if k in keys else v
                       for k, v in batch.items()}
            elif isinstance(batch, list | tuple):
                yield [self._dist(v, i) for i, v in enumerate(batch)]
            else:
                yield self._dist(batch, 0)


def _is_leaf(value: Any) -> bool:
    """A list of numbers (data), not a list of tensors."""
    return not any(hasattr(v, "shape") or isinstance(v, list | tuple) for v in value)


def shard_dataloader(dataloader: Any, meshes: ProcessMesh | Sequence[ProcessMesh],
                     input_keys: Sequence[str] | None = None,
                     shard_dims: Sequence[str] | Sequence[int] | str | int | None = None,
                     is_dataset_splitted: bool = False,
                     dense_tensor_idx: list[list[int]] | None = None) -> ShardDataloader:
    """The loader whose batches are DistTensors (see the module's docstring)."""
    if dense_tensor_idx is not None:
        raise NotImplementedError("shard_dataloader: dense_tensor_idx is not supported")
    mesh_list = [meshes] if isinstance(meshes, ProcessMesh) else list(meshes)
    if not mesh_list or not all(isinstance(m, ProcessMesh) for m in mesh_list):
        raise TypeError("shard_dataloader: meshes must be a ProcessMesh or a list of them")
    if input_keys is not None and len(mesh_list) > 1 and len(input_keys) != len(mesh_list):
        raise ValueError("shard_dataloader: one mesh per input key")
    dims = list(shard_dims) if isinstance(shard_dims, list | tuple) else [shard_dims]
    return ShardDataloader(dataloader, mesh_list, input_keys, dims, is_dataset_splitted)
