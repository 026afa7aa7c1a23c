"""The pir dialect `dist` on a real communicator in a one-process job (MPI's singleton start,
no mpirun): a captured function's program holds its collectives (two equal all_reduces stay
two: they are not Pure), round-trips through the text format, runs after cse/dce with the
collectives kept, and the verifier refuses wrong result types, a reduce_scatter operand
without the nranks dim and an unknown communicator id; jit.save refuses such a program.
Prints "OK" at the end."""

from __future__ import annotations

import os
import re
import tempfile

import numpy as np

import hwport
import hwport.distributed as dist
from hwport import pir
from hwport.pir.passes import PassManager
from hwport.pir.verifier import VerificationError

dist.init_parallel_env()


@hwport.jit.to_static
def f(x: hwport.Tensor) -> hwport.Tensor:
    y = x * 2.0
    dist.all_reduce(y)
    z = x * 2.0
    dist.all_reduce(z)  # the same collective on the same value: a second exchange
    parts: list[hwport.Tensor] = []
    dist.all_gather(parts, x)
    return y + z + parts[0]


x = np.arange(6, dtype=np.float32).reshape(2, 3)
for k in range(3):  # capture, then two program runs
    np.testing.assert_allclose(f(hwport.to_tensor(x + k)).numpy(), 5 * (x + k))
entry = next(iter(f._cache.values()))
assert entry.executor is not None and entry.eager_reason is None
text = str(entry.program)
assert text.count('"dist.all_reduce"') == 2 and '"dist.all_gather"' in text, text
assert "builtin.tensor<1x2x3xf32>" in text  # all_gather's result: [nranks, *x]

# the text format round-trips; cse and dce keep both collectives
again = pir.parse(text)
again.verify()
assert str(again) == text
PassManager("cse,dce").run(again)
assert str(again).count('"dist.all_reduce"') == 2

comm_id = int(re.search(r"comm_id:\(Int64\)(\d+)", text).group(1))


def refused(build: object, needle: str) -> None:
    p = pir.Program()
    with pir.Builder(p) as b:
        build(b)
    try:
        p.verify()
    except VerificationError as e:
        assert needle in str(e), e
        return
    raise AssertionError(f"verify accepted a program that should fail with {needle!r}")


def t(shape: tuple[int, ...]) -> pir.TensorType:
    return pir.TensorType(shape, "float32")


refused(lambda b: b.create("dist.all_gather", [b.data("x", [3], "float32")], [t((3,))],
                           {"comm_id": comm_id}), "expected ['builtin.tensor<1x3xf32>']")
refused(lambda b: b.create("dist.reduce_scatter", [b.data("x", [3, 4], "float32")],
                           [t((4,))], {"comm_id": comm_id}), "must be [nranks=1, ...]")
refused(lambda b: b.create("dist.all_reduce", [b.data("x", [3], "float32")], [t((3,))],
                           {"comm_id": 987654}), "is not registered in this process")


# jit.save refuses a program whose communicators live only in this process
class AllReduced(hwport.nn.Layer):
    def forward(self, x: hwport.Tensor) -> hwport.Tensor:
        y = x * 1.0
        dist.all_reduce(y)
        return y


layer = hwport.jit.to_static(AllReduced())
layer(hwport.to_tensor(x))
try:
    hwport.jit.save(layer, os.path.join(tempfile.mkdtemp(), "m"),
                    input_spec=[hwport.static.InputSpec([2, 3], "float32")])
    raise AssertionError("jit.save took a program with collectives")
except ValueError as e:
    assert "collectives (dist.all_reduce)" in str(e), e
print("OK", flush=True)
