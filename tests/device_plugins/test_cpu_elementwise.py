"""The CPU plugin's generated elementwise kernels (every unary/binary primitive of ops.yaml with a
c_expr, and where) and its thread pool, driven directly through the C ABI with cffi.

numpy is the oracle: each op's `reference` expression from ops.yaml, evaluated on the op's dtype
(float16/bfloat16: in float32, then rounded once to the dtype, which is how numpy computes
float16). Integer, bool, compare, logical, rounding and selection results must be bit-identical;
float math (exp, log, sin, pow, ...) within a few ulp."""

from __future__ import annotations

import collections
import importlib.util
import math
import os
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml
from plugin_build import GEN_CPU_ELEMENTWISE, OPS_YAML

from hwport.conformance.direct_host import (
    DTYPE_CODE,
    DTYPE_NAMES,
    INVALID_ARGUMENT,
    NULL,
    DeviceArray,
    DirectHost,
    View,
    ffi,
    np_dtype,
)
from tests.seeds import rng_for

FLOATS = ("float16", "bfloat16", "float32", "float64")
HALF = ("float16", "bfloat16")
INTS = ("int8", "uint8", "int16", "int32", "int64")
PARALLEL_MIN = 32768  # elements: launches at least this big run on the thread pool
NOT_SUPPORTED = 3

# Float math that is not correctly rounded: allowed distance from numpy in ulp of the dtype.
MATH_OPS = {"exp", "expm1", "log", "log1p", "sin", "cos", "tanh", "erf", "pow"}
MATH_ULP = {"float16": 1, "bfloat16": 1, "float32": 4, "float64": 4}
# numpy leaves the sign of a zero result of maximum/minimum(+0, -0) unspecified (it differs
# between its SIMD and scalar loops, and ml_dtypes does its own thing).
ZERO_SIGN_FREE = {"maximum", "minimum"}


# ---- the op table, read from ops.yaml independently of the generator ------------------------

def load_ops() -> dict[str, dict]:
    doc = yaml.safe_load(Path(OPS_YAML).read_text(encoding="utf-8"))
    groups = doc["dtype_groups"]
    ops = {}
    for op in doc["ops"]:
        if op["kind"] != "primitive":
            continue
        if not ((op["category"] in ("unary", "binary") and op.get("c_expr"))
                or op["name"] == "where"):
            continue
        spec = op["dtypes"]
        dtypes = list(groups[spec] if isinstance(spec, str) else spec)
        out = op.get("out_dtype", "same")
        if out == "float":  # the host casts integer inputs to float32 first
            dtypes = [d for d in dtypes if d in FLOATS]
        ops[op["name"]] = {"arity": len(op["inputs"]), "inputs": list(op["inputs"]),
                           "dtypes": tuple(dtypes), "out": out, "reference": op["reference"]}
    return ops


OPS = load_ops()
OP_DTYPES = [(op, d) for op, info in OPS.items() for d in info["dtypes"]]


def test_the_table_covers_the_expected_ops():
    assert set(OPS) >= {"abs", "neg", "exp", "log", "sqrt", "floor", "round", "sign",
                        "logical_not", "bitwise_not", "isnan", "isinf", "subtract", "divide",
                        "floor_divide", "remainder", "pow", "maximum", "minimum", "equal",
                        "less_than", "logical_xor", "bitwise_and", "where"}
    assert OPS["divide"]["dtypes"] == FLOATS


