"""Nested arguments and results as flat leaves: tuples, lists and dicts are structure;
tensors and every other value are leaves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def flatten(obj: Any, leaves: list[Any]) -> Any:
    """obj's structure with each leaf replaced by its index in `leaves` (appended to)."""
    if isinstance(obj, tuple | list):
        return (type(obj), [flatten(v, leaves) for v in obj])
    if isinstance(obj, dict):
        return (dict, [(k, flatten(v, leaves)) for k, v in obj.items()])
    leaves.append(obj)
    return len(leaves) - 1


def unflatten(tree: Any, leaves: Sequence[Any]) -> Any:
    if isinstance(tree, int):
        return leaves[tree]
    kind, items = tree
    if kind is dict:
        return {k: unflatten(v, leaves) for k, v in items}
    return kind(unflatten(v, leaves) for v in items)
