"""The SIMT schedule's sub-group shuffle path: on a target that has shuffles (HWP_CODEGEN_
SUBGROUP_SHUFFLE) and a renderer that writes them (cuda-c++17), a row reduction combines its
threads' partials with an xor butterfly in registers and one barrier, instead of a tree through
local memory with a barrier per step. Checked on the loop IR interpreter (which runs a group's
threads in lockstep and exchanges values at each shuffle) against numpy, against the tree path,
and by compiling the rendered CUDA with nvcc down to PTX warp shuffles (no GPU needed)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import numpy as np
import pytest

from hwport.cinn_backends.interpret import interpret
from hwport.cinn_backends.loop_ir import Barrier, ShuffleXor, walk
from hwport.cinn_backends.printer import print_kernel
from hwport.cinn_backends.target import TargetInfo
from hwport.cinn_backends.targets import renderer_for
from hwport.cinn_backends.tuning import Tuning
from tests.cinn.helpers import lower, out_specs, program

# A warp-32 GPU as the CUDA plugin describes one, with small groups (the interpreter runs every
# thread of a group in Python).
WARP = TargetInfo(dialects=("cuda-c++17",), architecture="test-sm", is_simt=True,
                  subgroup_shuffle=True, simd_width=32, preferred_vector_width=1,
                  max_group_size=128, compute_units=8, local_memory_bytes=49152)
NO_SHUFFLE = dataclasses.replace(WARP, subgroup_shuffle=False)
RNG = np.random.default_rng(5)


def _shuffles(lowered) -> tuple[int, int]:
    """(ShuffleXor statements, barriers) over the group's kernels."""
    stmts = [s for k in lowered.kernels for s in walk(k.body)]
    return (sum(isinstance(s, ShuffleXor) for s in stmts),
            sum(isinstance(s, Barrier) for s in stmts))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * w + b


CASES = {
    "sum": (lambda o, x: o.sum(x, axis=[-1]), 1, lambda x: x.sum(-1)),
    "max": (lambda o, x: o.max(x, axis=[-1]), 1, lambda x: x.max(-1)),
    "softmax": (lambda o, x: o.softmax(x, axis=-1), 2, _softmax),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_row_reductions_shuffle_and_match_numpy(name):
    body, phases, ref = CASES[name]
    p = program([([5, 301], "float32")], body)
    x = RNG.standard_normal((5, 301)).astype(np.float32) * 3
    if name == "max":
        x[2, 77] = np.nan  # NaN propagates through the butterfly as through the tree
    shuffled = lower(p, WARP)
    n_shuffle, n_barrier = _shuffles(shuffled)
    # a group of 128 threads = 4 warps: 5 butterfly steps and one barrier per reduction phase
    assert (n_shuffle, n_barrier) == (5 * phases, phases), print_kernel(shuffled.kernels[0])
    tree = lower(p, NO_SHUFFLE)
    assert _shuffles(tree) == (0, 8 * phases)  # log2(128) halving steps + the post, per phase
    (got,) = interpret(shuffled, [x], out_specs(p))
    (tree_got,) = interpret(tree, [x], out_specs(p))
    want = ref(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(got, tree_got, rtol=2e-6, atol=1e-6)
    if name == "max":
        assert np.isnan(got[2]) and not np.isnan(np.delete(got, 2)).any()


def test_layer_norm_and_integer_sums_shuffle():
    p = program([([3, 200], "float32"), ([200], "float32"), ([200], "float32")],
                lambda o, x, w, b: o.layer_norm(x, w, b, epsilon=1e-5))
    x = RNG.standard_normal((3, 200)).astype(np.float32) * 2 + 1
    w, b = RNG.standard_normal(200).astype(np.float32), RNG.standard_normal(200).astype(
        np.float32)
    lowered = lower(p, WARP)
    assert _shuffles(lowered)[0] > 0
    (got,) = interpret(lowered, [x, w, b], out_specs(p))
    np.testing.assert_allclose(got, _layer_norm(x.astype(np.float64), w, b, 1e-5), rtol=3e-5,
                               atol=3e-6)
    q = program([([4, 130], "int64")], lambda o, x: o.sum(x, axis=[-1]))
    xi = RNG.integers(-2**40, 2**40, (4, 130)).astype(np.int64)
    lowered = lower(q, WARP)
    assert _shuffles(lowered)[0] == 5
    (got,) = interpret(lowered, [xi], out_specs(q))
    np.testing.assert_array_equal(got, xi.sum(-1))  # exact: integers shuffle as integers


def test_groups_walking_several_rows_and_groups_narrower_than_a_warp():
    p = program([([9, 150], "float32")], lambda o, x: o.softmax(x, axis=-1))
    x = RNG.standard_normal((9, 150)).astype(np.float32)
    # four rows per group: the same shuffle statements run again for each row
    several = lower(p, WARP, Tuning("tree", group=64, rows=4))
    assert _shuffles(several)[0] == 10
    (got,) = interpret(several, [x], out_specs(p))
    np.testing.assert_allclose(got, _softmax(x.astype(np.float64)), rtol=2e-6, atol=1e-7)
    # 16 threads are not a whole warp: the tree through local memory, no shuffles
    narrow = lower(p, WARP, Tuning("tree", group=16))
    assert _shuffles(narrow)[0] == 0
    (got,) = interpret(narrow, [x], out_specs(p))
    np.testing.assert_allclose(got, _softmax(x.astype(np.float64)), rtol=2e-6, atol=1e-7)


def test_no_shuffles_where_the_renderer_cannot_write_them():
    """OpenCL C 1.2 has no sub-group shuffles of a width known when the kernel is written, so
    an OpenCL device claiming the flag still gets the tree."""
    ocl = dataclasses.replace(WARP, dialects=("opencl-c-1.2",))
    p = program([([4, 100], "float32")], lambda o, x: o.sum(x, axis=[-1]))
    assert _shuffles(lower(p, ocl))[0] == 0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_the_rendered_cuda_compiles_to_warp_shuffles(tmp_path):
    p = program([([8, 1000], "float32")], lambda o, x: o.softmax(x, axis=-1))
    lowered = lower(p, WARP)
    source = renderer_for("cuda-c++17").render(list(lowered.kernels))
    assert "__shfl_xor_sync(0xffffffffu" in source
    src = tmp_path / "k.cu"
    src.write_text(source)
    proc = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_80", "-ptx", str(src), "-o",
                           str(tmp_path / "k.ptx")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr + "\n" + source
    ptx = (tmp_path / "k.ptx").read_text()
    assert ptx.count("shfl.sync.bfly") >= 10, ptx[:2000]  # 5 steps x 2 reductions