def _generator():
    spec = importlib.util.spec_from_file_location("gen_cpu_elementwise", GEN_CPU_ELEMENTWISE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generator_table_matches_ops_yaml(tmp_path):
    gen = _generator()
    header = gen.generate(OPS_YAML, tmp_path)
    text = header.read_text()
    for op, info in OPS.items():
        assert f"#define CPU_EW_ENTRY_{op}(X) X({op}, " in text
        body = text.split(f"#define CPU_EW_DTYPES_{op}(M, arg)")[1].split("#ifdef")[0]
        listed = [line.split(",")[2].strip() for line in body.splitlines() if "M(arg," in line]
        assert [n.rstrip("_") for n in listed] == list(info["dtypes"]), op
    mtime = header.stat().st_mtime_ns
    gen.generate(OPS_YAML, tmp_path)  # unchanged content: the file is left alone
    assert header.stat().st_mtime_ns == mtime


def test_generator_hoists_bool_attrs_out_of_the_loop(tmp_path):
    # gelu's `approximate ? tanh form : erf form`: one loop per value of the flag, the flag a
    # constant inside each (so the per-element select folds); ops without flags: the loop as is
    gen = _generator()
    text = gen.generate(OPS_YAML, tmp_path).read_text()
    hoist = [ln for ln in text.splitlines() if ln.startswith("#define CPU_EW_HOIST_gelu(...)")]
    assert hoist == ["#define CPU_EW_HOIST_gelu(...) if (ew_attr_approximate) { const int "
                     "ew_attr_approximate = 1; __VA_ARGS__ } else { const int "
                     "ew_attr_approximate = 0; __VA_ARGS__ }"]
    assert "#define CPU_EW_HOIST_exp(...) __VA_ARGS__\n" in text
    two = {"name": "t", "attrs": [{"name": "a", "kind": "flag"}, {"name": "s", "kind": "scalar"},
                                  {"name": "b", "kind": "flag"}]}
    macro = gen.hoist_macro(two)
    assert macro.count("__VA_ARGS__") == 4 and "ew_attr_s" not in macro
    assert macro.index("if (ew_attr_a)") < macro.index("if (ew_attr_b)")


def test_generator_translates_and_rejects_expressions():
    gen = _generator()
    assert gen.translate_expr("t", "x - floor(x / y) * y", ["x", "y"]) == \
        "((x) - cpu_ew_floor((x) / (y)) * (y))"
    assert gen.translate_expr("t", "(x > 0) - (x < 0)", ["x"]) == "(((x) > 0) - ((x) < 0))"
    for bad in ("x + z", "x + (y", "x $ y", ""):
        with pytest.raises(gen.GenError):
            gen.translate_expr("t", bad, ["x", "y"])
    assert gen.main(["gen", "/nonexistent/ops.yaml", "/tmp"]) == 1


# ---- values and the oracle -------------------------------------------------------------------

def dtype_of(name: str) -> np.dtype:
    if name == "bfloat16":
        pytest.importorskip("ml_dtypes")
    return np_dtype(name)


def special_values(name: str) -> np.ndarray:
    dt = dtype_of(name)
    if name == "bool":
        return np.array([False, True])
    if name in INTS:
        info = np.iinfo(dt)
        vals = [info.min, info.max, 0, 1, 2, 3, 7, info.min + 1, info.max - 1]
        if info.min < 0:
            vals += [-1, -2, -3, -7]
        return np.array(vals, dtype=dt)
    fin = np.finfo(np.float32 if name in HALF else dt)
    vals = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0,
            3.0, -3.0, 7.5, -7.5, 1e-3, 88.7, -103.5, 710.0, float(fin.tiny) / 4]
    with np.errstate(over="ignore"):
        v = np.array(vals, dtype=np.float64).astype(np.float32 if name in HALF else dt)
        out = v.astype(dt)
    smallest = np.array([1], dtype=np.uint16 if name in HALF else
                        (np.uint32 if name == "float32" else np.uint64)).view(dt)
    largest = np.array([np.finfo(dt).max if name != "bfloat16" else 3.3895e38], dtype=dt)
    return np.concatenate([out, smallest, -smallest, largest, -largest]).astype(dt)


