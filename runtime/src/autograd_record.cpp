// The pipeline's autograd step (autograd.h record): a call with an input needing a gradient
// runs with grad mode off (its sub-ops record nothing) and gets a Node holding what its VJP
// rule reads; its float outputs link to the node. A composite without a rule runs its
// decomposition with grad mode on instead, so its sub-ops record the graph.
#include <string>

#include "autograd.h"
#include "autograd_node.h"
#include "errors.h"
#include "pipeline_run.h"

namespace hwport::autograd {

namespace {

uint64_t g_sequence = 0;  // under the GIL

// identity: keep an input's meta (create_graph differentiates through it); never an output's,
// whose meta points back at the node (a cycle).
Saved save(PyObject* v, bool data, bool meta_only, bool identity = true) {
  Saved s;
  if (!v || v == Py_None || (!data && !meta_only)) return s;
  if (PyList_Check(v) || PyTuple_Check(v)) {
    s.kind = Saved::kList;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    for (Py_ssize_t i = 0; i < n; ++i)
      s.items.push_back(save(PySequence_Fast_GET_ITEM(v, i), data, meta_only, identity));
    return s;
  }
  const Tensor* t = pipeline::as_tensor(v);
  if (!t) return s;
  if (data) {
    s.data = *t;  // a copy: the view, without the tensor's autograd identity
    s.kind = Saved::kData;
    s.version = t->storage->version();
    if (identity && t->autograd.meta && t->autograd.meta->requires_grad())
      s.meta = t->autograd.meta;
  } else {
    // shape, dtype and place only: keeping the view would keep its storage alive
    s.kind = Saved::kMetaOnly;
    s.data.shape = t->shape;
    s.data.dtype = t->dtype;
    s.device = t->device();
  }
  return s;
}

Edge edge_for(PyObject* v, bool differentiable) {
  Edge e;
  const Tensor* t = v ? pipeline::as_tensor(v) : nullptr;
  if (!t) return e;
  e.shape = t->shape;
  e.dtype = t->dtype;
  e.device = t->device();
  const std::shared_ptr<Meta>& m = t->autograd.meta;
  // Integer and bool inputs get no gradient (Paddle, PyTorch).
  if (!differentiable || !m || !m->requires_grad() || !is_floating(t->dtype)) return e;
  e.needed = true;
  if (m->grad_fn) {
    e.fn = m->grad_fn;
    e.nr = m->output_nr;
  } else {
    e.leaf = m;
  }
  return e;
}

// The output's tensors, in order; `kind` says how they were grouped.
std::vector<PyObject*> flatten(PyObject* out, int* kind) {
  std::vector<PyObject*> items;
  if (PyTuple_Check(out) || PyList_Check(out)) {
    *kind = PyTuple_Check(out) ? Node::kTuple : Node::kList;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(out); ++i)
      items.push_back(PySequence_Fast_GET_ITEM(out, i));
  } else {
    *kind = Node::kSingle;
    items.push_back(out);
  }
  return items;
}

bool is_input(PyObject* v, const py::list& inputs) {
  for (const py::handle& in : inputs) {
    if (in.ptr() == v) return true;
    if (PyList_Check(in.ptr()))
      for (const py::handle& e : py::reinterpret_borrow<py::list>(in))
        if (e.ptr() == v) return true;
  }
  return false;
}

// An output that is one of the inputs (an op handing its input back) becomes a new tensor
// object viewing it, so that linking it to the node leaves the input's identity alone.
py::object fresh_outputs(py::object out, const py::list& inputs) {
  int kind = 0;
  std::vector<PyObject*> items = flatten(out.ptr(), &kind);
  bool any = false;
  for (PyObject* v : items) any = any || is_input(v, inputs);
  if (!any) return out;
  auto fresh = [&](PyObject* v) -> py::object {
    if (!is_input(v, inputs)) return py::reinterpret_borrow<py::object>(v);
    const Tensor* t = pipeline::as_tensor(v);
    if (!t) return py::reinterpret_borrow<py::object>(v);
    Tensor copy = *t;
    return py::cast(std::move(copy));
  };
  if (kind == Node::kSingle) return fresh(items[0]);
  py::list l;
  for (PyObject* v : items) l.append(fresh(v));
  if (kind == Node::kList) return std::move(l);
  return py::tuple(l);
}

py::object through_decomposition_call(const std::shared_ptr<layers::OpCall>& call) {
  py::object decompose = py::module_::import("hwport.phi_ops.dispatch").attr(
      "decompose_for_grad");
  py::object out = decompose(call->op, call->inputs(), call->attrs());
  call->path = "decomposition";
  int kind = 0;
  for (PyObject* v : flatten(out.ptr(), &kind)) {
    const Tensor* t = pipeline::as_tensor(v);
    if (t && is_floating(t->dtype) && !(t->autograd.meta && t->autograd.meta->requires_grad()))
      raise(ErrorKind::NotSupported,
            "autograd: " + call->op + " has no VJP rule in ops.yaml `vjps` and its "
            "decomposition does not carry the gradient (it makes views without ops); add a rule");
  }
  return out;
}

}  // namespace

