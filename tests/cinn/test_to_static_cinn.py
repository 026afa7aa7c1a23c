"""jit.to_static(backend="CINN") end to end: the captured program's fused groups run as
generated kernels on custom:cpu (c99) and custom:opencl (OpenCL C), with eager's results;
symbolic batch sizes share one kernel; the disk cache serves a fresh process; HWPORT_CINN=0,
a failed compile and the compile budget all fall back to the unfused ops (with a warning
naming the group); inference's Config.enable_cinn compiles a saved model."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import hwport
from hwport.cinn_backends import cache
from hwport.cinn_backends import compile as cinn_compile
from hwport.runtime import _core

F = hwport.nn.functional
PLACES = [p for p in ("custom:cpu", "custom:opencl") if _core.codegen_target_info(p)]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HWPORT_CINN_CACHE_DIR", str(tmp_path / "cinn-cache"))
    cache.clear_memory()
    cinn_compile.reset_stats()
    yield
    cache.clear_memory()


def rms(x, w):
    return x * hwport.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def softmax(x):
    return F.softmax(x, axis=-1)


def layer_norm(x, w, b):
    return F.layer_norm(x, x.shape[-1:], w, b, 1e-5)


def epilogue(x, b, r):
    return F.gelu(x + b) + r


CASES = {
    "rms": (rms, [(6, 40), (40,)]),
    "softmax": (softmax, [(5, 3, 33)]),
    "layer_norm": (layer_norm, [(7, 24), (24,), (24,)]),
    "epilogue": (epilogue, [(9, 20), (20,), (9, 20)]),
}


def _inputs(shapes, place, seed=0):
    rng = np.random.default_rng(seed)
    return [hwport.to_tensor(rng.standard_normal(s).astype(np.float32), place=place)
            for s in shapes]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_groups_match_eager(name, place):
    fn, shapes = CASES[name]
    args = _inputs(shapes, place)
    want = fn(*args).numpy()
    static = hwport.jit.to_static(fn, backend="CINN")
    static(*args)  # capture (runs eagerly)
    got = static(*args).numpy()  # the compiled program
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert cinn_compile.STATS["compiled"] >= 1
    assert cinn_compile.STATS["fallbacks"] == 0
    (entry,) = static._cache.values()
    described = entry.executor._static.impl.describe()
    assert "launch cinn_" in described, described


def test_symbolic_batch_sizes_share_one_kernel():
    from hwport.static import InputSpec

    static = hwport.jit.to_static(rms, input_spec=[InputSpec([None, 48], "float32"),
                                                   InputSpec([48], "float32")],
                                  backend="CINN")
    w = _inputs([(48,)], "custom:cpu", 1)[0]
    for batch in (3, 17, 64):
        (x,) = _inputs([(batch, 48)], "custom:cpu", batch)
        np.testing.assert_allclose(static(x, w).numpy(), rms(x, w).numpy(), rtol=1e-5,
                                   atol=1e-6)
        static(x, w)
    assert cinn_compile.STATS["compiled"] == 1  # one kernel for the shape class


def test_hwport_cinn_0_runs_the_groups_unfused(monkeypatch):
    monkeypatch.setenv("HWPORT_CINN", "0")
    args = _inputs(CASES["rms"][1], "custom:cpu")
    static = hwport.jit.to_static(rms, backend="CINN")
    static(*args)
    got = static(*args)
    np.testing.assert_allclose(got.numpy(), rms(*args).numpy(), rtol=1e-5, atol=1e-6)
    assert cinn_compile.STATS["compiled"] == 0
    (entry,) = static._cache.values()
    assert "launch" not in entry.executor._static.impl.describe()


def test_a_group_past_the_compile_budget_runs_unfused_with_a_warning(monkeypatch):
    monkeypatch.setenv("HWPORT_CINN_COMPILE_BUDGET", "0")
    args = _inputs(CASES["layer_norm"][1], "custom:cpu", 3)
    static = hwport.jit.to_static(layer_norm, backend="CINN")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        static(*args)
        got = static(*args)
    np.testing.assert_allclose(got.numpy(), layer_norm(*args).numpy(), rtol=1e-5, atol=1e-5)
    text = " ".join(str(w.message) for w in caught)
    assert "cinn.group 0" in text and "budget" in text, text
    assert cinn_compile.STATS["fallbacks"] >= 1


def test_source_that_does_not_compile_falls_back_naming_the_group(monkeypatch):
    # a real compile failure: the target's C compiler rejects every source
    from hwport.cinn_backends import lowering

    monkeypatch.setenv("HWPORT_CINN", "1")
    real = lowering.lower_group_for_target

    def broken(*a, **k):
        lowered = real(*a, **k)
        lowered.source += "\nthis is not C;\n"
        return lowered

    monkeypatch.setattr(lowering, "lower_group_for_target", broken)
    args = _inputs(CASES["softmax"][1], "custom:cpu", 4)
    static = hwport.jit.to_static(softmax, backend="CINN")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        static(*args)
        got = static(*args)
    np.testing.assert_allclose(got.numpy(), softmax(*args).numpy(), rtol=1e-5, atol=1e-6)
    text = " ".join(str(w.message) for w in caught)
    assert "cinn.group 0 (max, subtract, exp, sum, divide)" in text, text
    assert "CodegenCompileError" in text


def test_a_fresh_process_loads_the_kernels_from_the_disk_cache(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, hwport
        from hwport.cinn_backends import compile as cc
        def rms(x, w):
            return x * hwport.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        x = hwport.to_tensor(np.ones((4, 32), np.float32))
        w = hwport.to_tensor(np.ones(32, np.float32))
        f = hwport.jit.to_static(rms, backend="CINN")
        f(x, w); f(x, w)
        print(int(cc.STATS["compiled"]), int(cc.STATS["disk_hits"]))
    """)
    env = {**os.environ, "HWPORT_CINN_CACHE_DIR": str(tmp_path / "shared")}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["1", "0"]
    assert runs[1].stdout.split() == ["0", "1"]  # a warm process compiles nothing


