#include "pipeline.h"
#include "pipeline_run.h"

#include <pybind11/detail/exception_translation.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <new>
#include <string>
#include <vector>

#include "arg_parse.h"
#include "decomp_formulas.h"
#include "errors.h"
#include "infer_meta.h"
#include "jit_composite.h"
#include "kernel_cache.h"
#include "autograd.h"
#include "layers.h"
#include "ops.h"
#include "py_convert.h"

namespace hwport::pipeline {

thread_local SelectionProbe* g_probe = nullptr;

PyObject* to_python(Tensor&& t) {
  // A dry run that reached the op's kernel or formula has what it came for: no Python object
  // for an output nobody will read (a view, which launches nothing, still gets one).
  if (g_probe && g_probe->dry && (g_probe->launched || g_probe->formula)) Py_RETURN_NONE;
  return pybind11::cast(std::move(t)).release().ptr();
}

void launch_outputs(const OpSpec& op, DType key, Device* device, const Tensor* const* in, int n,
                    Tensor* const* outs, int n_out, const Attrs& attrs) {
  if (SelectionProbe* p = probe_for(op)) {
    p->launched = true;
    p->key = key;
    p->device = device;
    if (p->dry) return;
  }
  if (outs[0]->numel() == 0) return;
  run_kernel(registry_id(op), key, device, in, n, outs, n_out, attrs);
}

void launch(const OpSpec& op, DType key, Device* device, const Tensor* const* in, int n,
            Tensor* out, const Attrs& attrs) {
  Tensor* outs[] = {out};
  launch_outputs(op, key, device, in, n, outs, 1, attrs);
}

namespace {

// All owned for the life of the process (leaked on purpose: a static py::object would be
// released after the interpreter is gone).
PyObject* g_dispatch_dict = nullptr;      // phi_ops.dispatch.__dict__
PyObject* g_core_dict = nullptr;          // _core.__dict__
PyObject* g_call_key = nullptr;           // "call"
// A hook the Python path calls that can be swapped (key, the default value): the guards suite
// swaps phi_ops.dispatch.output_allocator, tests spy on _core.launch and _core.has_kernel.
struct Hook {
  PyObject** dict;
  PyObject* key;
  PyObject* value;
};
Hook g_hooks[3] = {};
uint64_t g_fast_calls = 0, g_python_calls = 0;  // under the GIL

PyObject* op_name_str(const OpSpec& op) {
  static std::vector<PyObject*> names(static_cast<size_t>(num_ops()), nullptr);
  PyObject*& s = names[static_cast<size_t>(op.id)];
  if (!s) s = PyUnicode_InternFromString(op.name);
  return s;
}

// With a hook swapped every call is Python's (which calls the hook).
bool default_hooks() {
  if (!g_dispatch_dict) return false;
  for (const Hook& h : g_hooks) {
    PyObject* v = PyDict_GetItemWithError(*h.dict, h.key);
    if (!v) PyErr_Clear();
    if (v != h.value) return false;
  }
  return true;
}

}  // namespace

// A composite on a device with a codegen target and no kernel for it: the eager JIT's one
// fused kernel of its decomposition (jit_composite.h) before the formula runs its primitives
// one by one. nullptr (no Python error set): the formula. Not on the CPU device, which the JIT
// never serves, nor on a device with native primitives (its `add` for the key dtype): there
// the decomposition runs on its own kernels, as lower_to_kernel decomposes the composite in a
// program, so eager and programs give the same bits; the JIT stands in for the CPU fallback.
PyObject* jit_composite_for(const OpSpec& op, PyObject* const* in, const BoundArgs& a,
                            DType key, Device* device) {
  if (!device || !device->plugin->has_codegen_target || !jit_composite_registered() ||
      device == DeviceManager::instance().cpu() ||
      device->plugin->kernels.find(core_ops().add, key))
    return nullptr;
  PyObject* inputs = PyTuple_New(op.num_inputs);
  PyObject* attrs = PyDict_New();
  bool ok = inputs && attrs;
  for (int i = 0; ok && i < op.num_inputs; ++i) {
    PyObject* v = in[i] ? in[i] : Py_None;
    Py_INCREF(v);
    PyTuple_SET_ITEM(inputs, i, v);
  }
  for (int k = 0; ok && k < op.num_attrs; ++k)  // the rest take the op's defaults
    if (PyObject* v = a.slot[op.num_inputs + k])
      ok = PyDict_SetItemString(attrs, op.attrs[k].name, v) == 0;
  PyObject* out = ok ? jit_composite(registry_id(op), op.name, device, inputs, attrs) : nullptr;
  Py_XDECREF(inputs);
  Py_XDECREF(attrs);
  if (!out) {
    PyErr_Clear();
    return nullptr;
  }
  count_compiled(registry_id(op), device, key);
  return out;
}

PyObject* select_formula(const OpSpec& op, PyObject* const* in, const BoundArgs& a, DType key,
                         Device* device) {
  if (SelectionProbe* p = probe_for(op)) {
    p->formula = true;
    p->key = key;
    p->device = device;
    if (p->dry) Py_RETURN_NONE;
  } else if (PyObject* out = jit_composite_for(op, in, a, key, device)) {
    return out;
  }
  return run_formula(op, in, a);
}

// The Python path with the arguments as given: phi_ops.dispatch.call(name, inputs, attrs).
PyObject* python_path(const OpSpec& op, const BoundArgs& a, PyObject* selecting) {
  ++g_python_calls;
  if (!g_dispatch_dict) {
    PyErr_SetString(PyExc_RuntimeError,
                    "hwport: the op pipeline has no Python path (phi_ops.dispatch not registered)");
    return nullptr;
  }
  PyObject* call = PyDict_GetItemWithError(g_dispatch_dict, g_call_key);
  if (!call) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "phi_ops.dispatch.call is gone");
    return nullptr;
  }
  PyObject* inputs = PyTuple_New(op.num_inputs);
  PyObject* attrs = PyDict_New();
  if (!inputs || !attrs) {
    Py_XDECREF(inputs);
    Py_XDECREF(attrs);
    return nullptr;
  }
  for (int i = 0; i < op.num_inputs; ++i) {
    PyObject* v = a.slot[i] ? a.slot[i] : Py_None;
    Py_INCREF(v);
    PyTuple_SET_ITEM(inputs, i, v);
  }
  bool ok = true;
  for (int k = 0; k < op.num_attrs && ok; ++k)  // the rest take Python's defaults
    if (PyObject* v = a.slot[op.num_inputs + k])
      ok = PyDict_SetItemString(attrs, op.attrs[k].name, v) == 0;
  // an op without inputs: its `place` (dispatch.call's fourth argument) when given
  PyObject* place = op.num_inputs == 0 ? a.slot[op.num_attrs] : nullptr;
  if (selecting && !place) place = Py_None;
  PyObject* out =
      ok ? PyObject_CallFunctionObjArgs(call, op_name_str(op), inputs, attrs, place, selecting,
                                        nullptr)
         : nullptr;
  Py_DECREF(inputs);
  Py_DECREF(attrs);
  return out;
}

