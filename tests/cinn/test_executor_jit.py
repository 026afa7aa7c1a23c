"""The program executor on a device with a codegen target and no kernels (the template plugin):
ops outside fused groups run through the eager JIT's compiled kernels, as eager calls do, not
through the CPU fallback (issue 17: a vendor who writes a runtime and a codegen target gets
every op, in programs too)."""

from __future__ import annotations

from pathlib import Path

from tests.cinn.test_eager_jit import PRELUDE, mydev, run_json  # noqa: F401 (the fixture)

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
