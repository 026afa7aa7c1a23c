// The op-call pipeline with layers active on the thread (layers.h): the call is checked and its
// meta inferred in C++, then it goes through the active layers outermost first, and kernel
// selection -- the family's C++ run -- is the innermost step (DESIGN.md, "The op-call
// pipeline"). Only a layer written in Python costs Python per call; the call itself never
// enters phi_ops/dispatch.py unless its family does not serve it as given, as without layers.
//
// The family's code runs twice (SelectionProbe, pipeline_run.h): dry before the layers (every
// check and the infer-meta, so a bad call raises before any layer sees it, and the kernel key
// the layers are given), then for real after them. Infer-meta is cheap next to a layer; what a
// family launches besides the op's own kernel (an input's cast) runs in both.
#include <memory>

#include <pybind11/detail/exception_translation.h>

#include "device_profiler.h"
#include "kernel_cache.h"
#include "ops.h"
#include "layers.h"
#include "pipeline_run.h"
#include "py_convert.h"

namespace hwport::pipeline {

namespace {

namespace py = pybind11;

bool plain_input(PyObject* v) { return !v || v == Py_None || as_tensor(v) || PyList_Check(v); }

// The call's inputs as the layers see them: tensors (and lists of them) as given, absent
// optional inputs None; a call with a Python scalar or a tuple among its inputs gets them from
// the Python rules (phi_ops/dispatch.py _inputs: the scalar's 0-d tensor of its weak dtype).
py::list call_inputs(const OpSpec& op, const BoundArgs& a) {
  if (op.family == Family::Binary && a.slot[0] && a.slot[1]) {
    // x op scalar, scalar op x: the scalar's 0-d tensor as run_binary makes it
    Tensor* x = as_tensor(a.slot[0]);
    Tensor* y = as_tensor(a.slot[1]);
    if ((x != nullptr) != (y != nullptr)) {
      Tensor scalar;
      if (scalar_operand(op, x ? a.slot[1] : a.slot[0], x ? *x : *y, x ? "y" : "x", &scalar)) {
        py::list out(2);
        out[x ? 0 : 1] = py::reinterpret_borrow<py::object>(x ? a.slot[0] : a.slot[1]);
        out[x ? 1 : 0] = py::cast(std::move(scalar));
        return out;
      }
    }
  }
  bool plain = true;
  for (int i = 0; i < op.num_inputs && plain; ++i) plain = plain_input(a.slot[i]);
  if (plain) {
    py::list out(op.num_inputs);
    for (int i = 0; i < op.num_inputs; ++i)
      out[static_cast<size_t>(i)] = py::reinterpret_borrow<py::object>(
          a.slot[i] ? a.slot[i] : Py_None);
    return out;
  }
  py::tuple args(op.num_inputs);
  for (int i = 0; i < op.num_inputs; ++i)
    args[static_cast<size_t>(i)] = py::reinterpret_borrow<py::object>(
        a.slot[i] ? a.slot[i] : Py_None);
  py::object inputs = py::module_::import("hwport.phi_ops.dispatch").attr("layer_inputs");
  return inputs(op.name, args);
}

py::dict given_attrs(const OpSpec& op, const BoundArgs& a) {
  py::dict out;
  for (int k = 0; k < op.num_attrs; ++k)
    if (PyObject* v = a.slot[op.num_inputs + k])
      out[op.attrs[k].name] = py::reinterpret_borrow<py::object>(v);
  return out;
}

// What the dry run left to know: the device and the key where neither the op's kernel nor its
// formula would run (a view, a creation made by other kernels): the result's.
void complete_from_result(SelectionProbe* p, PyObject* result) {
  if (p->launched || p->formula) return;
  PyObject* first = result;
  if (PyTuple_Check(result) && PyTuple_GET_SIZE(result) > 0) first = PyTuple_GET_ITEM(result, 0);
  if (PyList_Check(result) && PyList_GET_SIZE(result) > 0) first = PyList_GET_ITEM(result, 0);
  if (const Tensor* t = as_tensor(first)) {
    p->key = t->dtype;
    p->device = t->device();
  }
}

// The path kernel selection took, as phi_ops/dispatch.py _select names it.
const char* path_of(const SelectionProbe& p, const OpSpec& op) {
  if (p.formula) return "decomposition";
  if (!p.launched && !op.primitive) return "decomposition";  // a view or a creation by others
  return p.device && native_kernel(op, p.device, p.key) ? "native" : "fallback";
}

// Whether a layer replaced the inputs it was given (the list or an element).
bool replaced(const py::list& now, const py::list& given) {
  if (now.ptr() == given.ptr()) return false;
  if (now.size() != given.size()) return true;
  for (size_t i = 0; i < now.size(); ++i)
    if (now[i].ptr() != given[i].ptr()) return true;
  return false;
}

// An error a layer or the kernel selection raised, named for the call as phi_ops/dispatch.py
// names it ("<op>: ..."), its cause the original. Returns nullptr with the error set.
PyObject* renamed_error(const OpSpec& op, const BoundArgs& a, py::error_already_set& e) {
  try {
    py::object rename = py::module_::import("hwport.phi_ops.dispatch").attr("layer_error");
    py::object renamed = rename(op.name, e.value(), given_attrs(op, a));
    if (!renamed.is_none()) {
      PyException_SetCause(renamed.ptr(), e.value().inc_ref().ptr());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(renamed.ptr())), renamed.ptr());
      return nullptr;
    }
  } catch (py::error_already_set&) {
    // Naming it failed: the original error is the better one.
  }
  e.restore();
  return nullptr;
}

