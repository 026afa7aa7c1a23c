"""Streaming stores in the c99 dialect (Tuning(stream=1), render/c99_stream.py): the element
loops' output stores go non-temporal in 64-byte aligned blocks, plain stores before and after
them and for a misaligned output, a store fence at the end; the results equal the rule's at
every output alignment, on every vector ISA the helper has a path for."""

from __future__ import annotations

import platform
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from hwport.cinn_backends import autotune
from hwport.cinn_backends.tuning import Tuning
from tests.cinn import runners
from tests.cinn.helpers import CPU, lower, out_specs, program

pytestmark = pytest.mark.skipif(not runners.have_cc(), reason="no C compiler")
STREAM = Tuning(stream=1)
X86 = platform.machine() in ("x86_64", "AMD64")


def _rms(o: Any, x: Any, w: Any) -> Any:
    return o.rms_norm(x, w, epsilon=1e-6)


def _two_outputs(o: Any, x: Any, y: Any) -> Any:
    # two outputs of different element sizes: 64-byte blocks of the narrower one
    return [o.exp(o.add(x, y)), o.cast(o.multiply(x, y), dtype="float64")]


CASES = {
    "rms odd rows": ([([13, 77], "float32"), ([77], "float32")], _rms),
    "rms long rows": ([([5, 1000], "float32"), ([1000], "float32")], _rms),
    "flat two dtypes": ([([3, 333], "float32"), ([3, 333], "float32")], _two_outputs),
    "flat tiny": ([([1, 5], "float32"), ([1, 5], "float32")], _two_outputs),
}


def _feeds(ins: list[tuple[list[int], str]]) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.standard_normal(s).astype(dt) for s, dt in ins]


def test_source_has_the_streamed_blocks_and_a_fence() -> None:
    ins, body = CASES["rms odd rows"]
    p = program(ins, body)
    src = lower(p, CPU, STREAM).source
    assert "hw_stream64(&out0[" in src and src.rstrip().endswith("hw_sfence();\n}")
    assert "hw_stream64" not in lower(p, CPU).source
    assert STREAM in autotune.candidates(lower(p, CPU))


@pytest.mark.parametrize("isa", ["native", "avx2", "sse2"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_streamed_results_equal_the_rule_at_every_alignment(name: str, isa: str) -> None:
    if isa != "native" and not X86:
        pytest.skip("the ISA variants are x86's")
    ins, body = CASES[name]
    p = program(ins, body)
    feeds, specs = _feeds(ins), out_specs(p)
    want = runners.run_c99(lower(p, CPU), feeds, specs)
    streamed = lower(p, CPU, STREAM)
    # -Werror: the helper is warning-free; the flags after -march=native pick its path
    flags = {"native": "", "avx2": " -mno-avx512f", "sse2": " -mno-avx"}[isa]
    streamed = replace(streamed, options=streamed.options + " -Wall -Wextra -Werror" + flags)
    for offset in (0, 4, 32, 8 * 7):  # aligned, misaligned, half a line, one element short
        got = runners.run_c99(streamed, feeds, specs, out_offset=offset)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} {isa} offset {offset}")