namespace {

// The fast paths: nullptr = take the Python path (never with a Python error set).
PyObject* run_unary(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  if (!x) return nullptr;  // a Python scalar input: Python's rule
  Attrs attrs;
  DType attr_dtype = x->dtype;
  if (!kernel_attrs(op, a, x->ndim(), &attrs, &attr_dtype)) return nullptr;
  if (!unary_attrs_valid(op, attrs)) return nullptr;
  ElementwisePlan plan;
  if (!infer_unary(op, {&x->shape, x->dtype}, attr_dtype, &plan)) return nullptr;
  Device* device = x->device();
  if (!op.primitive && !native_kernel(op, device, plan.compute)) {
    // Kernel selection's second choice: the C++ formula, on the input the Python path would
    // hand the decomposition (integers of a float-only op in float32: _promote_unsupported).
    if (!plan.cast[0]) return select_formula(op, &a.slot[0], a, plan.compute, device);
    pybind11::object promoted = pybind11::reinterpret_steal<pybind11::object>(
        to_python(cast(*x, plan.compute)));
    PyObject* in0 = promoted.ptr();
    return select_formula(op, &in0, a, plan.compute, device);
  }
  Tensor casted;
  const Tensor* in = x;
  if (plan.cast[0]) {
    casted = cast(*x, plan.compute);
    in = &casted;
  }
  Tensor out = Tensor::empty(plan.shape, plan.out, device, op.name);
  launch(op, plan.compute, device, &in, 1, &out, attrs);
  return to_python(std::move(out));
}

}  // namespace

bool scalar_operand(const OpSpec& op, PyObject* obj, const Tensor& like, const char* arg,
                    Tensor* out) {
  if (!is_plain_scalar(obj)) return false;
  const DType dtype = weak_scalar_dtype(obj, like.dtype);
  const AttrValue value = scalar_from_py(obj, dtype, op.name, arg);
  *out = full({}, value, dtype, like.device());
  return true;
}

