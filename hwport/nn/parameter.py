"""Parameters: `Parameter` (a Tensor with Paddle's `name`, `trainable`, `stop_gradient=False`),
`ParamAttr`, and the module-level `create_parameter`.

Parameter is a Python subclass of hwport.Tensor made with `Tensor(other)`: the new object
shares `other`'s storage and starts without gradient history (a leaf)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from hwport.runtime import _core
from hwport.runtime._core import Tensor

__all__ = ["ParamAttr", "Parameter", "create_parameter", "unique_name"]


class Parameter(Tensor):
    """A trainable tensor of a Layer: the data of `data` (shared, Tensor(other)) with
    `name` (unique, e.g. 'linear_0.w_0'), `trainable` (setting it sets
    `stop_gradient = not trainable`; a new Parameter has stop_gradient False), `persistable`
    (True: in state dicts), `optimize_attr` ({'learning_rate': ...}), `regularizer`,
    `need_clip`."""

    def __init__(self, data: Tensor, name: str | None = None, trainable: bool = True,
                 **kwargs: Any) -> None:
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be a hwport.Tensor, got "
                            f"{type(data).__name__}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Parameter: name must be a str or None, got {type(name).__name__}")
        Tensor.__init__(self, data)
        self.name = name if name is not None else unique_name("param")
        self.trainable = bool(trainable)
        self.persistable = True
        self.optimize_attr = dict(kwargs.get("optimize_attr", {"learning_rate": 1.0}))
        self.regularizer = kwargs.get("regularizer")
        self.need_clip = bool(kwargs.get("need_clip", True))

    # Kept in the instance's __dict__, as properties so that a Tensor property of the same
    # name can never make them read-only.
    name = property(lambda self: self.__dict__.get("_name"),
                    lambda self, v: self.__dict__.__setitem__("_name", v))
    persistable = property(lambda self: self.__dict__.get("_persistable", True),
                           lambda self, v: self.__dict__.__setitem__("_persistable", bool(v)))

    @property
    def trainable(self) -> bool:
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self.__dict__["_trainable"] = bool(value)
        self.stop_gradient = not value

    def __repr__(self) -> str:
        return f"Parameter containing:\n{Tensor.__repr__(self)}"


def copy_attrs(src: Any, dst: Tensor) -> Any:
    """A Parameter over `dst` carrying `src`'s attributes (name, trainable, ...)."""
    p = Parameter(dst, name=src.name, trainable=src.trainable,
                  optimize_attr=getattr(src, "optimize_attr", {"learning_rate": 1.0}),
                  need_clip=getattr(src, "need_clip", True))
    p.stop_gradient = src.stop_gradient
    return p


def no_grad() -> Any:
    from hwport.autograd import no_grad as _no_grad

    return _no_grad()


def set_value(target: Tensor, value: Any) -> None:
    """Copies `value` into `target`'s memory, outside autograd (Tensor.set_value)."""
    with no_grad():
        target.set_value(value)


# ---- unique names (Paddle's unique_name.generate) -----------------------------------------
_counters: dict[str, int] = {}


def unique_name(key: str) -> str:
    """key_0, key_1, ...: a process-wide counter per key (as Paddle names layers and
    parameters: linear_0, linear_0.w_0)."""
    n = _counters.get(key, 0)
    _counters[key] = n + 1
    return f"{key}_{n}"


def snake_case(name: str) -> str:
    """MultiHeadAttention -> multi_head_attention (Paddle's name scope of a Layer class)."""
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


