"""nn.Layer: registration, structured names equal Paddle's, state dicts, modes, hooks, to()."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hwport
import hwport.nn as nn
from tests.nn.helpers import (
    PADDLE_BUFFERS,
    PADDLE_MHA_KV,
    PADDLE_PARAMS,
    PADDLE_STATE_KEYS,
    PADDLE_SUBLAYERS,
    Net,
    opencl_place,
)


def test_named_parameters_equal_paddles() -> None:
    net = Net()
    assert [(k, list(p.shape)) for k, p in net.named_parameters()] == PADDLE_PARAMS
    assert list(net.state_dict()) == PADDLE_STATE_KEYS
    assert [k for k, _ in net.named_sublayers()] == PADDLE_SUBLAYERS
    assert [k for k, _ in net.named_buffers()] == PADDLE_BUFFERS
    assert [k for k, _ in net.named_children()] == ["blocks", "head", "d", "mha"]
    kv = nn.MultiHeadAttention(8, 2, kdim=4, vdim=6)
    assert [(k, list(p.shape)) for k, p in kv.named_parameters()] == PADDLE_MHA_KV
    assert len(net.parameters()) == len(PADDLE_PARAMS)
    assert net.sublayers(include_self=True)[0] is net


def test_parameters_carry_paddles_attributes() -> None:
    lin = nn.Linear(3, 4)
    w, b = lin.weight, lin.bias
    assert isinstance(w, nn.Parameter) and isinstance(w, hwport.Tensor)
    assert w.stop_gradient is False and w.trainable is True and w.persistable is True
    assert re.fullmatch(r"linear_\d+\.w_\d+", w.name), w.name
    assert re.fullmatch(r"linear_\d+\.b_\d+", b.name), b.name
    assert w.name.split(".")[0] == lin.full_name()
    assert not isinstance(hwport.to_tensor([1.0]), nn.Parameter)
    assert hwport.to_tensor([1.0]).stop_gradient is True
    w.trainable = False
    assert w.stop_gradient is True
    frozen = nn.Linear(2, 2, weight_attr=nn.ParamAttr(name="frozen_w", trainable=False,
                                                      learning_rate=0.5))
    assert frozen.weight.name == "frozen_w" and frozen.weight.stop_gradient is True
    assert frozen.weight.optimize_attr["learning_rate"] == 0.5
    assert nn.Linear(2, 2, bias_attr=False).bias is None


def test_module_level_create_parameter() -> None:
    hwport.seed(3)
    p = hwport.create_parameter(shape=[768], dtype="float32",
                                default_initializer=nn.initializer.Constant(1.0))
    assert isinstance(p, nn.Parameter) and p.stop_gradient is False
    np.testing.assert_array_equal(p.numpy(), np.ones(768, np.float32))
    assert re.fullmatch(r"create_parameter_\d+\.w_\d+", p.name)
    assert hwport.create_parameter([2, 2], "float64", name="given").name == "given"
    bias = hwport.create_parameter([4], "float32", is_bias=True)
    np.testing.assert_array_equal(bias.numpy(), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="create_parameter: shape"):
        hwport.create_parameter("abc", "float32")
    with pytest.raises(ValueError, match="negative"):
        hwport.create_parameter([-1, 2], "float32")
    with pytest.raises(TypeError, match="default_initializer"):
        hwport.create_parameter([2], "float32", default_initializer=3)


def test_rmsnorm_user_layer_from_the_issue() -> None:
    class RMSNorm(nn.Layer):
        def __init__(self, hidden: int) -> None:
            super().__init__()
            self.weight = hwport.create_parameter(
                shape=[hidden], dtype="float32",
                default_initializer=nn.initializer.Constant(1.0))

        def forward(self, x: hwport.Tensor) -> hwport.Tensor:
            var = x.pow(2).mean(-1, keepdim=True)
            return hwport.rsqrt(var + 1e-6) * x * self.weight

    layer = RMSNorm(16)
    assert [k for k, _ in layer.named_parameters()] == ["weight"]
    x = np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32)
    got = layer(hwport.to_tensor(x)).numpy()
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_setattr_getattr_and_registration_errors() -> None:
    layer = nn.Layer()
    layer.sub = nn.Linear(2, 2)
    layer.p = layer.create_parameter([2])
    layer.register_buffer("buf", hwport.zeros([2]))
    assert "sub" in layer._sub_layers and "p" in layer._parameters and "buf" in layer._buffers
    assert "sub" not in layer.__dict__
    layer.buf = hwport.ones([2])
    np.testing.assert_array_equal(layer.buf.numpy(), [1, 1])
    with pytest.raises(TypeError, match="is a parameter"):
        layer.p = 3
    with pytest.raises(TypeError, match="is a buffer"):
        layer.buf = "x"
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        _ = layer.missing
    with pytest.raises(KeyError, match=r"without '\.'"):
        layer.register_buffer("a.b", hwport.zeros([1]))
    with pytest.raises(TypeError, match=r"must be a hwport\.Tensor"):
        layer.register_buffer("c", np.zeros(2))
    with pytest.raises(TypeError, match="must be a Parameter"):
        layer.add_parameter("q", hwport.zeros([1]))
    with pytest.raises(TypeError, match="must be a Layer"):
        layer.add_sublayer("s", 3)
    del layer.sub
    assert "sub" not in layer._sub_layers

    class Forgot(nn.Layer):
        def __init__(self) -> None:
            self.lin = nn.Linear(2, 2)

    with pytest.raises(RuntimeError, match=r"super\(\).__init__"):
        Forgot()


def test_train_eval_reach_every_sublayer() -> None:
    net = Net()
    assert net.training and all(layer.training for layer in net.sublayers())
    assert net.eval() is net
    assert not any(layer.training for layer in net.sublayers(include_self=True))
    net.train()
    assert all(layer.training for layer in net.sublayers(include_self=True))
    with pytest.raises(TypeError, match="mode must be a bool"):
        net.train("yes")


def test_state_dict_round_trip_between_layers() -> None:
    a, b = Net(), Net()
    sd = a.state_dict()
    assert all(sd[k] is v for k, v in a.state_dict().items())  # the layer's own tensors
    missing, unexpected = b.set_state_dict(sd)
    assert missing == [] and unexpected == []
    for (ka, pa), (kb, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert ka == kb
        np.testing.assert_array_equal(pa.numpy(), pb.numpy())
    assert isinstance(b.head[0].weight, nn.Parameter)
    assert b.head[0].weight.name != a.head[0].weight.name  # names stay the layer's own
    np_sd = {k: v.numpy() * 2 for k, v in sd.items()}
    np_sd["extra"] = np.zeros(1)
    del np_sd["w"]
    missing, unexpected = b.set_state_dict(np_sd)
    assert missing == ["w"] and unexpected == ["extra"]
    np.testing.assert_array_equal(b.b.numpy(), sd["b"].numpy() * 2)
    with pytest.raises(ValueError, match=r"'w' has shape \[4, 3\].*\[3, 3\]"):
        b.set_state_dict({"w": np.zeros((4, 3), np.float32)})
    with pytest.raises(TypeError, match="must be a dict"):
        b.set_state_dict([1, 2])
    # dtype converts to the parameter's
    b.set_state_dict({"w": np.ones((3, 3), np.float64)})
    assert b.w.dtype == hwport.float32
    # by parameter name
    c = nn.Linear(2, 3)
    by_name = {c.weight.name: np.full((2, 3), 7.0, np.float32)}
    c.set_state_dict(by_name, use_structured_name=False)
    np.testing.assert_array_equal(c.weight.numpy(), np.full((2, 3), 7.0))


def test_forward_hooks() -> None:
    lin = nn.Linear(2, 2, bias_attr=False)
    calls: list[str] = []

    def pre(layer: nn.Layer, inputs: tuple) -> None:
        calls.append("pre")
        assert layer is lin and isinstance(inputs, tuple) and len(inputs) == 1

    def post(layer: nn.Layer, inputs: tuple, output: hwport.Tensor) -> hwport.Tensor:
        calls.append("post")
        return output * 0.0

    h1 = lin.register_forward_pre_hook(pre)
    h2 = lin.register_forward_post_hook(post)
    x = hwport.ones([1, 2])
    np.testing.assert_array_equal(lin(x).numpy(), np.zeros((1, 2)))
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(lin(x).numpy(), lin.weight.numpy().sum(0, keepdims=True),
                               rtol=1e-6)
    assert calls == ["pre", "post"]
    lin.register_forward_pre_hook(lambda layer, inputs: (inputs[0] * 0.0,))
    np.testing.assert_array_equal(lin(x).numpy(), np.zeros((1, 2)))
    order: list[int] = []
    seq = nn.ReLU()
    seq.register_forward_pre_hook(lambda layer, inputs: order.append(1))
    seq.register_forward_pre_hook(lambda layer, inputs: order.append(0), prepend=True)
    seq(x)
    assert order == [0, 1]
    with pytest.raises(TypeError, match="hook must be callable"):
        seq.register_forward_pre_hook(3)


def test_containers() -> None:
    seq = nn.Sequential(("a", nn.Linear(2, 3)), ("b", nn.ReLU()))
    assert [k for k, _ in seq.named_parameters()] == ["a.weight", "a.bias"]
    assert seq["b"] is seq[1] and len(seq) == 2 and isinstance(seq[:1], nn.Sequential)
    x = hwport.to_tensor([[1.0, -2.0]])
    want = np.maximum(x.numpy() @ seq[0].weight.numpy() + seq[0].bias.numpy(), 0)
    np.testing.assert_allclose(seq(x).numpy(), want, rtol=1e-6)
    ll = nn.LayerList([nn.ReLU(), nn.Tanh()])
    ll.append(nn.Sigmoid())
    ll.insert(0, nn.SiLU())
    assert [type(m).__name__ for m in ll] == ["SiLU", "ReLU", "Tanh", "Sigmoid"]
    assert [k for k, _ in ll.named_sublayers()] == ["0", "1", "2", "3"]
    del ll[1]
    assert [k for k, _ in ll.named_children()] == ["0", "1", "2"]
    assert isinstance(ll[-1], nn.Sigmoid)
    with pytest.raises(IndexError, match="out of range"):
        ll[5]
    with pytest.raises(TypeError, match="expected a Layer"):
        ll.append(3)
    ld = nn.LayerDict({"x": nn.ReLU()})
    ld["y"] = nn.Tanh()
    assert list(ld) == ["x", "y"] and "y" in ld and len(ld) == 2
    assert isinstance(ld.pop("x"), nn.ReLU) and list(ld.keys()) == ["y"]


def test_repr_like_paddle() -> None:
    assert repr(nn.Linear(2, 3)) == "Linear(in_features=2, out_features=3, dtype=float32)"
    assert repr(nn.Softmax()) == "Softmax(axis=-1)"
    assert repr(nn.Dropout(0.3)) == ("Dropout(p=0.3, axis=None, mode=upscale_in_train, "
                                     "inplace=False)")
    assert repr(nn.LayerNorm(4)) == "LayerNorm(normalized_shape=[4], epsilon=1e-05)"
    assert "(0): ReLU()" in repr(nn.Sequential(nn.ReLU()))


def test_to_place_and_dtype() -> None:
    net = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    before = {k: v.numpy() for k, v in net.state_dict().items()}
    names = [p.name for p in net.parameters()]
    net.to(dtype="float64")
    assert all(p.dtype == hwport.float64 for p in net.parameters())
    assert [p.name for p in net.parameters()] == names
    assert all(isinstance(p, nn.Parameter) and not p.stop_gradient for p in net.parameters())
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k].astype(np.float64))
    place = opencl_place()
    if place is None:
        pytest.skip("no OpenCL device")
    net.to(place)
    assert all(str(p.place) == place for p in net.parameters())
    x = hwport.to_tensor(np.ones((2, 3)), place=place)
    assert str(net(x).place) == place
    with pytest.raises(TypeError, match="float dtype"):
        net.to(dtype="int32")


def test_float_half_double_and_excluded_layers() -> None:
    """Paddle's dtype shorthands: float/float16/bfloat16(excluded_layers=None), double(),
    half(), astype(dtype); excluded layer types (matched as type(layer) in the list) keep
    their dtype; values are the cast of the old ones; integer buffers stay integers."""
    net = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    net.register_buffer("steps", hwport.to_tensor(np.array([3], np.int64)))
    before = {k: v.numpy().astype(np.float64) for k, v in net.state_dict().items()}

    def dtypes() -> dict[str, str]:
        return {k: str(v.dtype) for k, v in net.state_dict().items()}

    def values_kept(tol: float = 1e-2) -> None:  # 1e-2: a float16/bfloat16 rounding
        for k, v in net.state_dict().items():
            np.testing.assert_allclose(v.numpy().astype(np.float64), before[k], rtol=tol,
                                       atol=tol)

    assert net.double() is net
    assert set(dtypes().values()) == {"float64", "int64"} and dtypes()["steps"] == "int64"
    values_kept(0.0)
    net.float16(excluded_layers=nn.LayerNorm)
    assert dtypes() == {"0.weight": "float16", "0.bias": "float16", "1.weight": "float64",
                        "1.bias": "float64", "steps": "int64"}
    values_kept()
    net.float(excluded_layers=[nn.Linear])
    assert dtypes()["0.weight"] == "float16" and dtypes()["1.weight"] == "float32"
    net.bfloat16()
    assert {d for k, d in dtypes().items() if k != "steps"} == {"bfloat16"}
    values_kept()
    net.half()
    assert {d for k, d in dtypes().items() if k != "steps"} == {"float16"}
    net.astype("float32")
    assert {d for k, d in dtypes().items() if k != "steps"} == {"float32"}
    values_kept()
    assert all(isinstance(p, nn.Parameter) and not p.stop_gradient for p in net.parameters())
    x = hwport.to_tensor(np.ones((2, 3), np.float32))
    assert net(x).dtype == hwport.float32
    with pytest.raises(TypeError, match=r"excluded_layers must be a Layer class or a list"):
        net.float(excluded_layers="LayerNorm")
    with pytest.raises(TypeError, match=r"excluded_layers must hold Layer classes"):
        net.float(excluded_layers=[net[1]])  # an instance, not its class
    with pytest.raises(ValueError, match=r"astype: dtype must be a float dtype"):
        net.astype()


def test_tied_and_shared_like_paddle() -> None:
    # Paddle 3.3.1 for this class: named_parameters ['emb.weight'], state_dict ['emb.weight',
    # 'head.weight', 'shared.weight'], named_sublayers ['emb', 'head'], set_state_dict of
    # {'emb.weight'} -> (['head.weight', 'shared.weight'], []) and the head sees the value.
    class M(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(5, 4)
            self.head = nn.Linear(4, 5, bias_attr=False)
            self.head.weight = self.emb.weight
            self.shared = self.emb

    m = M()
    assert [k for k, _ in m.named_parameters()] == ["emb.weight"]
    assert list(m.state_dict()) == ["emb.weight", "head.weight", "shared.weight"]
    assert [k for k, _ in m.named_sublayers()] == ["emb", "head"]
    assert [k for k, _ in m.named_parameters(prefix="pre")] == ["pre.emb.weight"]
    assert [k for k, _ in m.named_parameters(include_sublayers=False)] == []
    assert [k for k, _ in m.named_sublayers(include_self=True, prefix="root")] == [
        "root", "root.emb", "root.head"]
    assert list(m.state_dict(structured_name_prefix="x.")) == [
        "x.emb.weight", "x.head.weight", "x.shared.weight"]
    got = m.set_state_dict({"emb.weight": np.ones((5, 4), np.float32)})
    assert got == (["head.weight", "shared.weight"], [])
    assert m.head.weight is m.emb.weight  # still tied
    np.testing.assert_array_equal(m.head.weight.numpy(), np.ones((5, 4)))
    m.to(dtype="float64")
    assert m.head.weight is m.emb.weight and m.emb.weight.dtype == hwport.float64


def test_hooks_with_kwargs_and_always_call() -> None:
    class Scale(nn.Layer):
        def forward(self, x: hwport.Tensor, factor: float = 1.0) -> hwport.Tensor:
            if factor < 0:
                raise ValueError("negative")
            return x * factor

    layer = Scale()
    layer.register_forward_pre_hook(lambda lay, args, kwargs: (args, {"factor": 3.0}),
                                    with_kwargs=True)
    seen: list = []
    layer.register_forward_post_hook(lambda lay, args, kwargs, out: seen.append(kwargs),
                                     with_kwargs=True)
    np.testing.assert_array_equal(layer(hwport.ones([2]), factor=2.0).numpy(), [3.0, 3.0])
    assert seen == [{"factor": 3.0}]
    failing = Scale()
    calls: list = []
    failing.register_forward_post_hook(lambda lay, args, out: calls.append(out),
                                       always_call=True)
    with pytest.raises(ValueError, match="negative"):
        failing(hwport.ones([2]), factor=-1.0)
    assert calls == [None]


def test_parameter_shares_storage_and_is_a_leaf() -> None:
    data = hwport.to_tensor(np.arange(3.0, dtype=np.float32))
    p = nn.Parameter(data, name="p0")
    assert type(p) is nn.Parameter and p._shares_storage(data)
    assert p.stop_gradient is False and data.stop_gradient is True
    assert p.is_leaf and p.grad is None and p.name == "p0"
    plain = hwport.to_tensor([1.0])
    plain.stop_gradient = False  # a plain tensor that needs a gradient is no parameter
    assert not isinstance(plain, nn.Parameter)
    with pytest.raises(TypeError, match=r"Parameter: data must be a hwport\.Tensor"):
        nn.Parameter(np.zeros(3))
    with pytest.raises(TypeError, match="Parameter: name must be a str"):
        nn.Parameter(data, name=3)
