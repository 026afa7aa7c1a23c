"""kernel.codegen_launch through pir.Executor: a hand-built kernel-dialect program whose ops
are c99 kernels compiled in the test (the CPU plugin's codegen target), over data inputs,
contiguous views at an offset and a transposed view (copied contiguous first): numpy results,
outputs planned in the arena (never over an input), no allocator call on later runs, and the
op's verifier and registry errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hwport
from hwport import pir
from hwport.pir import codegen_functions
from hwport.runtime import _core

pytestmark = pytest.mark.skipif(
    _core.codegen_target_info("cpu") is None, reason="no C compiler for the c99 target")

PLACE = "custom:cpu"
ROWS, COLS = 6, 8

SOURCE = r"""
#include <stdint.h>
/* out = a * x + y + k, one group per row of `cols` */
void axpy_rows(int64_t gx, int64_t gy, int64_t gz, void *const *args) {
  float *out = (float *)args[0];
  const float *x = (const float *)args[1], *y = (const float *)args[2];
  const int64_t cols = *(const int64_t *)args[3];
  const double a = *(const double *)args[4];
  const int64_t k = *(const int64_t *)args[5];
  (void)gy; (void)gz;
  for (int64_t j = gx * cols; j < (gx + 1) * cols; ++j)
    out[j] = (float)a * x[j] + y[j] + (float)k;
}
/* args: x, cols, out (the output need not come first) -- out = x * x */
void square_rows(int64_t gx, int64_t gy, int64_t gz, void *const *args) {
  const float *x = (const float *)args[0];
  const int64_t cols = *(const int64_t *)args[1];
  float *out = (float *)args[2];
  (void)gy; (void)gz;
  for (int64_t j = gx * cols; j < (gx + 1) * cols; ++j) out[j] = x[j] * x[j];
}
"""


@pytest.fixture(scope="module")
def module():
    return _core.codegen_compile(PLACE, "c99", SOURCE)


def _launch(b: pir.Builder, fid: int, operands: list[pir.Value], shape: list[int]) -> pir.Value:
    return b.create("kernel.codegen_launch", operands, [pir.TensorType(tuple(shape), "float32")],
                    {"function_id": fid}).result()


def _program(module) -> tuple[pir.Program, list[int]]:
    axpy = module.get_function("axpy_rows")
    square = module.get_function("square_rows")
    fids = [
        codegen_functions.register(axpy, [ROWS], [1], [("out", 0), ("in", 0), ("in", 1),
                                                       ("i64", COLS), ("f64", 1.5), ("i64", -2)]),
        codegen_functions.register(square, ROWS, 1, [("in", 0), ("i64", COLS), ("out", 0)]),
        codegen_functions.register(square, [ROWS - 2], [1, 1, 1],
                                   [("in", 0), ("i64", COLS), ("out", 0)]),
        codegen_functions.register(square, COLS, 1, [("in", 0), ("i64", ROWS), ("out", 0)]),
    ]
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [ROWS, COLS], "float32")
        y = b.data("y", [ROWS, COLS], "float32")
        t = _launch(b, fids[0], [x, y], [ROWS, COLS])
        u = _launch(b, fids[1], [t], [ROWS, COLS])
        # rows 2.. of x: a contiguous view at an offset (no copy: buffer + byte offset)
        v = b.create("kernel.view", [x], [pir.TensorType((ROWS - 2, COLS), "float32")],
                     {"shape": [ROWS - 2, COLS], "strides": [COLS, 1],
                      "offset": 2 * COLS}).result()
        w = _launch(b, fids[2], [v], [ROWS - 2, COLS])
        # y transposed: copied contiguous before the launch reads it
        yt = b.create("kernel.view", [y], [pir.TensorType((COLS, ROWS), "float32")],
                      {"shape": [COLS, ROWS], "strides": [1, COLS], "offset": 0}).result()
        z = _launch(b, fids[3], [yt], [COLS, ROWS])
        b.output(u, "u")
        b.output(w, "w")
        b.output(z, "z")
    return p, fids


def _want(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    t = np.float32(1.5) * x + y + np.float32(-2)
    return [t * t, x[2:] * x[2:], np.ascontiguousarray(y.T) * np.ascontiguousarray(y.T)]


def test_program_of_launches_runs_and_plans_its_memory(module):
    p, fids = _program(module)
    p.verify()
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((ROWS, COLS)).astype(np.float32) for _ in range(3)]
    ys = [rng.standard_normal((ROWS, COLS)).astype(np.float32) for _ in range(3)]
    exe = pir.Executor(p, PLACE)
    text = exe.describe()
    assert "launch axpy_rows" in text and "grid [6, 1, 1] group [1, 1, 1]" in text
    assert "= copy<float32>" in text  # the transposed view is made contiguous first
    assert exe.num_in_place == 0  # a launch never writes over its input
    feeds = [{"x": hwport.to_tensor(x, place=PLACE), "y": hwport.to_tensor(y, place=PLACE)}
             for x, y in zip(xs, ys, strict=True)]
    got = [o.numpy() for o in exe.run(feeds[0])]
    for g, w in zip(got, _want(xs[0], ys[0]), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)  # fma
    for k in (1, 2):
        before = _core.memory_stats(PLACE)["num_allocs"]
        out = exe.run(feeds[k])
        got = [o.numpy() for o in out]
        del out
        assert _core.memory_stats(PLACE)["num_allocs"] == before, "a steady-state run allocated"
        for g, w in zip(got, _want(xs[k], ys[k]), strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)  # fma
    for fid in fids:
        codegen_functions.unregister(fid)


def test_verifier_names_what_is_wrong(module):
    fn = module.get_function("square_rows")
    bad_in = codegen_functions.register(fn, 2, 1, [("in", 3), ("i64", 2), ("out", 0)])
    unwritten = codegen_functions.register(fn, 2, 1, [("in", 0), ("i64", 2)])
    for fid, needle in ((bad_in, "argument 0 (in, 3) is out of range"),
                        (unwritten, "result(s) [0] are no argument"),
                        (10**9, "is not registered")):
        p = pir.Program()
        with pir.Builder(p) as b:
            x = b.data("x", [2, 2], "float32")
            b.output(_launch(b, fid, [x], [2, 2]), "out")
        with pytest.raises(pir.VerificationError, match=re.escape(needle)):
            p.verify()
    codegen_functions.unregister(bad_in)
    codegen_functions.unregister(unwritten)


def test_registry_checks_its_entries(module):
    fn = module.get_function("square_rows")
    with pytest.raises(TypeError, match="CodegenFunction"):
        codegen_functions.register("square_rows", 1, 1, [])
    with pytest.raises(ValueError, match="grid"):
        codegen_functions.register(fn, [0], 1, [])
    with pytest.raises(ValueError, match="argument 0"):
        codegen_functions.register(fn, 1, 1, [("tensor", 0)])
    with pytest.raises(TypeError, match="argument 1"):
        codegen_functions.register(fn, 1, 1, [("out", 0), ("i64", 1.5)])
    fid = codegen_functions.register(fn, [2, 3], 1, [("f64", 2)])
    launch = codegen_functions.lookup(fid)
    assert launch.grid == (2, 3, 1) and launch.group == (1, 1, 1)
    assert launch.args == (("f64", 2.0),)
    codegen_functions.unregister(fid)
    with pytest.raises(KeyError, match="not registered"):
        codegen_functions.lookup(fid)


def test_a_refused_launch_names_the_instruction(module):
    fid = codegen_functions.register(module.get_function("square_rows"), 2, [4],
                                     [("in", 0), ("i64", 2), ("out", 0)])
    p = pir.Program()
    with pir.Builder(p) as b:
        x = b.data("x", [2, 2], "float32")
        b.output(_launch(b, fid, [x], [2, 2]), "out")
    exe = pir.Executor(p, PLACE)
    x = hwport.to_tensor(np.ones((2, 2), np.float32), place=PLACE)
    with pytest.raises(ValueError, match=r"instruction 0 \(launch square_rows\).*group"):
        exe.run({"x": x})
    codegen_functions.unregister(fid)