# ---- ParamAttr ------------------------------------------------------------------------------
class ParamAttr:
    """Paddle's ParamAttr: how create_parameter makes a parameter (name, initializer,
    learning rate, trainable). regularizer, do_model_average, need_clip are kept for the
    optimizer to read."""

    def __init__(self, name: str | None = None, initializer: Any = None,
                 learning_rate: float = 1.0, regularizer: Any = None, trainable: bool = True,
                 do_model_average: bool = True, need_clip: bool = True) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"ParamAttr: name must be a str or None, got {type(name).__name__}")
        if initializer is not None and not callable(getattr(initializer, "generate", None)):
            raise TypeError("ParamAttr: initializer must be an hwport.nn.initializer "
                            f"Initializer, got {type(initializer).__name__}")
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.do_model_average = do_model_average
        self.need_clip = need_clip

    @staticmethod
    def _to_attr(arg: Any, fn: str = "create_parameter") -> ParamAttr | bool:
        """None -> ParamAttr(); str -> ParamAttr(name=arg); an initializer -> ParamAttr(
        initializer=arg); False stays False (no parameter)."""
        if arg is None:
            return ParamAttr()
        if arg is False:
            return False
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if callable(getattr(arg, "generate", None)):
            return ParamAttr(initializer=arg)
        raise TypeError(f"{fn}: attr must be a ParamAttr, a name, an initializer, False or "
                        f"None, got {type(arg).__name__}")

    def __repr__(self) -> str:
        return (f"ParamAttr(name={self.name!r}, initializer={self.initializer!r}, "
                f"learning_rate={self.learning_rate}, trainable={self.trainable})")


# ---- creation --------------------------------------------------------------------------------
def _check_shape(fn: str, shape: Any) -> list[int]:
    if isinstance(shape, Tensor):
        shape = shape.numpy().tolist()
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = [int(shape)]
    if not isinstance(shape, Sequence) or isinstance(shape, str):
        raise TypeError(f"{fn}: shape must be a list or tuple of ints, got "
                        f"{type(shape).__name__}")
    out = []
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{fn}: shape must be a list or tuple of ints, got {list(shape)!r}")
        if d < 0:
            raise ValueError(f"{fn}: shape must not have negative dimensions, got "
                             f"{list(shape)!r}")
        out.append(int(d))
    return out


def default_dtype() -> Any:
    import hwport

    get = getattr(hwport, "get_default_dtype", None)
    return _core.parse_dtype(get() if get is not None else "float32", "create_parameter",
                             "dtype")


def make_parameter(fn: str, shape: Any, dtype: Any, attr: Any, is_bias: bool,
                   default_initializer: Any, place: Any, name_key: str) -> Any:
    """The one path of Layer.create_parameter and hwport.create_parameter: the initializer
    is attr.initializer, else default_initializer, else XavierUniform (weights) / zeros
    (biases), Paddle's defaults."""
    from hwport.nn import initializer as init

    dims = _check_shape(fn, shape)
    dt = default_dtype() if dtype is None else _core.parse_dtype(dtype, fn, "dtype")
    pattr = ParamAttr._to_attr(attr, fn)
    if pattr is False:
        raise ValueError(f"{fn}: attr=False means no parameter; the caller must not create one")
    assert isinstance(pattr, ParamAttr)
    if default_initializer is not None and not callable(getattr(default_initializer,
                                                                "generate", None)):
        raise TypeError(f"{fn}: default_initializer must be an hwport.nn.initializer "
                        f"Initializer, got {type(default_initializer).__name__}")
    chosen = pattr.initializer or default_initializer
    if chosen is None:
        chosen = init.Constant(0.0) if is_bias else init.XavierUniform()
    value = chosen.generate(dims, dt, _core.resolve_place(place))
    name = pattr.name or unique_name(f"{name_key}.{'b' if is_bias else 'w'}")
    return Parameter(value, name=name, trainable=pattr.trainable,
                     optimize_attr={"learning_rate": pattr.learning_rate},
                     regularizer=pattr.regularizer, need_clip=pattr.need_clip)


def create_parameter(shape: Any, dtype: Any, name: str | None = None, attr: Any = None,
                     is_bias: bool = False, default_initializer: Any = None) -> Any:
    """Paddle's paddle.create_parameter: a Parameter of `shape` and `dtype` on the current
    device, initialized by attr's initializer, else default_initializer, else XavierUniform
    (is_bias: zeros)."""
    pattr = ParamAttr._to_attr(attr, "create_parameter")
    if pattr is False:
        raise ValueError("create_parameter: attr must not be False")
    assert isinstance(pattr, ParamAttr)
    if name is not None and pattr.name is None:
        pattr = ParamAttr(name=name, initializer=pattr.initializer,
                          learning_rate=pattr.learning_rate, regularizer=pattr.regularizer,
                          trainable=pattr.trainable, need_clip=pattr.need_clip)
    return make_parameter("create_parameter", shape, dtype, pattr, is_bias,
                          default_initializer, None,
                          unique_name("create_parameter") if pattr.name is None else "")