def random_values(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """n values of dtype `name`: the special values first (when they fit), then random ones,
    shuffled so that binary ops pair specials with everything."""
    dt = dtype_of(name)
    if name == "bool":
        vals = rng.integers(0, 2, size=n).astype(np.bool_)
    elif name in INTS:
        info = np.iinfo(dt)
        small = rng.integers(max(info.min, -20), min(info.max, 20), size=n, endpoint=True)
        full = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt)
        vals = np.where(rng.random(n) < 0.5, small, full).astype(dt)
    else:
        mag = np.exp(rng.uniform(-12, 12, size=n)) * np.where(rng.random(n) < 0.5, -1, 1)
        normal = rng.standard_normal(n) * 4
        with np.errstate(over="ignore"):
            vals = np.where(rng.random(n) < 0.5, normal, mag).astype(np.float32 if name in HALF
                                                                       else dt).astype(dt)
    specials = special_values(name)
    k = min(len(specials), n // 2)
    if k:
        vals[:k] = specials[:k]
    return vals[rng.permutation(n)] if n else vals


def erf_ref(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def int_pow_ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Exact wrapping integer power; negative exponents: 1 for base 1, +-1 for base -1, else 0."""
    bits = x.dtype.itemsize * 8
    signed = x.dtype.kind == "i"
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), dtype=x.dtype)
    for idx, bv, ev in zip(np.ndindex(out.shape), np.broadcast_to(x, out.shape).flat,
                           np.broadcast_to(y, out.shape).flat, strict=True):
        b, e = int(bv), int(ev)
        if e < 0:
            r = 1 if b == 1 else (-1 if e % 2 else 1) if b == -1 else 0
        else:
            r = pow(b, e, 1 << bits)
        r &= (1 << bits) - 1
        if signed and r >= 1 << (bits - 1):
            r -= 1 << bits
        out[idx] = r
    return out


def oracle(op: str, name: str, inputs: list[np.ndarray]) -> np.ndarray:
    info = OPS[op]
    dt = dtype_of(name)
    out_dt = np.dtype(np.bool_) if info["out"] == "bool" else dt
    if op == "pow" and name in INTS:
        return int_pow_ref(*inputs)
    if op == "where":  # selection moves values as stored: no compute type
        return np.where(*inputs).astype(dt)
    args = [a.astype(np.float32) if name in HALF else a for a in inputs]
    if op == "erf":
        r = erf_ref(args[0]).astype(args[0].dtype)
    else:
        env = {"np": np, **dict(zip(info["inputs"], args, strict=True))}
        with np.errstate(all="ignore"):
            r = eval(info["reference"], env)  # ops.yaml's numpy expression
    with np.errstate(all="ignore"):
        return np.asarray(r).astype(out_dt)


# ---- comparison ------------------------------------------------------------------------------

def _ordered(a: np.ndarray) -> np.ndarray:
    """Float bits as integers whose order and differences are the values' (ulp distance)."""
    ibits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    i = a.view(ibits).astype(np.int64)
    mag = i & np.int64(np.iinfo(ibits).max)
    return np.where(i < 0, -mag, mag)


def assert_matches(got: np.ndarray, expected: np.ndarray, op: str, name: str, inputs,
                   where: str) -> None:
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (where, got.dtype, expected.dtype)
    assert got.shape == expected.shape, (where, got.shape, expected.shape)
    if got.size == 0:
        return
    g, e = got.reshape(-1).copy(), expected.reshape(-1).copy()
    if g.dtype.kind in "biu":
        bad = g != e
    else:
        gnan = np.isnan(g.astype(np.float32) if name == "bfloat16" else g)
        enan = np.isnan(e.astype(np.float32) if name == "bfloat16" else e)
        og, oe = _ordered(g), _ordered(e)
        if op in MATH_OPS:
            bad = (gnan != enan) | (~gnan & ~enan & (np.abs(og - oe) > MATH_ULP[name]))
        elif op in ZERO_SIGN_FREE:
            bad = (gnan != enan) | (~gnan & ~enan & (og != oe))
        else:  # bit-exact (any NaN matches any NaN; the sign of zero counts)
            same = (g.view(np.uint8).reshape(g.size, -1) ==
                    e.view(np.uint8).reshape(e.size, -1)).all(axis=1)
            bad = (gnan != enan) | (~gnan & ~enan & ~same)
    if bad.any():
        detail = []
        for flat in np.flatnonzero(bad)[:5]:
            ix = np.unravel_index(flat, got.shape)
            ins = [np.broadcast_to(a, got.shape)[ix] for a in inputs]
            detail.append(f"at {ix}: inputs {ins} -> got {g[flat]!r}, expected {e[flat]!r}")
        raise AssertionError(f"{op} {name} [{where}]: {int(bad.sum())} of {got.size} wrong:\n  "
                             + "\n  ".join(detail))


# ---- driving a kernel ------------------------------------------------------------------------

def run_op(h, op: str, name: str, inputs: list[tuple[DeviceArray, np.ndarray]], out_shape,
           stream=NULL) -> np.ndarray:
    info = OPS[op]
    out_dt = np.dtype(np.bool_) if info["out"] == "bool" else dtype_of(name)
    out = DeviceArray.empty(h, out_shape, out_dt, pad=8)
    try:
        st = h.call_kernel(op, DTYPE_CODE[name], [d.view(v) for d, v in inputs], [out.view()],
                           stream=stream)
        h.check(st, op)
        if stream != NULL:
            h.sync_stream(stream)
        return out.read()
    finally:
        out.free()


def input_dtypes(op: str, name: str) -> list[str]:
    return ["bool", name, name] if op == "where" else [name] * OPS[op]["arity"]


# Layouts. Each operand: (base shape, numpy view of the base); plus the output shape. Views are
# what the host passes: inputs broadcast to the output's rank (stride 0), any strides.
def _same(shape):
    return (shape, lambda x: x)


def _bcast(base, shape):
    return (base, lambda x: np.broadcast_to(x, shape))


LAYOUTS = {
    1: [
        ("contiguous", [_same((257,))], (257,)),
        ("odd 2-d", [_same((7, 13))], (7, 13)),
        ("negative strides", [((9, 14), lambda x: x[::-2, ::-1])], (5, 14)),
        ("broadcast rows", [_bcast((13,), (4, 13))], (4, 13)),
        ("broadcast column", [_bcast((4, 1), (4, 13))], (4, 13)),
        ("transposed", [((13, 9), lambda x: x.T)], (9, 13)),
        ("0-d", [_same(())], ()),
        ("zero-size", [_same((0, 5))], (0, 5)),
        ("large", [_same((3, 25001))], (3, 25001)),
        ("large transposed reversed", [((260, 301), lambda x: x.T[::-1])], (301, 260)),
        ("large broadcast", [_bcast((40001,), (2, 40001))], (2, 40001)),
    ],
    2: [
        ("contiguous", [_same((257,)), _same((257,))], (257,)),
        ("scalar right", [_same((257,)), _bcast((), (257,))], (257,)),
        ("scalar left", [_bcast((), (257,)), _same((257,))], (257,)),
        ("row broadcast", [_same((6, 13)), _bcast((13,), (6, 13))], (6, 13)),
        ("column broadcast", [_bcast((6, 1), (6, 13)), _same((6, 13))], (6, 13)),
        ("negative strides", [((9, 14), lambda x: x[::-2, ::-1]), ((5, 28), lambda x: x[:, ::-2])],
         (5, 14)),
        ("transposed", [((13, 9), lambda x: x.T), _same((9, 13))], (9, 13)),
        ("0-d", [_same(()), _same(())], ()),
        ("zero-size", [_same((0, 5)), _same((0, 5))], (0, 5)),
        ("large", [_same((3, 25001)), _same((3, 25001))], (3, 25001)),
        ("large scalar right", [_same((75001,)), _bcast((), (75001,))], (75001,)),
        ("large transposed", [((260, 301), lambda x: x.T[::-1]), _same((301, 260))], (301, 260)),
        ("large row broadcast", [_same((3, 25001)), _bcast((25001,), (3, 25001))], (3, 25001)),
    ],
    3: [
        ("contiguous", [_same((257,))] * 3, (257,)),
        ("scalar x", [_same((257,)), _bcast((), (257,)), _same((257,))], (257,)),
        ("scalar y", [_same((257,)), _same((257,)), _bcast((), (257,))], (257,)),
        ("scalars", [_same((257,)), _bcast((), (257,)), _bcast((), (257,))], (257,)),
        ("broadcast condition", [_bcast((13,), (6, 13)), _same((6, 13)), _bcast((6, 1), (6, 13))],
         (6, 13)),
        ("negative strides", [((9, 14), lambda x: x[::-2, ::-1]), ((5, 28), lambda x: x[:, ::-2]),
                              ((14, 5), lambda x: x.T)], (5, 14)),
        ("0-d", [_same(())] * 3, ()),
        ("zero-size", [_same((0, 5))] * 3, (0, 5)),
        ("large", [_same((3, 25001))] * 3, (3, 25001)),
        ("large scalar y", [_same((75001,)), _same((75001,)), _bcast((), (75001,))], (75001,)),
        ("large transposed", [((260, 301), lambda x: x.T[::-1]), _same((301, 260)),
                              ((301, 260), lambda x: x[::-1])], (301, 260)),
    ],
}


@pytest.fixture(scope="module")
def stream(cpu):
    s = cpu.create_stream()
    yield s
    cpu.destroy_stream(s)


@pytest.mark.parametrize(("op", "name"), OP_DTYPES, ids=[f"{o}-{d}" for o, d in OP_DTYPES])
def test_op_matches_numpy(cpu, stream, op, name):
    """Every op x dtype it registers: contiguous, broadcast (stride 0), negative strides,
    transposed, 0-d, zero-size, odd sizes and big launches (thread pool), on the synchronous
    NULL stream and on a stream."""
    rng = rng_for(op, name)
    dts = input_dtypes(op, name)
    before = cpu.stats()["bytes_in_use"]
    for case, operands, out_shape in LAYOUTS[len(dts)]:
        devs, views, hosts = [], [], []
        for (shape, view_fn), dname in zip(operands, dts, strict=True):
            n = int(np.prod(shape, dtype=np.int64))
            d = DeviceArray(cpu, random_values(dname, n, rng).reshape(shape), pad=4)
            devs.append(d)
            views.append(view_fn(d.host))
            hosts.append(view_fn(d.host))
        try:
            expected = oracle(op, name, hosts)
            for s in ((NULL, stream) if case in ("contiguous", "0-d") else (stream,)):
                got = run_op(cpu, op, name, list(zip(devs, views, strict=True)), out_shape, s)
                assert_matches(got, expected, op, name, hosts, f"{case}, stream={s}")
        finally:
            for d in devs:
                d.free()
    assert cpu.stats()["bytes_in_use"] == before


@pytest.mark.parametrize(("op", "name"), [(o, d) for o, d in OP_DTYPES if OPS[o]["arity"] == 2],
                         ids=[f"{o}-{d}" for o, d in OP_DTYPES if OPS[o]["arity"] == 2])
def test_binary_special_value_pairs(cpu, op, name):
    """Every pair of special values (NaN, +-inf, +-0, int min/max, -1, 0 divisors, ...)."""
    sv = special_values(name)
    x, y = np.repeat(sv, len(sv)), np.tile(sv, len(sv))
    dx, dy = DeviceArray(cpu, x), DeviceArray(cpu, y)
    try:
        got = run_op(cpu, op, name, [(dx, dx.host), (dy, dy.host)], x.shape)
        assert_matches(got, oracle(op, name, [x, y]), op, name, [x, y], "special pairs")
    finally:
        dx.free()
        dy.free()


@pytest.mark.parametrize(("op", "name"), [(o, d) for o, d in OP_DTYPES if OPS[o]["arity"] == 1],
                         ids=[f"{o}-{d}" for o, d in OP_DTYPES if OPS[o]["arity"] == 1])
def test_unary_special_values(cpu, op, name):
    x = special_values(name)
    dx = DeviceArray(cpu, x)
    try:
        got = run_op(cpu, op, name, [(dx, dx.host)], x.shape)
        assert_matches(got, oracle(op, name, [x]), op, name, [x], "special values")
    finally:
        dx.free()


# ---- semantics spelled out (independent of numpy's reference expressions) -------------------

def call(cpu, op, name, *arrays):
    devs = [DeviceArray(cpu, np.asarray(a)) for a in arrays]
    shape = np.broadcast_shapes(*[d.host.shape for d in devs])
    try:
        return run_op(cpu, op, name, [(d, np.broadcast_to(d.host, shape)) for d in devs], shape)
    finally:
        for d in devs:
            d.free()


def test_python_division_semantics(cpu):
    f = np.float32
    assert call(cpu, "remainder", "float32", f([-1, 1, -7.5]), f([3, -3, 2])).tolist() == [
        2, -2, 0.5]
    assert call(cpu, "floor_divide", "float32", f([-7.5, 7.5, -1]), f([2, 2, 3])).tolist() == [
        -4, 3, -1]
    got = call(cpu, "remainder", "float64", np.array([-1.0, 1.0, 5.0, np.inf]),
               np.array([np.inf, -np.inf, 0.0, 2.0]))
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2]) and np.isnan(got[3])
    got = call(cpu, "floor_divide", "float64", np.array([5.0, -5.0, 0.0]), np.zeros(3))
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])
    for name in ("int8", "int16", "int32", "int64"):
        dt = np.dtype(name)
        mn = np.iinfo(dt).min
        x = np.array([-7, 7, -7, 7, 5, mn, mn, 0], dtype=dt)
        y = np.array([2, -2, -2, 2, 0, -1, 1, 0], dtype=dt)
        assert call(cpu, "floor_divide", name, x, y).tolist() == [-4, -4, 3, 3, 0, mn, mn, 0]
        assert call(cpu, "remainder", name, x, y).tolist() == [1, -1, -1, 1, 0, 0, 0, 0]
    assert call(cpu, "floor_divide", "uint8", np.uint8([200, 7]), np.uint8([0, 2])).tolist() == [
        0, 3]