namespace {

// Makes `node` the grad_fn of out's floating-point tensors (saving them when `save_outs`).
void link_outputs(const std::shared_ptr<Node>& node, const py::object& out, bool save_outs) {
  int kind = 0;
  std::vector<PyObject*> items = flatten(out.ptr(), &kind);
  node->out_shape = static_cast<decltype(node->out_shape)>(kind);
  for (size_t j = 0; j < items.size(); ++j) {
    OutputInfo info;
    Tensor* t = pipeline::as_tensor(items[j]);
    if (t) {
      info.shape = t->shape;
      info.dtype = t->dtype;
      info.device = t->device();
      info.differentiable = is_floating(t->dtype);
      if (info.differentiable) {
        Meta& m = meta_for(*t);
        m.set_requires_grad(true);
        m.grad_fn = node;
        m.output_nr = static_cast<uint32_t>(j);
        info.meta = t->autograd.meta;
      }
    }
    node->out_info.push_back(std::move(info));
    node->outputs.push_back(save_outs ? save(items[j], true, false, false) : Saved());
  }
}

// Links `out` (the op's result on `inputs`, one per op input: a tensor, a list of them, None)
// to a new node of `rule` (nullptr: its rule is missing, backward raises). attrs: in OpSpec
// order. Returns the result to hand back (an output that was an input becomes a new tensor).
py::object link(const pipeline::OpSpec* op, const VjpEntry* rule, const py::list& inputs,
                std::vector<py::object> attrs, py::object out) {
  out = fresh_outputs(std::move(out), inputs);
  auto node = std::make_shared<Node>();
  node->op = op;
  node->rule = rule;
  node->sequence = ++g_sequence;
  const size_t n_in = static_cast<size_t>(op->num_inputs);
  node->edges.resize(n_in);
  node->input_is_list.assign(n_in, false);
  node->inputs.resize(n_in);
  for (size_t k = 0; k < n_in && k < inputs.size(); ++k) {
    PyObject* v = inputs[k].ptr();
    const bool has_fn = !rule || rule->fns[k] != nullptr;
    if (PyList_Check(v) || PyTuple_Check(v)) {
      node->input_is_list[k] = true;
      for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(v); ++i)
        node->edges[k].push_back(edge_for(PySequence_Fast_GET_ITEM(v, i), has_fn));
    } else {
      node->edges[k].push_back(edge_for(v, has_fn));
    }
  }
  // Keep only what the formulas of the inputs that need a gradient read: `scores * scale`
  // keeps nothing, `x * mask` (mask without gradient) keeps mask but not x.
  uint32_t data = 0, meta = 0;
  bool outs = false;
  if (rule) {
    for (size_t j = 0; j < n_in; ++j) {
      bool needed = false;
      for (const Edge& e : node->edges[j]) needed = needed || e.needed;
      if (!needed) continue;
      data |= rule->data_reads[j];
      meta |= rule->meta_reads[j];
      outs = outs || ((rule->out_reads >> j) & 1u);
    }
    for (size_t k = 0; k < n_in && k < inputs.size(); ++k)
      node->inputs[k] = save(inputs[k].ptr(), (data >> k) & 1u, ((meta & ~data) >> k) & 1u);
  }
  node->attrs = std::move(attrs);
  link_outputs(node, out, outs);
  return out;
}

// The rule's attrs from the call's bound arguments (`given(k)`: attr k as given, or nullptr),
// defaults from the table; false when one has no C++ default (the Python rules then say).
template <typename Given>
bool bound_attrs(const pipeline::OpSpec& op, const VjpEntry& rule, Given given,
                 std::vector<py::object>* out) {
  for (int k = 0; k < op.num_attrs; ++k) {
    PyObject* v = given(k);
    if (!v) v = rule.defaults[k];
    if (!v) return false;
    out->push_back(py::reinterpret_borrow<py::object>(v));
  }
  return true;
}

std::vector<py::object> dict_attrs(const pipeline::OpSpec& op, py::dict& attrs) {
  std::vector<py::object> out;
  for (int k = 0; k < op.num_attrs; ++k) {
    py::str name(op.attrs[k].name);
    out.push_back(attrs.contains(name) ? py::object(attrs[name]) : py::none());
  }
  return out;
}

}  // namespace

