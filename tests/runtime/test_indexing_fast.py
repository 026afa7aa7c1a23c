"""Tensor.__getitem__'s C++ path (runtime/src/indexing_fast.cpp) against the Python function it
stands for (hwport/indexing.py getitem: the same view, same strides and offset) and numpy (the
same values), on random keys of ints, slices (huge and negative steps included), None and
Ellipsis over views; the other keys and every error are the Python function's."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

import hwport
from hwport.indexing import getitem

PLACE = "custom:cpu"


def _keys(ndim: int, rng: random.Random, count: int) -> list:
    bounds = [None, 0, 1, 2, -1, -3, 5, 2**40, -(2**40)]
    steps = [None, 1, 2, -1, -2, 3, 2**70, -(2**70)]
    out = []
    for _ in range(count):
        items = []
        for _ in range(rng.randint(0, ndim + 1)):
            kind = rng.random()
            if kind < 0.45:
                items.append(slice(rng.choice(bounds), rng.choice(bounds), rng.choice(steps)))
            elif kind < 0.75:
                items.append(rng.randint(-3, 2))
            elif kind < 0.9:
                items.append(None)
            else:
                items.append(Ellipsis)
        out.append(items[0] if len(items) == 1 and rng.random() < 0.5 else tuple(items))
    return out


def _same_view(a: hwport.Tensor, b: hwport.Tensor) -> bool:
    return (tuple(a.shape), tuple(a.strides), a._offset) == \
        (tuple(b.shape), tuple(b.strides), b._offset) and a._shares_storage(b)


@pytest.mark.parametrize("grad_alive", [False, True])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (5,), (), (0, 3), (1, 1, 2)])
def test_random_keys_match_the_python_function_and_numpy(shape, grad_alive):
    # a live tensor that needs grad sends the Python function through op calls (its unsqueeze
    # for None) while t, which needs none, keeps the C++ view: the same view either way
    keep = hwport.to_tensor(np.ones(2, np.float32), place=PLACE)
    keep.stop_gradient = not grad_alive
    rng = random.Random(hash(shape) & 0xFFFF)
    base = np.arange(int(np.prod(shape)) * 2, dtype=np.float32)
    arr = base[::2].reshape(shape)  # a strided view underneath
    t = hwport.to_tensor(base, place=PLACE)[::2].reshape(list(shape))
    checked = 0
    for key in _keys(len(shape), rng, 300):
        try:
            want = getitem(t, key)
        except (IndexError, ValueError, TypeError) as e:
            with pytest.raises(type(e), match="Tensor index"):
                t[key]
            continue
        got = t[key]
        assert _same_view(got, want), key
        np.testing.assert_array_equal(got.numpy(), arr[key])
        checked += 1
    assert checked > 50


def test_other_keys_and_errors_are_the_python_functions():
    t = hwport.to_tensor(np.arange(12, dtype=np.float32).reshape(3, 4), place=PLACE)
    for key, exc, text in [((0, 0, 0), IndexError, "too many indices"),
                           ((..., ...), IndexError, "at most one Ellipsis"),
                           (3, IndexError, "out of bounds for dimension 0"),
                           ((0, -5), IndexError, "out of bounds for dimension 1"),
                           (slice(None, None, 0), ValueError, "slice step must not be 0"),
                           (True, TypeError, "a bool"), ("a", TypeError, "unsupported index")]:
        with pytest.raises(exc, match=text):
            t[key]
    # numpy ints go through the Python function (their __index__), with the same view
    for key in [np.int64(1), (np.int32(-1), slice(None, None, np.int64(2)))]:
        assert _same_view(t[key], getitem(t, key))


def test_every_basic_form_is_a_view_of_the_same_memory():
    t = hwport.to_tensor(np.arange(24, dtype=np.int32).reshape(2, 3, 4), place=PLACE)
    for key in itertools.product([0, slice(None), slice(1, None, -1), None, Ellipsis],
                                 repeat=2):
        if list(key).count(Ellipsis) > 1:
            continue
        assert t[key]._shares_storage(t), key