def test_integer_wrapping_and_identities(cpu):
    for name in ("int8", "int16", "int32", "int64"):
        dt = np.dtype(name)
        mn, mx = np.iinfo(dt).min, np.iinfo(dt).max
        x = np.array([mn, mx, -5, 0], dtype=dt)
        assert call(cpu, "abs", name, x).tolist() == [mn, mx, 5, 0]
        assert call(cpu, "neg", name, x).tolist() == [mn, -mx, 5, 0]
        assert call(cpu, "subtract", name, np.array([mn], dt), np.array([1], dt)).tolist() == [mx]
        for op in ("floor", "ceil", "round"):
            assert call(cpu, op, name, x).tolist() == x.tolist()
        assert call(cpu, "sign", name, x).tolist() == [-1, 1, -1, 0]


def test_integer_pow(cpu):
    b = np.array([2, 3, -2, 1, -1, -1, 0, 2, 5, 0, -3], dtype=np.int32)
    e = np.array([10, 0, 3, -5, -3, -4, -1, -1, 1, 0, 2], dtype=np.int32)
    assert call(cpu, "pow", "int32", b, e).tolist() == [1024, 1, -8, 1, -1, 1, 0, 0, 5, 1, 9]
    assert call(cpu, "pow", "int8", np.int8([3]), np.int8([5])).tolist() == [np.int8(-13)]  # 243
    assert call(cpu, "pow", "int64", np.int64([3, 3]), np.int64([39, 41])).tolist() == [
        3**39, 3**41 % 2**64 - 2**64]
    assert call(cpu, "pow", "uint8", np.uint8([2, 3]), np.uint8([8, 200])).tolist() == [
        0, pow(3, 200, 256)]


