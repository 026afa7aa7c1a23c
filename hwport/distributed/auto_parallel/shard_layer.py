"""`shard_layer(layer, process_mesh, shard_fn=None, input_fn=None, output_fn=None)` (Paddle
3.0's signature): the layer's parameters become DistTensors on the mesh.

`shard_fn(layer_name, sublayer, process_mesh)` is called for the layer itself and every
sublayer (structured names, "" for the root); it replaces parameters, as in Paddle:
`sublayer.weight = dist.shard_tensor(sublayer.weight, mesh, [Replicate(), Shard(1)])`.
Every parameter it leaves alone is replicated over the mesh. A parameter DistTensor keeps the
parameter's name and `stop_gradient`; its local value is a fresh leaf (the optimizer updates
it).

hwport's `Layer.__setattr__` takes only Parameters for a parameter's name, so each sublayer's
class is swapped for a subclass that also takes DistTensors (what torch's parametrize does);
the layer otherwise behaves as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .dist_tensor import DistTensor, shard_tensor
from .placement import Replicate
from .process_mesh import ProcessMesh

_DIST_CLASSES: dict[type, type] = {}


def _dist_setattr(self: Any, name: str, value: Any) -> None:
    params = self.__dict__.get("_parameters")
    if isinstance(value, DistTensor) and params is not None and name in params:
        from hwport.nn import layer as _layer

        old = params[name]
        if value.name is None and old is not None:
            value.name = getattr(old, "name", None)
        params[name] = value
        _layer.structure_epoch[0] += 1
        return
    super(type(self), self).__setattr__(name, value)


def _dist_class(cls: type) -> type:
    if getattr(cls, "_hwport_dist_layer", False):
        return cls
    if cls not in _DIST_CLASSES:
        _DIST_CLASSES[cls] = type(cls.__name__, (cls,), {
            "__setattr__": _dist_setattr, "_hwport_dist_layer": True,
            "__module__": cls.__module__, "__qualname__": cls.__qualname__})
    return _DIST_CLASSES[cls]


def _replicated(p: Any, mesh: ProcessMesh) -> DistTensor:
    d = shard_tensor(p, mesh, [Replicate() for _ in range(mesh.ndim)],
                     stop_gradient=bool(p.stop_gradient))
    d.name = getattr(p, "name", None)
    return d


def shard_layer(layer: Any, process_mesh: ProcessMesh,
                shard_fn: Callable[[str, Any, ProcessMesh], None] | None = None,
                input_fn: Callable[[Any, ProcessMesh], Any] | None = None,
                output_fn: Callable[[Any, ProcessMesh], Any] | None = None) -> Any:
    """Converts `layer`'s parameters to DistTensors on `process_mesh` (in place; returns the
    layer). `input_fn(inputs, mesh)` / `output_fn(outputs, mesh)` become a forward pre-hook /
    post-hook of the layer."""
    from hwport.nn.layer import Layer

    if not isinstance(layer, Layer):
        raise TypeError(f"shard_layer: layer must be an hwport.nn.Layer, got "
                        f"{type(layer).__name__}")
    if not isinstance(process_mesh, ProcessMesh):
        raise TypeError(f"shard_layer: process_mesh must be a ProcessMesh, got "
                        f"{type(process_mesh).__name__}")
    for name, sub in list(layer.named_sublayers(include_self=True)):
        sub.__class__ = _dist_class(type(sub))
        if shard_fn is not None:
            shard_fn(name, sub, process_mesh)
        for pname, p in list(sub._parameters.items()):
            if p is not None and not isinstance(p, DistTensor):
                setattr(sub, pname, _replicated(p, process_mesh))
    if input_fn is not None:
        layer.register_forward_pre_hook(lambda _layer, inputs: input_fn(inputs, process_mesh))
    if output_fn is not None:
        layer.register_forward_post_hook(
            lambda _layer, _inputs, outputs: output_fn(outputs, process_mesh))
    return layer
