"""The C++ op pipeline (runtime/src/pipeline.h) for the unary and binary families: its op table
against ops.yaml and the generated Python functions, its infer-meta against the Python rules
(phi_ops/infer_meta.py, the oracle) on every covered op and every shape case of
phi_ops.sample_inputs, its results against the Python path's, and its deferrals (every error
is the Python path's, an active layer or a swapped hook sends the call to Python)."""

from __future__ import annotations

import contextlib
import inspect
import itertools

import numpy as np
import pytest

import hwport
from hwport.phi_ops import dispatch, functional, infer_meta
from hwport.phi_ops.api_args import public_call
from hwport.phi_ops.codegen.gen_cpp_ops import family
from hwport.phi_ops.infer_meta import Meta
from hwport.phi_ops.sample_inputs import ALL_DTYPES, cases_for, device_inputs, dname
from hwport.phi_ops.schema import load_ops
from hwport.runtime import _core

OPS = load_ops()
PLACE = "custom:cpu"
TABLE = {name: (op_id, fam, keywords) for op_id, name, fam, keywords in _core._pipeline_ops()}
COVERED = [name for name, (_, fam, _) in TABLE.items() if fam]
# Families whose ops are views (reshape and flatten copy where no view fits): run in C++ as
# their decompositions do.
VIEW_FAMILIES = {"reshape", "flatten", "transpose", "squeeze", "unsqueeze", "expand"}


@contextlib.contextmanager
def python_path():
    """Every call on this thread takes the Python path (a layer bit set, as an active layer
    would)."""
    before = _core._pipeline_set_layers(1 << 4)
    try:
        yield
    finally:
        _core._pipeline_set_layers(before)


@contextlib.contextmanager
def deferred_calls():
    """The names of the ops sent to phi_ops.dispatch.call while in the block."""
    calls: list[str] = []
    real = dispatch.call

    def spy(name, args, attrs, place=None):
        calls.append(name)
        return real(name, args, attrs, place)

    dispatch.call = spy
    try:
        yield calls
    finally:
        dispatch.call = real


def _fast_count() -> int:
    return _core._pipeline_stats()[0]


# ---- the table ---------------------------------------------------------------------------

def test_table_is_ops_yaml_in_order():
    assert list(TABLE) == list(OPS)
    assert [TABLE[n][0] for n in OPS] == list(range(len(OPS)))


def _raw_inputs(op) -> list[str]:
    return [i.name + ("..." if i.variadic else "?" if i.optional else "") for i in op.inputs]


def test_families_follow_ops_yaml_fields():
    for name, op in OPS.items():
        expected = family(op.category, op.infer_meta, {a.name: a.type for a in op.attrs},
                          op.out_dtype, _raw_inputs(op)) or ""
        assert TABLE[name][1] == expected, name
    fams = {TABLE[n][1] for n in COVERED}
    assert fams == {"unary", "binary", "reduce", "where", "norm", "matmul", "concat",
                    *VIEW_FAMILIES}
    # every op of category binary is covered; the comparisons among them
    assert {n for n, op in OPS.items() if op.category == "binary"} <= set(COVERED)
    assert {"exp", "log", "tanh", "gelu", "add", "pow", "greater_than", "equal", "sum", "mean",
            "max", "min", "var", "where", "cast", "softplus", "clip", "softmax", "log_softmax",
            "layer_norm", "rms_norm", "matmul", "concat", "reshape", "transpose", "flatten",
            "squeeze", "unsqueeze", "expand"} <= set(COVERED)
    # list attributes (flip's axis, roll's shifts) and unmirrored checks stay in Python
    assert {"flip", "roll", "dropout", "rotary_embedding", "tile"}.isdisjoint(COVERED)


def test_keywords_are_the_python_signatures():
    """_op_call binds the op's own names; the public function has them too, except where
    ops.yaml `api` gives Paddle's (then the same parameters are fed, under their names)."""
    for name, op in OPS.items():
        params = [p for p in inspect.signature(getattr(functional, name)).parameters
                  if p not in ("place", "name")]
        if op.api is None:
            assert TABLE[name][2] == ", ".join(params), name
        else:
            fed = {op.api.internal(p) or p for p in params}
            assert set(TABLE[name][2].split(", ")) <= fed, name


