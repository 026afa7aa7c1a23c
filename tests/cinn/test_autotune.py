"""Autotuning (cinn_backends/autotune.py, tune_cache.py): every candidate of the schedule space
computes what the rule computes; the winner is cached on disk and reused by another process;
HWPORT_CINN_AUTOTUNE=0 keeps the rule; a damaged tuning file is ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hwport.cinn_backends import autotune, tune_cache
from hwport.cinn_backends.lower_group import lower_group
from hwport.cinn_backends.target import TargetInfo
from hwport.cinn_backends.tuning import RULE, Tuning
from tests.cinn import runners
from tests.cinn.helpers import group_of, out_specs, program

ROOT = Path(__file__).resolve().parents[2]
PLACES = [p for p in ("custom:cpu", "custom:opencl") if runners.have_core_codegen(p)]
pytestmark = pytest.mark.skipif(not PLACES, reason="no codegen target in the runtime")

GROUPS: dict[str, tuple[list[tuple[list[int], str]], Any]] = {
    "rms": ([([13, 77], "float32"), ([77], "float32")],
            lambda o, x, w: o.rms_norm(x, w, epsilon=1e-6)),
    "softmax": ([([9, 130], "float32")], lambda o, x: o.softmax(x, axis=-1)),
    "layer_norm": ([([7, 3, 40], "float32"), ([40], "float32"), ([40], "float32")],
                   lambda o, x, w, b: o.layer_norm(x, w, b, epsilon=1e-5)),
    "epilogue": ([([11, 70], "float32"), ([70], "float32"), ([11, 70], "float32")],
                 lambda o, x, b, r: o.add(o.gelu(o.add(x, b)), r)),
    "column_sum": ([([33, 20], "float32")], lambda o, x: o.sum(o.exp(x), axis=[0])),
    "int_max": ([([6, 50], "int32")], lambda o, x: o.max(o.multiply(x, x), axis=[-1])),
}


def _target(place: str) -> TargetInfo:
    from hwport.cinn_backends.compile import target_info

    return TargetInfo.from_dict(target_info(place))


def _feeds(ins: list[tuple[list[int], str]]) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.integers(-50, 50, s).astype(dt) if dt.startswith("int")
            else rng.standard_normal(s).astype(dt) for s, dt in ins]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", sorted(GROUPS))
def test_every_candidate_matches_the_rule(place: str, name: str) -> None:
    ins, body = GROUPS[name]
    p = program(ins, body)
    ops, vi, vo = group_of(p)
    target = _target(place)
    feeds, specs = _feeds(ins), out_specs(p)
    rule = lower_group(ops, vi, vo, target)
    want = runners.run_core(rule, feeds, specs, place)
    cands = autotune.candidates(rule)
    assert cands[0] == RULE and len(cands) > 2
    # the vector width is searched too (the CPU schedule's loops, also the item schedule's)
    assert any(c.vector for c in cands) or any(s.col_dims for s in rule.specs)
    for cand in cands[1:]:
        got = runners.run_core(lower_group(ops, vi, vo, target, tuning=cand), feeds, specs,
                               place)
        for g, w in zip(got, want, strict=True):
            if w.dtype.kind == "f":
                np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=cand.label())
            else:
                np.testing.assert_array_equal(g, w, err_msg=cand.label())


def test_tuning_json_round_trip_and_validation() -> None:
    t = Tuning("item", group=1, per_unit=8, vector=8)
    assert Tuning.from_json(t.to_json()) == t
    assert Tuning.from_json({}) == RULE
    for bad in ({"mode": "warp"}, {"group": 3}, {"rows": -1}, {"extra": 1}, [1], {"rows": "2"},
                {"vector": 12}, {"stream": 2}):
        with pytest.raises(ValueError):
            Tuning.from_json(bad)


SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from hwport.cinn_backends import autotune, compile as cc
from hwport.cinn_backends.lower_group import lower_group
from hwport.cinn_backends.target import TargetInfo
from tests.cinn.helpers import group_of, program

place = {place!r}
p = program([([256, 512], "float32"), ([512], "float32")],
            lambda o, x, w: o.rms_norm(x, w, epsilon=1e-6))
ops, vi, vo = group_of(p)
target = TargetInfo.from_dict(cc.target_info(place))
shapes = {{("in", 0): (256, 512), ("in", 1): (512,), ("out", 0): (256, 512)}}
lowered = autotune.tuned(place, lambda t: lower_group(ops, vi, vo, target, tuning=t), shapes)
print(json.dumps({{"tuning": lowered.tuning.to_json(), "auto": autotune.STATS,
                  "compile": cc.STATS}}))
"""


