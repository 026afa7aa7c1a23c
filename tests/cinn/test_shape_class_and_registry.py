"""One kernel per shape class (the same source for every size, launched for each), the source
deterministic, the loop IR printer, and the open registry of renderers."""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest

from hwport.cinn_backends import targets
from hwport.cinn_backends.printer import print_kernel
from hwport.cinn_backends.render.c99 import C99Renderer
from hwport.cinn_backends.target import TargetInfo
from tests.cinn import runners
from tests.cinn.helpers import CPU, SIMT, group_of, lower, opencl, program

RNG = np.random.default_rng(3)


def _rms(o, x, w):  # mean (not its decomposition: that bakes the row length in a constant)
    return o.multiply(o.divide(x, o.sqrt(o.add(o.mean(o.multiply(x, x), axis=[-1],
                                                      keepdim=True),
                                               o.full(shape=[1], fill_value=1e-6,
                                                      dtype="float32")))), w)


@pytest.mark.parametrize("target", [CPU, SIMT], ids=["cpu", "simt"])
def test_two_sizes_share_one_source(target):
    shapes = [(64, 128), (33, 200)]
    lowered = [lower(program([(s, "float32"), ((s[1],), "float32")], _rms, decompose=False),
                     target) for s in shapes]
    assert lowered[0].source == lowered[1].source
    assert lowered[0].kernel_names == lowered[1].kernel_names
    first = lowered[0]  # launched for both sizes
    for rows, n in shapes:
        x = RNG.standard_normal((rows, n)).astype(np.float32)
        w = RNG.standard_normal(n).astype(np.float32)
        want = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w
        if target is CPU and runners.have_cc():
            (got,) = runners.run_c99(first, [x, w], [((rows, n), np.float32)])
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
        if target is SIMT and opencl() is not None:
            (got,) = runners.run_opencl(opencl(), first, [x, w], [((rows, n), np.float32)])
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_symbolic_dims_are_kernel_arguments():
    p = program([(["s0", 16], "float32"), ([16], "float32")],
                lambda o, x, b: o.relu(o.add(x, b)), decompose=False)
    lowered = lower(p)
    assert [s.name for s in lowered.kernels[0].scalars] == ["d0", "d1", "chunk"]
    (launch,) = lowered.launches({("in", 0): (10, 16), ("in", 1): (16,)})
    assert launch.args[:3] == [("in", 0), ("in", 1), ("out", 0)]
    assert launch.args[3:5] == [("i64", 10), ("i64", 16)]
    with pytest.raises(ValueError, match="shape class"):
        lowered.launches({("in", 0): (10, 16), ("in", 1): (1,)})  # a broadcast: another class


def test_a_size_one_dim_is_another_class():
    a = lower(program([([8, 4], "float32"), ([8, 4], "float32")],
                      lambda o, x, y: o.add(x, y), decompose=False))
    b = lower(program([([8, 4], "float32"), ([8, 1], "float32")],
                      lambda o, x, y: o.add(x, y), decompose=False))
    assert a.source != b.source


def test_the_source_is_deterministic_and_the_ir_prints():
    def make():
        return lower(program([([4, 32], "float32")], lambda o, x: o.softmax(x, axis=-1)))

    first, second = make(), make()
    assert first.source == second.source
    text = print_kernel(first.kernels[0])
    assert "parallel" in text and "vectorized" in text and "sum=" in text and "max=" in text
    assert first.print_ir() == second.print_ir()
    simt = lower(program([([4, 32], "float32")], lambda o, x: o.softmax(x, axis=-1)), SIMT)
    assert "barrier" in simt.print_ir() and "thread" in simt.print_ir()


def test_cuda_rendering_of_a_reduction():
    cuda = TargetInfo(dialects=("cuda-c++17",), is_simt=True, max_group_size=1024,
                      local_memory_bytes=49152, simd_width=32)
    lowered = lower(program([([4, 32], "float32")], lambda o, x: o.softmax(x, axis=-1)), cuda)
    src = lowered.source
    assert 'extern "C" __global__ void ' + lowered.kernel_names[0] in src
    assert "__shared__ float" in src and "__syncthreads();" in src
    (launch,) = lowered.launches({0: (4, 32)})
    assert launch.grid == (4, 1, 1) and launch.group == (256, 1, 1)