def test_covered_functions_and_operators_enter_the_pipeline():
    for name in COVERED:
        src = inspect.getsource(getattr(functional, name))
        assert f"_op_call({TABLE[name][0]}," in src, name
    assert functional.PIPELINE_OPERATORS["__sub__"] == (TABLE["subtract"][0], False)
    assert functional.PIPELINE_OPERATORS["__rtruediv__"] == (TABLE["divide"][0], True)


# ---- infer-meta: C++ against the Python rules --------------------------------------------

class _Meta:
    """Stands for a tensor in dispatch._promote_unsupported (which casts it)."""

    def __init__(self, dtype: str):
        self.dtype = dtype

    def astype(self, dtype: str) -> _Meta:
        return _Meta(str(dtype))


def python_plan(op_name: str, metas: list[Meta], attrs: dict) -> tuple | None:
    """(shape, out dtype, key dtype[, normalized axes]) as phi_ops.dispatch.call's meta stage
    gives them; None where it raises."""
    op = OPS[op_name]
    try:
        norm = dispatch._attrs(op, attrs)
        k = op.key_input_index()
        stand_ins = [m if m is None or isinstance(m, list) else _Meta(m.dtype) for m in metas]
        _, metas = dispatch._promote_unsupported(op, stand_ins, list(metas), k)
        plan = infer_meta.infer(op, metas, norm)
        key_meta = metas[k][0] if isinstance(metas[k], list) else metas[k]
        key = plan.casts.get(k, key_meta.dtype)
        dispatch._check_dtype(op, key, metas, k)
    except (TypeError, ValueError, IndexError):
        return None
    out = (tuple(plan.outputs[0].shape), plan.outputs[0].dtype, key)
    return out + (plan.attrs["axis"],) if op.infer_meta == "reduce" else out


def cpp_plan(op_name: str, metas: list, attrs: dict) -> tuple | None:
    def one(m):
        if m is None:
            return None
        if isinstance(m, list):
            return [one(e) for e in m]
        return (list(m.shape), m.dtype)

    got = _core._pipeline_infer(op_name, [one(m) for m in metas], attrs)
    return None if got is None else (tuple(got[0]),) + tuple(got[1:])


def _meta(v):
    """The Meta of a sample input (None stays None, a list of arrays a list of Metas)."""
    if v is None:
        return None
    if isinstance(v, list):
        return [_meta(e) for e in v]
    return Meta(tuple(np.shape(v)), dname(v))


def _python_only_form(op_name: str, metas: list[Meta], attrs: dict) -> bool:
    """The forms the C++ rules leave to Python on purpose: a reduction of a 0-d x (returned
    cast, no kernel) or over a zero-size dim (max/min refuse, the rest fill); a matmul with
    K = 0 (zeros); a composite whose floating inputs do not all have the key dtype (its
    decomposition keeps their precision)."""
    op = OPS[op_name]
    if op.infer_meta == "matmul":
        x = metas[0]
        k = x.shape[-2] if attrs.get("transpose_x") and x.ndim >= 2 else x.shape[-1]
        return k == 0
    if not op.is_primitive and len(metas) > 1:
        floats = [m.dtype for m in metas if m is not None and not isinstance(m, list)
                  and m.dtype.startswith(("float", "bfloat"))]
        return len(set(floats)) > 1
    if op.infer_meta != "reduce":
        return False
    x = metas[0]
    axis = attrs.get("axis")
    axes = range(x.ndim) if axis in (None, []) else [axis] if isinstance(axis, int) else axis
    return x.ndim == 0 or any(x.shape[a] == 0 for a in axes if -x.ndim <= a < x.ndim)


