"""The template plugin, the zero-kernel port of issue 17 ("a vendor who writes a runtime and a
codegen target gets every op"): in programs, ops outside fused groups run through the eager
JIT's compiled kernels as eager calls do, not through the CPU fallback; its compiled modules
serialize into the disk cache; it stays within its 300 lines."""

from __future__ import annotations

from pathlib import Path

from tests.cinn.conftest import TEMPLATE
from tests.cinn.test_eager_jit import PRELUDE, run_json

PROGRAM = PRELUDE + """
import hwport.nn.functional as F

def step(x, w):
    h = F.gelu(hwport.matmul(x, w))
    return F.softmax(h, axis=-1), hwport.argsort(h, axis=-1)

fn = hwport.jit.to_static(step)
a = rng.standard_normal((6, 5)).astype("float32")
b = rng.standard_normal((5, 7)).astype("float32")
x, w = t(a), t(b)
fn(x, w)  # the capture runs eagerly
rt.reset_fallback_stats()
before = dict(rt.compiled_stats())
prob, order = fn(x, w)  # the program, on the executor
h = a @ b
h = 0.5 * h * (1 + np.vectorize(__import__("math").erf)(h / np.sqrt(2)))
e = np.exp(h - h.max(-1, keepdims=True))
after = rt.compiled_stats()
ran = sorted(k[0] for k, v in after.items() if k[1] == "mydev" and v > before.get(k, 0))
print(json.dumps({
    "prob": bool(np.allclose(prob.numpy(), e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)),
    "order": bool(np.array_equal(order.numpy(), np.argsort(h, axis=-1, kind="stable"))),
    "ran": ran, **stats(), "program": fn.program_cache_size if hasattr(fn, "program_cache_size")
    else None}))
"""


def test_program_ops_without_kernels_run_compiled_not_on_the_cpu(mydev: Path) -> None:
    doc = run_json(PROGRAM, mydev)
    assert doc["prob"] and doc["order"]
    assert doc["cpu"] == [], doc["stderr"]  # before: every instruction staged through the CPU
    assert {"matmul", "argsort"} <= set(doc["ran"]), doc["ran"]


def test_the_template_stays_within_its_300_lines() -> None:
    """Issue 17's zero-kernel port: a device runtime and a codegen target in <= 300 lines of C."""
    assert len(TEMPLATE.read_text().splitlines()) <= 300


def test_the_template_certifies_the_compiler_tier(mydev: Path, tmp_path: Path) -> None:
    """Its serialize/deserialize keep the compiled shared objects in hwport's disk cache: a
    second process loads them and compiles nothing (compiler::cache_across_processes)."""
    import json

    from tests.conformance.conftest import hwcheck, results_by_id

    proc = hwcheck("run", "--plugin", str(mydev), "--suite", "abi,compiler", "--json",
                   "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["tiers"]["mydev"]["compiler"]["status"] == "certified", doc["tiers"]["mydev"]
    assert results_by_id(tmp_path / "run.json")["compiler::cache_across_processes"][
        "status"] == "PASS"