def _run(place: str, cache_dir: Path, **env: str) -> dict[str, Any]:
    full = {**os.environ, "HWPORT_CINN_CACHE_DIR": str(cache_dir), "HWPORT_CINN_TUNE_MIN": "0",
            "HWPORT_CINN_TUNE_BUDGET": "4", **env}
    full.pop("HWPORT_CINN_CACHE", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(root=str(ROOT), place=place)],
                         env=full, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("place", PLACES)
def test_winner_is_cached_and_reused_across_processes(place: str, tmp_path: Path) -> None:
    first = _run(place, tmp_path)
    assert first["auto"]["tuned"] == 1 and first["auto"]["candidates"] >= 2
    data = json.loads((tmp_path / tune_cache.FILE).read_text())
    assert data["format"] == tune_cache.FORMAT
    (entry,) = data["entries"].values()
    assert Tuning.from_json(entry["tuning"]).to_json() == first["tuning"]
    second = _run(place, tmp_path)
    assert second["auto"] == {**second["auto"], "tuned": 0, "reused": 1, "candidates": 0}
    assert second["tuning"] == first["tuning"]
    assert second["compile"]["compiled"] == 0  # only the winner, from the module cache


@pytest.mark.parametrize("place", PLACES[:1])
def test_autotune_off_uses_the_rule(place: str, tmp_path: Path) -> None:
    got = _run(place, tmp_path, HWPORT_CINN_AUTOTUNE="0")
    assert got["tuning"] == {} and got["auto"]["tuned"] == 0
    assert not (tmp_path / tune_cache.FILE).exists()


@pytest.mark.parametrize("place", PLACES[:1])
def test_damaged_tuning_file_is_ignored(place: str, tmp_path: Path) -> None:
    (tmp_path / tune_cache.FILE).write_text("{not json")
    first = _run(place, tmp_path)
    assert first["auto"]["tuned"] == 1
    data = json.loads((tmp_path / tune_cache.FILE).read_text())
    # an entry whose contents no longer match its checksum is ignored too
    (key, entry), = data["entries"].items()
    entry["tuning"] = {"mode": "tree", "group": 4096, "rows": 9}
    (tmp_path / tune_cache.FILE).write_text(json.dumps(data))
    second = _run(place, tmp_path)
    assert second["auto"]["tuned"] == 1 and second["auto"]["reused"] == 0
    again = json.loads((tmp_path / tune_cache.FILE).read_text())["entries"][key]
    assert tune_cache._valid(key, again) is not None


def test_streaming_stores_are_a_candidate_and_safe_when_misaligned() -> None:
    """Tuning(stream=1): the OpenCL item kernel's vector stores to outputs go non-temporal
    where the address is aligned to the vector (movnt faults otherwise), with a store fence at
    the end; an output at a misaligned byte offset takes the ordinary stores. Results equal
    the rule's either way."""
    from tests.cinn.helpers import SIMT, lower, opencl

    env = opencl()
    if env is None:
        pytest.skip("no OpenCL device for pyopencl")
    shapes = [([64, 256], "float32"), ([256], "float32")]
    p = program(shapes, GROUPS["rms"][1])
    streamed = lower(p, SIMT, Tuning("item", group=1, per_unit=8, stream=1))
    assert "__builtin_nontemporal_store" in streamed.source and "& 63) == 0" in streamed.source
    assert "__builtin_ia32_sfence" in streamed.source
    assert "__builtin_nontemporal_store" not in lower(p, SIMT, Tuning(
        "item", group=1, per_unit=8)).source
    assert any(c.stream for c in autotune.candidates(lower(p, SIMT)))
    feeds, specs = _feeds(shapes), out_specs(p)
    x, w = (a.astype(np.float64) for a in feeds)
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    for offset in (0, 4, 32):  # aligned, misaligned, aligned to 32 bytes but not 64
        (got,) = runners.run_opencl(env, streamed, feeds, specs, out_offset=offset)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=f"offset {offset}")
