// The decompositions of normal, dropout, rotary_embedding, cross_entropy and
// scaled_dot_product_attention (without is_causal) in C++ (kernel selection's second choice
// where the device has no kernel of its own): phi_ops/decompositions.py's sub-ops in its order, each through the pipeline's C++ entry (so each takes its native kernel or C++ rule
// without entering Python), its 0-d constants as Python scalars the binary and where families
// make 0-d tensors of (the dtype _const gives them), so the bytes equal the Python path's. A
// sub-op that fails sends the whole call to the Python path, which raises its own message.
#include <pybind11/pybind11.h>

#include <cmath>
#include <initializer_list>
#include <utility>

#include "decomp_formulas.h"
#include "ops.h"
#include "pipeline_run.h"

namespace hwport::pipeline {

namespace {

using Obj = pybind11::object;

Obj steal(PyObject* p) { return pybind11::reinterpret_steal<Obj>(p); }

// One sub-op by name: inputs by position, attrs by their OpSpec index, `place` in the slot
// after the attrs (ops without inputs). A null Obj (its Python error cleared) where it failed.
Obj sub(const OpSpec* op, std::initializer_list<PyObject*> in,
        std::initializer_list<std::pair<int, PyObject*>> attrs, PyObject* place = nullptr) {
  BoundArgs a;
  a.count = op->num_inputs + op->num_attrs + (op->num_inputs ? 0 : 1);
  int i = 0;
  for (PyObject* v : in) a.slot[i++] = v;
  for (const auto& [k, v] : attrs) a.slot[op->num_inputs + k] = v;
  if (place) a.slot[op->num_inputs + op->num_attrs] = place;
  Obj out = steal(call_op_entry(*op, a));
  if (!out) PyErr_Clear();
  return out;
}

const OpSpec* spec(const char* name) { return op_spec(name); }

PyObject* name_of(DType d) {  // a dtype attribute by name (leaked on purpose: immortal)
  static PyObject* names[16] = {};
  PyObject*& n = names[static_cast<int>(d)];
  if (!n) n = PyUnicode_InternFromString(dtype_name(d));
  return n;
}

Obj py_float(double v) { return steal(PyFloat_FromDouble(v)); }
Obj py_int(int64_t v) { return steal(PyLong_FromLongLong(v)); }

const AttrValue* find(const Attrs& attrs, const char* name) {
  for (const auto& [n, v] : attrs)
    if (n == name) return &v;
  return nullptr;
}

double number(const AttrValue& v) {
  return v.type == HWP_ATTR_FLOAT64 ? v.f : static_cast<double>(v.i);  // Python's float(v)
}

Obj shape_list(const Shape& shape) {
  Obj list = steal(PyList_New(static_cast<Py_ssize_t>(shape.size())));
  if (!list) throw pybind11::error_already_set();
  for (size_t i = 0; i < shape.size(); ++i)
    PyList_SET_ITEM(list.ptr(), static_cast<Py_ssize_t>(i), PyLong_FromLongLong(shape[i]));
  return list;
}

// F.uniform(shape=shape, low=0.0, high=1.0, seed=seed, offset=offset, dtype=float32, place)
// then F.cast(., dtype=float64)
Obj uniform_f64(PyObject* shape, PyObject* seed, PyObject* offset, PyObject* place) {
  static const OpSpec* const uniform = spec("uniform");
  static const OpSpec* const cast_op = spec("cast");
  static PyObject* const zero = PyFloat_FromDouble(0.0);
  static PyObject* const one = PyFloat_FromDouble(1.0);
  Obj u = sub(uniform, {}, {{0, shape}, {1, seed}, {2, zero}, {3, one}, {4, offset},
                            {5, name_of(DType::Float32)}}, place);
  if (!u) return u;
  return sub(cast_op, {u.ptr()}, {{0, name_of(DType::Float64)}});
}

}  // namespace

// normal: decompositions.normal (Box-Muller, cosine branch, over two float32 uniform streams).
PyObject* normal_decomposition(const OpSpec&, const BoundArgs& a, const Shape& shape,
                               DType out, const Attrs& attrs, PyObject* place) {
  static const OpSpec *const subtract = spec("subtract"), *const multiply = spec("multiply"),
                             *const add = spec("add"), *const log = spec("log"),
                             *const sqrt = spec("sqrt"), *const cos = spec("cos"),
                             *const cast_op = spec("cast");
  const AttrValue *seed = find(attrs, "seed"), *offset = find(attrs, "offset"),
                  *mean = find(attrs, "mean"), *std_ = find(attrs, "std");
  (void)a;
  if (!seed || !offset || !mean || !std_) return nullptr;
  int64_t n = 1, second = 0;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return nullptr;
  if (__builtin_add_overflow(offset->i, n, &second)) return nullptr;  // Python's message
  Obj shp = shape_list(shape), py_seed = py_int(seed->i);
  Obj av = uniform_f64(shp.ptr(), py_seed.ptr(), py_int(offset->i).ptr(), place);
  if (!av) return nullptr;
  Obj bv = uniform_f64(shp.ptr(), py_seed.ptr(), py_int(second).ptr(), place);
  if (!bv) return nullptr;
  static PyObject* const one = PyFloat_FromDouble(1.0);
  static PyObject* const minus_two = PyFloat_FromDouble(-2.0);
  static PyObject* const two_pi = PyFloat_FromDouble(2.0 * M_PI);  // philox.TWO_PI
  Obj u1 = sub(subtract, {one, av.ptr()}, {});
  if (!u1) return nullptr;
  Obj lg = sub(log, {u1.ptr()}, {});
  if (!lg) return nullptr;
  Obj m2 = sub(multiply, {minus_two, lg.ptr()}, {});
  if (!m2) return nullptr;
  Obj r = sub(sqrt, {m2.ptr()}, {});
  if (!r) return nullptr;
  Obj angle = sub(multiply, {two_pi, bv.ptr()}, {});
  if (!angle) return nullptr;
  Obj c = sub(cos, {angle.ptr()}, {});
  if (!c) return nullptr;
  Obj z = sub(multiply, {r.ptr(), c.ptr()}, {});
  if (!z) return nullptr;
  Obj sz = sub(multiply, {py_float(number(*std_)).ptr(), z.ptr()}, {});
  if (!sz) return nullptr;
  Obj v = sub(add, {py_float(number(*mean)).ptr(), sz.ptr()}, {});
  if (!v) return nullptr;
  return sub(cast_op, {v.ptr()}, {{0, name_of(out)}}).release().ptr();
}

// dropout: decompositions.dropout (not training: a copy; p >= 1: zeros; else keep where
// p <= u, u the float32 uniform of counters offset.., compared in float64, scaled by
// 1 / (1 - p) in x's compute dtype).
PyObject* dropout_decomposition(PyObject* x_obj, const Tensor& x, const Attrs& attrs) {
  static const OpSpec *const copy = spec("copy"), *const fill = spec("fill"),
                             *const uniform = spec("uniform"), *const cast_op = spec("cast"),
                             *const less_equal = spec("less_equal"),
                             *const multiply = spec("multiply"), *const where = spec("where");
  const AttrValue *p = find(attrs, "p"), *training = find(attrs, "training"),
                  *seed = find(attrs, "seed"), *offset = find(attrs, "offset");
  if (!p || !training || !seed || !offset) return nullptr;
  if (!training->i) return sub(copy, {x_obj}, {}).release().ptr();
  const double pv = number(*p);
  Obj place = steal(PyObject_GetAttrString(x_obj, "place"));
  if (!place) {
    PyErr_Clear();
    return nullptr;
  }
  Obj shp = shape_list(x.shape);
  static PyObject* const zero_int = PyLong_FromLong(0);
  if (pv >= 1.0)
    return sub(fill, {}, {{0, shp.ptr()}, {1, zero_int}, {2, name_of(x.dtype)}}, place.ptr())
        .release()
        .ptr();
  static PyObject* const zero = PyFloat_FromDouble(0.0);
  static PyObject* const one = PyFloat_FromDouble(1.0);
  Obj u = sub(uniform, {}, {{0, shp.ptr()}, {1, py_int(seed->i).ptr()}, {2, zero}, {3, one},
                            {4, py_int(offset->i).ptr()}, {5, name_of(DType::Float32)}},
              place.ptr());
  if (!u) return nullptr;
  Obj u64 = sub(cast_op, {u.ptr()}, {{0, name_of(DType::Float64)}});
  if (!u64) return nullptr;
  Obj keep = sub(less_equal, {py_float(pv).ptr(), u64.ptr()}, {});
  if (!keep) return nullptr;
  const bool half = x.dtype == DType::Float16 || x.dtype == DType::BFloat16;  // _up
  Obj xc = half ? sub(cast_op, {x_obj}, {{0, name_of(DType::Float32)}})
                : pybind11::reinterpret_borrow<Obj>(x_obj);
  if (!xc) return nullptr;
  Obj scaled = sub(multiply, {xc.ptr(), py_float(1.0 / (1.0 - pv)).ptr()}, {});
  if (!scaled) return nullptr;
  Obj kept = sub(where, {keep.ptr(), scaled.ptr(), zero_int}, {});
  if (!kept || !half) return kept.release().ptr();
  return sub(cast_op, {kept.ptr()}, {{0, name_of(x.dtype)}}).release().ptr();  // _to
}

// rotary_embedding: decompositions.rotary_embedding, x * cos + rotate_half(x) * sin with
// rotate_half(x) = concat(-x2, x1) of the last dim's halves (views), in x's compute dtype.
PyObject* rotary_decomposition(PyObject* const* in) {
  static const OpSpec *const cast_op = spec("cast"), *const neg = spec("neg"),
                             *const concat = spec("concat"), *const multiply = spec("multiply"),
                             *const add = spec("add");
  const Tensor* x = as_tensor(in[0]);
  if (!x) return nullptr;
  const auto half = [](DType d) { return d == DType::Float16 || d == DType::BFloat16; };
  Obj xc = half(x->dtype) ? sub(cast_op, {in[0]}, {{0, name_of(DType::Float32)}})
                          : pybind11::reinterpret_borrow<Obj>(in[0]);
  if (!xc) return nullptr;
  const Tensor* t = as_tensor(xc.ptr());
  const size_t axis = t->shape.size() - 1;
  const int64_t d = t->shape[axis];
  const auto halfview = [&](int64_t start) {  // decompositions._slice_view(xc, axis, start, ..)
    Tensor v = *t;
    v.shape[axis] = d / 2;
    if (d / 2 > 0) v.offset += start * v.strides[axis];
    return steal(to_python(std::move(v)));
  };
  Obj x1 = halfview(0), x2 = halfview(d / 2);
  Obj n2 = sub(neg, {x2.ptr()}, {});
  if (!n2) return nullptr;
  Obj parts = steal(PyList_New(2));
  if (!parts) throw pybind11::error_already_set();
  PyList_SET_ITEM(parts.ptr(), 0, n2.release().ptr());
  PyList_SET_ITEM(parts.ptr(), 1, x1.release().ptr());
  Obj rotated = sub(concat, {parts.ptr()}, {{0, py_int(static_cast<int64_t>(axis)).ptr()}});
  if (!rotated) return nullptr;
  Obj cs[2];
  for (int k = 0; k < 2; ++k) {  // _to(cos, xc.dtype) where cos is a half dtype
    const Tensor* c = as_tensor(in[1 + k]);
    if (!c) return nullptr;
    cs[k] = half(c->dtype) && c->dtype != t->dtype
                ? sub(cast_op, {in[1 + k]}, {{0, name_of(t->dtype)}})
                : pybind11::reinterpret_borrow<Obj>(in[1 + k]);
    if (!cs[k]) return nullptr;
  }
  Obj xcos = sub(multiply, {xc.ptr(), cs[0].ptr()}, {});
  if (!xcos) return nullptr;
  Obj rsin = sub(multiply, {rotated.ptr(), cs[1].ptr()}, {});
  if (!rsin) return nullptr;
  Obj sum = sub(add, {xcos.ptr(), rsin.ptr()}, {});
  if (!sum || as_tensor(sum.ptr())->dtype == x->dtype) return sum.release().ptr();
  return sub(cast_op, {sum.ptr()}, {{0, name_of(x->dtype)}}).release().ptr();  // _to
}

// cross_entropy: decompositions.cross_entropy, -log_softmax(logits)[i, label[i]] per row, 0
// where label == ignore_index; mean over the rows not ignored, sum, or none.
PyObject* cross_entropy_decomposition(PyObject* const* in, const Attrs& attrs) {
  static const OpSpec *const cast_op = spec("cast"), *const log_softmax = spec("log_softmax"),
                             *const not_equal = spec("not_equal"), *const where = spec("where"),
                             *const take = spec("take_along_axis"),
                             *const unsqueeze = spec("unsqueeze"),
                             *const squeeze = spec("squeeze"), *const neg = spec("neg"),
                             *const sum = spec("sum"), *const divide = spec("divide");
  const AttrValue *reduction = find(attrs, "reduction"), *ignore = find(attrs, "ignore_index");
  const Tensor* logits = as_tensor(in[0]);
  if (!reduction || !ignore || !logits || logits->ndim() != 2) return nullptr;
  const DType out = logits->dtype;
  const bool half = out == DType::Float16 || out == DType::BFloat16;
  Obj lc = half ? sub(cast_op, {in[0]}, {{0, name_of(DType::Float32)}})
                : pybind11::reinterpret_borrow<Obj>(in[0]);
  if (!lc) return nullptr;
  const DType compute = as_tensor(lc.ptr())->dtype;
  static PyObject* const one = PyLong_FromLong(1);
  static PyObject* const zero = PyLong_FromLong(0);
  static PyObject* const axis_list = Py_BuildValue("[i]", 1);  // leaked on purpose
  static PyObject* const all_axes = Py_BuildValue("[i]", 0);
  Obj lsm = sub(log_softmax, {lc.ptr()}, {{0, one}});
  if (!lsm) return nullptr;
  Obj valid = sub(not_equal, {in[1], py_int(ignore->i).ptr()}, {});
  if (!valid) return nullptr;
  Obj safe = sub(where, {valid.ptr(), in[1], zero}, {});
  if (!safe) return nullptr;
  Obj idx = sub(unsqueeze, {safe.ptr()}, {{0, axis_list}});
  if (!idx) return nullptr;
  Obj picked = sub(take, {lsm.ptr(), idx.ptr()}, {{0, one}});
  if (!picked) return nullptr;
  picked = sub(squeeze, {picked.ptr()}, {{0, axis_list}});
  if (!picked) return nullptr;
  Obj negated = sub(neg, {picked.ptr()}, {});
  if (!negated) return nullptr;
  Obj loss = sub(where, {valid.ptr(), negated.ptr(), zero}, {});
  if (!loss) return nullptr;
  const auto to_out = [&](Obj t) -> PyObject* {  // _to(t, logits.dtype)
    if (!t || as_tensor(t.ptr())->dtype == out) return t.release().ptr();
    return sub(cast_op, {t.ptr()}, {{0, name_of(out)}}).release().ptr();
  };
  if (reduction->s == "none") return to_out(std::move(loss));
  Obj total = sub(sum, {loss.ptr()}, {{0, all_axes}});
  if (reduction->s == "sum" || !total) return to_out(std::move(total));
  if (reduction->s != "mean") return nullptr;
  Obj as_float = sub(cast_op, {valid.ptr()}, {{0, name_of(compute)}});
  if (!as_float) return nullptr;
  Obj count = sub(sum, {as_float.ptr()}, {{0, all_axes}});
  if (!count) return nullptr;
  return to_out(sub(divide, {total.ptr(), count.ptr()}, {}));
}

// scaled_dot_product_attention without is_causal: decompositions.scaled_dot_product_attention,
// softmax(q k^T * scale + mask) v in the up-cast dtypes (a bool mask keeps where true, else
// -inf; a float mask is added), then the promoted dtype of query, key and value.
PyObject* attention_decomposition(PyObject* const* in, DType out, const Attrs& attrs) {
  static const OpSpec *const cast_op = spec("cast"), *const matmul = spec("matmul"),
                             *const multiply = spec("multiply"), *const where = spec("where"),
                             *const add = spec("add"), *const softmax = spec("softmax");
  const auto half = [](DType d) { return d == DType::Float16 || d == DType::BFloat16; };
  const auto to = [&](PyObject* t, DType d) {  // _to
    if (as_tensor(t)->dtype == d) return pybind11::reinterpret_borrow<Obj>(t);
    return sub(cast_op, {t}, {{0, name_of(d)}});
  };
  Obj qkv[3];
  for (int k = 0; k < 3; ++k) {  // _up
    const Tensor* t = as_tensor(in[k]);
    if (!t) return nullptr;
    qkv[k] = half(t->dtype) ? to(in[k], DType::Float32)
                            : pybind11::reinterpret_borrow<Obj>(in[k]);
    if (!qkv[k]) return nullptr;
  }
  const AttrValue* scale = find(attrs, "scale");
  const int64_t e = as_tensor(in[0])->shape.back();
  const double s = scale ? number(*scale) : 1.0 / std::sqrt(static_cast<double>(e));
  Obj raw = sub(matmul, {qkv[0].ptr(), qkv[1].ptr()}, {{1, Py_True}});
  if (!raw) return nullptr;
  Obj scores = sub(multiply, {raw.ptr(), py_float(s).ptr()}, {});
  if (!scores) return nullptr;
  PyObject* mask = in[3] && in[3] != Py_None ? in[3] : nullptr;
  if (mask) {
    const Tensor* m = as_tensor(mask);
    if (!m) return nullptr;
    if (m->dtype == DType::Bool) {
      static PyObject* const neg_inf = PyFloat_FromDouble(-INFINITY);
      scores = sub(where, {mask, scores.ptr(), neg_inf}, {});
    } else {
      Obj mc = to(mask, as_tensor(scores.ptr())->dtype);
      if (!mc) return nullptr;
      scores = sub(add, {scores.ptr(), mc.ptr()}, {});
    }
    if (!scores) return nullptr;
  }
  static PyObject* const last = PyLong_FromLong(-1);
  Obj probs = sub(softmax, {scores.ptr()}, {{0, last}});
  if (!probs) return nullptr;
  Obj vc = to(qkv[2].ptr(), as_tensor(probs.ptr())->dtype);
  if (!vc) return nullptr;
  Obj y = sub(matmul, {probs.ptr(), vc.ptr()}, {});
  if (!y) return nullptr;
  return to(y.ptr(), out).release().ptr();
}

}  // namespace hwport::pipeline
