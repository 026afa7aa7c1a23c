"""jit.save / jit.load round trip and hwport.inference's predictor API, on every place,
with the saved model loaded in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import hwport
import hwport.nn as nn
from hwport import inference
from hwport.static import InputSpec

F = hwport.nn.functional
PLACES = ["custom:cpu", "custom:opencl"]


class _Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(8, 32)
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return F.softmax(self.head(F.gelu(self.norm(self.emb(x)))), axis=-1)


def _saved(tmp_path):
    hwport.seed(7)
    net = _Net()
    net.eval()
    path = str(tmp_path / "model" / "net")
    hwport.jit.save(net, path, input_spec=[InputSpec([None, 8], "float32", "x")])
    return net, path


def _x(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)


def _ref(net, x):
    with hwport.no_grad():
        return net(hwport.to_tensor(x)).numpy()


@pytest.mark.parametrize("place", PLACES)
def test_save_load_round_trip_on_every_place(tmp_path, place):
    net, path = _saved(tmp_path)
    assert os.path.isfile(path + ".pir") and os.path.isfile(path + ".safetensors")
    from safetensors.numpy import load_file  # the file is plain safetensors

    params = load_file(path + ".safetensors")
    np.testing.assert_array_equal(params["emb.weight"], net.emb.weight.numpy())
    text = open(path + ".pir").read()
    assert str(hwport.pir.parse(text)) == text.rstrip("\n") or hwport.pir.parse(text)
    loaded = hwport.jit.load(path)
    names = dict(loaded.named_parameters())
    assert set(names) == {n for n, _ in net.named_parameters()}
    np.testing.assert_array_equal(names["head.bias"].numpy(), net.head.bias.numpy())
    assert all(p.stop_gradient for p in names.values())  # an inference program
    for n in (1, 5):
        x = _x(n, n)
        got = loaded(hwport.to_tensor(x, place=place)).numpy()
        np.testing.assert_allclose(got, _ref(net, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("place", PLACES)
def test_predictor_handles_and_plain_run(tmp_path, place):
    net, path = _saved(tmp_path)
    config = inference.Config(path)
    config.set_place(place)
    assert config.ir_optim()
    predictor = inference.create_predictor(config)
    assert predictor.get_input_names() == ["x"]
    (out_name,) = predictor.get_output_names()
    x = _x(3)
    handle = predictor.get_input_handle("x")
    handle.reshape([3, 8])
    handle.copy_from_cpu(x)
    assert predictor.run() is True
    out = predictor.get_output_handle(out_name)
    assert out.shape() == [3, 4]
    np.testing.assert_allclose(out.copy_to_cpu(), _ref(net, x), rtol=1e-5, atol=1e-6)
    (y,) = predictor.run([_x(6, 1)])
    np.testing.assert_allclose(y.numpy(), _ref(net, _x(6, 1)), rtol=1e-5, atol=1e-6)
    assert str(y.place).startswith(place)


def test_predictor_from_two_files_without_ir_optim_and_profiled(tmp_path):
    net, path = _saved(tmp_path)
    config = inference.Config(path + ".pir", path + ".safetensors")
    config.switch_ir_optim(False)
    config.enable_custom_device("cpu", 0)
    config.enable_profile()
    predictor = inference.create_predictor(config)
    (y,) = predictor.run([_x(2)])
    np.testing.assert_allclose(y.numpy(), _ref(net, _x(2)), rtol=1e-5, atol=1e-6)
    assert any(e.name == "Predictor.run" for e in predictor.profiler.events)


def test_predictor_errors_name_what_is_wrong(tmp_path):
    _, path = _saved(tmp_path)
    predictor = inference.create_predictor(inference.Config(path))
    with pytest.raises(KeyError, match=r"no input named 'y'.*\['x'\]"):
        predictor.get_input_handle("y")
    with pytest.raises(RuntimeError, match="no data for input"):
        predictor.run()
    with pytest.raises(FileNotFoundError, match=r"nothere\.pir"):
        inference.create_predictor(inference.Config(str(tmp_path / "nothere")))
    with pytest.raises(ValueError, match="input_spec"):
        hwport.jit.save(_Net(), str(tmp_path / "n"))


def test_a_fresh_process_loads_and_predicts_the_same(tmp_path):
    net, path = _saved(tmp_path)
    x = _x(4, 3)
    np.save(tmp_path / "x.npy", x)
    code = (f"import numpy as np, hwport\nfrom hwport import inference\n"
            f"c = inference.Config({path!r})\np = inference.create_predictor(c)\n"
            f"(y,) = p.run([np.load({str(tmp_path / 'x.npy')!r})])\n"
            f"np.save({str(tmp_path / 'y.npy')!r}, y.numpy())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), _ref(net, x), rtol=1e-5,
                               atol=1e-6)
    json.dumps(done.stdout)  # (the child printed nothing it should not)