namespace {

PyObject* run_binary(const OpSpec& op, const BoundArgs& a) {
  if (!a.slot[0] || !a.slot[1]) return nullptr;
  Tensor* x = as_tensor(a.slot[0]);
  Tensor* y = as_tensor(a.slot[1]);
  const Tensor* like = x ? x : y;
  if (!like) return nullptr;
  Tensor sx, sy;
  if (!x && !scalar_operand(op, a.slot[0], *like, "x", &sx)) return nullptr;
  if (!y && !scalar_operand(op, a.slot[1], *like, "y", &sy)) return nullptr;
  const Tensor& tx = x ? *x : sx;
  const Tensor& ty = y ? *y : sy;
  Device* device = tx.device();
  if (ty.device() != device) return nullptr;
  ElementwisePlan plan;
  if (!infer_binary(op, {&tx.shape, tx.dtype}, {&ty.shape, ty.dtype}, &plan)) return nullptr;
  if (!op.primitive) {
    // A composite's kernel runs only where every floating input already has the key dtype
    // (phi_ops/dispatch.py _fused_kernel_fits); else its decomposition keeps their precision.
    if (!native_kernel(op, device, plan.compute))
      return select_formula(op, a.slot, a, plan.compute, device);
    for (const Tensor* t : {&tx, &ty})
      if (is_floating(t->dtype) && t->dtype != plan.compute) return nullptr;
  }
  Tensor prepared[2];
  const Tensor* in[2] = {&tx, &ty};
  for (int i = 0; i < 2; ++i) {
    if (!plan.cast[i] && in[i]->shape == plan.shape) continue;
    prepared[i] = broadcast_to(plan.cast[i] ? cast(*in[i], plan.compute) : *in[i], plan.shape);
    in[i] = &prepared[i];
  }
  Tensor out = Tensor::empty(plan.shape, plan.out, device, op.name);
  launch(op, plan.compute, device, in, 2, &out, Attrs{});
  return to_python(std::move(out));
}

// where(condition, x, y): scalars x, y take their weak dtype next to the other (the tensor
// that decides the dtype); a scalar condition is Python's.
PyObject* run_where(const OpSpec& op, const BoundArgs& a) {
  if (!a.slot[0] || !a.slot[1] || !a.slot[2]) return nullptr;
  Tensor* c = as_tensor(a.slot[0]);
  Tensor* x = as_tensor(a.slot[1]);
  Tensor* y = as_tensor(a.slot[2]);
  const Tensor* like = x ? x : y;
  if (!c || !like) return nullptr;
  Tensor sx, sy;
  if (!x && !scalar_operand(op, a.slot[1], *like, "x", &sx)) return nullptr;
  if (!y && !scalar_operand(op, a.slot[2], *like, "y", &sy)) return nullptr;
  const Tensor* in[3] = {c, x ? x : &sx, y ? y : &sy};
  Device* device = c->device();
  if (in[1]->device() != device || in[2]->device() != device) return nullptr;
  ElementwisePlan plan;
  if (!infer_where(op, {&c->shape, c->dtype}, {&in[1]->shape, in[1]->dtype},
                   {&in[2]->shape, in[2]->dtype}, &plan))
    return nullptr;
  Tensor prepared[3];
  for (int i = 0; i < 3; ++i) {
    if (!plan.cast[i] && in[i]->shape == plan.shape) continue;
    const DType to = i == 0 ? DType::Bool : plan.compute;
    prepared[i] = broadcast_to(plan.cast[i] ? cast(*in[i], to) : *in[i], plan.shape);
    in[i] = &prepared[i];
  }
  Tensor out = Tensor::empty(plan.shape, plan.out, device, op.name);
  launch(op, plan.compute, device, in, 3, &out, Attrs{});
  return to_python(std::move(out));
}

PyObject* run_reduce(const OpSpec& op, const BoundArgs& a) {
  Tensor* x = a.slot[0] ? as_tensor(a.slot[0]) : nullptr;
  if (!x) return nullptr;
  ReduceAttrs given;
  Attrs attrs;
  if (!reduce_attrs(op, a, &given, &attrs)) return nullptr;
  ReducePlan plan;
  if (!infer_reduce(op, {&x->shape, x->dtype}, given, &plan)) return nullptr;
  Device* device = x->device();
  if (!op.primitive) {
    // No native kernel: the formula, on x as given (the Python decomposition gets it so).
    if (!native_kernel(op, device, plan.key))
      return select_formula(op, &a.slot[0], a, plan.key, device);
    if (is_floating(x->dtype) && x->dtype != plan.key) return nullptr;
  }
  Tensor casted;
  const Tensor* in = x;
  if (x->dtype != plan.key) {
    casted = cast(*x, plan.key);
    in = &casted;
  }
  // The kernel contract's attributes, as phi_ops/dispatch.py passes them (dtype by name).
  AttrValue axis;
  axis.type = HWP_ATTR_INT64_ARRAY;
  axis.ints = plan.axes;
  attrs.emplace_back("axis", std::move(axis));
  attrs.emplace_back("keepdim", AttrValue::of_bool(given.keepdim));
  if (given.has_dtype) {
    AttrValue d;
    d.type = HWP_ATTR_STRING;
    d.s = dtype_name(given.dtype);
    attrs.emplace_back("dtype", std::move(d));
  }
  Tensor out = Tensor::empty(plan.shape, plan.out, device, op.name);
  launch(op, plan.key, device, &in, 1, &out, attrs);
  return to_python(std::move(out));
}

}  // namespace

PyObject* run_family(const OpSpec& op, const BoundArgs& a) {
  switch (op.family) {
    case Family::Unary: return run_unary(op, a);
    case Family::Binary: return run_binary(op, a);
    case Family::Reduce: return run_reduce(op, a);
    case Family::Where: return run_where(op, a);
    case Family::Norm: return run_norm(op, a);
    case Family::Matmul: return run_matmul(op, a);
    case Family::Concat: return run_concat(op, a);
    case Family::Reshape: return run_reshape(op, a);
    case Family::Transpose: return run_transpose(op, a);
    case Family::Squeeze: return run_squeeze(op, a);
    case Family::Unsqueeze: return run_unsqueeze(op, a);
    case Family::Flatten: return run_flatten(op, a);
    case Family::Expand: return run_expand(op, a);
    case Family::Slice: return run_slice(op, a);
    case Family::Split: return run_split(op, a);
    case Family::Arg_reduce: return run_arg_reduce(op, a);
    case Family::Scan: return run_scan(op, a);
    case Family::Gather: return run_gather(op, a);
    case Family::Take_along_axis: return run_take_along_axis(op, a);
    case Family::Creation: return run_creation(op, a);
    case Family::Arange: return run_arange(op, a);
    case Family::Flip: return run_flip(op, a);
    case Family::Pad: return run_pad(op, a);
    case Family::Linear: return run_linear(op, a);
    case Family::Embedding: return run_embedding(op, a);
    case Family::Stack: return run_stack(op, a);
    case Family::Matrix_unary: return run_matrix_unary(op, a);
    case Family::Like: return run_like(op, a);
    case Family::Eye: return run_eye(op, a);
    case Family::Linspace: return run_linspace(op, a);
    case Family::Tile: return run_tile(op, a);
    case Family::Roll: return run_roll(op, a);
    case Family::Topk: return run_topk(op, a);
    case Family::Random: return run_random(op, a);
    case Family::Dropout: return run_dropout(op, a);
    case Family::Rotary: return run_rotary(op, a);
    case Family::Scatter: return run_scatter(op, a);
    case Family::Attention: return run_attention(op, a);
    case Family::Cross_entropy: return run_cross_entropy(op, a);
    case Family::Optimizer_update: return run_optimizer_update(op, a);
    case Family::Grad_like: return run_grad_like(op, a);
    case Family::Cross_entropy_grad: return run_cross_entropy_grad(op, a);
    default: return nullptr;
  }
}

