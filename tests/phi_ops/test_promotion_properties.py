"""Property tests (hypothesis) of broadcasting and type promotion through the public API:

- broadcasting: for random mutually broadcastable shapes, add / multiply / maximum / where give
  np.broadcast_shapes and numpy's values; incompatible shapes raise ValueError naming the op and
  every shape;
- promotion: for random dtype pairs, the result dtype is phi_ops.promotion.promote_types (the
  op's out_dtype rule on it), symmetric, associative; the C++ fast-path operators (`+`, `*`)
  agree with the op functions; Python scalars are weakly typed (`t + 1`, `t * 2.5`, `1 - t`,
  `2 ** t`, `t / 2`) per promotion.scalar_dtype.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hwport
from hwport.phi_ops.promotion import (
    DTYPES,
    out_dtype,
    promote_types,
    scalar_dtype,
    scalar_to_dtype,
)
from hwport.phi_ops.reference import reference
from hwport.phi_ops.sample_inputs import sample
from hwport.phi_ops.schema import load_ops
from hwport.phi_ops.tolerance import assert_close

OPS = load_ops()
PLACE = "custom:cpu"
CI = settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

dtypes = st.sampled_from(DTYPES)


def tensor(arr: np.ndarray):
    return hwport.to_tensor(arr, place=PLACE)


def values(dtype: str, shape, seed: int) -> np.ndarray:
    # "ties": small values, exactly representable in every dtype (no rounding in the inputs)
    return sample(dtype, shape, np.random.default_rng(seed), "ties")


def fmt(shape) -> str:
    return str(list(shape))


# ---- broadcasting -----------------------------------------------------------------------------

BINARY_BCAST_OPS = ["add", "multiply", "maximum"]


@CI
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                 min_side=0, max_side=4),
       op=st.sampled_from(BINARY_BCAST_OPS), seed=st.integers(0, 2**16))
def test_binary_broadcast_shape_and_values(shapes, op, seed):
    a_shape, b_shape = shapes.input_shapes
    a, b = values("float32", a_shape, seed), values("float32", b_shape, seed + 1)
    out = getattr(hwport, op)(tensor(a), tensor(b))
    want_shape = np.broadcast_shapes(a_shape, b_shape)
    assert tuple(out.shape) == want_shape, (
        f"{op}({fmt(a_shape)}, {fmt(b_shape)}): shape {list(out.shape)}, want "
        f"{fmt(want_shape)} (np.broadcast_shapes)")
    assert_close(op, "float32", out.numpy(), reference(op, [a, b], {}))


@CI
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4,
                                                 min_side=0, max_side=3),
       seed=st.integers(0, 2**16))
def test_where_broadcasts_three_ways(shapes, seed):
    c_shape, x_shape, y_shape = shapes.input_shapes
    c = values("bool", c_shape, seed)
    x, y = values("int32", x_shape, seed + 1), values("int32", y_shape, seed + 2)
    out = hwport.where(tensor(c), tensor(x), tensor(y))
    want_shape = np.broadcast_shapes(c_shape, x_shape, y_shape)
    assert tuple(out.shape) == want_shape, (
        f"where({fmt(c_shape)}, {fmt(x_shape)}, {fmt(y_shape)}): shape {list(out.shape)}, "
        f"want {fmt(want_shape)}")
    np.testing.assert_array_equal(out.numpy(), np.where(c, x, y))


@st.composite
def incompatible_pair(draw):
    """Two shapes that do not broadcast: one dim of size n >= 2 against m >= 2, m != n, with
    other dims random (equal, or 1 on either side) and a random number of extra leading
    dims on one side."""
    ndim = draw(st.integers(1, 4))
    a = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    i = draw(st.integers(0, ndim - 1))
    a[i] = draw(st.integers(2, 5))
    b = []
    for k, d in enumerate(a):
        if k == i:
            b.append(draw(st.integers(2, 6).filter(lambda m, d=d: m != d)))
        else:
            b.append(draw(st.sampled_from([d, 1])))
    lead = draw(st.lists(st.integers(1, 3), max_size=2))
    if draw(st.booleans()):
        return tuple(lead + a), tuple(b)
    return tuple(a), tuple(lead + b)


@CI
@given(pair=incompatible_pair(), op=st.sampled_from([*BINARY_BCAST_OPS, "subtract", "equal"]),
       swap=st.booleans())
def test_incompatible_shapes_raise_naming_op_and_shapes(pair, op, swap):
    a_shape, b_shape = pair[::-1] if swap else pair
    with pytest.raises(ValueError):
        np.broadcast_shapes(a_shape, b_shape)  # the generator's own claim
    x, y = tensor(np.zeros(a_shape, np.float32)), tensor(np.zeros(b_shape, np.float32))
    with pytest.raises(ValueError) as info:
        getattr(hwport, op)(x, y)
    msg = str(info.value)
    assert msg.startswith(f"{op}:") or op in msg, f"the error does not name {op}: {msg}"
    assert fmt(a_shape) in msg and fmt(b_shape) in msg, (
        f"{op}: the error must name both shapes {fmt(a_shape)} and {fmt(b_shape)}: {msg}")


@CI
@given(pair=incompatible_pair())
def test_where_incompatible_shapes_raise(pair):
    a_shape, b_shape = pair
    c = tensor(np.ones(a_shape, bool))
    with pytest.raises(ValueError) as info:
        hwport.where(c, tensor(np.zeros(b_shape, np.float32)), tensor(np.zeros((), np.float32)))
    msg = str(info.value)
    assert "where" in msg and fmt(a_shape) in msg and fmt(b_shape) in msg, msg


@CI
@given(pair=incompatible_pair())
def test_operator_incompatible_shapes_raise(pair):
    """The C++ fast path of `+` / `*` reports like the op functions do."""
    a_shape, b_shape = pair
    x, y = tensor(np.zeros(a_shape, np.float32)), tensor(np.zeros(b_shape, np.float32))
    for op_name, fn in (("add", operator.add), ("multiply", operator.mul),
                        ("subtract", operator.sub)):
        with pytest.raises(ValueError) as info:
            fn(x, y)
        msg = str(info.value)
        assert op_name in msg and fmt(a_shape) in msg and fmt(b_shape) in msg, (
            f"`{fn.__name__}` of {fmt(a_shape)} and {fmt(b_shape)}: {msg}")


# ---- promotion of tensor dtypes ------------------------------------------------------------------

def test_promote_types_is_symmetric_and_associative():
    for a, b in itertools.product(DTYPES, DTYPES):
        assert promote_types(a, b) == promote_types(b, a), (a, b)
        assert promote_types(a, a) == a
    for a, b, c in itertools.product(DTYPES, DTYPES, DTYPES):
        left = promote_types(promote_types(a, b), c)
        right = promote_types(a, promote_types(b, c))
        assert left == right, f"({a}, {b}, {c}): {left} vs {right}"


def _expected(op: str, a: str, b: str) -> str | None:
    """The op's output dtype for inputs of dtypes a and b, or None when the promoted dtype is
    not one the op supports (then TypeError)."""
    common = promote_types(a, b)
    if common not in OPS[op].dtypes:
        return None
    return out_dtype(op, [a, b])[0]


PROMOTING = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "less_than",
             "bitwise_and", "pow", "floor_divide", "logical_or"]


@CI
@given(a=dtypes, b=dtypes, op=st.sampled_from(PROMOTING), seed=st.integers(0, 2**16))
def test_binary_result_dtype_is_promote_types(a, b, op, seed):
    x, y = values(a, (3, 4), seed), values(b, (4,), seed + 1)
    if op in ("divide", "floor_divide"):
        y = np.where(y == 0, np.asarray(1).astype(y.dtype), y).astype(y.dtype)
    if op == "pow" and b not in ("float16", "bfloat16", "float32", "float64"):
        y = np.abs(y.astype(np.int64)).astype(y.dtype)
    want = _expected(op, a, b)
    fn = getattr(hwport, op)
    assume(not (op == "divide" and want is None))  # test_divide_of_bools_is_rejected
    if want is None:
        with pytest.raises(TypeError) as info:
            fn(tensor(x), tensor(y))
        msg = str(info.value)
        assert op in msg and promote_types(a, b) in msg, msg
        return
    out = fn(tensor(x), tensor(y))
    assert str(out.dtype) == want, (
        f"{op}({a}, {b}): dtype {out.dtype}, want {want} (promote_types -> "
        f"{promote_types(a, b)}, out_dtype rule {OPS[op].out_dtype!r})")
    swapped = fn(tensor(y.reshape(1, 4)), tensor(x))
    assert str(swapped.dtype) == want, f"{op}({b}, {a}) is not symmetric: {swapped.dtype}"
    key = want if OPS[op].out_dtype in ("same", "float") else promote_types(a, b)
    assert_close(op, key, out.numpy(), reference(op, [x, y], {}))


def test_divide_of_bools_is_rejected():
    """ops.yaml defines divide for the numeric dtypes; two bool tensors promote to bool, which it
    does not list (the reference raises), so the dispatcher must raise TypeError, not silently
    compute in float32 (that int->float32 promotion is for integer inputs and float-only unary
    math)."""
    with pytest.raises(ValueError):
        reference("divide", [np.array([True]), np.array([True])], {})
    t = tensor(np.array([True, False]))
    with pytest.raises(TypeError) as info:
        hwport.divide(t, t)
    assert "divide" in str(info.value) and "bool" in str(info.value), str(info.value)


@CI
@given(a=dtypes, b=dtypes, seed=st.integers(0, 2**16))
def test_fast_path_operators_promote_like_the_ops(a, b, seed):
    x, y = tensor(values(a, (2, 3), seed)), tensor(values(b, (3,), seed + 1))
    for sym, fn, op in (("+", operator.add, "add"), ("*", operator.mul, "multiply")):
        got = fn(x, y)
        want = promote_types(a, b)
        assert str(got.dtype) == want, f"{a} {sym} {b}: dtype {got.dtype}, want {want}"
        assert str(fn(y, x).dtype) == want, f"{b} {sym} {a}: not symmetric"
        np.testing.assert_array_equal(
            got.numpy(), getattr(hwport, op)(x, y).numpy(),
            err_msg=f"{a} {sym} {b} differs from hwport.{op}")


@CI
@given(a=dtypes, b=dtypes, c=dtypes)
def test_promotion_through_ops_is_associative(a, b, c):
    x, y, z = (tensor(values(d, (2,), i)) for i, d in enumerate((a, b, c)))
    left = hwport.add(hwport.add(x, y), z)
    right = hwport.add(x, hwport.add(y, z))
    assert left.dtype == right.dtype, f"({a} + {b}) + {c} = {left.dtype}, but {a} + ({b} + " \
                                      f"{c}) = {right.dtype}"
    assert str(left.dtype) == promote_types(promote_types(a, b), c)


@CI
@given(a=dtypes, b=dtypes, seed=st.integers(0, 2**16))
def test_where_and_concat_promote(a, b, seed):
    x, y = values(a, (3,), seed), values(b, (3,), seed + 1)
    c = np.array([True, False, True])
    want = promote_types(a, b)
    out = hwport.where(tensor(c), tensor(x), tensor(y))
    assert str(out.dtype) == want, f"where(cond, {a}, {b}): {out.dtype}, want {want}"
    np.testing.assert_array_equal(out.numpy(), reference("where", [c, x, y], {}))
    cat = hwport.concat([tensor(x), tensor(y)])
    assert str(cat.dtype) == want, f"concat([{a}, {b}]): {cat.dtype}, want {want}"


# ---- Python scalars are weakly typed -----------------------------------------------------------

scalars = st.one_of(
    st.booleans(),
    st.integers(-5, 5),
    st.sampled_from([0.5, 2.5, -1.25, 3.0]),
)
SCALAR_FORMS = {
    "t + s": (lambda t, s: t + s, "add", False),
    "s + t": (lambda t, s: s + t, "add", True),
    "t * s": (lambda t, s: t * s, "multiply", False),
    "s * t": (lambda t, s: s * t, "multiply", True),
    "t - s": (lambda t, s: t - s, "subtract", False),
    "s - t": (lambda t, s: s - t, "subtract", True),
    "t / s": (lambda t, s: t / s, "divide", False),
    "s ** t": (lambda t, s: s ** t, "pow", True),
    "t ** s": (lambda t, s: t ** s, "pow", False),
    "maximum(t, s)": (hwport.maximum, "maximum", False),
    "t < s": (lambda t, s: t < s, "less_than", False),
}


@CI
@given(d=dtypes, s=scalars, form=st.sampled_from(sorted(SCALAR_FORMS)),
       seed=st.integers(0, 2**16))
def test_python_scalars_are_weakly_typed(d, s, form, seed):
    fn, op, reflected = SCALAR_FORMS[form]
    if op == "divide":
        assume(s != 0)
    x = values(d, (2, 3), seed)
    if op == "pow":
        # non-negative integer exponents for integer results; positive bases for float ones
        if reflected:
            x = np.abs(x.astype(np.float64)).astype(x.dtype) if d != "bool" else x
            assume(not isinstance(s, float) or s > 0)
        else:
            assume(isinstance(s, bool) or not isinstance(s, int) or s >= 0)
    sd = scalar_dtype(s, d)
    common = promote_types(d, sd)
    expr = form.replace("t", f"<{d} tensor>").replace("s", repr(s))
    if not _fits(s, sd):  # numpy 2: an int that does not fit the dtype it takes is an error
        with pytest.raises(ValueError) as info:
            fn(tensor(x), s)
        assert op in str(info.value) and repr(s) in str(info.value), f"{expr}: {info.value}"
        assert "does not fit" in str(info.value), f"{expr}: {info.value}"
        return
    if common not in OPS[op].dtypes:
        with pytest.raises(TypeError) as info:
            fn(tensor(x), s)
        assert op in str(info.value), f"{expr}: {info.value}"
        return
    want_dtype = out_dtype(op, [common, common])[0]
    got = fn(tensor(x), s)
    assert str(got.dtype) == want_dtype, (
        f"{expr}: dtype {got.dtype}, want {want_dtype} (scalar_dtype({s!r}, {d}) = {sd})")
    s_arr = scalar_to_dtype(s, sd)
    args = [s_arr, x] if reflected else [x, s_arr]
    key = want_dtype if OPS[op].out_dtype in ("same", "float") else common
    assert_close(op, key, got.numpy(), reference(op, args, {}))


def _fits(s: object, dtype: str) -> bool:
    """Whether Python scalar `s` is a value of `dtype` (only ints can miss: floats convert)."""
    if isinstance(s, bool) or not isinstance(s, int) or dtype in ("bool", "float16", "bfloat16",
                                                                  "float32", "float64"):
        return True
    info = np.iinfo(dtype)
    return info.min <= s <= info.max


def test_scalar_examples():
    """The documented examples, spelled out."""
    i8 = tensor(np.array([1, 2, 3], np.int8))
    b = tensor(np.array([True, False]))
    h = tensor(np.array([1.0, 2.0], np.float16))
    assert str((i8 + 1).dtype) == "int8"
    assert str((i8 * 2.5).dtype) == "float32"
    assert str((1 - i8).dtype) == "int8"
    assert str((2 ** i8).dtype) == "int8"
    assert str((b + 1).dtype) == "int64"
    assert str((b * 2.5).dtype) == "float32"
    assert str((b + True).dtype) == "bool"
    assert str((h + 1).dtype) == "float16"
    assert str((h * 2.5).dtype) == "float16"
    assert str((i8 / 2).dtype) == "float32"
    # an int scalar keeps the tensor's dtype and must fit it (numpy 2 raises; never a wrap)
    np.testing.assert_array_equal((i8 + 127).numpy(), np.array([-128, -127, -126], np.int8))
    with pytest.raises(ValueError, match=r"add: y=300 does not fit in int8 \(range \[-128, 127"):
        i8 + 300
