#include "formula_builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "decomp_formulas.h"
#include "errors.h"
#include "ops.h"
#include "pipeline_ops.h"
#include "pipeline_run.h"
#include "py_convert.h"

namespace hwport::pipeline::formula {

namespace {

const Tensor* tensor_arg(PyObject* obj, const char* what) {
  const Tensor* t = as_tensor(obj);
  if (!t) PyErr_Format(PyExc_TypeError, "formula: %s expects a Tensor", what);
  return t;
}

}  // namespace

// One sub-op through the pipeline's C++ entry: inputs by position, attrs by their OpSpec index.
Obj call(int op_id, std::initializer_list<PyObject*> in,
         std::initializer_list<std::pair<int, PyObject*>> attrs) {
  const OpSpec& op = *op_spec(op_id);
  BoundArgs a;
  a.count = op.num_inputs + op.num_attrs;
  int i = 0;
  for (PyObject* v : in) a.slot[i++] = v;
  for (const auto& [k, v] : attrs) a.slot[op.num_inputs + k] = v;
  return steal(call_op_entry(op, a));
}


namespace {

// The cast op through the pipeline, not the runtime's cast(): under autograd the cast is
// recorded, so a gradient flows through up()/down() (a mixed-precision input of a composite
// differentiated through its formula).
Obj cast_op(PyObject* x, DType dtype) {
  Obj d = pybind11::cast(dtype);
  return op_call("cast", {x}, {{"dtype", d.ptr()}});
}

}  // namespace

// decompositions.py _up: float16/bfloat16 -> float32 (the compute dtype of compound float math).
Obj up(PyObject* x) {
  const Tensor* t = tensor_arg(x, "up()");
  if (!t) return Obj();
  if (t->dtype != DType::Float16 && t->dtype != DType::BFloat16) return borrow(x);
  return cast_op(x, DType::Float32);
}

// decompositions.py _to: t in like's dtype (no-op when it already is).
Obj down(PyObject* x, PyObject* like) {
  const Tensor* t = tensor_arg(x, "down()");
  const Tensor* l = t ? tensor_arg(like, "down()") : nullptr;
  if (!l) return Obj();
  if (t->dtype == l->dtype) return borrow(x);
  return cast_op(x, l->dtype);
}

// decompositions.py _int_bound: a clip bound in like's integer dtype (a float truncates toward
// zero, NaN -> 0, +-inf -> the dtype's max/min; then saturates); a float dtype takes it as is.
Obj bound(PyObject* value, PyObject* like) {
  const Tensor* l = tensor_arg(like, "bound()");
  if (!l) return Obj();
  if (!is_integral(l->dtype)) return borrow(value);
  int64_t lo = 0, hi = 0;
  switch (l->dtype) {
    case DType::Int8: lo = INT8_MIN; hi = INT8_MAX; break;
    case DType::UInt8: lo = 0; hi = UINT8_MAX; break;
    case DType::Int16: lo = INT16_MIN; hi = INT16_MAX; break;
    case DType::Int32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: lo = INT64_MIN; hi = INT64_MAX; break;
  }
  int64_t v = 0;
  if (PyFloat_Check(value)) {
    const double d = PyFloat_AS_DOUBLE(value);
    if (std::isnan(d)) v = 0;
    else if (d >= 9223372036854775808.0) v = INT64_MAX;  // 2**63: beyond every range
    else if (d <= -9223372036854775808.0) v = INT64_MIN;
    else v = static_cast<int64_t>(d);  // truncation toward zero
  } else {
    int overflow = 0;
    v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) return Obj();
    if (overflow) v = overflow > 0 ? INT64_MAX : INT64_MIN;
  }
  return steal(PyLong_FromLongLong(v < lo ? lo : v > hi ? hi : v));
}

// empty(t): t holds no elements (false for a non-tensor: the sub-op then reports it).
bool is_empty(PyObject* x) {
  const Tensor* t = as_tensor(x);
  return t && t->numel() == 0;
}