PyObject* try_family(const OpSpec& op, const BoundArgs& a, bool* python_error) {
  *python_error = false;
  try {
    if (PyObject* out = run_family(op, a)) {
      ++g_fast_calls;
      return out;
    }
  } catch (const Error&) {
    // Kernels are pure and the outputs fresh: the Python path redoes the call and raises
    // its own message (the one the reliability issue fixed).
  } catch (pybind11::error_already_set& e) {
    e.restore();
    *python_error = true;
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
    *python_error = true;
  }
  return nullptr;
}

namespace {

std::vector<std::string>* g_call_log = nullptr;  // test hook _pipeline_call_log; GIL
thread_local bool g_python_only = false;         // test hook _pipeline_python_only

PyObject* call_op(const OpSpec& op, const BoundArgs& a) {
  if (g_call_log) g_call_log->push_back(op.name);
  if (op.family != Family::None && !g_python_only && default_hooks()) {
    if (layers::any_active()) return layered_call(op, a);
    // An outer layered call's probe is not this call's (a layer's own calls, its layer
    // suspended, come here).
    ProbeScope no_probe(nullptr);
    if (layers::autograd_wanted() && autograd::call_needs_grad(op, a.slot)) {
      try {
        return autograd::record_bound(op, a);
      } catch (pybind11::error_already_set& e) {
        e.restore();
        return nullptr;
      } catch (...) {
        pybind11::detail::try_translate_exceptions();
        return nullptr;
      }
    }
    bool python_error = false;
    if (PyObject* out = try_family(op, a, &python_error)) return out;
    if (python_error) return nullptr;
  }
  return python_path(op, a);
}

}  // namespace

PyObject* call_op_entry(const OpSpec& op, const BoundArgs& a) { return call_op(op, a); }

namespace {

const OpSpec* spec_of(PyObject* id_obj) {
  const long id = PyLong_Check(id_obj) ? PyLong_AsLong(id_obj) : -1;
  if (id == -1 && PyErr_Occurred()) PyErr_Clear();
  const OpSpec* op = op_spec(static_cast<int>(id));
  if (!op) PyErr_SetString(PyExc_ValueError, "_op_call: unknown op id");
  return op;
}

// _op_call(op_id, *args, **kwargs): the op's inputs then its attributes, by position or name.
PyObject* op_call(PyObject*, PyObject* const* args, Py_ssize_t nargsf, PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs < 1) {
    PyErr_SetString(PyExc_TypeError, "_op_call: expected the op id first");
    return nullptr;
  }
  const OpSpec* op = spec_of(args[0]);
  if (!op) return nullptr;
  BoundArgs a;
  if (!bind_args(*op, args + 1, nargs - 1, kwnames, &a)) {
    PyErr_Format(PyExc_TypeError, "%s: takes the arguments (%s); got %zd positional and %zd "
                 "keyword arguments, or a name it does not take", op->name, op->keywords,
                 nargs - 1, kwnames ? PyTuple_GET_SIZE(kwnames) : Py_ssize_t{0});
    return nullptr;
  }
  return call_op(*op, a);
}

// A Tensor operator (m_self = op id * 2 + reflected): __sub__(a, b) is subtract(a, b),
// __rsub__(a, b) is subtract(b, a).
PyObject* operator_call(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  const long code = PyLong_AsLong(self);
  const OpSpec* op = op_spec(static_cast<int>(code >> 1));
  if (!op || nargs != op->num_inputs || nargs > 2) {
    PyErr_Format(PyExc_TypeError, "%s: operator expected %d operand(s), got %zd",
                 op ? op->name : "?", op ? op->num_inputs : 0, nargs);
    return nullptr;
  }
  BoundArgs a;
  a.count = op->num_inputs + op->num_attrs;
  const bool reflected = (code & 1) != 0;
  for (Py_ssize_t i = 0; i < nargs; ++i) a.slot[i] = args[reflected ? nargs - 1 - i : i];
  return call_op(*op, a);
}

PyMethodDef g_methods[] = {
    {"_op_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(op_call)),
     METH_FASTCALL | METH_KEYWORDS,
     "_op_call(op_id, *args, **kwargs): runs op `op_id` (its index in ops.yaml) on its inputs "
     "and attributes through the C++ pipeline, else phi_ops.dispatch.call."},
    {nullptr, nullptr, 0, nullptr}};

// The Tensor method of an operator: a builtin bound as an instance method.
pybind11::object make_operator(int id, bool reflected, const std::string& name) {
  const OpSpec* op = op_spec(id);
  if (!op) throw pybind11::value_error("_pipeline_operator: unknown op id");
  // One PyMethodDef per operator, leaked: the builtin keeps a pointer to it.
  auto* def = new PyMethodDef{(new std::string(name))->c_str(),
                              reinterpret_cast<PyCFunction>(
                                  reinterpret_cast<void (*)()>(operator_call)),
                              METH_FASTCALL, op->name};
  pybind11::object code = pybind11::int_(id * 2 + (reflected ? 1 : 0));
  pybind11::object fn = pybind11::reinterpret_steal<pybind11::object>(
      PyCFunction_New(def, code.ptr()));
  if (!fn) throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::object>(PyInstanceMethod_New(fn.ptr()));
}