def test_a_damaged_cache_entry_is_compiled_again(tmp_path, monkeypatch):
    args = _inputs(CASES["rms"][1], "custom:cpu")
    static = hwport.jit.to_static(rms, backend="CINN")
    static(*args)
    static(*args)
    (entry,) = list((tmp_path / "cinn-cache").glob("*.hwpm"))
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    cache.clear_memory()
    cinn_compile.reset_stats()
    again = hwport.jit.to_static(rms, backend="CINN")
    again(*args)
    np.testing.assert_allclose(again(*args).numpy(), rms(*args).numpy(), rtol=1e-5, atol=1e-6)
    assert cinn_compile.STATS["compiled"] == 1 and cinn_compile.STATS["disk_hits"] == 0


def test_backend_names_are_checked():
    with pytest.raises(ValueError, match="backend must be None or 'CINN'"):
        hwport.jit.to_static(rms, backend="tvm")
    assert hwport.jit.to_static(rms, backend="cinn")._backend == "CINN"


def test_inference_enable_cinn_compiles_a_saved_model(tmp_path):
    from hwport import inference, nn
    from hwport.static import InputSpec

    hwport.seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16), nn.LayerNorm(16))
    model.eval()
    path = str(tmp_path / "model")
    hwport.jit.save(model, path, input_spec=[InputSpec([None, 16], "float32")])
    x = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    want = model(hwport.to_tensor(x)).numpy()
    config = inference.Config(path)
    config.enable_cinn()
    assert config.cinn_enabled()
    predictor = inference.create_predictor(config)
    (got,) = predictor.run([x])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    assert cinn_compile.STATS["compiled"] >= 1 and cinn_compile.STATS["fallbacks"] == 0
    (plan,) = predictor._runner.executor(config.place())._plans.values()
    assert "launch cinn_" in plan.impl.describe()


def test_a_training_step_compiles_and_follows_eager():
    """Forward, backward (its VJP ops fuse too) and AdamW as one compiled program."""
    from hwport import nn

    def make():
        hwport.seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
        norm = nn.LayerNorm(16)
        opt = hwport.optimizer.AdamW(learning_rate=1e-2,
                                     parameters=model.parameters() + norm.parameters())

        def step(x):
            y = norm(model(x) + x)
            loss = (y * y).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss
        return step

    x = _inputs([(8, 16)], "custom:cpu", 7)[0]
    eager, compiled = make(), hwport.jit.to_static(make(), backend="CINN")
    want = [float(eager(x)) for _ in range(4)]
    got = [float(compiled(x)) for _ in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert want[-1] < want[0]  # it trains
    assert cinn_compile.STATS["compiled"] >= 2 and cinn_compile.STATS["fallbacks"] == 0
