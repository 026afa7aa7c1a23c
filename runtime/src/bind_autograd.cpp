// The autograd API on Tensor and in _core (autograd.h): stop_gradient, grad, backward, hooks,
// grad mode, and in-place set_value. hwport/autograd.py builds Paddle's functions on these.
#include <memory>

#include "autograd.h"
#include "autograd_node.h"
#include "bindings.h"
#include "errors.h"
#include "kernel_registry.h"
#include "ops.h"
#include "pipeline_run.h"

namespace hwport {

namespace {

using autograd::Meta;

// A hook's handle (Paddle's TensorHookRemoveHelper): remove() takes the hook off its tensor.
struct HookHandle {
  std::weak_ptr<Meta> meta;
  int64_t id = 0;
  bool remove() {
    std::shared_ptr<Meta> m = meta.lock();
    if (!m) return false;
    for (auto it = m->hooks.begin(); it != m->hooks.end(); ++it)
      if (it->first == id) {
        m->hooks.erase(it);
        return true;
      }
    return false;
  }
};

int64_t g_hook_ids = 0;  // under the GIL

bool stop_gradient(const Tensor& t) {
  const Meta* m = autograd::meta_of(t);
  return !(m && m->requires_grad());
}

py::object grad_of(const Tensor& t) {
  Meta* m = autograd::meta_of(t);
  return m ? autograd::read_grad(*m) : py::none();
}

void set_grad(Tensor& t, py::object g) {
  if (!g.is_none()) {
    const Tensor* gt = pipeline::as_tensor(g.ptr());
    if (!gt) raise(ErrorKind::Type, "Tensor.grad: expected a Tensor or None, got " +
                                        std::string(py::str(py::type::of(g).attr("__name__"))));
    if (gt->shape != t.shape)
      raise(ErrorKind::Value, "Tensor.grad: a gradient of shape " + shape_str(gt->shape) +
                                  " for a tensor of shape " + shape_str(t.shape));
  }
  autograd::write_grad(autograd::meta_for(t), std::move(g));
}

// Tensor.set_value: `value`'s data written into this tensor's memory (cast to its dtype, moved
// to its device); the storage's version moves on, so a node that saved it refuses to use it.
void set_value(Tensor& self, py::handle value) {
  Tensor src;
  if (const Tensor* v = pipeline::as_tensor(value.ptr())) {
    src = *v;
  } else {
    py::object arr = py::module_::import("numpy").attr("asarray")(value);
    src = tensor_from_numpy(py::array(arr), self.device());
  }
  if (src.shape != self.shape)
    raise(ErrorKind::Value, "Tensor.set_value: value of shape " + shape_str(src.shape) +
                                " for a tensor of shape " + shape_str(self.shape));
  if (!self.is_contiguous())
    raise(ErrorKind::Value, "Tensor.set_value: the tensor is a non-contiguous view; write "
                            "into a contiguous tensor");
  if (src.device() != self.device()) src = to_device(src, self.device());
  src = cast(src, self.dtype);
  if (self.numel() > 0 && src.storage == self.storage && src.offset == self.offset &&
      src.strides == self.strides)
    return;  // itself
  if (self.numel() > 0) {
    if (src.storage == self.storage) src = clone(src);  // overlapping views
    const Tensor* in[] = {&src};
    Tensor* outs[] = {&self};
    run_kernel(core_ops().copy, self.dtype, self.device(), in, 1, outs, 1, Attrs{});
  }
  self.storage->bump_version();
}

std::vector<py::object> as_list(py::handle v) {
  std::vector<py::object> out;
  if (v.is_none()) return out;
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    for (py::handle e : v) out.push_back(py::reinterpret_borrow<py::object>(e));
  } else {
    out.push_back(py::reinterpret_borrow<py::object>(v));
  }
  return out;
}

}  // namespace