const char* family_name(Family f) {
  switch (f) {
    case Family::Unary: return "unary";
    case Family::Binary: return "binary";
    case Family::Reduce: return "reduce";
    case Family::Where: return "where";
    case Family::Norm: return "norm";
    case Family::Matmul: return "matmul";
    case Family::Concat: return "concat";
    case Family::Reshape: return "reshape";
    case Family::Transpose: return "transpose";
    case Family::Squeeze: return "squeeze";
    case Family::Unsqueeze: return "unsqueeze";
    case Family::Flatten: return "flatten";
    case Family::Expand: return "expand";
    case Family::Slice: return "slice";
    case Family::Split: return "split";
    case Family::Arg_reduce: return "arg_reduce";
    case Family::Scan: return "scan";
    case Family::Gather: return "gather";
    case Family::Take_along_axis: return "take_along_axis";
    case Family::Creation: return "creation";
    case Family::Arange: return "arange";
    case Family::Flip: return "flip";
    case Family::Pad: return "pad";
    case Family::Linear: return "linear";
    case Family::Embedding: return "embedding";
    case Family::Stack: return "stack";
    case Family::Matrix_unary: return "matrix_unary";
    case Family::Like: return "like";
    case Family::Eye: return "eye";
    case Family::Linspace: return "linspace";
    case Family::Tile: return "tile";
    case Family::Roll: return "roll";
    case Family::Topk: return "topk";
    case Family::Random: return "random";
    case Family::Dropout: return "dropout";
    case Family::Rotary: return "rotary";
    case Family::Scatter: return "scatter";
    case Family::Attention: return "attention";
    case Family::Cross_entropy: return "cross_entropy";
    case Family::Optimizer_update: return "optimizer_update";
    case Family::Grad_like: return "grad_like";
    case Family::Cross_entropy_grad: return "cross_entropy_grad";
    default: return "";
  }
}

// Test hook: the C++ rule's (shape, out dtype, key dtype[, normalized axes]) for `metas`
// ((shape, dtype name) per input) and `attrs` (by name), or None where the call would take the
// Python path.
// One (shape, dtype name) meta of the test hook.
bool meta_from_py(pybind11::handle m, std::vector<Shape>* shapes, MetaIn* out) {
  namespace py = pybind11;
  auto pair = m.cast<std::pair<Shape, std::string>>();
  DType d;
  if (!dtype_from_name(pair.second, &d)) throw py::value_error("unknown dtype " + pair.second);
  shapes->push_back(std::move(pair.first));
  *out = {nullptr, d};
  return true;
}