// The axes of an ints attr (an int, a list/tuple of ints, or None/[]: every axis of t),
// non-negative, as decompositions.py gets them normalized from infer-meta.
namespace {

bool axes_of(PyObject* axis, const Tensor& t, std::vector<int64_t>* out) {
  const int64_t nd = t.ndim();
  auto norm = [nd](int64_t a) { return nd ? ((a % nd) + nd) % nd : 0; };
  if (axis == Py_None || (PySequence_Check(axis) && PySequence_Size(axis) == 0)) {
    for (int64_t a = 0; a < nd; ++a) out->push_back(a);
    return true;
  }
  if (PyLong_Check(axis)) {
    out->push_back(norm(PyLong_AsLongLong(axis)));
    return !PyErr_Occurred();
  }
  pybind11::object seq = steal(PySequence_Fast(axis, "formula: axes must be ints"));
  if (!seq) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.ptr()); ++i) {
    const long long a = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq.ptr(), i));
    if (a == -1 && PyErr_Occurred()) return false;
    out->push_back(norm(a));
  }
  return true;
}

}  // namespace

Obj int_list(const std::vector<int64_t>& v) {
  Obj out = steal(PyList_New(static_cast<Py_ssize_t>(v.size())));
  if (!out) return out;
  for (size_t i = 0; i < v.size(); ++i) {
    PyObject* e = PyLong_FromLongLong(v[i]);
    if (!e) return Obj();
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), e);
  }
  return out;
}

// axes(axis, t): [axis % t.ndim], or [] for a 0-d t (softmax's one axis).
Obj axes(PyObject* axis, PyObject* like) {
  const Tensor* t = tensor_arg(like, "axes()");
  if (!t) return Obj();
  if (t->ndim() == 0) return int_list({});
  const long long a = PyLong_AsLongLong(axis);
  if (a == -1 && PyErr_Occurred()) return Obj();
  const int64_t nd = t->ndim();
  return int_list({((a % nd) + nd) % nd});
}

// all_axes(axis, t): a reduction's axes (every axis where none are given).
Obj all_axes(PyObject* axis, PyObject* like) {
  const Tensor* t = tensor_arg(like, "all_axes()");
  std::vector<int64_t> v;
  if (!t || !axes_of(axis, *t, &v)) return Obj();
  return int_list(v);
}

// count(t, axes): the number of elements those axes of t span.
Obj count(PyObject* x, PyObject* axis) {
  const Tensor* t = tensor_arg(x, "count()");
  std::vector<int64_t> v;
  if (!t || !axes_of(axis, *t, &v)) return Obj();
  int64_t n = 1;
  for (int64_t a : v)
    if (a < t->ndim()) n *= t->shape[static_cast<size_t>(a)];  // a 0-d t reduces over nothing
  return steal(PyLong_FromLongLong(n));
}

Obj list_of(std::initializer_list<PyObject*> items) {
  Obj out = steal(PyList_New(static_cast<Py_ssize_t>(items.size())));
  if (!out) return out;
  Py_ssize_t i = 0;
  for (PyObject* v : items) {
    Py_INCREF(v);
    PyList_SET_ITEM(out.ptr(), i++, v);
  }
  return out;
}

// ---- the VJP rules' builtins ----------------------------------------------------------------

Obj op_call(const char* name, std::initializer_list<PyObject*> in,
            std::initializer_list<std::pair<const char*, PyObject*>> attrs) {
  const OpSpec& op = *op_spec(name);
  BoundArgs a;
  a.count = op.num_inputs + op.num_attrs;
  int i = 0;
  for (PyObject* v : in) a.slot[i++] = v;
  for (const auto& [attr, v] : attrs) {
    for (int k = 0; k < op.num_attrs; ++k)
      if (std::string(op.attrs[k].name) == attr) a.slot[op.num_inputs + k] = v;
  }
  return steal(call_op_entry(op, a));
}

namespace {

bool int_seq(PyObject* obj, std::vector<int64_t>* out) {
  if (obj == Py_None) return true;
  if (PyLong_Check(obj)) {
    out->push_back(PyLong_AsLongLong(obj));
    return !PyErr_Occurred();
  }
  Obj seq = steal(PySequence_Fast(obj, "formula: expected a list of ints"));
  if (!seq) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.ptr()); ++i) {
    const long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq.ptr(), i));
    if (v == -1 && PyErr_Occurred()) return false;
    out->push_back(v);
  }
  return true;
}

