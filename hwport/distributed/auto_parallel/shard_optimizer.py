"""`shard_optimizer(optimizer, shard_fn=None, gradient_accumulation_steps=1)` (Paddle 3.0's
signature) and `ShardingStage1(sharding_mesh_dim, mesh=None)`.

The optimizer's DistTensor parameters are replaced, inside it, by their local leaves: every
update (SGD, Momentum, Adam, AdamW: elementwise given the gradient) then runs on this rank's
shard with this rank's gradient shard, and its states (moments, ...) are sharded exactly like
the parameter. A rank that holds no piece of a parameter (another pipeline stage) keeps no
state for it. The gradients are already right on every rank (dist_autograd.py: replicated
parameters' gradients are all-reduced where the work was split).

With `ShardingStage1(dim)`, a parameter Replicate over mesh dim `dim` is updated ZeRO-1 style:
each rank of that dim keeps the states of, and updates, one contiguous 1/n of the flattened
local value (chunks of ceil(size/n)); the updated chunks are then all-gathered over the dim.
The result equals the unsharded update; the states take 1/n of the memory."""

from __future__ import annotations

from typing import Any

import numpy as np

from .dist_tensor import DistTensor
from .process_mesh import ProcessMesh, current_rank


class ShardingStage1:
    """ZeRO-1 over `sharding_mesh_dim` (a name or index) of `mesh` (the parameter's own mesh
    when None)."""

    def __init__(self, sharding_mesh_dim: int | str, mesh: ProcessMesh | None = None) -> None:
        self.sharding_mesh_dim = sharding_mesh_dim
        self.mesh = mesh

    def dim_of(self, mesh: ProcessMesh) -> int | None:
        """The mesh dim index in `mesh` (None where `mesh` is not this stage's mesh)."""
        if self.mesh is not None and self.mesh != mesh:
            return None
        d = self.sharding_mesh_dim
        if isinstance(d, str):
            return mesh.dim_names.index(d) if d in mesh.dim_names else None
        return int(d) % mesh.ndim


class _ZeroSlot:
    """This rank's chunk of a replicated parameter: a leaf the inner optimizer updates."""

    def __init__(self, p: DistTensor, dim: int) -> None:
        import hwport

        from .reshard_exec import group_along

        me = current_rank()
        self.param, self.local = p, p._local_value()
        mesh = p.process_mesh
        self.n = mesh.shape[dim]
        self.k = mesh.get_rank_coord(me)[dim]
        self.group = group_along(mesh, dim, me)
        self.size = int(np.prod(self.local.shape)) if self.local.ndim else 1
        self.chunk = -(-self.size // self.n)
        self.a = min(self.k * self.chunk, self.size)
        self.b = min(self.a + self.chunk, self.size)
        flat = self.local.numpy().reshape(-1)[self.a:self.b]
        self.slot = hwport.to_tensor(np.array(flat), dtype=self.local.dtype,
                                     place=self.local.place, stop_gradient=False)

    def load_grad(self) -> None:
        """The slot's gradient: this rank's chunk of the parameter's (hwport ops, so a
        jit.to_static capture records it)."""
        g = self.local.grad
        self.slot.grad = None if g is None else g.reshape([-1])[self.a:self.b].contiguous()

    def gather(self) -> None:
        """Every rank's updated chunk, all-gathered over the group into the parameter."""
        import hwport
        import hwport.distributed as dist
        import hwport.nn.functional as F

        mine = self.slot.detach() if hasattr(self.slot, "detach") else self.slot
        if self.b - self.a < self.chunk:  # the last chunks are padded to equal sizes
            mine = F.pad(mine, [0, self.chunk - (self.b - self.a)])
        parts: list[Any] = []
        dist.all_gather(parts, mine.contiguous(), group=self.group)
        whole = hwport.concat([t.reshape([-1]) for t in parts])[:self.size]
        self.local.set_value(whole.reshape(list(self.local.shape)))


class _ShardOptimizer:
    """The wrapped optimizer (what shard_optimizer returns): step / clear_grad / the rest of
    the optimizer's API by delegation."""

    def __init__(self, optimizer: Any, shard_fn: Any = None,
                 gradient_accumulation_steps: int = 1) -> None:
        if shard_fn is not None and not isinstance(shard_fn, ShardingStage1):
            raise NotImplementedError("shard_optimizer: shard_fn must be None or a "
                                      f"ShardingStage1, got {type(shard_fn).__name__}")
        if int(gradient_accumulation_steps) < 1:
            raise ValueError("shard_optimizer: gradient_accumulation_steps must be >= 1")
        if getattr(optimizer, "_grad_clip", None) is not None:
            raise NotImplementedError("shard_optimizer: gradient clipping over sharded "
                                      "gradients (a global norm across ranks) is not done yet")
        self._inner = optimizer
        self._accumulate = int(gradient_accumulation_steps)
        self._calls = 0
        self._dist_params: list[DistTensor] = []
        self._zero: list[_ZeroSlot] = []
        names: dict[int, str] = {}
        for group in optimizer._param_groups:
            kept = []
            for p in group["params"]:
                if not isinstance(p, DistTensor):
                    kept.append(p)
                    continue
                self._dist_params.append(p)
                local = p._local_value()
                if local is None:
                    continue  # another stage's parameter: no state here
                dim = shard_fn.dim_of(p.process_mesh) if shard_fn is not None else None
                if (dim is not None and p.process_mesh.shape[dim] > 1
                        and all(d != dim for d in p.dist_attr.dims_mapping)
                        and dim not in p.dist_attr.partial):
                    slot = _ZeroSlot(p, dim)
                    self._zero.append(slot)
                    kept.append(slot.slot)
                else:
                    kept.append(local)
                if p.name:
                    names[id(kept[-1])] = p.name
            group["params"] = kept
        optimizer._names = {**optimizer._name_params(), **names}
        optimizer._buckets = {}

    def step(self) -> None:
        self._calls += 1
        if self._calls % self._accumulate:
            return
        for z in self._zero:
            z.load_grad()
        self._inner.step()
        for z in self._zero:
            z.gather()

    def clear_grad(self, set_to_zero: bool = True) -> None:
        if self._calls % self._accumulate:
            return
        for p in self._dist_params:
            p.clear_grad()
        for z in self._zero:
            z.slot.grad = None
        self._inner.clear_grad(set_to_zero)

    clear_gradients = clear_grad

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.clear_grad(not set_to_none)

    def minimize(self, loss: Any, *args: Any, **kwargs: Any) -> tuple[list[Any], list[Any]]:
        loss.backward()
        self.step()
        return [], []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_inner"], name)


def shard_optimizer(optimizer: Any, shard_fn: ShardingStage1 | None = None,
                    gradient_accumulation_steps: int = 1) -> _ShardOptimizer:
    """The optimizer with states sharded like its DistTensor parameters (ZeRO-1 over a mesh
    dim with `shard_fn=ShardingStage1(dim)`)."""
    return _ShardOptimizer(optimizer, shard_fn, gradient_accumulation_steps)
