// Autograd state: tensors' metas, grad mode, nodes and saved tensors (autograd.h).
#include "autograd.h"

#include "autograd_node.h"
#include "errors.h"
#include "ops.h"
#include "pipeline_run.h"
#include "py_convert.h"

namespace hwport::autograd {

namespace {

int64_t g_live_nodes = 0;  // under the GIL

}  // namespace

Meta::~Meta() {
  if (requires_grad_) --layers::grad_tensors_alive;
}

void Meta::set_requires_grad(bool v) {
  if (v == requires_grad_) return;
  requires_grad_ = v;
  layers::grad_tensors_alive += v ? 1 : -1;
}

Meta* meta_of(const Tensor& t) { return t.autograd.meta.get(); }

Meta& meta_for(Tensor& t) {
  if (!t.autograd.meta) t.autograd.meta = std::make_shared<Meta>();
  return *t.autograd.meta;
}

py::object read_grad(Meta& m) {
  if (m.pending_zeros) {
    const Meta::Zeros z = *m.pending_zeros;
    m.grad = py::cast(full(z.shape, AttrValue::of_float(0.0), z.dtype, z.device));
    m.pending_zeros.reset();
  }
  return m.grad ? m.grad : py::none();
}

void write_grad(Meta& m, py::object g) {
  m.pending_zeros.reset();
  m.grad = std::move(g);
}

void clear_grad(Meta& m, bool set_to_zero) {
  if (set_to_zero && !m.pending_zeros && m.grad && !m.grad.is_none()) {
    const Tensor* g = pipeline::as_tensor(m.grad.ptr());
    m.pending_zeros = Meta::Zeros{g->shape, g->dtype, g->device()};
  } else if (!set_to_zero) {
    m.pending_zeros.reset();
  }
  m.grad = py::none();
}

bool grad_enabled() { return layers::grad_enabled; }
void set_grad_enabled(bool on) { layers::grad_enabled = on; }

bool needs_grad(const Tensor& t) {
  const Meta* m = meta_of(t);
  return m && m->requires_grad();
}

bool needs_grad(PyObject* v) {
  if (!v) return false;
  if (const Tensor* t = pipeline::as_tensor(v)) return needs_grad(*t);
  if (PyList_Check(v) || PyTuple_Check(v)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (needs_grad(PySequence_Fast_GET_ITEM(v, i))) return true;
  }
  return false;
}

bool call_needs_grad(const pipeline::OpSpec& op, PyObject* const* inputs) {
  for (int i = 0; i < op.num_inputs; ++i)
    if (needs_grad(inputs[i])) return true;
  return false;
}

Node::Node() { ++g_live_nodes; }
Node::~Node() { --g_live_nodes; }

void Node::release() {
  inputs.clear();
  outputs.clear();
  attrs.clear();
  released = true;
}

int64_t live_nodes() { return g_live_nodes; }

py::object unpack(const Saved& s, const std::shared_ptr<Node>& node, int output_nr,
                  const char* what) {
  switch (s.kind) {
    case Saved::kAbsent:
      return py::none();
    case Saved::kList: {
      py::list out;
      for (const Saved& item : s.items) out.append(unpack(item, node, output_nr, what));
      return out;
    }
    case Saved::kMetaOnly: {
      // A stand-in of the right shape, dtype and place over one element (the rule reads
      // only those: unbroadcast's target, zeros_like ...).
      Tensor t = Tensor::empty({}, s.data.dtype, s.device, "autograd");
      t.shape = s.data.shape;
      t.strides.assign(t.shape.size(), 0);
      return py::cast(std::move(t));
    }
    case Saved::kData:
      break;
  }
  if (s.data.storage->version() != s.version)
    raise(ErrorKind::Runtime,
          "autograd: " + std::string(what) + " of op '" + node->name() +
              "', saved for its gradient, was modified in place after it was used (version " +
              std::to_string(s.version) + ", now " +
              std::to_string(s.data.storage->version()) +
              "); compute the gradient before changing it, or change a copy (x.clone())");
  Tensor t = s.data;  // a copy: a new tensor object viewing the saved data
  if (s.meta) {
    t.autograd.meta = s.meta;
  } else if (output_nr >= 0) {
    Meta& m = meta_for(t);
    m.set_requires_grad(true);
    m.grad_fn = node;
    m.output_nr = static_cast<uint32_t>(output_nr);
  }
  return py::cast(std::move(t));
}

}  // namespace hwport::autograd