int64_t norm_axis(int64_t a, int64_t nd) { return nd ? ((a % nd) + nd) % nd : 0; }

Obj reshape_to(PyObject* t, const Shape& shape) {
  Obj s = int_list(shape);
  if (!s) return s;
  return op_call("reshape", {t}, {{"shape", s.ptr()}});
}

}  // namespace

Obj unbroadcast(PyObject* g, PyObject* like) {
  const Tensor* gt = tensor_arg(g, "unbroadcast()");
  const Tensor* lt = gt ? tensor_arg(like, "unbroadcast()") : nullptr;
  if (!lt) return Obj();
  if (gt->shape == lt->shape) return borrow(g);
  const int64_t lead = gt->ndim() - lt->ndim();
  if (lead < 0) {
    PyErr_SetString(PyExc_ValueError, "formula: unbroadcast() of a gradient of lower rank");
    return Obj();
  }
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < gt->ndim(); ++i)
    if (i < lead || (lt->shape[static_cast<size_t>(i - lead)] == 1 &&
                     gt->shape[static_cast<size_t>(i)] != 1))
      axes.push_back(i);
  Obj summed = borrow(g);
  if (!axes.empty()) {
    Obj a = int_list(axes);
    if (!a) return a;
    summed = op_call("sum", {g}, {{"axis", a.ptr()}, {"keepdim", Py_True}});
    if (!summed) return summed;
  }
  return reshape_to(summed.ptr(), lt->shape);
}

Obj expand_reduced(PyObject* g, PyObject* like, PyObject* axes, PyObject* keepdim) {
  const Tensor* gt = tensor_arg(g, "expand_reduced()");
  const Tensor* lt = gt ? tensor_arg(like, "expand_reduced()") : nullptr;
  std::vector<int64_t> reduced;
  if (!lt || !int_seq(axes, &reduced)) return Obj();
  Obj kept = borrow(g);
  if (keepdim != Py_True) {
    Shape s = lt->shape;
    if (lt->ndim() > 0)
      for (int64_t a : reduced) s[static_cast<size_t>(norm_axis(a, lt->ndim()))] = 1;
    kept = reshape_to(g, s);
    if (!kept) return kept;
  }
  Obj target = int_list(lt->shape);
  if (!target) return target;
  return op_call("expand", {kept.ptr()}, {{"shape", target.ptr()}});
}

Obj shape(PyObject* t) {
  const Tensor* x = tensor_arg(t, "shape()");
  return x ? int_list(x->shape) : Obj();
}

Obj ndim(PyObject* t) {
  const Tensor* x = tensor_arg(t, "ndim()");
  return x ? steal(PyLong_FromLongLong(x->ndim())) : Obj();
}

Obj rows(PyObject* t) {
  const Tensor* x = tensor_arg(t, "rows()");
  if (!x) return Obj();
  return int_list({-1, x->ndim() ? x->shape.back() : 1});
}

Obj inv_perm(PyObject* perm, PyObject* like) {
  const Tensor* x = tensor_arg(like, "inv_perm()");
  std::vector<int64_t> p;
  if (!x || !int_seq(perm, &p)) return Obj();
  const int64_t nd = x->ndim();
  if (p.empty())
    for (int64_t i = nd - 1; i >= 0; --i) p.push_back(i);
  std::vector<int64_t> inv(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    inv[static_cast<size_t>(norm_axis(p[i], nd))] = static_cast<int64_t>(i);
  return int_list(inv);
}

Obj sizes(PyObject* xs, PyObject* axis) {
  Obj seq = steal(PySequence_Fast(xs, "formula: sizes() expects a list of tensors"));
  if (!seq) return seq;
  const long long a = PyLong_AsLongLong(axis);
  if (a == -1 && PyErr_Occurred()) return Obj();
  std::vector<int64_t> out;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.ptr()); ++i) {
    const Tensor* t = tensor_arg(PySequence_Fast_GET_ITEM(seq.ptr(), i), "sizes()");
    if (!t) return Obj();
    out.push_back(t->shape[static_cast<size_t>(norm_axis(a, t->ndim()))]);
  }
  return int_list(out);
}

