"""`to_static(layer, loader=None, loss=None, optimizer=None, strategy=None, input_spec=None)`
(Paddle 3.0's signature) returning a `DistModel` whose call runs one step.

This first version runs the *eager* distributed step (forward through the dist layer, the
loss, backward, the optimizer's step and clear_grad) as one callable; it does not capture a
program (hwport.jit's capture does not trace DistTensors and collectives yet), so it is not
faster than the eager loop: it gives Paddle's training-loop shape (`model.train()`;
`loss = model(x, label)`) on which a captured program can later replace the eager step.

Modes, as Paddle's: "train" (forward, loss, backward, update; returns the loss), "eval"
(forward and loss under no_grad), "predict" (forward under no_grad; returns the outputs).
The mode is "train" when both loss and optimizer are given, "eval" when only the loss is,
else "predict". The last of the call's arguments is the label when there is a loss."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
        import hwport

        if self._mode == "predict":
            with hwport.no_grad():
                return self._layer(*args)
        if len(args) < 2:
            raise ValueError(f"DistModel ({self._mode}): call it with the inputs and the label")
        inputs, label = args[:-1], args[-1]
        if self._mode == "eval":
            with hwport.no_grad():
                return self._loss(self._layer(*inputs), label)
        loss = self._loss(self._layer(*inputs), label)
        loss.backward()
        self._opt.step()
        self._opt.clear_grad()
        return loss

    def state_dict(self, mode: str = "all") -> dict[str, Any]:
        return self._layer.state_dict()


def to_static(layer: Any, loader: Any = None, loss: Callable[..., Any] | None = None,
              optimizer: Any = None, strategy: Any = None, input_spec: Any = None
              ) -> DistModel:
    """A DistModel running one step per call (the eager distributed step: see the module's
    docstring)."""
    if strategy is not None or input_spec is not None:
        raise NotImplementedError("to_static: strategy and input_spec are not supported yet")
    return DistModel(layer, loader, loss, optimizer)