def _meta_cases(op_name: str) -> list[tuple[list[Meta], dict]]:
    """Every shape case of phi_ops.sample_inputs for the op (every dtype it lists), and every
    dtype (pair) of all ten on a few shapes, broadcasting failures included."""
    op = OPS[op_name]
    out = []
    for d in op.dtypes:
        for case in cases_for(op_name, d):
            out.append(([_meta(v) for v in case.inputs], case.attrs))
    n = len(op.inputs)
    if op.inputs[0].variadic:  # concat: lists of one to three tensors
        for dts in itertools.product(ALL_DTYPES, repeat=2):
            for shp in [[(2, 3), (2, 5)], [(2, 3), (4, 3)], [(3,), (0,)], [(), ()], [(2, 3)]]:
                for axis in (0, 1, -1, 2, -3):
                    out.append(([[Meta(s, d) for s, d in zip(shp, dts, strict=False)]],
                                {"axis": axis}))
        return out
    shapes = {1: [[()], [(0, 3)], [(4, 5)]],
              2: [[(3, 1, 5), (4, 5)], [(2,), (3,)], [(), ()], [(0, 3), (1, 3)],
                  [(2, 0), (3, 1)]],
              3: [[(3, 1, 1), (4, 1), (5,)], [(2,), (3,), (1,)], [(), (), ()],
                  [(4, 1), (), (2,)]]}[n]
    attr_sets: list[dict] = [{}]
    extra = {"matmul": [{"transpose_x": tx, "transpose_y": ty} for tx in (False, True)
                        for ty in (False, True)],
             "reshape": [{"shape": s} for s in ([-1], [5, -1], [0, -1], [-1, -1], [20], [2, -2],
                                                [4, 5, 1], [])],
             "transpose": [{"perm": p} for p in (None, [1, 0], [0], [-1, 0], [0, 0], [2, 0])],
             "squeeze": [{"axis": a} for a in (None, [], [0], [-1], [1, 0], [0, 0], [2], 3)],
             "unsqueeze": [{"axis": a} for a in ([0], [-1], [0, 2], [1, 1], [5], [-4], 1)],
             "expand": [{"shape": s} for s in ([4, 5], [2, 4, 5], [-1, 5], [-1, -1, 5], [3, 5],
                                               [4, 0], [0, 4, 5], [5])],
             "flatten": [{"start_axis": a, "stop_axis": b} for a in (0, 1, -1, 2)
                         for b in (0, -1, 1, -3)]}
    attr_sets += extra.get(op.infer_meta, [])
    if op.infer_meta == "unary" and "axis" in op.attr_map:
        attr_sets += [{"axis": a} for a in (0, 1, -1, -2, 2, -3)]
    if op.infer_meta in ("reshape", "unsqueeze", "expand"):
        attr_sets = attr_sets[1:]  # shape / axis is required
    if OPS[op_name].infer_meta == "reduce":
        attr_sets += [{"axis": a, "keepdim": k} for a in (0, -1, [1, 0], [0, 0], 2, -3, (1,))
                      for k in (False, True)]
        if "dtype" in OPS[op_name].attr_map:
            attr_sets += [{"dtype": d} for d in ("float64", "int32", "bool")]
    for dts in itertools.product(ALL_DTYPES, repeat=n):
        for shp in shapes:
            for attrs in attr_sets:
                out.append(([Meta(s, d) for s, d in zip(shp, dts, strict=True)], attrs))
    return out


@pytest.mark.parametrize("op_name", COVERED)
def test_cpp_infer_meta_matches_python_rules(op_name):
    checked = 0
    for metas, attrs in _meta_cases(op_name):
        want = python_plan(op_name, metas, attrs)
        got = cpp_plan(op_name, metas, attrs)
        if got is None and want is not None and _python_only_form(op_name, metas, attrs):
            continue
        assert got == want, (op_name, metas, attrs)
        checked += want is not None
    assert checked > 0


# ---- results: fast path against the Python path ------------------------------------------

def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _same_tensor(got, want, inputs) -> bool:
    """Equal bytes, and the same layout: a view of the same input at the same strides and
    offset where the Python path made a view, fresh memory where it did not."""
    if not _same(got.numpy(), want.numpy()):
        return False
    if (tuple(got.strides), got._offset) != (tuple(want.strides), want._offset):
        return False
    bases = [t for t in inputs if isinstance(t, hwport.Tensor)]
    return [got._shares_storage(t) for t in bases] == [want._shares_storage(t) for t in bases]


