"""The eager JIT on the template plugin past one primitive per call: a composite op (softmax,
layer_norm, relu, gelu) the runtime hands over whole (runtime/src/jit_composite.h) runs as its
decomposition fused into one kernel; a strided input (a binary op's broadcast operand, a
transposed view) is read in place through index maps instead of being materialized by the
copy kernel (eager_jit.view_of); the template runs a launch's groups on MYDEV_THREADS threads.
Every result is checked against numpy."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hwport.cinn_backends.eager_jit import view_of

from .conftest import TEMPLATE
from .test_eager_jit import PRELUDE, run_json

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The template plugin built as test_eager_jit.py builds it (-Werror: warning-free)."""
    from hwport.runtime import include_dir

    so = tmp_path_factory.mktemp("mydev") / "libhwport_mydev.so"
    cc = subprocess.run(["cc", "-std=gnu99", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC",
                         "-shared", f"-I{include_dir()}", str(TEMPLATE), "-o", str(so)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    return so


def test_view_of_describes_transposes_and_broadcasts() -> None:
    assert view_of((4, 3), (1, 4)) == ((1, 0), ())  # a transposed [3, 4]
    assert view_of((5, 7), (0, 1)) == ((1,), (0,))  # a row broadcast down 5 rows
    assert view_of((5, 7), (1, 0)) == ((0,), (1,))  # a column broadcast across 7 columns
    assert view_of((5, 7), (0, 0)) == ((), (0, 1))  # a scalar
    assert view_of((2, 1, 3), (3, 3, 1)) == ((0, 2), (1,))  # size-1 dims count as broadcast
    assert view_of((4, 3), (6, 1)) is None  # a slice: rows 6 apart, not one block
    assert view_of((4, 3), (-3, 1)) is None  # a negative stride


def test_composites_run_as_one_compiled_kernel(template: Path) -> None:
    doc = run_json(PRELUDE + """
from hwport.cinn_backends import eager_jit
F = hwport.nn.functional
x = rng.standard_normal((37, 300)).astype("float32")
w = rng.standard_normal(300).astype("float32")
b = rng.standard_normal(300).astype("float32")
e = np.exp(x - x.max(-1, keepdims=True))
mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
want = {"softmax": e / e.sum(-1, keepdims=True),
        "layer_norm": (x - mu) / np.sqrt(var + 1e-5) * w + b,
        "relu": np.maximum(x, 0)}
rt.reset_fallback_stats()
got = {"softmax": F.softmax(t(x), axis=-1).numpy(),
       "layer_norm": F.layer_norm(t(x), [300], t(w), t(b), 1e-5).numpy(),
       "relu": F.relu(t(x)).numpy()}
checks = {k: bool(np.allclose(got[k], want[k], rtol=1e-4, atol=1e-5)) for k in want}
# one lowered entry, of one kernel, per composite: its decomposition was not run op by op
kernels = {op: [len(e.lowered.kernels) for k, e in eager_jit._entries.items() if k[0] == op]
           for op in want}
prims = sorted({k[0] for k in eager_jit._entries} - set(want))
# shape composites return views (a kernel would copy them): declined, the runtime's view stays
declined = [eager_jit.provide_composite(op, P, (t(x),), attrs) is None for op, attrs in
            [("flip", {"axis": [0]}), ("reshape", {"shape": [300, 37]})]]
print(json.dumps({"checks": checks, "kernels": kernels, "prims": prims, "declined": declined,
                  **stats()}))
""", template)
    assert all(doc["checks"].values()), doc["checks"]
    assert doc["kernels"] == {"softmax": [1], "layer_norm": [1], "relu": [1]}, doc["kernels"]
    assert doc["prims"] == [], doc["prims"]  # no exp, max, subtract, ... of a decomposition
    assert doc["declined"] == [True, True]
    assert {"softmax", "layer_norm", "relu"} <= set(doc["compiled"]), doc["compiled"]
    assert doc["cpu"] == []


def test_a_composite_kernel_serves_only_its_shapes(template: Path) -> None:
    """var's decomposition bakes N - 1 into a constant: two shapes of one shape class must not
    share its kernel (they did: [3, 7] then read [13, 17]'s divisor)."""
    doc = run_json(PRELUDE + """
a = rng.standard_normal((13, 17)).astype("float32")
b = rng.standard_normal((3, 7)).astype("float32")
got = [float(hwport.var(t(a)).numpy()), float(hwport.var(t(b)).numpy()),
       float(hwport.var(t(a)).numpy())]
want = [float(np.var(a, ddof=1)), float(np.var(b, ddof=1)), float(np.var(a, ddof=1))]
print(json.dumps({"got": got, "want": want, **stats()}))
""", template)
    assert all(abs(g - w) <= 1e-5 * max(1.0, abs(w)) for g, w in
               zip(doc["got"], doc["want"], strict=True)), doc
    assert "var" in doc["compiled"] and doc["cpu"] == []


def test_broadcast_and_transposed_inputs_are_read_in_place(template: Path) -> None:
    doc = run_json(PRELUDE + """
from hwport.cinn_backends import eager_jit
x = rng.standard_normal((6, 5)).astype("float32")
row = rng.standard_normal(5).astype("float32")
col = rng.standard_normal((6, 1)).astype("float32")
y = rng.standard_normal((5, 6)).astype("float32")
sliced = rng.standard_normal((12, 5)).astype("float32")
special = np.array([[1, np.inf, -np.inf], [np.nan, 2, 3], [4, 5, -np.inf]] * 3, "float16")
rt.reset_fallback_stats()
cases = {
    "row": ((t(x) + t(row)).numpy(), x + row),
    "column": ((t(x) * t(col)).numpy(), x * col),
    "scalar": ((t(x) - 2.5).numpy(), x - np.float32(2.5)),
    "transposed": ((t(y).T + t(x)).numpy(), y.T + x),
    "both": ((t(y).T * t(row)).numpy(), y.T * row),
    "sliced": ((t(sliced)[::2] + t(x)).numpy(), sliced[::2] + x),  # copied: not one block
    # GCC 12 -march=native (AVX-512) fails on this view's kernel: the contiguous one runs
    "isinf_f16_T": (hwport.isinf(t(special).T).numpy(), np.isinf(special.T)),
}
checks = {k: bool(np.allclose(g, w, rtol=1e-6, atol=1e-6)) for k, (g, w) in cases.items()}
views = sorted({str(k[6]) for k, e in eager_jit._entries.items() if e.views})
print(json.dumps({"checks": checks, "views": views, **stats()}))
""", template)
    assert all(doc["checks"].values()), doc["checks"]
    # the row, column and scalar broadcasts, the transpose, and a transpose with a broadcast
    assert len(doc["views"]) >= 4, doc["views"]
    assert doc["cpu"] == []


def test_the_template_runs_a_launchs_groups_on_its_threads(template: Path) -> None:
    code = PRELUDE + """
x = rng.standard_normal((513, 700)).astype("float32")
info = _core.codegen_target_info(P)
got = {"sum": hwport.sum(t(x), axis=1).numpy(), "exp": hwport.exp(t(x)).numpy()}
checks = {"sum": bool(np.allclose(got["sum"], x.sum(1), rtol=1e-4, atol=1e-4)),
          "exp": bool(np.allclose(got["exp"], np.exp(x), rtol=1e-5))}
print(json.dumps({"units": info["compute_units"], "checks": checks, **stats()}))
"""
    for threads in ("1", "3"):
        doc = run_json(code, template, MYDEV_THREADS=threads)
        assert doc["units"] == int(threads)
        assert all(doc["checks"].values()), (threads, doc["checks"])
        assert doc["cpu"] == []