// The OpCall's lazy fields, from the bound arguments of the call (which outlive it).
class BoundSource final : public layers::OpCall::Source {
 public:
  BoundSource(const OpSpec& op, const BoundArgs& a, Device* device)
      : op_(op), a_(a), device_(device) {}
  py::list inputs() override {
    // Made for the layers, not the call's work: a scalar's 0-d tensor here is not timed as the
    // call's (the call makes its own).
    device_profiler::CorrelationScope untimed(0);
    made_ = call_inputs(op_, a_);
    // A copy: a layer setting an element of its list replaces that input.
    return py::reinterpret_steal<py::list>(PySequence_List(made_.ptr()));
  }
  py::dict given_attrs() override { return pipeline::given_attrs(op_, a_); }
  py::object place() override { return py::cast(place_of(device_)); }
  bool given_attr(int k, PyObject** out) override {
    *out = a_.slot[op_.num_inputs + k];
    return true;
  }
  // The inputs as made for the layers (empty until a layer read them).
  const py::list& made() const { return made_; }

 private:
  const OpSpec& op_;
  const BoundArgs& a_;
  Device* device_;
  py::list made_ = py::list(0);
};

// Ends the source's life with the call: a layer that kept the OpCall gets every field made.
class SourceScope {
 public:
  explicit SourceScope(std::shared_ptr<layers::OpCall>& call) : call_(call) {}
  ~SourceScope() {
    if (call_.use_count() > 1) {
      try {
        call_->detach();
      } catch (...) {  // an error making them: the fields stay empty
        PyErr_Clear();
      }
    }
    call_->source = nullptr;
  }
  SourceScope(const SourceScope&) = delete;
  SourceScope& operator=(const SourceScope&) = delete;

 private:
  std::shared_ptr<layers::OpCall>& call_;
};

}  // namespace

PyObject* layered_call(const OpSpec& op, const BoundArgs& a) {
  SelectionProbe meta{&op, true};
  {
    ProbeScope scope(&meta);
    bool python_error = false;
    PyObject* dry = try_family(op, a, &python_error);
    if (!dry) return python_error ? nullptr : python_path(op, a);  // Python checks, then layers
    complete_from_result(&meta, dry);
    Py_DECREF(dry);
  }
  if (!meta.device) return python_path(op, a);
  try {
    BoundSource source(op, a, meta.device);
    auto call = std::make_shared<layers::OpCall>();
    call->op = op.name;
    call->dtype = dtype_name(meta.key);
    call->source = &source;
    SourceScope source_scope(call);

    const layers::Inner select = [&](const std::shared_ptr<layers::OpCall>& c) -> py::object {
      BoundArgs b = a;
      py::list now;  // holds what b borrows from it
      if (c->inputs_made()) now = c->inputs();
      if (c->inputs_made() && replaced(now, source.made())) {
        if (now.size() != static_cast<size_t>(op.num_inputs))
          throw py::value_error(std::string(op.name) + ": a layer gave the call " +
                                std::to_string(now.size()) + " inputs, it takes " +
                                std::to_string(op.num_inputs));
        for (int i = 0; i < op.num_inputs; ++i) {
          PyObject* v = now[static_cast<size_t>(i)].ptr();
          b.slot[i] = v == Py_None ? nullptr : v;
        }
      }
      SelectionProbe probe{&op, false};
      PyObject* out = nullptr;
      bool python_error = false;
      {
        ProbeScope scope(&probe);
        out = try_family(op, b, &python_error);
      }
      if (python_error) throw py::error_already_set();
      if (out) {
        complete_from_result(&probe, out);
        c->path = path_of(probe, op);
        return py::reinterpret_steal<py::object>(out);
      }
      // Not served in C++ as it stands (a composite whose inputs do not fit its kernel, a
      // formula that failed): the Python path's kernel selection, which sets the path.
      py::object self = py::cast(c);
      PyObject* r = python_path(op, b, self.ptr());
      if (!r) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(r);
    };
    return layers::run(call, select).release().ptr();
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_TypeError) || e.matches(PyExc_ValueError) ||
        e.matches(PyExc_IndexError) || e.matches(PyExc_MemoryError))
      return renamed_error(op, a, e);
    e.restore();
    return nullptr;
  } catch (...) {
    // A hwport::Error from a C++ layer, bad_alloc, ...: as pybind11 raises them in Python.
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

}  // namespace hwport::pipeline