@pytest.mark.parametrize("op_name", COVERED)
def test_results_equal_the_python_path(op_name):
    op = OPS[op_name]
    ran_fast = 0
    for d in op.dtypes:
        for case in cases_for(op_name, d):
            if case.large:
                continue
            inputs = device_inputs(case, PLACE)
            args, kwargs = public_call(op, inputs, dict(case.attrs))
            with deferred_calls() as deferred:
                got = getattr(functional, op_name)(*args, **kwargs)
            with python_path():
                before = _fast_count()
                want = dispatch.call(op_name, inputs, dict(case.attrs))
                assert _fast_count() == before
            assert _same_tensor(got, want, inputs), case.id
            # A primitive, or a composite with a native kernel or a C++ formula (ops.yaml
            # `formula`), runs in C++; any other composite decomposes in Python (whose
            # primitives then take the C++ path); the view families (reshape, transpose) are
            # their decompositions, in C++.
            native = (op.is_primitive or TABLE[op_name][1] in VIEW_FAMILIES
                      or op.formula is not None
                      or _core.has_kernel(op_name, PLACE, case.key_dtype()))
            metas = [_meta(v) for v in case.inputs]
            native = native and not _python_only_form(op_name, metas, case.attrs)
            assert (op_name not in deferred) == native, case.id
            ran_fast += native
    assert ran_fast > 0 or not op.is_primitive


SCALARS = [True, False, 0, 1, -3, 127, 200, 2**31, 2**63 - 1, 2**64, 0.5, -2.25, 1e300,
           float("inf"), float("nan")]


@pytest.mark.parametrize("op_name", ["add", "subtract", "multiply", "divide", "pow", "maximum",
                                     "greater_than", "equal", "bitwise_and", "floor_divide"])
def test_python_scalars_match_the_python_path(op_name):
    """Weak scalars (NEP 50) on either side, every tensor dtype: the same result, or the same
    error (an int that does not fit the tensor's integer dtype)."""
    rng = np.random.default_rng(3)
    for d in ALL_DTYPES:
        arr = (rng.standard_normal((2, 3)) * 3).astype(np.float64)
        t = hwport.to_tensor(arr.astype(d) if d != "bfloat16" else arr.astype(np.float32),
                             place=PLACE)
        if d == "bfloat16":
            t = t.astype("bfloat16")
        for s, reflected in itertools.product(SCALARS, (False, True)):
            args = (s, t) if reflected else (t, s)
            got = _outcome(lambda a=args: getattr(functional, op_name)(*a))
            with python_path():
                want = _outcome(lambda a=args: dispatch.call(op_name, a, {}))
            assert got == want, (op_name, d, s, reflected)


def test_where_with_scalars_matches_the_python_path():
    rng = np.random.default_rng(5)
    cond = hwport.to_tensor(rng.standard_normal((2, 3)) > 0, place=PLACE)
    for d in ALL_DTYPES:
        t = hwport.to_tensor(rng.standard_normal((3,)).astype(np.float32),
                             place=PLACE).astype(d)
        for args in [(cond, t, 2), (cond, 1.5, t), (cond, True, t), (cond, t, 300),
                     (cond, 1, 2), (True, t, t), (cond.astype("int8"), t, 0.5)]:
            got = _outcome(lambda a=args: hwport.where(*a))
            with python_path():
                want = _outcome(lambda a=args: dispatch.call("where", a, {}))
            assert got == want, (d, args[1:])


def _outcome(fn) -> tuple:
    try:
        r = fn().numpy()
    except (TypeError, ValueError, IndexError, NotImplementedError, RuntimeError) as e:
        return type(e).__name__, str(e)
    return "ok", r.dtype.str, r.shape, r.tobytes()


