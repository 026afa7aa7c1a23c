"""The thresholds and transfers suites: what they collect (families derived from ops.yaml, the
default boundaries and the --thorough ladder), that the precision tolerance separates a
float32 accumulator from a float16 one, and real cases on the reference CPU plugin."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hwport
from hwport.conformance.model import Case, CheckFailed, Status, Target
from hwport.conformance.suites import ladder, thresholds, transfers
from hwport.phi_ops import sample_inputs
from hwport.phi_ops.reference import reference
from hwport.phi_ops.tolerance import compare

from .conftest import hwcheck, results_by_id

CPU = Target("cpu")
ALL = list(sample_inputs.ALL_DTYPES)


def _options(**kw):
    return {"plugin": {"device_type": "cpu", "dtypes": ALL}, "seed": 0, **kw}


def test_ladder_specs_resolve_against_the_device():
    props = {"max_work_group_size": 256, "simd_width": 8, "total_memory": 1 << 30}
    assert [ladder.resolve(s, props) for s in ("4097", "wg-1", "wg+1", "2wg+1", "simd-1")] \
        == [4097, 255, 257, 513, 7]
    assert ladder.resolve("max-1", props) == (1 << 28) - 1  # min(256 MiB, total / 4)
    assert ladder.resolve("max", {"total_memory": 1 << 28}) == 1 << 26
    assert ladder.resolve("wg-1", {"max_work_group_size": 1}, minimum=1) == 1
    full = [int(s) for s in ladder.full_ladder()]
    assert full[:5] == [1, 2, 3, 4, 5] and full[-3:] == [65535, 65536, 65537]
    assert all(any(abs(n - 2**k) <= 1 for k in range(17)) for n in full)
    with pytest.raises(ValueError, match="bad size spec"):
        ladder.resolve("wg*2", props)


def test_families_are_derived_from_ops_yaml():
    fams = {name: thresholds.family(op) for name, op in sample_inputs.OPS.items()}
    for name, op in sample_inputs.OPS.items():
        if op.category in ("reduction", "scan"):
            assert fams[name] == op.category
    assert fams["matmul"] == "matmul"
    assert {n for n, f in fams.items() if f == "rows"} >= {"softmax", "log_softmax",
                                                           "layer_norm", "rms_norm", "argsort"}
    assert {"add", "exp", "where", "cast", "gelu", "clip"} <= {n for n, f in fams.items()
                                                              if f == "elementwise"}
    assert fams["reshape"] is None and fams["topk"] is None  # no length threshold / k required
    assert set(thresholds.precision_ops(sample_inputs.OPS)) == {
        "sum", "mean", "cumsum", "matmul", "softmax", "log_softmax", "layer_norm", "rms_norm",
        "softmax_grad", "layer_norm_grad", "rms_norm_grad", "cross_entropy_grad"}


def test_collect_samples_boundaries_and_thorough_sweeps_the_ladder():
    default = {c.name: c for c in thresholds.collect(CPU, _options())}
    thorough = {c.name: c for c in thresholds.collect(CPU, _options(thorough=True))}
    assert len(default) == len(thresholds.collect(CPU, _options()))  # ids are unique
    assert set(default) < set(thorough)
    for n in ("63", "64", "65", "4095", "4097", "wg+1", "simd-1"):
        assert f"add/float32/n-{n}" in default and f"sum/int8/rows-{n}" in default
    assert "add/float32/n-65537" in default and "add/bfloat16/n-65537" not in default  # leads
    assert "add/float32/n-2049" not in default and "add/float32/n-2049" in thorough
    assert {f"add/int8/n-{s}" for s in ladder.full_ladder()} <= set(thorough)
    assert "matmul/float32/mnk-3x5x65" in default and "matmul/float32/mnk-1x257x1025" in default
    assert {f"{op}/{d}/accumulate-16384" for op in ("sum", "layer_norm")
            for d in ("float16", "bfloat16")} <= set(default)
    only_f16 = thresholds.collect(CPU, _options(dtypes=["float16"]))
    assert {c.params["dtype"] for c in only_f16} == {"float16"}


def test_the_hwcheck_thorough_flag_reaches_collect(tmp_path):
    case = "thresholds::add/float32/n-2049"  # only on the thorough ladder
    proc = hwcheck("run", "--plugin", "cpu", "--suite", "thresholds", "-k", case, cwd=tmp_path)
    assert proc.returncode == 2 and "no case matched" in proc.stderr, proc.stdout + proc.stderr
    proc = hwcheck("run", "--plugin", "cpu", "--suite", "thresholds", "-k", case, "--thorough",
                   "--json", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = results_by_id(tmp_path / "run.json")
    assert {cid: r["status"] for cid, r in got.items()} == {case: "PASS"}
    assert got[case]["details"]["sizes"] == [2049]


def _narrow_sum(x: np.ndarray, dtype) -> np.ndarray:
    """The running sum of x accumulated in `dtype` (what a float16 accumulator gives)."""
    acc = np.zeros((), dtype)
    out = np.empty(x.shape, dtype)
    for i, v in enumerate(x.astype(dtype)):
        acc = (acc + v).astype(dtype)
        out[i] = acc
    return out


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["sum", "cumsum", "mean"])
def test_precision_tolerance_passes_float32_and_fails_narrow_accumulation(op, dtype):
    sc = thresholds.build(op, dtype, "accumulate", [16384], seed=1)
    x = np.asarray(sc.inputs[0])
    want = reference(op, sc.inputs, sc.attrs)
    tol = thresholds.precision_tolerance(op, dtype, want)
    np_dt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    wide = np.cumsum(x.astype(np.float32))
    narrow = _narrow_sum(x, np_dt)
    if op == "sum":
        wide, narrow = wide[-1], narrow[-1]
    elif op == "mean":
        wide, narrow = wide[-1] / x.size, narrow[-1].astype(np.float32) / x.size
    assert compare(op, dtype, np.asarray(wide).astype(np_dt), want, tolerance=tol).ok
    bad = compare(op, dtype, np.asarray(narrow).astype(np_dt), want, tolerance=tol)
    assert not bad.ok, (op, dtype, narrow, want)


def test_precision_atol_cannot_hide_a_relative_error():
    want = np.full(8, 1e-4)
    assert thresholds.precision_tolerance("softmax", "float16", want)["atol"] \
        == pytest.approx(1e-2 * 1e-4)


def _run(name: str) -> Case:
    (case,) = [c for c in thresholds.collect(CPU, _options()) if c.name == name]
    return case


@pytest.mark.parametrize("name", [
    "add/float32/n-4097", "exp/float16/n-65537", "sum/float32/cols-4097", "argmax/int8/rows-257",
    "cumprod/float64/flat-1025", "softmax/float32/rows-4097", "layer_norm/bfloat16/rows-wg+1",
    "matmul/float32/mnk-3x5x1025", "matmul/int32/mnk-1x257x1025",
    "sum/float16/accumulate-16384", "matmul/bfloat16/accumulate-16384",
    "softmax/float16/accumulate-16384", "rms_norm/float16/accumulate-16384",
    "cumsum/bfloat16/accumulate-16384"])
def test_cpu_plugin_passes(name):
    res = thresholds.run(CPU, _run(name), {})
    assert res.status == Status.PASS, res.message
    assert res.details["mismatches"] == 0 and res.details["elements"] > 0


def test_a_wrong_result_fails_with_the_sizes_in_the_message(monkeypatch):
    from hwport.conformance.suites import kernels

    real = kernels._call

    def off_by_one(op, sc, where):
        result, got = real(op, sc, where)
        got = got.copy()
        got[-1] += 1
        return result, got

    monkeypatch.setattr(kernels, "_call", off_by_one)
    with pytest.raises(CheckFailed, match=r"^n 4097: add\[float32\]: 1 of 4097 elements") as e:
        thresholds.run(CPU, _run("add/float32/n-4097"), {})
    assert e.value.details["sizes"] == [4097]


# ---- transfers --------------------------------------------------------------------------------

def test_transfers_collect_offsets_sizes_and_the_thorough_ladder():
    names = [c.name for c in transfers.collect(CPU, {})]
    assert len(names) == len(set(names))
    for op in transfers.OPS:
        assert {f"{op}/{s}-off{o}" for s in transfers.DEFAULT_SIZES
                for o in (0, 1, 3, 4095)} | {f"{op}/max-1-off4095"} == \
            {n for n in names if n.startswith(f"{op}/")}
    thorough = {c.name for c in transfers.collect(CPU, {"thorough": True})}
    assert {"h2d/268435455-off1", "memset/2-off4095", "d2d/max-1-off3"} <= thorough
    assert "h2d/268435456-off0" not in thorough  # the largest is max (min(256 MiB, total/4))


@pytest.mark.parametrize("name", ["h2d/4097-off3", "d2h/1048577-off4095", "d2d/4097-off1",
                                  "memset/16777219-off1"])
def test_cpu_plugin_passes_transfers(name):
    case = next(c for c in transfers.collect(CPU, {}) if c.name == name)
    res = transfers.run(CPU, case, {})
    assert res.status == Status.PASS, res.message
    assert res.details["offset"] == int(name.rsplit("off", 1)[1])


def test_transfer_check_names_the_first_wrong_byte_of_the_whole_destination():
    before = np.arange(32, dtype=np.uint8)
    got = before.copy()
    got[4:10] = 7
    got[12] = 0  # one byte past the range
    transfers._check_buffer(got[:12].copy(), before[:12], 7, 4, 6, "x")  # the range alone: ok
    with pytest.raises(CheckFailed, match=r"x: the bytes after the range changed: 1 of 22 "
                                          r"bytes differ, the first at destination byte 12"):
        transfers._check_buffer(got, before, 7, 4, 6, "x")
    got[3] = 9
    with pytest.raises(CheckFailed, match="before the offset changed"):
        transfers._check_buffer(got, before, 7, 4, 6, "x")


def test_backward_op_tolerance_passes_the_cpu_kernel_and_fails_narrow_accumulation():
    """layer_norm_grad's outputs cancel to ~0 (each row sums to 0): the median-based atol still
    passes float32 accumulation and fails running float16 sums of the row statistics."""
    sc = thresholds.build("layer_norm_grad", "float16", "accumulate", [16384], seed=1)
    want = reference("layer_norm_grad", sc.inputs, sc.attrs)
    tol = thresholds.precision_tolerance("layer_norm_grad", "float16", want)
    x = hwport.to_tensor(sc.inputs[0], place="custom:cpu")
    g = hwport.to_tensor(sc.inputs[1], place="custom:cpu")
    got = hwport.layer_norm_grad(x, g).numpy()
    assert compare("layer_norm_grad", "float16", got, want, tolerance=tol).ok

    def narrow_row(xr: np.ndarray, gr: np.ndarray) -> np.ndarray:
        n = xr.size
        mean = float(_narrow_sum(xr, np.float16)[-1]) / n
        d = xr.astype(np.float32) - mean
        rstd = 1.0 / np.sqrt(float(_narrow_sum(d * d, np.float16)[-1]) / n + 1e-5)
        xh = d * rstd
        mg = float(_narrow_sum(gr, np.float16)[-1]) / n
        mgx = float(_narrow_sum(gr.astype(np.float32) * xh, np.float16)[-1]) / n
        return ((gr - mg - xh * mgx) * rstd).astype(np.float16)

    narrow = np.stack([narrow_row(xr, gr) for xr, gr in zip(sc.inputs[0], sc.inputs[1],
                                                             strict=True)])
    assert not compare("layer_norm_grad", "float16", narrow, want, tolerance=tol).ok