py::object record(const std::shared_ptr<layers::OpCall>& call, const layers::Next& next) {
  const pipeline::OpSpec* op = pipeline::op_spec(call->op.c_str());
  if (!op) return next(call);
  py::list& inputs = call->inputs();
  bool any = false;
  for (const py::handle& v : inputs) any = any || needs_grad(v.ptr());
  if (!any) return next(call);
  const VjpEntry* rule = vjp_entry(op->id);
  if (!rule && through_decomposition(op->id)) return through_decomposition_call(call);
  if (!rule && !rule_missing(op->id)) {  // no gradient: the outputs have stop_gradient=True
    GradMode off(false);
    return next(call);
  }
  py::object out;
  {
    GradMode off(false);
    out = next(call);
  }
  // What the rule reads, taken from the call as the layers saw it (a replaced input included).
  py::list& now = call->inputs();
  std::vector<py::object> attrs;
  if (rule && op->num_attrs > 0) {
    // The attrs as given (the C++ pipeline's bound arguments): no Python per call; the rules
    // accept them as given. Else (a layer set them, or no C++ default) the Python rules' dict.
    const bool raw = call->source && !call->attrs_replaced() &&
                     bound_attrs(*op, *rule, [&](int k) {
                       PyObject* v = nullptr;
                       call->source->given_attr(k, &v);
                       return v;
                     }, &attrs);
    if (!raw) attrs = dict_attrs(*op, call->attrs());
  }
  return link(op, rule, now, std::move(attrs), std::move(out));
}

py::object record_py_layer(const std::string& name, py::object backward,
                           const py::list& inputs, py::object outputs) {
  outputs = fresh_outputs(std::move(outputs), inputs);
  auto node = std::make_shared<Node>();
  node->py_name = name;
  node->py_backward = std::move(backward);
  node->sequence = ++g_sequence;
  node->edges.resize(inputs.size());
  node->input_is_list.assign(inputs.size(), false);
  node->inputs.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k)
    node->edges[k].push_back(edge_for(inputs[k].ptr(), true));
  link_outputs(node, outputs, false);
  return outputs;
}

py::object record_device_copy(const py::object& src, py::object moved) {
  const Tensor* t = pipeline::as_tensor(src.ptr());
  if (!t || !grad_enabled() || !needs_grad(*t) || !is_floating(t->dtype)) return moved;
  const pipeline::OpSpec* op = pipeline::op_spec("copy");
  py::list inputs(1);
  inputs[0] = src;
  return link(op, vjp_entry(op->id), inputs, {}, std::move(moved));
}

PyObject* record_bound(const pipeline::OpSpec& op, const pipeline::BoundArgs& a) {
  const VjpEntry* rule = vjp_entry(op.id);
  if (!rule && (through_decomposition(op.id) || rule_missing(op.id)))
    return pipeline::layered_call(op, a);  // the general path (a decomposition's sub-ops)
  PyObject* result = nullptr;
  {
    GradMode off(false);
    bool python_error = false;
    result = pipeline::try_family(op, a, &python_error);
    if (!result && !python_error) result = pipeline::python_path(op, a);
  }
  if (!result || !rule) return result;  // an error, or an op without gradients
  py::object out = py::reinterpret_steal<py::object>(result);
  // The inputs as the rule reads them: a Python scalar operand as the 0-d tensor the call used.
  py::list inputs(op.num_inputs);
  for (int k = 0; k < op.num_inputs; ++k) {
    PyObject* v = a.slot[k] ? a.slot[k] : Py_None;
    inputs[static_cast<size_t>(k)] = py::reinterpret_borrow<py::object>(v);
  }
  if (op.family == pipeline::Family::Binary) {
    const Tensor* x = pipeline::as_tensor(a.slot[0]);
    const Tensor* y = pipeline::as_tensor(a.slot[1]);
    if ((x != nullptr) != (y != nullptr)) {
      Tensor scalar;
      if (pipeline::scalar_operand(op, x ? a.slot[1] : a.slot[0], x ? *x : *y, x ? "y" : "x",
                                   &scalar))
        inputs[x ? 1 : 0] = py::cast(std::move(scalar));
    }
  }
  std::vector<py::object> attrs;
  if (op.num_attrs > 0 &&
      !bound_attrs(op, *rule, [&](int k) { return a.slot[op.num_inputs + k]; }, &attrs)) {
    py::object normalize = py::module_::import("hwport.phi_ops.dispatch").attr("layer_attrs");
    py::dict given;
    for (int k = 0; k < op.num_attrs; ++k)
      if (PyObject* v = a.slot[op.num_inputs + k])
        given[op.attrs[k].name] = py::reinterpret_borrow<py::object>(v);
    py::dict normalized = normalize(op.name, given);
    attrs = dict_attrs(op, normalized);
  }
  return link(&op, rule, inputs, std::move(attrs), std::move(out)).release().ptr();
}

}  // namespace hwport::autograd