def test_register_a_vendor_renderer():
    class Acme(C99Renderer):
        dialect = "acme-c"

        def render(self, kernels):
            return "/* acme */\n" + super().render(kernels)

    targets.register_renderer("acme-c", Acme())
    acme = TargetInfo(dialects=("acme-c",), compute_units=2)
    ops, ins, outs = group_of(program([([4], "float32")], lambda o, x: o.exp(x)))
    from hwport.cinn_backends.lower_group import lower_group

    lowered = lower_group(ops, ins, outs, acme)
    assert lowered.dialect == "acme-c" and lowered.source.startswith("/* acme */")
    with pytest.raises(KeyError, match="no renderer"):
        targets.renderer_for("no-such-dialect")


def test_a_broken_entry_point_is_reported_not_raised(monkeypatch):
    class Broken:
        name = "broken-dialect"

        def load(self):
            raise ImportError("vendor package is missing a module")

    real = importlib.metadata.entry_points

    def fake(**kw):
        if kw.get("group") == targets.ENTRY_POINT_GROUP:
            return [Broken()]
        return real(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", fake)
    targets.rediscover()
    try:
        assert "c99" in targets.dialects()
        assert "vendor package is missing" in targets.entry_point_errors()["broken-dialect"]
    finally:
        monkeypatch.undo()
        targets.rediscover()


def test_target_info_from_the_binding_dict():
    info = TargetInfo.from_dict({
        "dialects": ["opencl-c-1.2"], "architecture": "pocl", "flags": 13, "is_simt": True,
        "subgroup_shuffle": False, "float16": False, "float64": True, "serialize": False,
        "simd_width": 8, "preferred_vector_width": 8, "max_group_size": 4096,
        "compute_units": 2, "local_memory_bytes": 65536, "max_grid_size": 0})
    assert info.dialect == "opencl-c-1.2" and info.is_simt and info.max_grid_size == 2**31 - 1
    with pytest.raises(ValueError):
        TargetInfo.from_dict({"dialects": []})


def test_float64_needs_a_target_that_has_it(capsys, monkeypatch):
    from hwport.cinn_backends.analysis import Unsupported

    no_fp64 = TargetInfo(dialects=("opencl-c-1.2",), is_simt=True, max_group_size=64,
                         local_memory_bytes=16384, float64=False)
    p = program([([4, 8], "float64")], lambda o, x: o.exp(x), decompose=False)
    with pytest.raises(Unsupported, match="float64"):
        lower(p, no_fp64)
    monkeypatch.setenv("HWPORT_PRINT_IR", "1")
    lower(program([([4, 8], "float32")], lambda o, x: o.exp(x), decompose=False), no_fp64)
    assert "cinn loop IR (opencl-c-1.2): kernel cinn_" in capsys.readouterr().out


def test_the_cuda_rendering_compiles_with_nvcc(tmp_path):
    """No GPU here: the CUDA source of a few groups (reductions in float16/bfloat16, integer
    helpers, a column reduction) is compiled to PTX by nvcc where it is installed."""
    import shutil
    import subprocess

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    cuda = TargetInfo(dialects=("cuda-c++17",), is_simt=True, max_group_size=1024,
                      local_memory_bytes=49152, simd_width=32)

    def body(o, x, w, i):
        return [o.softmax(o.multiply(x, o.cast(w, dtype="float16")), axis=-1),
                o.remainder(i, o.maximum(i, i)), o.sum(x, axis=[0]),
                o.gelu(o.cast(x, dtype="float64"))]

    p = program([([4, 32], "float16"), ([32], "bfloat16"), ([4, 32], "int32")], body)
    src = tmp_path / "k.cu"
    src.write_text(lower(p, cuda).source)
    proc = subprocess.run(["nvcc", "--std=c++17", "-ptx", "-arch=sm_80", str(src), "-o",
                           str(tmp_path / "k.ptx")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_c99_options_follow_the_target():
    p = program([([4, 8], "float32")], lambda o, x: o.exp(x), decompose=False)
    avx512 = TargetInfo(dialects=("c99",), architecture="x86_64-avx512", simd_width=16,
                        preferred_vector_width=16, compute_units=2)
    assert "-mprefer-vector-width=512" in lower(p, avx512).options
    assert "-fopenmp-simd" in lower(p, CPU).options
    assert "-mprefer-vector-width" not in lower(p, CPU).options