def test_float_rounding_sign_nan(cpu):
    for name in ("float32", "float64"):
        dt = np.dtype(name)
        x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.7, -0.2], dtype=dt)
        got = call(cpu, "round", name, x)
        assert got.tolist() == [0, 2, 2, -0.0, -2, 4, -0.0] and np.signbit(got[3])
        s = call(cpu, "sign", name, np.array([np.nan, -0.0, 0.0, -np.inf, 3], dtype=dt))
        assert np.isnan(s[0]) and s[1:].tolist() == [0, 0, -1, 1] and not np.signbit(s[1])
        mx = call(cpu, "maximum", name, np.array([np.nan, 1, 2], dt), np.array([1, np.nan, 1], dt))
        mn = call(cpu, "minimum", name, np.array([np.nan, 1, 2], dt), np.array([1, np.nan, 1], dt))
        assert np.isnan(mx[:2]).all() and mx[2] == 2 and np.isnan(mn[:2]).all() and mn[2] == 1
        assert call(cpu, "logical_and", name, np.array([np.nan, 0], dt),
                    np.array([1, np.nan], dt)).tolist() == [True, False]
        assert call(cpu, "logical_not", name, np.array([np.nan, -0.0], dt)).tolist() == [
            False, True]
    for name in ("int8", "uint8", "int64", "bool"):
        x = np.ones(3, dtype=np_dtype(name))
        assert call(cpu, "isnan", name, x).tolist() == [False] * 3
        assert call(cpu, "isinf", name, x).tolist() == [False] * 3


