"""Sequential, LayerList, LayerDict: sublayers named by position or key (`head.0.weight`)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from hwport.nn.layer import Layer

__all__ = ["LayerDict", "LayerList", "Sequential"]


def _layer(fn: str, value: Any) -> Layer:
    if not isinstance(value, Layer):
        raise TypeError(f"{fn}: expected a Layer, got {type(value).__name__}")
    return value


def _index(fn: str, n: int, idx: Any) -> int:
    if isinstance(idx, bool) or not hasattr(idx, "__index__"):
        raise TypeError(f"{fn}: index must be an int or a slice, got {type(idx).__name__}")
    i = int(idx)
    if not -n <= i < n:
        raise IndexError(f"{fn}: index {i} is out of range for {n} layers")
    return i + n if i < 0 else i


class Sequential(Layer):
    """Runs its layers in order. Sequential(l0, l1, ...) names them 0, 1, ...;
    Sequential(('a', l0), ('b', l1)) or Sequential(OrderedDict) by the given names."""

    def __init__(self, *layers: Any) -> None:
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], OrderedDict):
            items: Iterable[Any] = layers[0].items()
        else:
            items = layers
        for i, item in enumerate(items):
            if isinstance(item, (tuple, list)):
                if len(item) != 2 or not isinstance(item[0], str):
                    raise TypeError("Sequential: a named entry must be a (str, Layer) pair, "
                                    f"got {item!r}")
                self.add_sublayer(item[0], _layer("Sequential", item[1]))
            else:
                self.add_sublayer(str(i), _layer("Sequential", item))

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, str):
            return self._sub_layers[idx]
        layers = list(self._sub_layers.values())
        if isinstance(idx, slice):
            return Sequential(*layers[idx])
        return layers[_index("Sequential", len(layers), idx)]

    def __setitem__(self, idx: Any, layer: Layer) -> None:
        keys = list(self._sub_layers)
        key = idx if isinstance(idx, str) else keys[_index("Sequential", len(keys), idx)]
        self._sub_layers[key] = _layer("Sequential", layer)

    def __delitem__(self, idx: Any) -> None:
        keys = list(self._sub_layers)
        if isinstance(idx, slice):
            for key in keys[idx]:
                del self._sub_layers[key]
            return
        key = idx if isinstance(idx, str) else keys[_index("Sequential", len(keys), idx)]
        del self._sub_layers[key]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(list(self._sub_layers.values()))

    def append(self, layer: Layer) -> Sequential:
        self.add_sublayer(str(len(self._sub_layers)), _layer("Sequential.append", layer))
        return self

    def forward(self, input: Any) -> Any:
        for layer in self._sub_layers.values():
            input = layer(input)
        return input


class LayerList(Layer):
    """A list of sublayers named 0, 1, ... (indexing, append, insert, extend, iteration)."""

    def __init__(self, sublayers: Iterable[Layer] | None = None) -> None:
        super().__init__()
        if sublayers is not None:
            self.extend(sublayers)

    def _renumber(self, layers: list[Layer]) -> None:
        self._sub_layers.clear()
        for i, layer in enumerate(layers):
            self._sub_layers[str(i)] = layer

    def __getitem__(self, idx: Any) -> Any:
        layers = list(self._sub_layers.values())
        if isinstance(idx, slice):
            return LayerList(layers[idx])
        return layers[_index("LayerList", len(layers), idx)]

    def __setitem__(self, idx: Any, layer: Layer) -> None:
        i = _index("LayerList", len(self), idx)
        self._sub_layers[str(i)] = _layer("LayerList", layer)

    def __delitem__(self, idx: Any) -> None:
        layers = list(self._sub_layers.values())
        if isinstance(idx, slice):
            del layers[idx]
        else:
            del layers[_index("LayerList", len(layers), idx)]
        self._renumber(layers)

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[Layer]:
        return iter(list(self._sub_layers.values()))

    def append(self, sublayer: Layer) -> LayerList:
        self.add_sublayer(str(len(self)), _layer("LayerList.append", sublayer))
        return self

    def insert(self, index: int, sublayer: Layer) -> None:
        layers = list(self._sub_layers.values())
        n = len(layers)
        if isinstance(index, bool) or not hasattr(index, "__index__"):
            raise TypeError(f"LayerList.insert: index must be an int, got "
                            f"{type(index).__name__}")
        if not -n <= int(index) <= n:
            raise IndexError(f"LayerList.insert: index {index} is out of range for {n} layers")
        layers.insert(int(index), _layer("LayerList.insert", sublayer))
        self._renumber(layers)

    def extend(self, sublayers: Iterable[Layer]) -> LayerList:
        if isinstance(sublayers, Layer) and not isinstance(sublayers, (LayerList, Sequential)):
            raise TypeError("LayerList.extend: expected an iterable of Layers, got a Layer")
        for layer in sublayers:
            self.append(layer)
        return self


class LayerDict(Layer):
    """An ordered dict of sublayers named by their keys."""

    def __init__(self, sublayers: Any = None) -> None:
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key: str) -> Layer:
        return self._sub_layers[key]

    def __setitem__(self, key: str, sublayer: Layer) -> None:
        self.add_sublayer(key, _layer("LayerDict", sublayer))

    def __delitem__(self, key: str) -> None:
        del self._sub_layers[key]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._sub_layers))

    def __contains__(self, key: object) -> bool:
        return key in self._sub_layers

    def clear(self) -> None:
        self._sub_layers.clear()

    def pop(self, key: str) -> Layer:
        return self._sub_layers.pop(key)

    def keys(self) -> Any:
        return self._sub_layers.keys()

    def items(self) -> Any:
        return self._sub_layers.items()

    def values(self) -> Any:
        return self._sub_layers.values()

    def update(self, sublayers: Any) -> None:
        if isinstance(sublayers, (Mapping, LayerDict)):
            pairs = list(sublayers.items())
        else:
            pairs = []
            for item in sublayers:
                if not isinstance(item, (tuple, list)) or len(item) != 2:
                    raise TypeError(f"LayerDict.update: expected (key, Layer) pairs, got "
                                    f"{item!r}")
                pairs.append(tuple(item))
        for key, layer in pairs:
            if not isinstance(key, str):
                raise TypeError(f"LayerDict: keys must be str, got {type(key).__name__}")
            self[key] = layer