// Test hook: the C++ rule's (shape, out dtype, key dtype[, normalized axes]) for `metas` (per
// input: (shape, dtype name), None for an absent optional input, a list of them for a
// variadic one) and `attrs` (by name), or None where the call would take the Python path.
pybind11::object infer_py(const std::string& name, pybind11::list metas, pybind11::dict attrs) {
  namespace py = pybind11;
  const OpSpec* op = op_spec(name.c_str());
  if (!op) throw py::value_error("_pipeline_infer: unknown op " + name);
  if (metas.size() != static_cast<size_t>(op->num_inputs)) return py::none();
  std::vector<Shape> shapes;
  shapes.reserve(64);
  std::vector<MetaIn> in(metas.size());
  std::vector<bool> present(metas.size(), false);
  std::vector<MetaIn> listed;  // the variadic input's metas
  for (size_t i = 0; i < metas.size(); ++i) {
    py::handle m = metas[i];
    if (m.is_none()) continue;
    if (py::isinstance<py::list>(m)) {
      for (py::handle e : m) {
        MetaIn one;
        meta_from_py(e, &shapes, &one);
        listed.push_back(one);
      }
      continue;
    }
    meta_from_py(m, &shapes, &in[i]);
    present[i] = true;
  }
  size_t next = 0;  // every shape is in place now: point into them
  for (size_t i = 0; i < metas.size(); ++i) {
    py::handle m = metas[i];
    if (m.is_none()) continue;
    if (py::isinstance<py::list>(m)) {
      for (MetaIn& one : listed) one.shape = &shapes[next++];
      continue;
    }
    in[i].shape = &shapes[next++];
  }
  BoundArgs a;
  a.count = op->num_inputs + op->num_attrs;
  for (int k = 0; k < op->num_attrs; ++k)
    if (attrs.contains(op->attrs[k].name))
      a.slot[op->num_inputs + k] = py::object(attrs[op->attrs[k].name]).ptr();  // kept by attrs
  const bool all_plain = listed.empty() &&
                         std::all_of(present.begin(), present.end(), [](bool p) { return p; });
  const auto meta_tuple = [](const Shape& shape, DType out, DType key) {
    return py::make_tuple(py::tuple(py::cast(shape)), dtype_name(out), dtype_name(key));
  };
  try {
    ElementwisePlan plan;
    Attrs kernel;
    switch (op->family) {
      case Family::Norm: {
        if (!present[0]) return py::none();
        const MetaIn* affine[2] = {nullptr, nullptr};
        for (int i = 1; i < op->num_inputs; ++i)
          if (present[i]) affine[i - 1] = &in[i];
        DType unused = in[0].dtype;
        double nd = 0, eps = 0;
        if (!kernel_attrs(*op, a, static_cast<int64_t>(in[0].shape->size()), &kernel,
                          &unused) ||
            !attr_number(kernel, "normalized_ndim", &nd) ||
            !attr_number(kernel, "epsilon", &eps) ||
            !infer_norm(*op, in[0], affine, op->num_inputs - 1, static_cast<int64_t>(nd), eps,
                        &plan))
          return py::none();
        return meta_tuple(plan.shape, plan.out, plan.compute);
      }
      case Family::Concat: {
        int64_t axis = op->attrs[0].default_value.i, norm = 0;
        PyObject* v = a.slot[op->num_inputs];
        Shape shape;
        DType dtype;
        if ((v && !plain_int(v, &axis)) || !infer_concat(*op, listed, axis, &shape, &dtype, &norm))
          return py::none();
        return meta_tuple(shape, dtype, dtype);
      }
      case Family::Stack: {  // + the normalized axis
        int64_t axis = op->attrs[0].default_value.i, norm = 0;
        PyObject* v = a.slot[op->num_inputs];
        Shape shape;
        DType dtype;
        if ((v && !plain_int(v, &axis)) || !infer_stack(*op, listed, axis, &shape, &dtype, &norm))
          return py::none();
        return meta_tuple(shape, dtype, dtype) + py::make_tuple(norm);
      }
      case Family::Linear: {
        if (!present[0] || !present[1]) return py::none();
        Shape shape;
        DType dtype;
        if (!infer_linear(*op, in[0], in[1], present[2] ? &in[2] : nullptr, &shape, &dtype))
          return py::none();
        return meta_tuple(shape, dtype, in[0].dtype);
      }
      case Family::Attention:  // an optional input: pipeline_families_nn.cpp
      case Family::Grad_like:
        return py::reinterpret_steal<py::object>(infer_more_meta(*op, in, present, a));
      default: break;
    }
    if (!all_plain) return py::none();
    switch (op->family) {
      case Family::Unary: {
        DType attr_dtype = in[0].dtype;
        if (!kernel_attrs(*op, a, static_cast<int64_t>(in[0].shape->size()), &kernel,
                          &attr_dtype) ||
            !unary_attrs_valid(*op, kernel) || !infer_unary(*op, in[0], attr_dtype, &plan))
          return py::none();
        break;
      }
      case Family::Binary:
        if (!infer_binary(*op, in[0], in[1], &plan)) return py::none();
        break;
      case Family::Where:
        if (!infer_where(*op, in[0], in[1], in[2], &plan)) return py::none();
        break;
      case Family::Reduce: {
        ReduceAttrs given;
        ReducePlan r;
        if (!reduce_attrs(*op, a, &given, &kernel) || !infer_reduce(*op, in[0], given, &r))
          return py::none();
        return py::make_tuple(py::tuple(py::cast(r.shape)), dtype_name(r.out),
                              dtype_name(r.key), py::cast(r.axes));
      }
      case Family::Matmul: {
        PyObject* tx = a.slot[op->num_inputs];
        PyObject* ty = a.slot[op->num_inputs + 1];
        if ((tx && !PyBool_Check(tx)) || (ty && !PyBool_Check(ty))) return py::none();
        MatmulPlan m;
        if (!infer_matmul(*op, in[0], in[1], tx == Py_True, ty == Py_True, &m))
          return py::none();
        return meta_tuple(m.shape, m.dtype, m.dtype);
      }
      case Family::Reshape: {
        std::vector<int64_t> given;
        Shape shape;
        PyObject* v = a.slot[op->num_inputs];
        if (!v || v == Py_None || !int_list(v, &given) || !infer_reshape(in[0], given, &shape))
          return py::none();
        return meta_tuple(shape, in[0].dtype, in[0].dtype);
      }
      case Family::Transpose: {
        std::vector<int64_t> given, perm;
        PyObject* v = a.slot[op->num_inputs];
        const bool reversed = !v || v == Py_None;
        if ((!reversed && !int_list(v, &given)) ||
            !infer_transpose(in[0], reversed ? nullptr : &given, &perm))
          return py::none();
        Shape shape;
        for (int64_t p : perm) shape.push_back((*in[0].shape)[p]);
        return meta_tuple(shape, in[0].dtype, in[0].dtype);
      }
      case Family::Squeeze:
      case Family::Unsqueeze:
      case Family::Expand: {
        std::vector<int64_t> given, axes;
        Shape shape;
        PyObject* v = a.slot[op->num_inputs];
        const bool none = !v || v == Py_None;
        if (none && op->family != Family::Squeeze) return py::none();
        if (!none && !int_list(v, &given)) return py::none();
        const bool ok = op->family == Family::Squeeze ? infer_squeeze(in[0], given, &shape, &axes)
                        : op->family == Family::Unsqueeze
                            ? infer_unsqueeze(in[0], given, &shape, &axes)
                            : infer_expand(in[0], given, &shape);
        if (!ok) return py::none();
        return meta_tuple(shape, in[0].dtype, in[0].dtype);
      }
      case Family::Flatten: {
        int64_t b[2] = {op->attrs[0].default_value.i, op->attrs[1].default_value.i};
        for (int k = 0; k < 2; ++k)
          if (PyObject* v = a.slot[op->num_inputs + k])
            if (!plain_int(v, &b[k])) return py::none();
        Shape shape;
        if (!infer_flatten(in[0], b[0], b[1], &shape)) return py::none();
        return meta_tuple(shape, in[0].dtype, in[0].dtype);
      }
      case Family::Slice: {  // + the normalized (axes, starts, ends, strides)
        std::vector<int64_t> v[4];
        for (int k = 0; k < 4; ++k) {
          PyObject* given = a.slot[op->num_inputs + k];
          if ((k < 3 && (!given || given == Py_None)) || !int_list(given, &v[k]))
            return py::none();
        }
        SlicePlan p;
        if (!infer_slice(in[0], v[0], v[1], v[2], v[3], &p)) return py::none();
        return meta_tuple(p.shape, in[0].dtype, in[0].dtype) +
               py::make_tuple(py::cast(p.axes), py::cast(p.starts), py::cast(p.ends),
                              py::cast(p.steps));
      }
      case Family::Split: {  // + every part's shape and the normalized axis
        std::vector<int64_t> sections, sizes;
        int64_t axis = op->attrs[1].default_value.i, norm = 0;
        PyObject* given = a.slot[op->num_inputs];
        PyObject* ax = a.slot[op->num_inputs + 1];
        if (!given || given == Py_None || !int_list(given, &sections) ||
            (ax && !plain_int(ax, &axis)))
          return py::none();
        const bool sizes_given = PyList_Check(given) || PyTuple_Check(given);
        if ((!sizes_given && sections[0] > (int64_t{1} << 20)) ||
            !infer_split(in[0], sections, sizes_given, axis, &sizes, &norm))
          return py::none();
        py::list shapes;
        for (int64_t part : sizes) {
          Shape shape = *in[0].shape;
          shape[norm] = part;
          shapes.append(py::tuple(py::cast(shape)));
        }
        Shape first = *in[0].shape;
        first[norm] = sizes.empty() ? 0 : sizes[0];
        return meta_tuple(first, in[0].dtype, in[0].dtype) +
               py::make_tuple(py::tuple(shapes), norm);
      }
      case Family::Arg_reduce:
      case Family::Scan: {  // + the normalized axis
        bool has_axis = false, keepdim = false;
        int64_t axis = 0;
        AxisPlan p;
        if (!optional_int(a, op->num_inputs, &has_axis, &axis)) return py::none();
        const bool ok =
            op->family == Family::Scan
                ? infer_scan(*op, in[0], has_axis, axis, &p)
                : bool_attr(*op, a, 1, &keepdim) &&
                      infer_arg_reduce(*op, in[0], has_axis, axis, keepdim, &p);
        if (!ok) return py::none();
        return meta_tuple(p.shape, p.out, in[0].dtype) + py::make_tuple(p.axis);
      }
      case Family::Creation:
      case Family::Eye:
      case Family::Linspace: {
        Shape shape;
        DType dtype;
        const auto call = op->family == Family::Eye        ? eye_call
                          : op->family == Family::Linspace ? linspace_call
                                                           : creation_call;
        if (!call(*op, a, &shape, &dtype, &kernel)) return py::none();
        return meta_tuple(shape, dtype, dtype);
      }
      case Family::Arange: {  // + the bounds as the kernel takes them
        ArangePlan p;
        if (!arange_call(*op, a, &p, &kernel)) return py::none();
        const auto number = [](const Number& n) {
          return n.is_int ? py::object(py::int_(n.i)) : py::object(py::float_(n.f));
        };
        return meta_tuple({p.n}, p.out, p.out) +
               py::make_tuple(number(p.start), number(p.end), number(p.step));
      }
      case Family::Flip: {  // + the normalized axes
        std::vector<int64_t> given, axes;
        PyObject* v = a.slot[op->num_inputs];
        if (!v || v == Py_None || !int_list(v, &given) ||
            !infer_flip(*op, in[0], given, &axes))
          return py::none();
        return meta_tuple(*in[0].shape, in[0].dtype, in[0].dtype) + py::make_tuple(axes);
      }
      case Family::Pad: {  // + pad extended to 2 * ndim
        Shape shape;
        if (!pad_call(*op, a, in[0], &shape, &kernel)) return py::none();
        return meta_tuple(shape, in[0].dtype, in[0].dtype) + py::make_tuple(kernel[0].second.ints);
      }
      case Family::Tile: {  // + the padded repeats
        Shape shape;
        if (!tile_call(*op, a, in[0], &shape, &kernel)) return py::none();
        return meta_tuple(shape, in[0].dtype, in[0].dtype) + py::make_tuple(kernel[0].second.ints);
      }
      case Family::Roll: {  // + the normalized axes
        if (!roll_call(*op, a, in[0], &kernel)) return py::none();
        return meta_tuple(*in[0].shape, in[0].dtype, in[0].dtype) +
               py::make_tuple(kernel[1].second.ints);
      }
      case Family::Topk: {  // + the normalized axis
        Shape shape;
        int64_t axis = 0;
        if (!topk_call(*op, a, in[0], &shape, &axis)) return py::none();
        return meta_tuple(shape, in[0].dtype, in[0].dtype) + py::make_tuple(axis);
      }
      case Family::Matrix_unary: {
        PyObject* v = a.slot[op->num_inputs];
        int64_t diagonal = 0;
        if ((v && !plain_int(v, &diagonal)) || !infer_matrix_unary(*op, in[0]))
          return py::none();
        return meta_tuple(*in[0].shape, in[0].dtype, in[0].dtype);
      }
      case Family::Like: {
        DType dtype;
        if (!like_call(*op, a, in[0], &dtype, &kernel)) return py::none();
        return meta_tuple(*in[0].shape, dtype, in[0].dtype);
      }
      case Family::Embedding: {  // + the index bound
        Shape shape;
        int64_t bound = 0;
        if (!infer_embedding(*op, in[0], in[1], &shape, &bound)) return py::none();
        return meta_tuple(shape, in[1].dtype, in[0].dtype) + py::make_tuple(bound);
      }
      case Family::Gather:
      case Family::Take_along_axis: {  // + the normalized axis and the index bound
        int64_t axis = op->attrs[0].default_value.i, norm = 0, bound = 0;
        PyObject* v = a.slot[op->num_inputs];
        if ((!v && !op->attrs[0].default_value.has_default) || (v && !plain_int(v, &axis)))
          return py::none();
        Shape shape;
        const bool ok = op->family == Family::Gather
                            ? infer_gather(*op, in[0], in[1], axis, &shape, &norm, &bound)
                            : infer_take_along_axis(*op, in[0], in[1], axis, &shape, &norm,
                                                    &bound);
        if (!ok) return py::none();
        return meta_tuple(shape, in[0].dtype, in[0].dtype) + py::make_tuple(norm, bound);
      }
      default:  // the families of pipeline_families_random.cpp
        return py::reinterpret_steal<py::object>(infer_more_meta(*op, in, present, a));
    }
    return meta_tuple(plan.shape, plan.out, plan.compute);
  } catch (const Error&) {
    return py::none();
  }
}

}  // namespace