def test_bool_bitwise_ops_are_logical(cpu):
    t, f = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert call(cpu, "bitwise_not", "bool", np.array([False, True])).tolist() == [True, False]
    assert call(cpu, "bitwise_xor", "bool", t, f).tolist() == [False, True, True, False]
    assert call(cpu, "bitwise_and", "bool", t, f).tolist() == [True, False, False, False]
    assert call(cpu, "maximum", "bool", t, f).tolist() == [True, True, True, False]


def test_where_moves_bits(cpu):
    nan_payload = np.array([0x7FC12345, 0xFFC00001], dtype=np.uint32).view(np.float32)
    c = np.array([True, False])
    got = call(cpu, "where", "float32", c, nan_payload, nan_payload[::-1])
    assert got.view(np.uint32).tolist() == [0x7FC12345, 0x7FC12345]


# ---- registration and argument checks --------------------------------------------------------

class CountingHost(DirectHost):
    """A DirectHost that also counts how often each (op, dtype) was registered."""

    def _make_callbacks(self) -> None:
        super()._make_callbacks()
        self.counts = collections.Counter()
        inner = self._cb_register

        @ffi.callback("HWP_Status(void *, const HWP_KernelRegistration *)")
        def register(ctx, reg):
            self.counts[(ffi.string(reg.op_name).decode(), reg.dtype)] += 1
            return inner(ctx, reg)

        self._cb_register = register


