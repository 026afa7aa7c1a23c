"""The pipeline's dist layer for the normal API: `hwport.matmul(x_dist, w_dist)`,
`hwport.nn.functional.linear(...)`, `x_dist @ w`, `x_dist.mean()` run `dist_call`.

The hook sits where the op pipeline finds an argument that is not a Tensor: the C++ argument
binding sends such a call to its Python path (phi_ops.dispatch.call), whose input conversion
raises TypeError for it; before raising, it asks `phi_ops.dispatch.dist_layer`. A call
without a DistTensor therefore never pays for this layer. A plain Tensor (or a Python scalar)
next to DistTensors is taken as Replicate on the first DistTensor's mesh, as Paddle does.
Tensor methods and operators are bound on DistTensor from the same generated tables as
hwport.Tensor's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .dist_tensor import DistTensor
from .placement import Replicate


def _is_dist(a: Any) -> bool:
    return isinstance(a, DistTensor) or (isinstance(a, list | tuple)
                                         and any(isinstance(t, DistTensor) for t in a))


def _as_dist(a: Any, like: DistTensor) -> Any:
    import hwport
    from hwport.runtime._core import Tensor

    if a is None or isinstance(a, DistTensor):
        return a
    if isinstance(a, list | tuple):
        return [_as_dist(t, like) for t in a]
    if not isinstance(a, Tensor):  # a Python scalar: the DistTensor's dtype where it fits
        dt = str(like.dtype).rsplit(".", 1)[-1]
        if isinstance(a, float) and not dt.startswith(("float", "bfloat", "complex")):
            dt = "float32"
        a = hwport.full([], a, dtype=dt)
    mesh = like.process_mesh
    return DistTensor(a, mesh, [Replicate() for _ in range(mesh.ndim)], list(a.shape),
                      dtype=a.dtype, stop_gradient=a.stop_gradient)


def dist_layer(name: str, args: Sequence[Any], attrs: Mapping[str, Any]) -> Any:
    """Runs op `name` through dist_call when some argument is a DistTensor."""
    if not any(_is_dist(a) for a in args):
        return NotImplemented
    from .dist_ops import dist_call

    like = next(t for a in args for t in (a if isinstance(a, list | tuple) else [a])
                if isinstance(t, DistTensor))
    return dist_call(name, [_as_dist(a, like) for a in args], dict(attrs))


def _reflected(fn: Any) -> Any:
    def method(self: DistTensor, other: Any) -> Any:
        return fn(other, self)

    method.__name__ = fn.__name__
    return method


def install() -> None:
    """Registers the dist layer and binds the ops as DistTensor methods and operators."""
    import phi_ops.dispatch
    from hwport.phi_ops import dispatch, functional

    # hwport.phi_ops and phi_ops can be two module objects of the same files: set both
    dispatch.dist_layer = dist_layer
    phi_ops.dispatch.dist_layer = dist_layer
    for name, fn in functional.METHODS.items():
        if not hasattr(DistTensor, name):
            setattr(DistTensor, name, fn)
    for dunder, (fn, reflected) in functional.OPERATORS.items():
        setattr(DistTensor, dunder, _reflected(fn) if reflected else fn)
    DistTensor.__hash__ = object.__hash__  # type: ignore[method-assign]
    DistTensor.T = property(functional.transpose)  # type: ignore[attr-defined]
