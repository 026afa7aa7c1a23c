"""The C++ pipeline with layers active (runtime/src/pipeline_layered.cpp): a call its family
serves is checked and inferred in C++, goes through the layers, and is selected and launched
in C++ without entering phi_ops/dispatch.py. The oracles: the same call without layers (the
results, bit for bit), the Python path with the same layer active (what the layer sees: op,
dtype, place, input shapes and dtypes, attributes, the path taken), and the Python path's
errors (raised before any layer sees the call)."""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import pytest

import hwport
from hwport.phi_ops import dispatch, functional
from hwport.phi_ops.schema import load_ops
from hwport.runtime import _core
from tests.pipeline_hooks import deferred_calls, python_path, sample_calls

OPS = load_ops()
PLACE = "custom:cpu"
COVERED = [name for _, name, fam, _ in _core._pipeline_ops() if fam]


class Seen:
    """A layer that records what it is given and continues the call."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_call(self, call, next):
        before = (call.op, call.dtype, str(call.place), _describe(call.inputs),
                  dict(call.attrs))
        out = next(call)
        self.calls.append(before + (call.path,))
        return out


def _describe(inputs) -> list:
    def one(v):
        if isinstance(v, (list, tuple)):
            return [one(t) for t in v]
        return None if v is None else (tuple(v.shape), str(v.dtype))
    return [one(v) for v in inputs]


@contextlib.contextmanager
def layer(obj, slot: str = "autograd"):
    _core.register_layer(slot, obj)
    _core.layer_enter(slot)
    try:
        yield obj
    finally:
        _core.layer_leave(slot)
        _core.register_layer(slot, None)
    assert _core.layer_mask() == 0


def _bytes(v):
    if isinstance(v, (list, tuple)):
        return [_bytes(t) for t in v]
    a = v.numpy()
    return (a.dtype.str, a.shape, a.tobytes(), tuple(v.strides), v._offset)


def _outcome(fn):
    try:
        return ("ok", _bytes(fn()))
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return ("raised", type(exc), str(exc))


@pytest.mark.parametrize("op_name", COVERED)
def test_layered_calls_match_the_unlayered_run_and_the_python_paths_view(op_name):
    """Every sample case of every op a C++ family serves: with a layer active the result is the
    one without layers, bit for bit (or the same error), and the layer sees the top-level call
    as it would on the Python path (op, dtype, place, inputs, attributes, path)."""
    op = OPS[op_name]
    checked = 0
    for case, _inputs, args, kwargs in sample_calls(op, PLACE):
        fn = functools.partial(getattr(functional, op_name), *args, **kwargs)
        want = _outcome(fn)
        with layer(Seen()) as cpp:
            got = _outcome(fn)
        assert got == want, case.id
        with python_path(), layer(Seen()) as py:
            _outcome(fn)
        # The layer's view of the call; sub-ops (a decomposition's) may differ: the C++
        # path's own casts and views are not op calls.
        top_cpp = [c for c in cpp.calls if c[0] == op_name]
        top_py = [c for c in py.calls if c[0] == op_name]
        assert top_cpp == top_py, case.id
        checked += want[0] == "ok"
    assert checked > 0


def test_a_served_call_never_enters_the_python_path():
    x = hwport.to_tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), place=PLACE)
    w = hwport.to_tensor(np.ones((3, 4), np.float32), place=PLACE)
    F = hwport.nn.functional
    with layer(Seen()) as seen, deferred_calls() as entered:
        fast_before = _core._pipeline_stats()[0]
        y = F.gelu(hwport.matmul(x, w))
        z = F.layer_norm(y + 1.0, [4])
        s = hwport.sum(z.reshape([8]), axis=0)
        fast = _core._pipeline_stats()[0] - fast_before
    assert entered == []  # the scalar operand's 0-d tensor is made in C++ too
    assert [c[0] for c in seen.calls] == ["matmul", "gelu", "add", "layer_norm", "reshape", "sum"]
    assert fast >= 2 * 6  # each call runs its family twice: dry, then for real
    xn = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    with python_path():
        want = hwport.sum(F.layer_norm(F.gelu(hwport.matmul(x, w)) + 1.0, [4]).reshape([8]), 0)
    assert s.numpy().tobytes() == want.numpy().tobytes()
    assert np.isfinite(xn).all()


def test_a_bad_call_raises_before_any_layer_sees_it_with_the_python_paths_message():
    x = hwport.to_tensor(np.ones((2, 3), np.float32), place=PLACE)
    y = hwport.to_tensor(np.ones((4,), np.float32), place=PLACE)
    bad = [lambda: hwport.add(x, y), lambda: hwport.sum(x, axis=5),
           lambda: hwport.reshape(x, [4, 2]), lambda: hwport.matmul(x, x),
           lambda: hwport.nn.functional.softplus(x, beta=0.0)]
    for fn in bad:
        want = _outcome(fn)
        assert want[0] == "raised"
        with layer(Seen()) as seen:
            got = _outcome(fn)
        assert got == want
        assert seen.calls == []


def test_a_layer_that_replaces_inputs_gets_them_used_and_a_plan_made_for_them():
    class Swap:
        def on_call(self, call, next):
            if call.op == "add":
                with _core.suspend_layer("autograd"):
                    call.inputs = [hwport.ones([2, 3], "float32", PLACE), call.inputs[1]]
            return next(call)

    x = hwport.to_tensor(np.zeros((2, 3), np.float32), place=PLACE)
    with layer(Swap()):
        out = hwport.add(x, 2.0)  # the scalar is a 0-d float32 tensor in call.inputs
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 3, np.float32))


def test_a_layer_reading_no_attributes_costs_no_python_normalization():
    class Count:
        def __init__(self):
            self.n = 0

        def on_call(self, call, next):
            self.n += 1
            return next(call)

    normalized = []
    real = dispatch.layer_attrs

    def spy(name, given):
        normalized.append(name)
        return real(name, given)

    dispatch.layer_attrs = spy
    try:
        x = hwport.to_tensor(np.ones((2, 3), np.float32), place=PLACE)
        with layer(Count()) as count:
            hwport.sum(x, axis=1, keepdim=True)
            hwport.transpose(x, [1, 0])
        assert count.n == 2 and normalized == []
        with layer(Seen()):
            hwport.sum(x, axis=1, keepdim=True)
        assert normalized == ["sum"]
    finally:
        dispatch.layer_attrs = real


def test_the_path_is_the_one_kernel_selection_took():
    x = hwport.to_tensor(np.array([-1.0, 0.5], np.float32), place=PLACE)
    formula = [n for n in _core._pipeline_formula_ops() if OPS[n].inputs
               and OPS[n].category == "unary" and "float32" in OPS[n].kernel_dtypes]
    assert formula
    op = formula[0]
    hidden = _core._pipeline_hide_native([op])
    try:
        with layer(Seen()) as seen:
            getattr(hwport, op)(x)
    finally:
        _core._pipeline_hide_native(hidden)
    top = [c for c in seen.calls if c[0] == op]
    subs = [c for c in seen.calls if c[0] != op]
    assert top[0][-1] == "decomposition" and subs  # the formula's sub-ops come back nested
    with layer(Seen()) as seen:
        hwport.exp(x)
        x.reshape([2, 1])
    assert [c[-1] for c in seen.calls] == ["native", "decomposition"]


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", "bool"])
def test_a_scalar_operand_is_seen_as_the_python_paths_0d_tensor(dtype):
    x = hwport.to_tensor(np.array([1, 0, 3]).astype(dtype), place=PLACE)
    calls = [lambda: x * 2.5, lambda: 3 - x, lambda: hwport.add(x, True),
             lambda: hwport.maximum(7, x)]
    for fn in calls:
        with layer(Seen()) as cpp:
            got = _outcome(fn)
        with python_path(), layer(Seen()) as py:
            want = _outcome(fn)
        assert got == want
        # The Python path casts an int operand with a cast op call; C++ casts inside the call.
        assert cpp.calls == [c for c in py.calls if c[0] != "cast"]
        assert len(cpp.calls) == 1


def test_a_cpp_layer_sees_every_call_and_changes_no_result():
    x = hwport.to_tensor(np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3), place=PLACE)
    F = hwport.nn.functional

    def program():
        return F.softmax(hwport.exp(x) * 0.5 + x, axis=-1).sum(axis=0)

    want = program().numpy()
    _core.register_passthrough_layer("autograd")
    _core.layer_enter("autograd")
    try:
        before = _core.passthrough_layer_calls()
        with deferred_calls() as entered:
            got = program().numpy()
        seen = _core.passthrough_layer_calls() - before
    finally:
        _core.layer_leave("autograd")
        _core.register_layer("autograd", None)
    assert got.tobytes() == want.tobytes()
    assert seen == 5 and entered == []  # exp, multiply, add, softmax, sum
    assert _core.registered_layer("autograd") is None


def test_an_opcall_kept_after_its_call_has_every_field():
    kept = []

    class Keep:
        def on_call(self, call, next):
            kept.append(call)  # reads nothing now
            return next(call)

    x = hwport.to_tensor(np.ones((2, 3), np.float32), place=PLACE)
    with layer(Keep()):
        hwport.sum(x * 3.0, axis=1)
    mul, sum_ = kept
    assert [tuple(t.shape) for t in mul.inputs] == [(2, 3), ()]
    assert mul.inputs[1].numpy().item() == 3.0 and str(mul.place) == "custom:cpu:0"
    assert sum_.attrs["axis"] == [1] and sum_.attrs["keepdim"] is False
    assert (sum_.dtype, sum_.path) == ("float32", "native")


def test_a_layer_setting_one_input_element_replaces_that_input():
    class Zero:
        def on_call(self, call, next):
            if call.op == "exp":
                with _core.suspend_layer("autograd"):
                    call.inputs[0] = hwport.zeros([3], "float32", PLACE)
            return next(call)

    x = hwport.to_tensor(np.ones(3, np.float32), place=PLACE)
    with layer(Zero()):
        out = hwport.exp(x)
    np.testing.assert_array_equal(out.numpy(), np.ones(3, np.float32))