Obj slice_grad(PyObject* g, PyObject* like, PyObject* axes, PyObject* starts, PyObject* ends,
               PyObject* strides) {
  const Tensor* lt = tensor_arg(like, "slice_grad()");
  std::vector<int64_t> ax, st, en, sp;
  if (!lt || !int_seq(axes, &ax) || !int_seq(starts, &st) || !int_seq(ends, &en) ||
      !int_seq(strides, &sp))
    return Obj();
  Obj cur = borrow(g);
  for (size_t j = 0; j < ax.size(); ++j) {
    const Tensor* ct = tensor_arg(cur.ptr(), "slice_grad()");
    if (!ct) return Obj();
    const int64_t a = norm_axis(ax[j], lt->ndim());
    const int64_t dim = lt->shape[static_cast<size_t>(a)];
    const int64_t n = ct->shape[static_cast<size_t>(a)];
    int64_t step = j < sp.size() ? sp[j] : 1;
    // Python's slice(start, end, step).indices(dim) start (the attrs may come as given)
    int64_t start = st[j];
    if (step > 0)
      start = start < 0 ? std::max<int64_t>(start + dim, 0) : std::min(start, dim);
    else
      start = start < 0 ? std::max<int64_t>(start + dim, -1) : std::min(start, dim - 1);
    Obj along = int_list({a});
    if (!along) return along;
    if (step < 0 && n > 0) {  // the picked positions in ascending order
      start = start + (n - 1) * step;
      step = -step;
      cur = op_call("flip", {cur.ptr()}, {{"axis", along.ptr()}});
      if (!cur) return cur;
    }
    if (step > 1 && n > 0) {  // dilate: step - 1 zeros after each element, the tail cut off
      Obj next = int_list({a + 1});
      if (!next) return next;
      Obj u = op_call("unsqueeze", {cur.ptr()}, {{"axis", next.ptr()}});
      if (!u) return u;
      std::vector<int64_t> pads(2 * static_cast<size_t>(ct->ndim() + 1), 0);
      pads[2 * static_cast<size_t>(a + 1) + 1] = step - 1;
      Obj p = int_list(pads);
      if (!p) return p;
      Obj padded = op_call("pad", {u.ptr()}, {{"pad", p.ptr()}});
      if (!padded) return padded;
      Shape merged = ct->shape;
      merged[static_cast<size_t>(a)] = n * step;
      Obj flat = reshape_to(padded.ptr(), merged);
      if (!flat) return flat;
      Obj s0 = int_list({0}), s1 = int_list({(n - 1) * step + 1});
      if (!s0 || !s1) return Obj();
      cur = op_call("slice", {flat.ptr()},
                    {{"axes", along.ptr()}, {"starts", s0.ptr()}, {"ends", s1.ptr()}});
      if (!cur) return cur;
    }
    const int64_t before = n > 0 ? start : 0;
    const int64_t after = n > 0 ? dim - (start + (n - 1) * step + 1) : dim;
    std::vector<int64_t> pads(2 * static_cast<size_t>(ct->ndim()), 0);
    pads[2 * static_cast<size_t>(a)] = before;
    pads[2 * static_cast<size_t>(a) + 1] = after;
    Obj p = int_list(pads);
    if (!p) return p;
    cur = op_call("pad", {cur.ptr()}, {{"pad", p.ptr()}});
    if (!cur) return cur;
  }
  return cur;
}

Obj unpad(PyObject* g, PyObject* like, PyObject* pad) {
  const Tensor* lt = tensor_arg(like, "unpad()");
  std::vector<int64_t> p;
  if (!lt || !int_seq(pad, &p)) return Obj();
  std::vector<int64_t> axes, starts, ends;
  for (size_t i = 0; 2 * i + 1 < p.size() && i < lt->shape.size(); ++i) {
    axes.push_back(static_cast<int64_t>(i));
    starts.push_back(p[2 * i]);
    ends.push_back(p[2 * i] + lt->shape[i]);
  }
  if (axes.empty()) return borrow(g);
  Obj a = int_list(axes), s = int_list(starts), e = int_list(ends);
  if (!a || !s || !e) return Obj();
  return op_call("slice", {g}, {{"axes", a.ptr()}, {"starts", s.ptr()}, {"ends", e.ptr()}});
}

