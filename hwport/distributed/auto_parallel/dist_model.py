"""`to_static(layer, loader=None, loss=None, optimizer=None, strategy=None, input_spec=None)`
(Paddle 3.0's signature) returning a `DistModel` whose call runs one step as a program.

Each call's step (forward through the dist layer, the loss, and in "train" mode backward, the
optimizer's step and clear_grad) is a function of the ranks' local values, served by
hwport.jit.to_static: the first call of each guard (mode, the inputs' meshes, placements,
shapes and dtypes) runs eagerly while the capture records every op, reshard and collective
(pir dialect `dist`), and later calls run that rank's program through the C++ executor (no
SPMD rules, reshard planning or Python dispatch per op any more). A step the capture cannot
express runs eagerly every time, with to_static's warning naming why.

Modes, as Paddle's: "train" (forward, loss, backward, update; returns the loss), "eval"
(forward and loss under no_grad), "predict" (forward under no_grad; returns the outputs).
The mode is "train" when both loss and optimizer are given, "eval" when only the loss is,
else "predict". The last of the call's arguments is the label when there is a loss."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .dist_tensor import DistTensor


class DistModel:
    """What to_static returns: call it with a batch's inputs (and label)."""

    def __init__(self, layer: Any, loader: Any, loss: Callable[..., Any] | None,
                 optimizer: Any) -> None:
        from .shard_optimizer import _ShardOptimizer, shard_optimizer

        if optimizer is not None and not isinstance(optimizer, _ShardOptimizer):
            optimizer = shard_optimizer(optimizer)
        self._layer, self._loader, self._loss, self._opt = layer, loader, loss, optimizer
        self._mode = "train" if loss is not None and optimizer is not None else (
            "eval" if loss is not None else "predict")
        self._steps: dict[Any, _Step] = {}

    def train(self) -> None:
        if self._loss is None or self._opt is None:
            raise ValueError("DistModel.train: needs both a loss and an optimizer")
        self._mode = "train"
        self._layer.train()

    def eval(self) -> None:
        if self._loss is None:
            raise ValueError("DistModel.eval: needs a loss")
        self._mode = "eval"
        self._layer.eval()

    def predict(self) -> None:
        self._mode = "predict"
        self._layer.eval()

    def __call__(self, *args: Any) -> Any:
        if self._mode != "predict" and len(args) < 2:
            raise ValueError(f"DistModel ({self._mode}): call it with the inputs and the label")
        metas = tuple(_meta(a) for a in args)
        key = (self._mode, metas)
        step = self._steps.get(key)
        if step is None:
            step = self._steps[key] = _Step(self, self._mode, metas)
        return step(args)

    def _eager_step(self, mode: str, args: tuple[Any, ...]) -> Any:
        """One step of `mode` on DistTensors (what the program records)."""
        import hwport

        if mode == "predict":
            with hwport.no_grad():
                return self._layer(*args)
        inputs, label = args[:-1], args[-1]
        if mode == "eval":
            with hwport.no_grad():
                return self._loss(self._layer(*inputs), label)
        loss = self._loss(self._layer(*inputs), label)
        loss.backward()
        self._opt.step()
        self._opt.clear_grad()
        return loss

    def dist_main_program(self, mode: str | None = None) -> Any:
        """This rank's program of `mode`'s (default: the current mode's) latest captured step
        (a PIR program; None before its first call, or where the step runs eagerly)."""
        mode = mode or self._mode
        for (m, _), step in reversed(list(self._steps.items())):
            if m == mode:
                for entry in reversed(list(step.static._cache.values())):
                    if entry.eager_reason is None and entry.program is not None:
                        return entry.program
        return None

    def state_dict(self, mode: str = "all") -> dict[str, Any]:
        return self._layer.state_dict()


def _meta(a: Any) -> Any:
    """What a step's program assumes of an argument beyond its local value's guard."""
    if isinstance(a, DistTensor):
        return ("dist", a.process_mesh, tuple(a.placements), tuple(a.shape), a.dtype,
                a.stop_gradient)
    return ("plain",)


def _dist(local: Any, meta: Any) -> Any:
    """The argument or output `meta` describes, around this rank's local value."""
    if meta[0] != "dist":
        return local
    _, mesh, placements, shape, dtype, stop_gradient = meta
    return DistTensor(local, mesh, list(placements), list(shape), dtype=dtype,
                      stop_gradient=stop_gradient)


class _Step:
    """One mode and argument layout of a DistModel: a to_static function of the arguments'
    local values (None where this rank holds none) that rebuilds the DistTensors, runs the
    eager step and returns the outputs' local values; the outputs' DistTensor layouts are
    noted on the capturing call and put back around the program's results."""

    def __init__(self, model: DistModel, mode: str, metas: tuple[Any, ...]) -> None:
        import hwport.jit

        self.model, self.mode, self.metas = model, mode, metas
        self.out_metas: list[Any] | None = None
        self.static = hwport.jit.to_static(self._local_step)

    def _local_step(self, *locals_: Any) -> Any:
        args = [_dist(v, m) for v, m in zip(locals_, self.metas, strict=True)]
        out = self.model._eager_step(self.mode, tuple(args))
        single = not isinstance(out, tuple | list)
        outs = [out] if single else list(out)
        self.out_metas = [_meta(o) for o in outs]
        self.single = single
        return tuple(o._local_value() if isinstance(o, DistTensor) else o for o in outs)

    def __call__(self, args: tuple[Any, ...]) -> Any:
        locals_ = [a._local_value() if isinstance(a, DistTensor) else a for a in args]
        got = self.static(*locals_)
        assert self.out_metas is not None
        outs = [_dist(v, m) for v, m in zip(got, self.out_metas, strict=True)]
        return outs[0] if self.single else tuple(outs)


def to_static(layer: Any, loader: Any = None, loss: Callable[..., Any] | None = None,
              optimizer: Any = None, strategy: Any = None, input_spec: Any = None
              ) -> DistModel:
    """A DistModel running one step per call as a program (see the module's docstring)."""
    if strategy is not None or input_spec is not None:
        raise NotImplementedError("to_static: strategy and input_spec are not supported yet")
    return DistModel(layer, loader, loss, optimizer)