void register_pipeline(pybind11::module_& m) {
  namespace py = pybind11;
  g_core_dict = PyModule_GetDict(m.ptr());
  g_call_key = PyUnicode_InternFromString("call");
  const char* names[][2] = {{"output_allocator", "empty"}, {"launch", "launch"},
                            {"has_kernel", "has_kernel"}};
  for (int i = 0; i < 3; ++i)
    g_hooks[i] = {i == 0 ? &g_dispatch_dict : &g_core_dict,
                  PyUnicode_InternFromString(names[i][0]),
                  py::object(m.attr(names[i][1])).release().ptr()};
  if (PyModule_AddFunctions(m.ptr(), g_methods) != 0) throw py::error_already_set();
  m.def("_pipeline_register", [](py::module_ dispatch) {
    // The first wins: phi_ops imported a second time under another name (phi_ops and
    // hwport.phi_ops) must not take the hooks away from the one hwport uses.
    if (!g_dispatch_dict) g_dispatch_dict = py::object(dispatch.attr("__dict__")).release().ptr();
  }, py::arg("dispatch"), "Sets the Python path of the op pipeline (phi_ops.dispatch).");
  m.def("_pipeline_operator", &make_operator, py::arg("op_id"), py::arg("reflected"),
        py::arg("name"), "The Tensor method of a C++-bound operator of op `op_id`.");
  m.def("_pipeline_infer", &infer_py, py::arg("op"), py::arg("metas"),
        py::arg("attrs") = py::dict());
  m.def("_pipeline_ops", []() {
    py::list out;
    for (int i = 0; i < num_ops(); ++i) {
      const OpSpec& op = *op_spec(i);
      out.append(py::make_tuple(op.id, op.name, family_name(op.family), op.keywords));
    }
    return out;
  }, "(id, name, family, keywords) of every op of the C++ op table (family '': Python).");
  m.def("_pipeline_stats", []() { return py::make_tuple(g_fast_calls, g_python_calls); },
        "(calls served in C++, calls sent to the Python path) since start.");
  m.def("_pipeline_formula_stats", []() {
    return py::make_tuple(formula_calls(), formula_failures());
  }, "(composite calls served by their C++ formula, formulas that failed and went to the "
     "Python path) since start.");
  m.def("_pipeline_formula", [](const std::string& name, py::tuple inputs,
                                 py::dict attrs) -> py::object {
    // For the Python path (phi_ops.dispatch._decompose, with layers active): the formula's
    // sub-ops then go through the layers one by one, nested in the composite's call.
    const OpSpec* op = op_spec(name.c_str());
    if (!op) throw py::value_error("_pipeline_formula: unknown op " + name);
    if (!formula_entry(op->id) || inputs.size() != static_cast<size_t>(op->num_inputs))
      return py::none();
    PyObject* in[kMaxParams] = {};
    for (int i = 0; i < op->num_inputs; ++i) in[i] = inputs[static_cast<size_t>(i)].ptr();
    BoundArgs a;
    a.count = op->num_inputs + op->num_attrs;
    for (int k = 0; k < op->num_attrs; ++k)  // borrowed: `attrs` holds them
      if (PyObject* v = PyDict_GetItemString(attrs.ptr(), op->attrs[k].name))
        a.slot[op->num_inputs + k] = v;
    PyObject* out = run_formula(*op, in, a);
    if (!out) return py::none();
    return py::reinterpret_steal<py::object>(out);
  }, py::arg("op"), py::arg("inputs"), py::arg("attrs"),
     "The composite `op` by its C++ formula on `inputs` (tuple, ops.yaml order) and `attrs` "
     "(normalized, by name), or None where it has none or it failed.");
  m.def("_pipeline_formula_ops", []() {
    py::list out;
    for (int i = 0; i < num_ops(); ++i)
      if (formula_entry(i)) out.append(op_spec(i)->name);
    return out;
  }, "The composites with a C++ formula (ops.yaml `formula`).");
  m.def("_pipeline_hide_native", [](std::vector<std::string> names) {
    std::vector<std::string> before = hidden_native_kernels();
    std::vector<int> ids;
    for (const std::string& n : names) {
      const OpSpec* op = op_spec(n.c_str());
      if (!op) throw py::value_error("_pipeline_hide_native: unknown op " + n);
      ids.push_back(op->id);
    }
    hide_native_kernels(ids);
    return before;
  }, py::arg("names"), "Test hook: the C++ kernel selection ignores the native kernels of these "
     "ops (a device with only primitives); returns the names hidden before.");
  m.def("_pipeline_call_log", [](bool on) {
    py::list out;
    if (g_call_log)
      for (const std::string& name : *g_call_log) out.append(name);
    delete g_call_log;
    g_call_log = on ? new std::vector<std::string>() : nullptr;
    return out;
  }, py::arg("on"), "Test hook: the op names the pipeline was entered with since the log was "
     "last turned on (every op call: functions, operators, formulas' sub-ops), in order; "
     "restarts it (on) or stops it.");
  m.def("_pipeline_python_only", [](bool on) {
    const bool before = g_python_only;
    g_python_only = on;
    return before;
  }, py::arg("on"), "Test hook: every call on this thread takes the Python path (the tests' "
     "oracle for the C++ one); returns the setting before.");
  m.def("_pipeline_set_layers", [](uint32_t mask) {
    const uint32_t before = layers::active_mask;
    layers::active_mask = mask;
    return before;
  }, py::arg("mask"), "Test hook: sets this thread's active-layer mask, returns the old one.");
}

}  // namespace hwport::pipeline