def test_registers_exactly_the_listed_dtypes_once(cpu_plugin_so):
    h = CountingHost(cpu_plugin_so, env={"HWPORT_CPU_DEVICES": "1"})
    assert h.init_status == 0
    for op, info in OPS.items():
        got = {DTYPE_NAMES[d] for (o, d) in h.registrations if o == op}
        assert got == set(info["dtypes"]), op
        for d in info["dtypes"]:
            key = (op, DTYPE_CODE[d])
            assert h.counts[key] == 1, f"{key} registered {h.counts[key]} times"
            assert h.registrations[key].flags == 1  # HWP_KERNEL_ACCEPTS_STRIDED
    assert {d for (o, d) in h.registrations if o in ("add", "multiply")} == set(range(10))


def test_kernel_argument_checks(cpu):
    a = DeviceArray(cpu, np.arange(4, dtype=np.int32))
    b = DeviceArray(cpu, np.arange(4, dtype=np.int64))
    f = DeviceArray(cpu, np.arange(4, dtype=np.float32))
    out = DeviceArray.empty(cpu, (4,), np.int32)
    bout = DeviceArray.empty(cpu, (4,), np.bool_)
    try:
        i32 = DTYPE_CODE["int32"]
        cpu.expect_error(cpu.call_kernel("subtract", i32, [a.view(), b.view()], [out.view()]),
                         INVALID_ARGUMENT, "subtract", "int64")
        cpu.expect_error(cpu.call_kernel("equal", i32, [a.view(), a.view()], [out.view()]),
                         INVALID_ARGUMENT, "equal", "output", "bool")
        cpu.expect_error(cpu.call_kernel("where", i32, [a.view(), a.view(), a.view()],
                                         [out.view()]), INVALID_ARGUMENT, "where", "bool")
        # an op's kernel called with a dtype it did not register for
        cpu.expect_error(cpu.call_kernel("exp", DTYPE_CODE["float32"], [a.view()], [out.view()]),
                         NOT_SUPPORTED, "exp", "int32")
        cpu.expect_error(cpu.call_kernel("isnan", DTYPE_CODE["float32"], [f.view()],
                                         [f.view()]), INVALID_ARGUMENT, "isnan", "bool")
        cpu.expect_error(cpu.call_kernel("subtract", i32, [a.view()], [out.view()]),
                         INVALID_ARGUMENT, "subtract")
        wrong_rank = View(a.buffer, 0, i32, (2, 2), None)
        cpu.expect_error(cpu.call_kernel("where", i32, [bout.view(), wrong_rank, a.view()],
                                         [out.view()]), INVALID_ARGUMENT, "where", "ndim")
    finally:
        for d in (a, b, f, out, bout):
            d.free()


