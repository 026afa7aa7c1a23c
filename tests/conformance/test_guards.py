"""The guards suite's mechanism (conformance/suites/guards.py): outputs placed at an offset
inside patterned buffers through phi_ops.dispatch.output_allocator, damage found by side and
distance, the normal allocator restored, and the shape cases it picks."""

from __future__ import annotations

import numpy as np
import pytest

from hwport.conformance.suites import guards
from hwport.phi_ops import dispatch, sample_inputs
from hwport.runtime import _core


def _add_on_cpu(guarded_seed: int = 7):
    x = _core.from_numpy(np.arange(13, dtype=np.float32), "cpu")
    y = _core.from_numpy(np.full(13, 0.5, np.float32), "cpu")
    with guards.guarded_outputs(guarded_seed) as g:
        out = dispatch.call("add", (x, y), {})
    return g, out


def test_outputs_sit_at_an_offset_inside_a_patterned_buffer():
    g, out = _add_on_cpu()
    assert dispatch.output_allocator is _core.empty
    assert len(g.launches) == 1
    rec = g.launches[0]
    assert rec["op"] == "add" and rec["nbytes"] == 13 * 4 and rec["guard"] == guards.GUARD_BYTES
    assert out._offset * 4 == guards.GUARD_BYTES  # a view into the larger buffer
    np.testing.assert_array_equal(out.numpy(), np.arange(13, dtype=np.float32) + 0.5)
    assert g.damage() == []
    whole = rec["big"].numpy().view(np.uint8)
    assert whole.size == 2 * guards.GUARD_BYTES + 13 * 4
    assert np.array_equal(whole[:guards.GUARD_BYTES], rec["pattern"][:guards.GUARD_BYTES])


def test_damage_is_reported_by_side_and_distance():
    g, _ = _add_on_cpu()
    rec = g.launches[0]
    end = rec["guard"] + rec["nbytes"]
    pattern = rec["pattern"].copy()
    pattern[rec["guard"] - 3] ^= 0xFF  # 3 bytes before the output's start
    pattern[end + 4] ^= 0xFF  # at the 5th byte past its end
    pattern[end + 9] ^= 0xFF
    rec["pattern"] = pattern
    got = {d["side"]: d for d in g.damage()}
    assert got["before"]["nearest"] == 3 and got["before"]["bytes"] == 1
    assert got["after"]["nearest"] == 5 and got["after"]["bytes"] == 2
    assert "3 guard byte(s)" not in guards._describe(got["after"])
    assert "2 guard byte(s) past its end changed" in guards._describe(got["after"])


def test_the_allocator_is_restored_when_the_call_raises():
    with pytest.raises(RuntimeError), guards.guarded_outputs(0):
        assert dispatch.output_allocator is not _core.empty
        raise RuntimeError
    assert dispatch.output_allocator is _core.empty


def test_picked_cases_have_odd_sizes_and_skip_large_empty_and_0d():
    picked = guards._picked(sample_inputs.cases_for("add", "float32", 1))
    assert [sc.name for sc in picked] == ["same13x17", "bcast"]
    for op in ("sum", "relu", "matmul", "softmax"):
        for sc in guards._picked(sample_inputs.cases_for(op, "float32", 1)):
            assert not sc.name.startswith(("large", "empty", "0d")), (op, sc.name)
            assert max(np.size(x) for x in sc.inputs if isinstance(x, np.ndarray)) % 8, sc.name
