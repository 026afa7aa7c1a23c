"""The optimizer base class, with Paddle 3.x's semantics (paddle.optimizer.Optimizer).

What a parameter must offer (hwport.nn.Parameter does): shape, dtype, place, reshape,
`stop_gradient`, `grad` (a Tensor or None), `set_value(t)` (in-place copy: how the update is
written), `clear_gradient(set_to_zero)`, and optionally `name`, `optimize_attr`
({'learning_rate': multiplier}) and `need_clip`.

step() runs, per parameter group: the gradients gathered per bucket (optimizer/_buckets.py),
grad_clip, the L2 weight decay (g += coeff * p; AdamW decays decoupled instead), the
subclass's update on the flat tensors, and the write-back; under hwport.no_grad()."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from hwport.optimizer._buckets import (
    ALONE_NUMEL,
    FLOAT,
    LOW_PRECISION,
    Bucket,
    gather,
    numel,
)
from hwport.optimizer.lr import LRScheduler
from hwport.runtime import DType, Tensor
from hwport.tensor import to_tensor

__all__ = ["Optimizer"]


def capture_recorder() -> Any:
    """The jit.to_static capture recording on this thread (hwport/jit/capture.py), if any;
    without importing the IR when to_static was never used."""
    capture = sys.modules.get("hwport.jit.capture")
    return None if capture is None else capture.active_recorder()


def _outside(recorder: Any) -> contextlib.AbstractContextManager[Any]:
    return contextlib.nullcontext() if recorder is None else recorder.paused()


class StepScalars:
    """A bucket's per-step scalars as 0-d device tensors, made when first asked for.

    Eagerly: one host-to-device transfer of the values. Inside a jit.to_static capture the
    update must read scalars that change every step (the learning rate, Adam's bias
    corrections) at run time: the values go into a tensor that outlives the program (a
    program parameter), and the capture's before-run hooks recompute them on the host
    (`replay`, which advances the host state as a step does) before every program run."""

    def __init__(self, b: Bucket, values: dict[str, float],
                 replay: Callable[[], dict[str, float]]) -> None:
        self._b, self._values, self._replay = b, values, replay
        self._made: dict[str, Tensor] | None = None
        self.recorder = capture_recorder()

    def as_attrs_of_last_call(self, keys: Sequence[str]) -> None:
        """Inside a capture: the op call just recorded takes `keys` of the replayed scalars as
        its attributes at every run (its kernel's attributes are patched), instead of
        reading them from a tensor (a fused kernel takes them as attributes)."""
        replay = self._replay
        self.recorder.attrs_at_each_run(lambda: {k: v for k, v in replay().items()
                                                  if k in keys})

    def __call__(self) -> dict[str, Tensor]:
        if self._made is None:
            b, names = self._b, list(self._values)
            if self.recorder is None:
                self._made = dict(zip(names, b.scalars(list(self._values.values())),
                                      strict=True))
            else:
                dtype = b.compute.to_numpy()
                with self.recorder.paused():
                    held = to_tensor(np.asarray(list(self._values.values()), dtype=dtype),
                                     place=b.place)
                replay = self._replay

                def refresh() -> None:
                    held.set_value(np.asarray(list(replay().values()), dtype=dtype))
                self.recorder.before_run.append(refresh)
                self._made = {n: held[i] for i, n in enumerate(names)}
        return self._made


def _no_grad() -> contextlib.AbstractContextManager[Any]:
    import hwport

    ng = getattr(hwport, "no_grad", None)
    return ng() if ng is not None else contextlib.nullcontext()


def _coeff(value: Any, api: str, arg: str = "weight_decay") -> float | None:
    """A weight decay as an L2 coefficient (None: no decay)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{api}: {arg} must be a float, int or None, got bool")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(getattr(value, "_coeff", None), (int, float)):  # an L2Decay-like regularizer
        return float(value._coeff)
    raise TypeError(f"{api}: {arg} must be a float, int or None, got {type(value).__name__}")


def _on(value: Any, place: Any) -> Tensor:
    """A loaded state value (Tensor, numpy array, list) as a tensor on `place`."""
    if not isinstance(value, Tensor):
        return to_tensor(np.asarray(value), place=place)
    return value if str(value.place) == str(place) else value.to(place)


class Optimizer:
    """Base of SGD, Momentum, Adam, AdamW. Subclasses set _accumulators (per-element states),
    _pow_accumulators (per-parameter scalars saved as [1] tensors) and define _apply()."""

    _accumulators: tuple[str, ...] = ()
    _pow_accumulators: tuple[str, ...] = ()
    # Where L2 weight decay goes: "grad" (added to the gradient before _apply: SGD, Adam),
    # "kernel" (_apply does it: Momentum), "param_only" (only a parameter's own regularizer
    # goes to the gradient; weight_decay is decoupled: AdamW).
    _l2_mode = "grad"

    def __init__(self, learning_rate: float | LRScheduler,
                 parameters: Sequence[Any] | None = None, weight_decay: Any = None,
                 grad_clip: Any = None, name: str | None = None) -> None:
        api = type(self).__name__
        self._api = api
        if parameters is None:
            raise AttributeError(f"{api}: parameters must be given (a list of parameters or "
                                 "of parameter-group dicts); hwport runs eagerly")
        if isinstance(parameters, Tensor):
            raise TypeError(f"{api}: parameters must be an iterable of parameters, got a "
                            "single Tensor")
        if isinstance(parameters, dict):
            raise TypeError(f"{api}: parameters must be a list of dicts for parameter groups, "
                            "got a dict")
        if isinstance(parameters, set):
            raise TypeError(f"{api}: parameters must be an ordered collection, got a set")
        if isinstance(learning_rate, bool) or not isinstance(learning_rate,
                                                             (float, LRScheduler)):
            raise TypeError(f"{api}: learning_rate must be a float or an LRScheduler, got "
                            f"{type(learning_rate).__name__}")
        from hwport.nn.clip import ClipGradBase

        if grad_clip is not None and not isinstance(grad_clip, ClipGradBase):
            raise TypeError(f"{api}: grad_clip must be a ClipGradByGlobalNorm, ClipGradByNorm "
                            f"or ClipGradByValue (or None), got {type(grad_clip).__name__}")
        self._name = name
        self._learning_rate: float | LRScheduler = learning_rate
        self.regularization = _coeff(weight_decay, api)
        self._grad_clip = grad_clip
        self._multi_precision = False
        self._lowprec_moment = False  # AdamW's use_lowprecision_moment
        self._defaults: dict[str, Any] = {"weight_decay": weight_decay, "grad_clip": grad_clip}
        items = list(parameters)
        self._parameter_list = items
        self._grouped = bool(items) and isinstance(items[0], dict)
        self._param_groups: list[dict[str, Any]] = []
        if self._grouped:
            for g in items:
                self._add_param_group(dict(g))
        else:
            self._param_groups.append({"params": items})
        self._names = self._name_params()
        self._buckets: dict[int, list[Bucket]] = {}
        self._holder: dict[str, Any] = {}  # loaded state not yet in a bucket
        self.clear_gradients = self.clear_grad

    # ---- parameter groups --------------------------------------------------------------
    def _add_param_group(self, group: dict[str, Any]) -> None:
        if "params" not in group:
            raise ValueError(f"{self._api}: every parameter group needs 'params'")
        ps = group["params"]
        if isinstance(ps, set):
            raise TypeError(f"{self._api}: a group's params must be an ordered collection, "
                            "got a set")
        group["params"] = [ps] if isinstance(ps, Tensor) else list(ps)
        seen = {id(p) for g in self._param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError(f"{self._api}: some parameters appear in more than one parameter "
                             "group")
        clip = group.get("grad_clip")
        from hwport.nn.clip import ClipGradBase

        if clip is not None and not isinstance(clip, ClipGradBase):
            raise TypeError(f"{self._api}: a group's grad_clip must be a ClipGradBy* object")
        _coeff(group.get("weight_decay"), self._api, "a group's weight_decay")
        self._param_groups.append(group)

    def _option(self, group: dict[str, Any], key: str) -> Any:
        return group[key] if key in group else self._defaults[key]

    def _name_params(self) -> dict[int, str]:
        names: dict[int, str] = {}
        i = 0
        for g in self._param_groups:
            for p in g["params"]:
                name = getattr(p, "name", None)
                names[id(p)] = name if isinstance(name, str) and name else f"param_{i}"
                i += 1
        return names

    def _lr_scale(self, group: dict[str, Any], p: Any) -> float:
        if self._grouped:  # Paddle: the group's learning_rate multiplies the global one
            return float(group.get("learning_rate", 1.0))
        attr = getattr(p, "optimize_attr", None)
        if isinstance(attr, dict) and "learning_rate" in attr:
            return float(attr["learning_rate"])
        return 1.0

    def _bucket_extra(self, group: dict[str, Any], p: Any) -> tuple[Any, ...]:
        """Per-parameter options that split buckets (AdamW: decay flag, lr_ratio)."""
        return ()

    # ---- learning rate -----------------------------------------------------------------
    def get_lr(self) -> float:
        lr = self._learning_rate
        return float(lr()) if isinstance(lr, LRScheduler) else float(lr)

    def set_lr(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{self._api}.set_lr: value must be a float, got "
                            f"{type(value).__name__}")
        if isinstance(self._learning_rate, LRScheduler):
            raise RuntimeError(f"{self._api}.set_lr: the learning rate is an LRScheduler; "
                               "step the scheduler (or use set_lr_scheduler) instead")
        self._learning_rate = float(value)

    def set_lr_scheduler(self, scheduler: LRScheduler) -> None:
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(f"{self._api}.set_lr_scheduler: scheduler must be an LRScheduler, "
                            f"got {type(scheduler).__name__}")
        self._learning_rate = scheduler

    # ---- gradients ---------------------------------------------------------------------
    def _trainable(self) -> Iterator[Any]:
        for g in self._param_groups:
            for p in g["params"]:
                if not getattr(p, "stop_gradient", False):
                    yield p

    def clear_grad(self, set_to_zero: bool = True) -> None:
        """Clears every trainable parameter's gradient (zeros it, or drops it)."""
        for p in self._trainable():
            clear = getattr(p, "clear_gradient", None) or p.clear_grad
            clear(set_to_zero)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """torch's spelling (Paddle has it too): clear_grad(set_to_zero=not set_to_none)."""
        self.clear_grad(set_to_zero=not set_to_none)

    def minimize(self, loss: Any, startup_program: Any = None, parameters: Any = None,
                 no_grad_set: Any = None) -> tuple[list[Any], list[tuple[Any, Any]]]:
        """Paddle's dygraph minimize: the gradients are those loss.backward() left (Paddle's
        dygraph does not run backward here either); one step(); returns ([], params_grads)."""
        if startup_program is not None or parameters is not None or no_grad_set is not None:
            raise NotImplementedError(f"{self._api}.minimize: startup_program, parameters and "
                                      "no_grad_set are static-graph arguments; leave them None")
        params_grads = [(p, p.grad) for p in self._trainable()
                        if getattr(p, "grad", None) is not None]
        self.step()
        return [], params_grads

    # ---- the step ----------------------------------------------------------------------
    def step(self) -> None:
        """One update of every parameter that has a gradient (others are left alone)."""
        with _no_grad():
            lr = self.get_lr()
            recorder = capture_recorder()
            for gi, group in enumerate(self._param_groups):
                live = [p for p in group["params"] if not getattr(p, "stop_gradient", False)
                        and getattr(p, "grad", None) is not None]
                if not live:
                    continue
                with _outside(recorder):  # buckets and states outlive a captured program
                    buckets = self._live_buckets(gi, group, live)
                grads = [gather([p.grad for p in b.params], b.compute) for b in buckets]
                clip = self._option(group, "grad_clip")
                if clip is not None:
                    grads = clip._clip_buckets(buckets, grads)
                for b, g in zip(buckets, grads, strict=True):
                    self._update(b, g, group, lr * b.lr_scale)

    def _update(self, b: Bucket, g: Tensor, group: dict[str, Any], lr: float) -> None:
        p = b.master if b.master is not None else gather(b.params, b.compute)
        if self._l2_mode == "grad":  # a parameter's own regularizer wins, as in Paddle
            wd = b.reg if b.reg is not None else _coeff(
                self._option(group, "weight_decay"), self._api)
            if wd is None:
                wd = self.regularization
        else:  # "kernel": the subclass applies it; "param_only": only a parameter's own
            wd = b.reg if self._l2_mode == "param_only" else None
        if wd:
            (c,) = b.scalars([wd])
            g = g + p * c
        values = self._host_scalars(b, group, lr)
        scalars = StepScalars(b, values, lambda: self._host_scalars(
            b, group, self.get_lr() * b.lr_scale))
        new = self._apply(b, p, g, group, values, scalars)
        if b.master is not None:
            if scalars.recorder is not None:
                b.master.set_value(new)  # written in place: the program's output
            else:
                b.master = new
        out = new if new.dtype == b.dtype else new.astype(b.dtype)
        for param, view in zip(b.params, b.views(out), strict=True):
            param.set_value(view)

    def _host_scalars(self, b: Bucket, group: dict[str, Any], lr: float) -> dict[str, float]:
        """The step's scalars for bucket b, computed on the host (advancing host state such
        as Adam's beta pows): everything of the update that is not a tensor."""
        raise NotImplementedError

    def _apply(self, b: Bucket, p: Tensor, g: Tensor, group: dict[str, Any],
               values: dict[str, float], scalars: StepScalars) -> Tensor:
        """The updated flat parameter from the step's scalars (`values` on the host,
        `scalars()` the same as 0-d tensors of the compute dtype)."""
        raise NotImplementedError

    def _pow_init(self, group: dict[str, Any]) -> dict[str, float]:
        return {}

    @staticmethod
    def _load(b: Bucket, acc: str) -> Tensor:
        """A flat state in the compute dtype."""
        t = b.states[acc]
        return t if t.dtype == b.compute else t.astype(b.compute)

    @staticmethod
    def _save(b: Bucket, acc: str, t: Tensor) -> None:
        if capture_recorder() is not None:  # written in place: the program's output
            b.states[acc].set_value(t)
            return
        b.states[acc] = t if t.dtype == b.store else t.astype(b.store)

    # ---- buckets -----------------------------------------------------------------------
    def _live_buckets(self, gi: int, group: dict[str, Any], live: list[Any]) -> list[Bucket]:
        live_ids = {id(p) for p in live}
        kept: list[Bucket] = []
        out: list[Bucket] = []
        covered: set[int] = set()
        for b in self._buckets.get(gi, []):
            ids = [id(p) for p in b.params]
            covered.update(ids)
            inside = [k for k, i in enumerate(ids) if i in live_ids]
            if len(inside) == len(ids):
                kept.append(b)
                out.append(b)
            elif not inside:
                kept.append(b)
            else:  # some parameters have no gradient this step: they leave the bucket
                b_in, b_out = b.split(inside)
                kept += [b_in, b_out]
                out.append(b_in)
        fresh = [p for p in live if id(p) not in covered]
        if fresh:
            made = self._make_buckets(group, fresh)
            kept += made
            out += made
        self._buckets[gi] = kept
        return out

    def _make_buckets(self, group: dict[str, Any], params: list[Any]) -> list[Bucket]:
        by_key: dict[tuple[Any, ...], list[Any]] = {}
        pow_init = self._pow_init(group)
        for p in params:
            if p.dtype not in FLOAT:
                raise TypeError(f"{self._api}: parameter {self._names[id(p)]} has dtype "
                                f"{p.dtype}; optimizers update float16, bfloat16, float32 or "
                                "float64 parameters")
            pows = tuple(self._loaded_pow(p, k, v) for k, v in pow_init.items())
            alone = id(p) if numel(p.shape) >= ALONE_NUMEL else None
            key = (p.dtype, str(p.place), self._lr_scale(group, p),
                   bool(getattr(p, "need_clip", True)), pows, self._bucket_extra(group, p),
                   alone, self._param_l2(p))
            by_key.setdefault(key, []).append(p)
        out = []
        for key, ps in by_key.items():
            dtype = ps[0].dtype
            master = self._multi_precision and dtype in LOW_PRECISION
            compute = DType.float32 if dtype in LOW_PRECISION else dtype
            store = DType.float32 if master and not self._lowprec_moment else dtype
            b = Bucket(ps, [self._names[id(p)] for p in ps], key, store, compute, key[3],
                       key[2])
            b.pows = dict(zip(pow_init, key[4], strict=True))
            b.reg = key[7]
            for acc in self._accumulators:
                b.states[acc] = self._initial_state(b, acc)
            if master:
                mw = self._holder.get("master_weights", {})
                # a copy: the fused updates write the master weights in place
                b.master = gather([_on(mw[n], b.place) if n in mw else p
                                   for n, p in zip(b.names, b.params, strict=True)],
                                  DType.float32).clone()
            out.append(b)
        return out

    def _param_l2(self, p: Any) -> float | None:
        """The L2 coefficient of a parameter's own regularizer (ParamAttr), None without."""
        reg = getattr(p, "regularizer", None)
        if reg is None:
            return None
        if "L1" in type(reg).__name__:
            raise NotImplementedError(f"{self._api}: parameter {self._names[id(p)]} has an "
                                      f"{type(reg).__name__} regularizer; only L2 decay is "
                                      "supported")
        return _coeff(reg, self._api, f"parameter {self._names[id(p)]}'s regularizer")

    def _loaded_pow(self, p: Any, acc: str, init: float) -> float:
        v = self._holder.get(f"{self._names[id(p)]}_{acc}_0")
        return init if v is None else float(np.asarray(v).reshape(-1)[0])

    def _initial_state(self, b: Bucket, acc: str) -> Tensor:
        import hwport

        loaded = [self._holder.get(f"{n}_{acc}_0") for n in b.names]
        if all(v is None for v in loaded):
            return hwport.zeros([b.numel], dtype=b.store, place=b.place)
        parts = []
        for v, n, s in zip(loaded, b.sizes, b.shapes, strict=True):
            if v is None:
                parts.append(hwport.zeros([n], dtype=b.store, place=b.place))
            else:
                t = _on(v, b.place)
                if list(t.shape) != s:
                    raise ValueError(f"{self._api}.set_state_dict: {acc} has shape "
                                     f"{list(t.shape)}, the parameter {s}")
                parts.append(t)
        return gather(parts, b.store).clone()  # the updates write it in place: never the caller's

    # ---- state -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Paddle's layout: '{param}_{accumulator}_0' -> Tensor (moments in the parameter's
        shape, beta pows as [1] tensors: float64 for float64
        parameters, else float32, as Paddle keeps them), 'master_weights' -> {param: float32 Tensor}
        under multi_precision, 'LR_Scheduler' -> the scheduler's state. Tensors are
        snapshots (copies: the next step updates the optimizer's own in place)."""
        state: dict[str, Any] = {k: v for k, v in self._holder.items() if k != "master_weights"}
        masters: dict[str, Any] = dict(self._holder.get("master_weights", {}))
        for buckets in self._buckets.values():
            for b in buckets:
                for acc, t in b.states.items():
                    for n, v in zip(b.names, b.views(t.clone()), strict=True):
                        state[f"{n}_{acc}_0"] = v
                pow_dtype = np.float64 if b.compute == DType.float64 else np.float32
                for acc, val in b.pows.items():
                    for n in b.names:
                        state[f"{n}_{acc}_0"] = to_tensor(np.array([val], pow_dtype),
                                                          place=b.place)
                if b.master is not None:
                    masters.update(zip(b.names, b.views(b.master.clone()), strict=True))
        if masters:
            state["master_weights"] = masters
        if isinstance(self._learning_rate, LRScheduler):
            state["LR_Scheduler"] = self._learning_rate.state_dict()
        return state

    def set_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads what state_dict() gave (also Paddle's own keys); states of parameters not in
        it are kept."""
        if isinstance(self._learning_rate, LRScheduler):
            lr_state = state_dict.get("LR_Scheduler")
            if lr_state:
                self._learning_rate.set_state_dict(lr_state)
        current = self.state_dict()
        current.pop("LR_Scheduler", None)
        incoming = {k: v for k, v in state_dict.items() if k != "LR_Scheduler"}
        masters = dict(current.pop("master_weights", {}))
        masters.update(incoming.pop("master_weights", {}))
        current.update(incoming)
        if masters:
            current["master_weights"] = masters
        self._holder = current
        self._buckets = {}  # rebuilt from the holder at the next step

    load_state_dict = set_state_dict