# ---- the thread pool -------------------------------------------------------------------------

def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _big_exp(h, n=1 << 18, stream=NULL, seed=0):
    rng = np.random.default_rng(seed)
    x = DeviceArray(h, rng.standard_normal(n).astype(np.float32))
    try:
        got = run_op(h, "exp", "float32", [(x, x.host)], (n,), stream)
        assert_matches(got, oracle("exp", "float32", [x.host]), "exp", "float32", [x.host],
                       "big exp")
    finally:
        x.free()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
@pytest.mark.parametrize("setting", ["1", "3"])
def test_pool_size_from_environment(load_cpu, setting):
    h = load_cpu(HWPORT_CPU_THREADS=setting)
    before = _threads()
    _big_exp(h)  # the pool starts on the first big launch
    assert _threads() - before == int(setting) - 1
    _big_exp(h, seed=1)
    assert _threads() - before == int(setting) - 1  # persistent: no new threads
    assert not h.logs


def test_invalid_pool_size_warns(load_cpu):
    h = load_cpu(HWPORT_CPU_THREADS="many")
    _big_exp(h)
    assert any("HWPORT_CPU_THREADS" in m for _, m in h.logs)


def test_pool_under_concurrent_streams(load_cpu):
    """Two streams (and the synchronous NULL stream) from three host threads, all launching big
    work at once: every result right, nothing lost, nothing leaked."""
    h = load_cpu(HWPORT_CPU_THREADS="4")
    errors = []
    before = h.stats()["bytes_in_use"]

    def worker(seed: int, use_stream: bool) -> None:
        try:
            rng = np.random.default_rng(seed)
            s = h.create_stream() if use_stream else NULL
            for i in range(12):
                n = int(rng.integers(PARALLEL_MIN, 6 * PARALLEL_MIN))
                x = DeviceArray(h, rng.standard_normal(n).astype(np.float32))
                y = DeviceArray(h, rng.standard_normal(n).astype(np.float32))
                c = DeviceArray(h, rng.random(n) < 0.5)
                out = DeviceArray.empty(h, (n,), np.float32)
                tmp = DeviceArray.empty(h, (n,), np.float32)
                ops = [("exp", [x], tmp), ("maximum", [tmp, y], out)] if i % 2 else \
                    [("add", [x, y], tmp), ("where", [c, tmp, x], out)]
                for op, ins, o in ops:  # queued back to back, synchronized once
                    h.check(h.call_kernel(op, DTYPE_CODE["float32"], [d.view() for d in ins],
                                          [o.view()], stream=s), op)
                if s != NULL:
                    h.sync_stream(s)
                with np.errstate(all="ignore"):
                    if i % 2:
                        expected = np.maximum(np.exp(x.host), y.host)
                        got = out.read()
                        ok = np.allclose(got, expected, rtol=2e-6, atol=0)
                    else:
                        expected = np.where(c.host, x.host + y.host, x.host)
                        ok = np.array_equal(out.read(), expected)
                assert ok, f"thread {seed} iteration {i} ({ops[0][0]})"
                for d in (x, y, c, out, tmp):
                    d.free()
            if s != NULL:
                h.destroy_stream(s)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k, k < 2)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert h.stats()["bytes_in_use"] == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_pool_restarts_after_fork(load_cpu):
    h = load_cpu(HWPORT_CPU_THREADS="3")
    _big_exp(h)  # the parent's pool is running
    pid = os.fork()
    if pid == 0:  # the child: its pool must start afresh (the parent's workers are not here)
        code = 1
        try:
            _big_exp(h, seed=5)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    _big_exp(h, seed=6)