Obj dtype_of(PyObject* t) {
  const Tensor* x = tensor_arg(t, "dtype_of()");
  if (!x) return Obj();
  return pybind11::cast(x->dtype);
}

Obj result_dtype(PyObject* a, PyObject* b, PyObject* c) {
  const Tensor* x = tensor_arg(a, "result_dtype()");
  const Tensor* y = x ? tensor_arg(b, "result_dtype()") : nullptr;
  const Tensor* z = y && c ? tensor_arg(c, "result_dtype()") : nullptr;
  if (!y || (c && !z)) return Obj();
  const DType xy = promote_types(x->dtype, y->dtype);
  return pybind11::cast(z ? promote_types(xy, z->dtype) : xy);
}

Obj dtype_name(PyObject* t) {
  const Tensor* x = tensor_arg(t, "dtype_name()");
  if (!x) return Obj();
  return steal(PyUnicode_FromString(hwport::dtype_name(x->dtype)));
}

// decompositions.scaled_dot_product_attention: scale, or 1/sqrt(E) where it is None.
Obj attention_scale(PyObject* scale, PyObject* query) {
  const Tensor* q = tensor_arg(query, "attention_scale()");
  if (!q) return Obj();
  if (scale != Py_None) return steal(PyNumber_Float(scale));
  const int64_t e = q->ndim() ? q->shape.back() : 1;
  return steal(PyFloat_FromDouble(1.0 / std::sqrt(static_cast<double>(e))));
}

// decompositions._tri_mask(L, S, 0, lower=True): [L, S] bool, j <= i, for query [..., L, E]
// and key [..., S, E], on query's device.
Obj causal_mask(PyObject* query, PyObject* key) {
  const Tensor* q = tensor_arg(query, "causal_mask()");
  const Tensor* k = q ? tensor_arg(key, "causal_mask()") : nullptr;
  if (!k) return Obj();
  if (q->ndim() < 2 || k->ndim() < 2) {
    PyErr_SetString(PyExc_ValueError, "causal_mask(): query and key need [..., L, E] shapes");
    return Obj();
  }
  Obj place = steal(PyUnicode_FromString(place_of(q->device()).str().c_str()));
  Obj int64 = pybind11::cast(DType::Int64);
  auto range = [&](int64_t n, bool column) -> Obj {
    const OpSpec& op = *op_spec("arange");
    Obj end = steal(PyLong_FromLongLong(n)), zero = steal(PyLong_FromLong(0)),
        one = steal(PyLong_FromLong(1));
    BoundArgs a;
    a.count = op.num_attrs + 1;  // start, end, step, dtype, then the place
    a.slot[0] = zero.ptr();
    a.slot[1] = end.ptr();
    a.slot[2] = one.ptr();
    a.slot[3] = int64.ptr();
    a.slot[4] = place.ptr();
    Obj r = steal(call_op_entry(op, a));
    if (!r) return r;
    Obj shape = column ? int_list({n, 1}) : int_list({1, n});
    return op_call("reshape", {r.ptr()}, {{"shape", shape.ptr()}});
  };
  Obj i = range(q->shape[q->ndim() - 2], true);
  Obj j = i ? range(k->shape[k->ndim() - 2], false) : Obj();
  if (!j) return Obj();
  return op_call("less_equal", {j.ptr(), i.ptr()});
}

Obj axis_in(PyObject* axis, PyObject* like) {
  const Tensor* x = tensor_arg(like, "axis_in()");
  if (!x) return Obj();
  const long long a = PyLong_AsLongLong(axis);
  if (a == -1 && PyErr_Occurred()) return Obj();
  return steal(PyLong_FromLongLong(norm_axis(a, x->ndim())));
}

