"""Basic indexing while a pipeline layer is active (hwport/indexing.py _by_ops): the same view
values as without layers for every form (ints, negative ints, slices with any step, None,
Ellipsis), and the layers see it as op calls (slice, squeeze, unsqueeze)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import hwport
from hwport.runtime import _core

PLACE = "custom:cpu"


class Names:
    def __init__(self) -> None:
        self.ops: list[str] = []

    def on_call(self, call, next):
        self.ops.append(call.op)
        return next(call)


def _indexed_under_a_layer(t, key):
    seen = Names()
    _core.register_layer("trace", seen)
    _core.layer_enter("trace")
    try:
        out = t[key]
    finally:
        _core.layer_leave("trace")
        _core.register_layer("trace", None)
    return out, seen.ops


ARR = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)
PARTS = [0, -1, 1, slice(None), slice(1, None), slice(None, None, -1), slice(4, 0, -2),
         slice(-2, None, 2), slice(3, 1), None]
KEYS = (list(PARTS) + list(itertools.product(PARTS, repeat=2))
        + [(Ellipsis, 1), (None, Ellipsis, slice(None, None, -2)), (1, None, 2, slice(0, 3))])


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_values_equal_the_unlayered_view_and_numpy(key):
    t = hwport.to_tensor(ARR, place=PLACE)
    try:
        want = ARR[key]
    except IndexError:
        with pytest.raises(IndexError):
            t[key]
        with pytest.raises(IndexError):
            _indexed_under_a_layer(t, key)
        return
    plain = t[key].numpy()
    got, ops = _indexed_under_a_layer(t, key)
    np.testing.assert_array_equal(plain, want)
    np.testing.assert_array_equal(got.numpy(), want)
    assert got.numpy().shape == want.shape
    assert set(ops) <= {"slice", "squeeze", "unsqueeze"}


def test_the_layers_see_slice_squeeze_unsqueeze():
    t = hwport.to_tensor(ARR, place=PLACE)
    _, ops = _indexed_under_a_layer(t, (0, None, slice(1, 3)))
    assert ops == ["slice", "squeeze", "unsqueeze"]
    _, ops = _indexed_under_a_layer(t, slice(None))
    assert ops == []
    got, ops = _indexed_under_a_layer(t, (Ellipsis, -1))
    assert ops == ["slice", "squeeze"] and list(got.shape) == [2, 3]


def test_errors_are_the_unlayered_ones():
    t = hwport.to_tensor(ARR, place=PLACE)
    for key, exc in [((0, 0, 0, 0), IndexError), (5, IndexError), (True, TypeError),
                     (slice(None, None, 0), ValueError), ((Ellipsis, Ellipsis), IndexError)]:
        with pytest.raises(exc) as plain:
            t[key]
        with pytest.raises(exc) as layered:
            _indexed_under_a_layer(t, key)
        assert str(plain.value) == str(layered.value)
    assert _core.layer_mask() == 0
