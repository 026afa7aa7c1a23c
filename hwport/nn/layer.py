"""nn.Layer as Paddle has it: parameters, sublayers and buffers registered by attribute
assignment, structured names (`blocks.0.qkv.weight`), train/eval, state dicts, hooks, to()."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from hwport.nn import parameter as _param
from hwport.nn.parameter import Parameter
from hwport.runtime import _core
from hwport.runtime._core import Tensor

__all__ = ["HookRemoveHelper", "Layer"]


class HookRemoveHelper:
    """What register_forward_*_hook returns: remove() unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: OrderedDict[int, Any]) -> None:
        self._hooks = hooks
        self._hook_id = HookRemoveHelper._next_id
        HookRemoveHelper._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self._hook_id, None)


# Bumped whenever any layer's set of parameters, buffers or sublayers changes (an object put
# in or taken out): jit.to_static's programs bind parameter objects and check them again then.
structure_epoch = [0]


def _check_name(fn: str, name: Any) -> str:
    if not isinstance(name, str):
        raise TypeError(f"{fn}: name must be a str, got {type(name).__name__}")
    if name == "" or "." in name:
        raise KeyError(f"{fn}: name must be a non-empty str without '.', got {name!r}")
    return name


class Layer:
    """The base of every layer. Subclasses define forward(); calling the layer runs the
    forward pre-hooks, forward, then the post-hooks."""

    training: bool

    def __init__(self, name_scope: str | None = None, dtype: Any = "float32") -> None:
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_sub_layers"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistable_buffer_names_set"] = set()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_post_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = set()
        d["_forward_post_hooks_with_kwargs"] = set()
        scope = name_scope if name_scope is not None else _param.snake_case(type(self).__name__)
        d["_full_name"] = _param.unique_name(scope)
        d["_dtype"] = dtype

    def _layer_state(self, fn: str) -> None:
        if "_parameters" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}.{fn}: Layer.__init__ was not called; "
                               "call super().__init__() first in the subclass's __init__")

    # ---- naming ------------------------------------------------------------------------
    def full_name(self) -> str:
        """The layer's unique name, e.g. 'linear_0' (its parameters are 'linear_0.w_0')."""
        return self._full_name

    # ---- creation ----------------------------------------------------------------------
    def create_parameter(self, shape: Any, attr: Any = None, dtype: Any = None,
                         is_bias: bool = False, default_initializer: Any = None,
                         device: Any = None) -> Any:
        """A Parameter of `shape` (not yet registered: assign it to an attribute). The
        initializer: attr's, else default_initializer, else XavierUniform (is_bias: 0).
        attr=False gives None (no parameter), as in Paddle."""
        if attr is False:
            return None
        if dtype is None:
            dtype = self._dtype
        return _param.make_parameter("create_parameter", shape, dtype, attr, is_bias,
                                     default_initializer, device, self._full_name)

    def add_parameter(self, name: str, parameter: Any) -> Any:
        self._layer_state("add_parameter")
        _check_name("add_parameter", name)
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"add_parameter: parameter {name!r} must be a Parameter (from "
                            f"create_parameter) or None, got {type(parameter).__name__}")
        if name in self.__dict__ and name not in self._parameters:
            raise KeyError(f"add_parameter: {name!r} is already an attribute of "
                           f"{type(self).__name__}")
        self._sub_layers.pop(name, None)
        self._buffers.pop(name, None)
        self._parameters[name] = parameter
        structure_epoch[0] += 1
        return parameter

    def add_sublayer(self, name: str, sublayer: Layer | None) -> Layer | None:
        self._layer_state("add_sublayer")
        if not isinstance(name, str):
            raise TypeError(f"add_sublayer: name must be a str, got {type(name).__name__}")
        if sublayer is not None and not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer: sublayer {name!r} must be a Layer or None, got "
                            f"{type(sublayer).__name__}")
        self._parameters.pop(name, None)
        self._buffers.pop(name, None)
        self._sub_layers[name] = sublayer
        structure_epoch[0] += 1
        return sublayer

    def register_buffer(self, name: str, tensor: Tensor | None,
                        persistable: bool = True) -> None:
        """A tensor the layer owns that is not a parameter (persistable: in state_dict)."""
        self._layer_state("register_buffer")
        _check_name("register_buffer", name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: tensor {name!r} must be a hwport.Tensor or "
                            f"None, got {type(tensor).__name__}")
        if name in self.__dict__ or name in self._parameters or name in self._sub_layers:
            raise KeyError(f"register_buffer: {name!r} is already an attribute, parameter or "
                           f"sublayer of {type(self).__name__}")
        self._buffers[name] = tensor
        structure_epoch[0] += 1
        if persistable:
            self._non_persistable_buffer_names_set.discard(name)
        else:
            self._non_persistable_buffer_names_set.add(name)

    # ---- attribute registration ----------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if isinstance(value, Parameter | Layer | Tensor) or name in d.get("_parameters", ()) \
                or name in d.get("_sub_layers", ()) or name in d.get("_buffers", ()):
            structure_epoch[0] += 1
        if isinstance(value, Parameter):
            if "_parameters" not in d:
                raise RuntimeError(f"{type(self).__name__}: call super().__init__() before "
                                   "assigning parameters")
            d.pop(name, None)
            d["_sub_layers"].pop(name, None)
            d["_buffers"].pop(name, None)
            d["_parameters"][name] = value
        elif isinstance(value, Layer):
            if "_sub_layers" not in d:
                raise RuntimeError(f"{type(self).__name__}: call super().__init__() before "
                                   "assigning sublayers")
            d.pop(name, None)
            d["_parameters"].pop(name, None)
            d["_buffers"].pop(name, None)
            d["_sub_layers"][name] = value
        elif "_parameters" in d and name in d["_parameters"]:
            if value is not None:
                raise TypeError(f"{type(self).__name__}.{name} is a parameter: assign a "
                                f"Parameter or None, got {type(value).__name__}")
            d["_parameters"][name] = None
        elif "_sub_layers" in d and name in d["_sub_layers"]:
            if value is not None:
                raise TypeError(f"{type(self).__name__}.{name} is a sublayer: assign a Layer "
                                f"or None, got {type(value).__name__}")
            d["_sub_layers"][name] = None
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"{type(self).__name__}.{name} is a buffer: assign a Tensor "
                                f"or None, got {type(value).__name__}")
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_sub_layers", "_buffers"):
            entries = d.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_sub_layers", "_buffers"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                del entries[name]
                self._non_persistable_buffer_names_set.discard(name)
                structure_epoch[0] += 1
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = list(super().__dir__())
        for table in ("_parameters", "_sub_layers", "_buffers"):
            keys += list(self.__dict__.get(table, {}))
        return sorted(set(keys))

    # ---- traversal -------------------------------------------------------------------------
    def named_sublayers(self, prefix: str = "", include_self: bool = False,
                        layers_set: set[Layer] | None = None,
                        remove_duplicate: bool = True) -> Iterator[tuple[str, Layer]]:
        """(structured name, layer) for every sublayer, depth first in registration order."""
        self._layer_state("named_sublayers")
        seen: set[int] = set() if layers_set is None else {id(x) for x in layers_set}
        yield from self._walk(prefix, include_self, seen, remove_duplicate)

    def _walk(self, prefix: str, include_self: bool, seen: set[int],
              remove_duplicate: bool) -> Iterator[tuple[str, Layer]]:
        if include_self and not (remove_duplicate and id(self) in seen):
            seen.add(id(self))
            yield prefix, self
        for key, layer in self._sub_layers.items():
            if layer is None:
                continue
            name = f"{prefix}.{key}" if prefix else key
            yield from layer._walk(name, True, seen, remove_duplicate)

    def sublayers(self, include_self: bool = False) -> list[Layer]:
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self) -> Iterator[tuple[str, Layer]]:
        seen: set[int] = set()
        for key, layer in self._sub_layers.items():
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                yield key, layer

    def children(self) -> Iterator[Layer]:
        for _, layer in self.named_children():
            yield layer

    def _named_members(self, table: str, prefix: str, include_sublayers: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        self._layer_state("named_parameters")
        seen: set[int] = set()
        layers = (self.named_sublayers(prefix=prefix, include_self=True,
                                       remove_duplicate=remove_duplicate)
                  if include_sublayers else iter([(prefix, self)]))
        for layer_prefix, layer in layers:
            for key, value in getattr(layer, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{layer_prefix}.{key}" if layer_prefix else key), value

    def named_parameters(self, prefix: str = "", include_sublayers: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        """(structured name, parameter): the layer's own first, then each sublayer's."""
        yield from self._named_members("_parameters", prefix, include_sublayers,
                                       remove_duplicate)

    def parameters(self, include_sublayers: bool = True) -> list[Any]:
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix: str = "", include_sublayers: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, include_sublayers,
                                       remove_duplicate)

    def buffers(self, include_sublayers: bool = True) -> list[Tensor]:
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn: Callable[[Layer], None]) -> Layer:
        """fn(layer) for every sublayer, then for this layer."""
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    # ---- modes -------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Layer:
        """Training mode for this layer and every sublayer (Dropout drops)."""
        if not isinstance(mode, bool):
            raise TypeError(f"train: mode must be a bool, got {type(mode).__name__}")
        for layer in self.sublayers(include_self=True):
            layer.__dict__["training"] = mode
        return self

    def eval(self) -> Layer:
        return self.train(False)

    # ---- hooks -------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> HookRemoveHelper:
        """hook(layer, inputs) -> None or new inputs (a tuple, or one value); with_kwargs:
        hook(layer, inputs, kwargs) -> None or (inputs, kwargs)."""
        return self._add_hook("register_forward_pre_hook", self._forward_pre_hooks,
                              self._forward_pre_hooks_with_kwargs, hook, prepend, with_kwargs)

    def register_forward_post_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                   with_kwargs: bool = False,
                                   always_call: bool = False) -> HookRemoveHelper:
        """hook(layer, inputs, output) -> None or a new output; with_kwargs: hook(layer,
        inputs, kwargs, output). always_call: also run when forward raised (output None)."""
        handle = self._add_hook("register_forward_post_hook", self._forward_post_hooks,
                                self._forward_post_hooks_with_kwargs, hook, prepend,
                                with_kwargs)
        if always_call:
            self.__dict__.setdefault("_forward_post_always", set()).add(handle._hook_id)
        return handle

    @staticmethod
    def _add_hook(fn: str, hooks: OrderedDict[int, Any], kw: set[int], hook: Any,
                  prepend: bool, with_kwargs: bool) -> HookRemoveHelper:
        if not callable(hook):
            raise TypeError(f"{fn}: hook must be callable, got {type(hook).__name__}")
        handle = HookRemoveHelper(hooks)
        hooks[handle._hook_id] = hook
        if prepend:
            hooks.move_to_end(handle._hook_id, last=False)
        if with_kwargs:
            kw.add(handle._hook_id)
        return handle

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        self._layer_state("__call__")
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, inputs, kwargs)
                if result is not None:
                    inputs, kwargs = result
                    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
            else:
                result = hook(self, inputs)
                if result is not None:
                    inputs = result if isinstance(result, tuple) else (result,)
        always = self.__dict__.get("_forward_post_always", set())
        try:
            output = self.forward(*inputs, **kwargs)
        except BaseException:
            for hook_id, hook in list(self._forward_post_hooks.items()):
                if hook_id in always:
                    self._run_post(hook_id, hook, inputs, kwargs, None)
            raise
        for hook_id, hook in list(self._forward_post_hooks.items()):
            result = self._run_post(hook_id, hook, inputs, kwargs, output)
            if result is not None:
                output = result
        return output

    def _run_post(self, hook_id: int, hook: Any, inputs: Any, kwargs: Any, output: Any) -> Any:
        if hook_id in self._forward_post_hooks_with_kwargs:
            return hook(self, inputs, kwargs, output)
        return hook(self, inputs, output)

    # ---- state -------------------------------------------------------------------------------
    def _state_entries(self, prefix: str,
                       include_sublayers: bool) -> Iterator[tuple[str, Layer, str, str]]:
        """(structured name, owning layer, local name, table) of every parameter and
        persistable buffer, as Paddle lists them: no deduplication (a tied or shared tensor
        appears under each of its names)."""
        layers = (self.named_sublayers(prefix=prefix, include_self=True,
                                       remove_duplicate=False)
                  if include_sublayers else iter([(prefix, self)]))
        for layer_prefix, layer in layers:
            for table in ("_parameters", "_buffers"):
                for key, value in getattr(layer, table).items():
                    if value is None or (table == "_buffers" and
                                         key in layer._non_persistable_buffer_names_set):
                        continue
                    name = f"{layer_prefix}.{key}" if layer_prefix else key
                    yield name, layer, key, table

    def state_dict(self, destination: Any = None, include_sublayers: bool = True,
                   structured_name_prefix: str = "", use_hook: bool = True,
                   keep_vars: bool = True) -> OrderedDict[str, Tensor]:
        """Structured name -> tensor: each layer's parameters, then its persistable buffers,
        then its sublayers'. The values are the layer's own tensors (keep_vars); a tied
        tensor appears under each name (as in Paddle)."""
        self._layer_state("state_dict")
        out: OrderedDict[str, Tensor] = OrderedDict() if destination is None else destination
        for name, layer, key, table in self._state_entries(structured_name_prefix.rstrip("."),
                                                           include_sublayers):
            out[name] = getattr(layer, table)[key]
        return out

    def set_state_dict(self, state_dict: Any,
                       use_structured_name: bool = True) -> tuple[list[str], list[str]]:
        """Copies the values of `state_dict` (Tensors or numpy arrays) into the layer's
        parameters and persistable buffers, cast to their dtypes. Returns (missing_keys,
        unexpected_keys). A value whose shape differs is a ValueError (Paddle warns and skips
        it). use_structured_name=False matches parameters by their `name` instead. The values
        are written into the layer's tensors (Tensor.set_value): the objects stay, so an
        optimizer made before keeps its references."""
        self._layer_state("set_state_dict")
        if not hasattr(state_dict, "items"):
            raise TypeError(f"set_state_dict: state_dict must be a dict of name -> Tensor, "
                            f"got {type(state_dict).__name__}")
        owners: dict[str, tuple[Layer, str, str]] = {}
        for structured, layer, key, table in self._state_entries("", True):
            name = structured
            if not use_structured_name:
                name = getattr(getattr(layer, table)[key], "name", None) or structured
            owners.setdefault(name, (layer, key, table))
        missing = [k for k in owners if k not in state_dict]
        unexpected = [k for k in state_dict if k not in owners]
        for key, (layer, local, table) in owners.items():
            if key not in state_dict:
                continue
            current = getattr(layer, table)[local]
            with _param.no_grad():
                _param.set_value(current, _as_value(key, state_dict[key], current))
        return missing, unexpected

    def _replace(self, updates: dict[int, tuple[Tensor, Tensor]]) -> None:
        """Every reference (in any sublayer) to an old tensor now holds its new value; a
        parameter stays a Parameter with its name and attributes."""
        if not updates:
            return
        structure_epoch[0] += 1
        made: dict[int, Tensor] = {}
        for layer in self.sublayers(include_self=True):
            for table in ("_parameters", "_buffers"):
                entries = getattr(layer, table)
                for key, value in list(entries.items()):
                    if value is None or id(value) not in updates:
                        continue
                    if id(value) not in made:
                        old, new = updates[id(value)]
                        made[id(value)] = (_param.copy_attrs(old, new)
                                           if isinstance(old, Parameter) else new)
                    entries[key] = made[id(value)]

    load_dict = set_state_dict
    set_dict = set_state_dict

    def clear_gradients(self, set_to_zero: bool = True) -> None:
        """Clears the gradient of every parameter (Tensor.clear_grad, once autograd has it;
        set_to_zero is accepted for Paddle compatibility)."""
        for p in self.parameters():
            clear = getattr(p, "clear_grad", None)
            if clear is not None:
                clear()

    # ---- placement -------------------------------------------------------------------------
    def to(self, device: Any = None, dtype: Any = None, blocking: bool | None = None,
           non_blocking: bool | None = None) -> Layer:
        """Moves every parameter and buffer to `device` and/or casts the floating ones to
        `dtype`. The parameters are rebuilt (new Parameter objects with the same names and
        attributes): make the optimizer after to()."""
        self._layer_state("to")
        place = None if device is None else _core.resolve_place(device)
        target = None if dtype is None else _core.parse_dtype(dtype, "Layer.to", "dtype")
        if target is not None and str(target) not in ("float16", "bfloat16", "float32",
                                                      "float64"):
            raise TypeError(f"Layer.to: dtype must be a float dtype, got {target}")
        updates: dict[int, tuple[Tensor, Tensor]] = {}
        with _param.no_grad():
            self._moves(place, target, updates)
        self._replace(updates)
        return self

    def _moves(self, place: Any, target: Any, updates: dict[int, tuple[Tensor, Tensor]],
               excluded: tuple[type, ...] = ()) -> None:
        for layer in self.sublayers(include_self=True):
            if type(layer) in excluded:
                continue
            for table in ("_parameters", "_buffers"):
                for value in getattr(layer, table).values():
                    if value is None or id(value) in updates:
                        continue
                    moved = value
                    if target is not None and _is_float(moved) and moved.dtype != target:
                        moved = moved.astype(target)
                    if place is not None and moved.place != place:
                        moved = moved.to(place)
                    if moved is not value:
                        updates[id(value)] = (value, moved)
            if target is not None:
                layer.__dict__["_dtype"] = str(target)

    def _cast_floats(self, fn: str, dtype: str, excluded_layers: Any) -> Layer:
        """The floating parameters and buffers of every sublayer (and self) whose type is not
        in excluded_layers (a Layer subclass or a list/tuple of them, as Paddle matches
        `type(layer) in excluded_layers`) cast to dtype; as to(), the parameters are rebuilt."""
        self._layer_state(fn)
        if excluded_layers is None:
            excluded: tuple[type, ...] = ()
        elif isinstance(excluded_layers, type):
            excluded = (excluded_layers,)
        elif isinstance(excluded_layers, (list, tuple)):
            excluded = tuple(excluded_layers)
        else:
            raise TypeError(f"Layer.{fn}: excluded_layers must be a Layer class or a list of "
                            f"them, got {type(excluded_layers).__name__}")
        for cls in excluded:
            if not (isinstance(cls, type) and issubclass(cls, Layer)):
                raise TypeError(f"Layer.{fn}: excluded_layers must hold Layer classes (such as "
                                f"nn.LayerNorm), got {cls!r}")
        target = _core.parse_dtype(dtype, f"Layer.{fn}", "dtype")
        updates: dict[int, tuple[Tensor, Tensor]] = {}
        with _param.no_grad():
            self._moves(None, target, updates, excluded)
        self._replace(updates)
        return self

    def float(self, excluded_layers: Any = None) -> Layer:
        """Floating parameters and buffers to float32, except in layers of excluded_layers."""
        return self._cast_floats("float", "float32", excluded_layers)

    def float16(self, excluded_layers: Any = None) -> Layer:
        """Floating parameters and buffers to float16, except in layers of excluded_layers."""
        return self._cast_floats("float16", "float16", excluded_layers)

    def bfloat16(self, excluded_layers: Any = None) -> Layer:
        """Floating parameters and buffers to bfloat16, except in layers of excluded_layers."""
        return self._cast_floats("bfloat16", "bfloat16", excluded_layers)

    def double(self) -> Layer:
        """Floating parameters and buffers to float64."""
        return self._cast_floats("double", "float64", None)

    def half(self) -> Layer:
        """Floating parameters and buffers to float16."""
        return self._cast_floats("half", "float16", None)

    def astype(self, dtype: Any = None) -> Layer:
        """Casts the floating parameters and buffers to dtype (Paddle's signature: dtype has a
        default of None, which Paddle refuses too)."""
        if dtype is None:
            raise ValueError("Layer.astype: dtype must be a float dtype such as 'float32' or "
                             "hwport.float16, got None")
        return self.to(dtype=dtype)

    # ---- repr --------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        for key, layer in self._sub_layers.items():
            body = repr(layer).replace("\n", "\n  ")
            lines.append(f"  ({key}): {body}")
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n" + "\n".join(lines) + "\n)"


def _is_float(t: Tensor) -> bool:
    return str(t.dtype) in ("float16", "bfloat16", "float32", "float64")


def _as_value(key: str, value: Any, current: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        if list(value.shape) != list(current.shape):
            raise ValueError(f"set_state_dict: {key!r} has shape {list(value.shape)} but the "
                             f"layer's tensor has shape {list(current.shape)}")
        out = value if value.dtype == current.dtype else value.astype(current.dtype)
        return out if out.place == current.place else out.to(current.place)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        arr = None
    if arr is None or (arr.dtype.kind not in "biuf" and arr.dtype.name != "bfloat16"):
        raise TypeError(f"set_state_dict: {key!r} must be a Tensor or a numeric numpy array, "
                        f"got {type(value).__name__}")
    if list(arr.shape) != list(current.shape):
        raise ValueError(f"set_state_dict: {key!r} has shape {list(arr.shape)} but the layer's "
                         f"tensor has shape {list(current.shape)}")
    arr = arr.astype(current.dtype.to_numpy(), order="C")
    return _core.from_numpy(arr, current.place)