def test_operators_match_the_functions():
    a = hwport.to_tensor(np.array([[1.5, -2.0, 3.0]], np.float32), place=PLACE)
    b = hwport.to_tensor(np.array([[2], [3]], np.int32), place=PLACE)
    pairs = [
        (a - b, hwport.subtract(a, b)), (b - a, hwport.subtract(b, a)),
        (2 - a, hwport.subtract(2, a)), (a / 2, hwport.divide(a, 2)),
        (3 / b, hwport.divide(3, b)), (a ** 2, hwport.pow(a, 2)), (2 ** a, hwport.pow(2, a)),
        (a > b, hwport.greater_than(a, b)), (a <= 1.5, hwport.less_equal(a, 1.5)),
        (a == b, hwport.equal(a, b)), (-a, hwport.neg(a)), (abs(a), hwport.abs(a)),
        (~b, hwport.bitwise_not(b)), (b & 6, hwport.bitwise_and(b, 6)),
        (b // 2, hwport.floor_divide(b, 2)), (7 % b, hwport.remainder(7, b)),
    ]
    for got, want in pairs:
        assert _same(got.numpy(), want.numpy())
    np.testing.assert_array_equal((a - b).numpy(), a.numpy() - b.numpy())
    np.testing.assert_array_equal((2 - a).numpy(), 2 - a.numpy())


# ---- deferrals ---------------------------------------------------------------------------

def _bad_calls():
    f32 = hwport.to_tensor(np.ones((2, 3), np.float32), place=PLACE)
    i8 = hwport.to_tensor(np.ones(3, np.int8), place=PLACE)
    b = hwport.to_tensor(np.ones(3, bool), place=PLACE)
    other = hwport.to_tensor(np.ones((2, 3), np.float32), place="custom:cpu:1")
    return [
        ("add", (f32, i8[:2]), ValueError,
         r"add: cannot broadcast x of shape \[2, 3\], y of shape \[2\]"),
        ("subtract", (f32, "a"), TypeError, "subtract: y expected a Tensor or a Python scalar"),
        ("add", (i8, 1000), ValueError, r"add: y=1000 does not fit in int8"),
        ("multiply", (300, i8), ValueError, r"multiply: x=300 does not fit in int8"),
        ("subtract", (b, b), TypeError, "subtract: x and y promote to bool"),
        ("abs", (b,), TypeError, "abs: x has dtype bool"),
        ("bitwise_and", (f32, f32), TypeError, "bitwise_and: x and y promote to float32"),
        ("add", (f32, other), ValueError, "add: y is on custom:cpu:1 but x is on custom:cpu:0"),
        ("exp", (None,), TypeError, "exp: missing required input 'x'"),
        ("gelu", (f32, {"approximate": 1}), TypeError, "gelu: approximate expected a bool"),
        ("add", (1, 2), None, None),  # no tensor at all: Python's rule (a 0-d result)
    ]


def test_bad_arguments_raise_the_python_paths_exact_error():
    for op_name, given, exc, fragment in _bad_calls():
        fn = getattr(functional, op_name)
        attrs = given[-1] if isinstance(given[-1], dict) else {}
        args = given[:-1] if attrs else given
        got = _outcome(lambda: fn(*args, **attrs))  # noqa: B023
        with python_path():
            want = _outcome(lambda: dispatch.call(op_name, args, attrs))  # noqa: B023
        assert got == want, op_name
        if exc is not None:
            assert got[0] == exc.__name__ and fragment and _search(fragment, got[1]), got


def _search(pattern: str, text: str) -> bool:
    import re

    return re.search(pattern, text) is not None


def test_an_active_layer_takes_the_python_path():
    a = hwport.to_tensor(np.ones(3, np.float32), place=PLACE)
    with deferred_calls() as calls:
        hwport.exp(a)
        a - a
        assert calls == []
        with python_path():
            before = _fast_count()
            np.testing.assert_allclose(hwport.exp(a).numpy(), np.exp(np.ones(3, np.float32)))
            np.testing.assert_array_equal((a - a).numpy(), np.zeros(3, np.float32))
            assert _fast_count() == before
        assert calls == ["exp", "subtract"]


def test_a_swapped_output_allocator_takes_the_python_path():
    a = hwport.to_tensor(np.ones(3, np.float32), place=PLACE)
    made = []

    def allocator(shape, dtype, place, op):
        made.append(op)
        return _core.empty(shape, dtype, place, op)

    dispatch.output_allocator = allocator
    try:
        before = _fast_count()
        np.testing.assert_array_equal(hwport.add(a, a).numpy(), np.full(3, 2, np.float32))
        assert made == ["add"] and _fast_count() == before
    finally:
        dispatch.output_allocator = _core.empty
    before = _fast_count()
    hwport.add(a, a)
    assert _fast_count() == before + 1


def test_keyword_arguments_bind_by_the_tables_names():
    a = hwport.to_tensor(np.array([0.5, -1.0], np.float32), place=PLACE)
    ids = {name: op_id for name, (op_id, _, _) in TABLE.items()}
    np.testing.assert_array_equal(_core._op_call(ids["subtract"], y=a, x=a).numpy(), [0, 0])
    with pytest.raises(TypeError, match=r"subtract: takes the arguments \(x, y\)"):
        _core._op_call(ids["subtract"], a, z=a)