void bind_autograd(py::module_& m) {
  layers::set_autograd_step(&autograd::record);
  py::class_<HookHandle>(m, "HookHandle", "Removes a tensor hook: handle.remove().")
      .def("remove", &HookHandle::remove);

  py::object cls = py::type::of<Tensor>();
  py::object property = py::module_::import("builtins").attr("property");
  auto method = [&](const char* name, py::cpp_function fn) { cls.attr(name) = fn; };
  cls.attr("stop_gradient") = property(
      py::cpp_function([](const Tensor& t) { return stop_gradient(t); }),
      py::cpp_function([](Tensor& t, bool v) { autograd::meta_for(t).set_requires_grad(!v); }),
      py::none(),
      "True when no gradient is computed for this tensor (to_tensor's default); False for "
      "parameters and for the float outputs of ops on tensors that need gradients.");
  cls.attr("grad") = property(
      py::cpp_function([](const Tensor& t) { return grad_of(t); }),
      py::cpp_function([](Tensor& t, py::object g) { set_grad(t, std::move(g)); }), py::none(),
      "The gradient accumulated by backward() (None before).");
  // to_static's capture records the sub-ops of an op autograd differentiates through its
  // decomposition (its backward reads their results), not the op.
  m.def("_grad_through_decomposition", [](const std::string& name) {
    const pipeline::OpSpec* op = pipeline::op_spec(name.c_str());
    return op != nullptr && autograd::vjp_entry(op->id) == nullptr &&
           autograd::through_decomposition(op->id);
  }, py::arg("op"), "Whether autograd records op's decomposition's sub-ops instead of it.");
  // to_static's capture: the gradient a tensor holds, without making pending zeros.
  m.def("_held_grad", [](const Tensor& t) -> py::object {
    const Meta* mt = autograd::meta_of(t);
    return mt && mt->grad ? mt->grad : py::none();
  }, py::arg("tensor"), "The gradient tensor held (None where there is none or it is "
     "pending zeros).");
  cls.attr("is_leaf") = property(
      py::cpp_function([](const Tensor& t) {
        const Meta* mt = autograd::meta_of(t);
        return !(mt && mt->grad_fn);
      }),
      py::none(), py::none(), "Whether no recorded op made this tensor.");
  cls.attr("_grad_fn_name") = property(
      py::cpp_function([](const Tensor& t) -> py::object {
        const Meta* mt = autograd::meta_of(t);
        if (!mt || !mt->grad_fn) return py::none();
        return py::str(mt->grad_fn->op ? mt->grad_fn->op->name : "?");
      }),
      py::none(), py::none(), "The op whose node made this tensor (None for a leaf).");
  method("backward", py::cpp_function(
      [](py::object self, py::object grad_tensor, bool retain_graph,
         py::object dump_backward_graph_path) {
        if (!dump_backward_graph_path.is_none())
          raise(ErrorKind::NotSupported, "Tensor.backward: dump_backward_graph_path is not "
                                         "supported (only None)");
        autograd::backward({self}, {grad_tensor}, {}, retain_graph, false, false);
      },
      py::is_method(cls), py::arg("grad_tensor") = py::none(),
      py::arg("retain_graph") = false, py::kw_only(),
      py::arg("dump_backward_graph_path") = py::none(),
      "Computes the gradients of this tensor with respect to the leaves that need them "
      "(accumulated into their .grad)."));
  auto clear = [](Tensor& t, bool set_to_zero) {
    if (Meta* mt = autograd::meta_of(t)) autograd::clear_grad(*mt, set_to_zero);
  };
  method("clear_gradient", py::cpp_function(clear, py::is_method(cls),
                                            py::arg("set_to_zero") = true,
                                            "Sets .grad to zeros (set_to_zero) or None."));
  method("clear_grad", py::cpp_function([clear](Tensor& t) { clear(t, true); },
                                        py::is_method(cls),
                                        "Sets .grad to zeros (Paddle's alias of "
                                        "clear_gradient())."));
  method("detach", py::cpp_function(
      [](const Tensor& t) {
        Tensor out = t;  // a copy: the same data, no gradient history
        return out;
      },
      py::is_method(cls), "The same data as a new tensor that needs no gradient."));
  method("retain_grads", py::cpp_function(
      [](Tensor& t) { autograd::meta_for(t).retain_grads = true; }, py::is_method(cls),
      "Keeps this non-leaf tensor's gradient in .grad after backward."));
  method("register_hook", py::cpp_function(
      [](Tensor& t, py::object hook) {
        if (!PyCallable_Check(hook.ptr()))
          raise(ErrorKind::Type, "Tensor.register_hook: hook must be callable");
        Meta& mt = autograd::meta_for(t);
        if (!mt.requires_grad())
          raise(ErrorKind::Runtime, "Tensor.register_hook: the tensor has "
                                    "stop_gradient=True, no gradient will reach the hook");
        HookHandle h{t.autograd.meta, ++g_hook_ids};
        mt.hooks.emplace_back(h.id, std::move(hook));
        return h;
      },
      py::is_method(cls), py::arg("hook"),
      "hook(grad) runs when this tensor's gradient is computed; a returned tensor replaces "
      "it. Returns a handle whose remove() takes the hook off."));
  method("set_value", py::cpp_function(&set_value, py::is_method(cls), py::arg("value"),
                                       "Writes value (same shape) into this tensor in place."));
  method("_version", py::cpp_function(
      [](const Tensor& t) { return t.storage->version(); }, py::is_method(cls),
      "How many in-place writes the storage has had."));

  m.def("autograd_backward",
        [](py::handle outputs, py::handle grad_outputs, bool retain_graph) {
          autograd::backward(as_list(outputs), as_list(grad_outputs), {}, retain_graph, false,
                             false);
        },
        py::arg("outputs"), py::arg("grad_outputs") = py::none(),
        py::arg("retain_graph") = false);
  m.def("autograd_grad",
        [](py::handle outputs, py::handle inputs, py::handle grad_outputs, bool retain_graph,
           bool create_graph, bool allow_unused) {
          py::list out;
          for (auto& g : autograd::backward(as_list(outputs), as_list(grad_outputs),
                                            as_list(inputs), retain_graph, create_graph,
                                            allow_unused))
            out.append(g);
          return out;
        },
        py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = py::none(),
        py::arg("retain_graph") = false, py::arg("create_graph") = false,
        py::arg("allow_unused") = false);
  m.def("_record_py_layer", &autograd::record_py_layer, py::arg("name"), py::arg("backward"),
        py::arg("inputs"), py::arg("outputs"),
        "PyLayer: links outputs (made with grad mode off) to a node whose backward is "
        "backward(*grads) -> one gradient per input.");
  m.def("is_grad_enabled", &autograd::grad_enabled);
  m.def("set_grad_enabled", &autograd::set_grad_enabled, py::arg("mode"));
  m.def("_autograd_live_nodes", &autograd::live_nodes);
  m.def("_grad_tensors_alive", []() { return layers::grad_tensors_alive; });
}

}  // namespace hwport
