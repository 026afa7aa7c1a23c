// The autograd engine (DESIGN.md, "Autograd, layers, training"). The pipeline's autograd step
// (layers.h: between the autograd slot and amp) records a Node per op call that has an input
// needing a gradient; backward() runs the nodes' VJP rules -- formulas over ops generated from
// ops.yaml `vjps` (vjp_rules.inc) -- in reverse topological order, accumulating into leaves.
// A composite without a rule is differentiated through its decomposition (its sub-ops record).
//
// Paddle's semantics: a tensor's `stop_gradient` is !Meta::requires_grad (True for tensors from
// to_tensor, False for parameters and for float outputs of ops on tensors needing gradients).
// Everything here runs with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arg_parse.h"
#include "layers.h"
#include "pipeline_ops.h"
#include "tensor.h"

namespace hwport::autograd {

namespace py = pybind11;

struct Node;

// A tensor's autograd state (AutogradSlot, tensor.h). Shared by the Python objects that are the
// same tensor (a saved input handed back to a rule under create_graph).
struct Meta {
  Meta() = default;
  ~Meta();
  Meta(const Meta&) = delete;
  Meta& operator=(const Meta&) = delete;

  bool requires_grad() const { return requires_grad_; }
  void set_requires_grad(bool v);

  std::shared_ptr<Node> grad_fn;  // the node that made it; null for a leaf
  uint32_t output_nr = 0;         // which output of grad_fn
  py::object grad;                // the accumulated gradient (a leaf, or retain_grads)
  // clear_grad(set_to_zero=True) leaves the gradient as zeros of this shape, dtype and device
  // without holding them (Paddle's zeros at the memory cost of torch's set_to_none): reading
  // .grad makes them; backward's first gradient takes their place instead of being added.
  struct Zeros {
    Shape shape;
    DType dtype;
    Device* device;
  };
  std::optional<Zeros> pending_zeros;
  bool retain_grads = false;
  std::vector<std::pair<int64_t, py::object>> hooks;  // (handle id, fn(grad) -> grad | None)

 private:
  bool requires_grad_ = false;
};

// The meta of a tensor, made when absent (create) or nullptr.
Meta* meta_of(const Tensor& t);
Meta& meta_for(Tensor& t);

// .grad as users see it (pending zeros made and kept now); None when there is none.
py::object read_grad(Meta& m);
// .grad = g (None: no gradient).
void write_grad(Meta& m, py::object g);
// clear_grad / clear_gradient: pending zeros (set_to_zero) or None.
void clear_grad(Meta& m, bool set_to_zero);
// backward: g added to the gradient, or in its place where there is none or it is zeros.
void accumulate_grad(Meta& m, py::object g);

// Grad mode (no_grad): thread-local, on by default.
bool grad_enabled();
void set_grad_enabled(bool on);
class GradMode {
 public:
  explicit GradMode(bool on) : was_(grad_enabled()) { set_grad_enabled(on); }
  ~GradMode() { set_grad_enabled(was_); }
  GradMode(const GradMode&) = delete;
  GradMode& operator=(const GradMode&) = delete;

 private:
  bool was_;
};

// Whether a tensor (or a list of them) among a call's bound inputs needs a gradient (the
// pipeline asks only while layers::autograd_wanted()).
bool needs_grad(const Tensor& t);
bool needs_grad(PyObject* v);
bool call_needs_grad(const pipeline::OpSpec& op, PyObject* const* inputs);

// The pipeline's autograd step (registered with layers::set_autograd_step at import).
py::object record(const std::shared_ptr<layers::OpCall>& call, const layers::Next& next);
// The same for a call made while no layer is active (the pipeline's direct path, no OpCall):
// the op runs with grad mode off, then its node is linked from the bound arguments. A new
// reference, or nullptr with a Python error set.
PyObject* record_bound(const pipeline::OpSpec& op, const pipeline::BoundArgs& a);
// Tensor.to(place): `moved` (src's data on another device) linked to src through the `copy`
// op's rule, so a gradient flows back (the engine moves it to src's device). Returns moved.
py::object record_device_copy(const py::object& src, py::object moved);
// PyLayer (hwport.autograd.PyLayer): `outputs` (a tensor or a tuple/list of them, made from
// `inputs` with grad mode off) get a node whose backward is backward(*grads) -> one gradient
// per input. Returns the outputs to hand back (an output that is an input becomes a new view).
py::object record_py_layer(const std::string& name, py::object backward, const py::list& inputs,
                           py::object outputs);

// loss.backward() / hwport.grad(): the gradients of `outputs` (seeded with grad_outputs, None:
// ones for a one-element output) flow back through the graph. `inputs` empty: accumulated into
// the leaves' .grad; else returned for those tensors only (None where unused and allow_unused).
std::vector<py::object> backward(const std::vector<py::object>& outputs,
                                 const std::vector<py::object>& grad_outputs,
                                 const std::vector<py::object>& inputs, bool retain_graph,
                                 bool create_graph, bool allow_unused);

// The number of nodes alive (tests: the graph is freed when its outputs go).
int64_t live_nodes();

}  // namespace hwport::autograd