Obj unstack(PyObject* g, PyObject* xs, PyObject* axis) {
  const Tensor* gt = tensor_arg(g, "unstack()");
  Obj seq = gt ? steal(PySequence_Fast(xs, "formula: unstack() expects a list")) : Obj();
  if (!seq) return seq;
  const long long a = PyLong_AsLongLong(axis);
  if (a == -1 && PyErr_Occurred()) return Obj();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  Obj sections = int_list(std::vector<int64_t>(static_cast<size_t>(n), 1));
  Obj ax = steal(PyLong_FromLongLong(norm_axis(a, gt->ndim())));
  if (!sections || !ax) return Obj();
  Obj parts = op_call("split", {g}, {{"sections", sections.ptr()}, {"axis", ax.ptr()}});
  if (!parts) return parts;
  Obj out = steal(PyList_New(n));
  for (Py_ssize_t i = 0; out && i < n; ++i) {
    const Tensor* x = tensor_arg(PySequence_Fast_GET_ITEM(seq.ptr(), i), "unstack()");
    if (!x) return Obj();
    Obj item = steal(PySequence_GetItem(parts.ptr(), i));
    Obj piece = item ? reshape_to(item.ptr(), x->shape) : Obj();
    if (!piece) return piece;
    PyList_SET_ITEM(out.ptr(), i, piece.release().ptr());
  }
  return out;
}

Obj untile(PyObject* g, PyObject* like, PyObject* repeats) {
  const Tensor* x = tensor_arg(like, "untile()");
  std::vector<int64_t> r;
  if (!x || !int_seq(repeats, &r)) return Obj();
  Shape xs = x->shape;
  while (r.size() < xs.size()) r.insert(r.begin(), 1);
  while (xs.size() < r.size()) xs.insert(xs.begin(), 1);
  Shape split;  // [r0, x0, r1, x1, ...]: the output index is rep * x_dim + i
  std::vector<int64_t> rep_axes;
  for (size_t i = 0; i < xs.size(); ++i) {
    rep_axes.push_back(static_cast<int64_t>(split.size()));
    split.push_back(r[i]);
    split.push_back(xs[i]);
  }
  Obj v = reshape_to(g, split);
  if (!v) return v;
  if (!rep_axes.empty()) {
    Obj a = int_list(rep_axes);
    if (!a) return a;
    v = op_call("sum", {v.ptr()}, {{"axis", a.ptr()}});
    if (!v) return v;
  }
  return reshape_to(v.ptr(), x->shape);
}

Obj neg_ints(PyObject* v) {
  std::vector<int64_t> x;
  if (!int_seq(v, &x)) return Obj();
  for (int64_t& e : x) e = -e;
  return int_list(x);
}

namespace {

// The halves of t's last dim; `transpose`: concat(second, -first) (rotate_half's transpose), else
// concat(-second, first) (rotate_half).
Obj halves(PyObject* t, bool transpose) {
  const Tensor* x = tensor_arg(t, "rotate_half()");
  if (!x) return Obj();
  const int64_t last = x->ndim() - 1, d = x->shape.back();
  Obj ax = int_list({last}), z = int_list({0}), h = int_list({d / 2}), e = int_list({d});
  if (!ax || !z || !h || !e) return Obj();
  Obj first = op_call("slice", {t}, {{"axes", ax.ptr()}, {"starts", z.ptr()}, {"ends", h.ptr()}});
  Obj second = first ? op_call("slice", {t}, {{"axes", ax.ptr()}, {"starts", h.ptr()},
                                               {"ends", e.ptr()}})
                     : Obj();
  if (!second) return Obj();
  Obj neg = op_call("neg", {transpose ? first.ptr() : second.ptr()}, {});
  if (!neg) return neg;
  Obj parts = transpose ? list_of({second.ptr(), neg.ptr()}) : list_of({neg.ptr(), first.ptr()});
  Obj axis = steal(PyLong_FromLongLong(last));
  if (!parts || !axis) return Obj();
  return op_call("concat", {parts.ptr()}, {{"axis", axis.ptr()}});
}

}  // namespace

Obj rotate_half(PyObject* t) { return halves(t, false); }
Obj unrotate_half(PyObject* t) { return halves(t, true); }

Obj last_axes(PyObject* n, PyObject* like) {
  const Tensor* x = tensor_arg(like, "last_axes()");
  if (!x) return Obj();
  const long long k = PyLong_AsLongLong(n);
  if (k == -1 && PyErr_Occurred()) return Obj();
  std::vector<int64_t> axes;
  for (int64_t a = std::max<int64_t>(x->ndim() - k, 0); a < x->ndim(); ++a) axes.push_back(a);
  return int_list(axes);
}

}  // namespace hwport::pipeline::formula
