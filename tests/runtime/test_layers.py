"""The op-call pipeline's layers (runtime/src/layers.h): registration per slot, activation per
thread and nestable, the order (profiler, trace, dist, autograd, amp: outermost first), what a
layer can do with a call (observe, change its inputs, replace it), and a mask left clean by
exceptions. Python test layers go through the trampoline (bind_layers.cpp)."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import hwport
from hwport.runtime import _core

PLACE = "custom:cpu"
# The issue's order (DESIGN.md "The op-call pipeline"), the profiler outermost.
ORDER = ["profiler", "trace", "dist", "autograd", "amp"]
TEST_SLOTS = ["trace", "dist", "autograd", "amp"]  # free: their issues fill them


def _t(a):
    return hwport.to_tensor(np.asarray(a, dtype=np.float32), place=PLACE)


class Recorder:
    """A layer that logs (slot, "in"/"out", op, thread) around continuing the call."""

    def __init__(self, slot: str, log: list) -> None:
        self.slot = slot
        self.log = log

    def on_call(self, call, next):
        self.log.append((self.slot, "in", call.op, threading.get_ident()))
        try:
            return next(call)
        finally:
            self.log.append((self.slot, "out", call.op, threading.get_ident()))


@pytest.fixture
def slots():
    """Registers layers in the test slots; unregisters them (and checks the mask) after."""
    registered: list[str] = []

    def register(slot: str, layer) -> None:
        _core.register_layer(slot, layer)
        registered.append(slot)

    yield register
    for slot in registered:
        _core.register_layer(slot, None)
    assert _core.layer_mask() == 0


def _enter(*names: str) -> None:
    for n in names:
        _core.layer_enter(n)


def _leave(*names: str) -> None:
    for n in reversed(names):
        _core.layer_leave(n)


def test_order_and_bits_are_the_issues():
    assert _core.layer_order() == ORDER
    bits = _core.layer_bits()
    assert sorted(bits) == sorted(ORDER)
    # One distinct bit each (the C++ fast path tests the whole mask).
    assert sorted(bits.values()) == [1 << i for i in range(5)]


def test_nothing_active_by_default():
    gc.collect()  # tensors that need grad, left in cycles by earlier tests, count as autograd
    assert _core.layer_mask() == 0
    assert _core.layers_active() is False


def test_active_layers_see_the_call_outermost_first(slots):
    log: list = []
    for s in TEST_SLOTS:
        slots(s, Recorder(s, log))
    x = _t([0.5, 1.5])
    _enter(*reversed(TEST_SLOTS))  # the order of entering does not matter; the pipeline's does
    try:
        assert _core.layers_active() is True
        y = hwport.exp(x)
    finally:
        _leave(*reversed(TEST_SLOTS))
    np.testing.assert_allclose(y.numpy(), np.exp([0.5, 1.5]), rtol=1e-6)
    me = threading.get_ident()
    assert log == ([(s, "in", "exp", me) for s in TEST_SLOTS]
                   + [(s, "out", "exp", me) for s in reversed(TEST_SLOTS)])


def test_only_the_active_ones_run(slots):
    log: list = []
    for s in TEST_SLOTS:
        slots(s, Recorder(s, log))
    x = _t([1.0])
    hwport.exp(x)  # registered, none active
    assert log == []
    _enter("dist", "amp")
    try:
        hwport.exp(x)
    finally:
        _leave("dist", "amp")
    assert [(s, d) for s, d, _, _ in log] == [("dist", "in"), ("amp", "in"), ("amp", "out"),
                                              ("dist", "out")]
    assert _core.layer_mask() == 0


def test_a_layer_sees_the_normalized_call_and_kernel_selection_fills_the_path(slots):
    seen = {}

    class Peek:
        def on_call(self, call, next):
            seen["before"] = (call.op, call.dtype, str(call.place), call.path,
                              [tuple(t.shape) for t in call.inputs], dict(call.attrs))
            out = next(call)
            seen["after"] = call.path
            return out

    slots("autograd", Peek())
    _enter("autograd")
    try:
        hwport.sum(_t([[1, 2, 3], [4, 5, 6]]), axis=1, keepdim=True)
    finally:
        _leave("autograd")
    op, dtype, place, path, shapes, attrs = seen["before"]
    assert (op, dtype, place, path, shapes) == ("sum", "float32", "custom:cpu:0", "", [(2, 3)])
    assert attrs["axis"] == [1] and attrs["keepdim"] is True
    assert seen["after"] == "native"


def test_a_layer_can_change_the_inputs(slots):
    class Double:
        def on_call(self, call, next):
            with _core.suspend_layer("amp"):  # its multiply must not come back through it
                call.inputs = [hwport.multiply(t, _t(2.0)) for t in call.inputs]
            return next(call)

    slots("amp", Double())
    x = np.array([0.25, -1.0], np.float32)
    _enter("amp")
    try:
        y = hwport.exp(_t(x))
    finally:
        _leave("amp")
    np.testing.assert_allclose(y.numpy(), np.exp(2 * x), rtol=1e-6)


def test_a_layer_can_replace_the_call(slots):
    log: list = []
    marker = object()

    class Replace:
        def on_call(self, call, next):
            return marker  # the inner layers and the kernel never run

    slots("dist", Replace())
    slots("autograd", Recorder("autograd", log))
    _enter("dist", "autograd")
    try:
        assert hwport.exp(_t([1.0])) is marker
    finally:
        _leave("dist", "autograd")
    assert log == []


def test_calls_a_layer_makes_come_back_through_the_pipeline_unless_suspended(slots):
    log: list = []

    class Nested(Recorder):
        def on_call(self, call, next):
            if call.op == "exp":
                hwport.neg(call.inputs[0])  # comes back through every active layer
                with _core.suspend_layer("trace"):
                    assert _core.layer_mask() & _core.layer_bits()["trace"] == 0
                    hwport.abs(call.inputs[0])  # skips this layer, not the inner ones
            return super().on_call(call, next)

    slots("trace", Nested("trace", log))
    slots("amp", Recorder("amp", log))
    _enter("trace", "amp")
    try:
        hwport.exp(_t([1.0]))
        assert _core.layer_mask() == _core.layer_bits()["trace"] | _core.layer_bits()["amp"]
    finally:
        _leave("trace", "amp")
    assert [(s, d, op) for s, d, op, _ in log] == [
        ("trace", "in", "neg"), ("amp", "in", "neg"), ("amp", "out", "neg"),
        ("trace", "out", "neg"),
        ("amp", "in", "abs"), ("amp", "out", "abs"),
        ("trace", "in", "exp"), ("amp", "in", "exp"), ("amp", "out", "exp"),
        ("trace", "out", "exp")]


def test_a_layer_may_unregister_itself_during_its_call(slots):
    log: list = []

    class Once(Recorder):
        def on_call(self, call, next):
            _core.register_layer("dist", None)  # the pipeline holds it until it returns
            return super().on_call(call, next)

    slots("dist", Once("dist", log))
    slots("amp", Recorder("amp", log))
    _enter("dist", "amp")
    try:
        y = hwport.exp(_t([0.0]))
        hwport.exp(y)  # dist's bit is still set on this thread, its slot empty: skipped
    finally:
        _leave("dist", "amp")
    assert [(s, d) for s, d, _, _ in log] == [("dist", "in"), ("amp", "in"), ("amp", "out"),
                                              ("dist", "out"), ("amp", "in"), ("amp", "out")]
    np.testing.assert_allclose(y.numpy(), [1.0])


def test_activation_nests_per_slot():
    class Nop:
        def on_call(self, call, next):
            return next(call)

    _core.register_layer("dist", Nop())
    try:
        bit = _core.layer_bits()["dist"]
        _core.layer_enter("dist")
        _core.layer_enter("dist")
        _core.layer_leave("dist")
        assert _core.layer_mask() == bit  # one enter still open
        _core.layer_leave("dist")
        assert _core.layer_mask() == 0
        with pytest.raises(RuntimeError, match="'dist' layer, which is not active"):
            _core.layer_leave("dist")
        assert _core.layer_mask() == 0
    finally:
        _core.register_layer("dist", None)


def test_registration_errors_name_the_problem():
    with pytest.raises(ValueError, match="no layer is registered as 'amp'"):
        _core.layer_enter("amp")
    assert _core.layer_mask() == 0
    with pytest.raises(ValueError, match=r"unknown pipeline layer 'tracing'.*profiler, trace"):
        _core.register_layer("tracing", None)
    with pytest.raises(TypeError, match="callable on_call"):
        _core.register_layer("amp", object())
    assert _core.registered_layer("amp") is None


def test_a_layer_active_in_one_thread_is_invisible_in_another(slots):
    gc.collect()  # no tensor that needs grad left alive by earlier tests (autograd's step)
    log: list = []
    slots("autograd", Recorder("autograd", log))
    x = _t([1.0, 2.0])
    entered, done = threading.Event(), threading.Event()
    other: dict = {}

    def worker():
        entered.wait()
        other["mask"] = _core.layer_mask()
        other["active"] = _core.layers_active()
        other["y"] = hwport.exp(x).numpy()
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    _core.layer_enter("autograd")
    try:
        entered.set()
        done.wait()
        hwport.neg(x)
        assert _core.layer_mask() == _core.layer_bits()["autograd"]
    finally:
        _core.layer_leave("autograd")
    t.join()
    assert other["mask"] == 0 and other["active"] is False
    np.testing.assert_allclose(other["y"], np.exp([1.0, 2.0]), rtol=1e-6)
    me = threading.get_ident()
    assert log == [("autograd", "in", "neg", me), ("autograd", "out", "neg", me)]


def test_an_exception_inside_a_layered_call_leaves_the_mask_clean(slots):
    log: list = []

    class Boom:
        def on_call(self, call, next):
            with _core.suspend_layer("amp"):
                raise KeyError("boom")

    slots("trace", Recorder("trace", log))
    slots("amp", Boom())
    before = _core.layer_mask()
    _enter("trace", "amp")
    inside = _core.layer_mask()
    try:
        with pytest.raises(KeyError, match="boom"):
            hwport.exp(_t([1.0]))
        assert _core.layer_mask() == inside  # the suspended bit came back
        assert [(s, d) for s, d, _, _ in log] == [("trace", "in"), ("trace", "out")]
    finally:
        _leave("trace", "amp")
    assert _core.layer_mask() == before == 0


def test_value_errors_from_a_layer_name_the_public_op(slots):
    class Refuse:
        def on_call(self, call, next):
            raise ValueError("not now")

    slots("dist", Refuse())
    _enter("dist")
    try:
        with pytest.raises(ValueError, match=r"^exp: not now"):
            hwport.exp(_t([1.0]))
    finally:
        _leave("dist")
