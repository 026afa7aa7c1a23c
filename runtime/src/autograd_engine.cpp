// The backward pass (autograd.h backward): the nodes reachable from the outputs run once each,
// latest first, as soon as every node consuming their outputs has run (reverse topological
// order); gradients meeting at a tensor are summed; leaves accumulate into .grad (or, for
// hwport.grad, the requested tensors' gradients are returned instead).
#include <algorithm>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "autograd.h"
#include "autograd_node.h"
#include "decomp_formulas.h"
#include "errors.h"
#include "formula_builtins.h"
#include "ops.h"
#include "pipeline_run.h"

namespace hwport::autograd {

namespace {

using pipeline::formula::Obj;

// A sub-op through the pipeline (recorded under create_graph); raises its Python error.
Obj op1(const char* name, std::initializer_list<PyObject*> in, const char* attr = nullptr,
        PyObject* value = nullptr) {
  Obj out = attr ? pipeline::formula::op_call(name, in, {{attr, value}})
                 : pipeline::formula::op_call(name, in);
  if (!out) throw py::error_already_set();
  return out;
}

Obj sum_of(const Obj& a, const Obj& b) {
  if (a.is_none()) return b;
  if (b.is_none()) return a;
  return op1("add", {a.ptr(), b.ptr()});
}

Obj zeros(const OutputInfo& info) {
  return py::cast(full(info.shape, AttrValue::of_float(0.0), info.dtype, info.device));
}

const Tensor& tensor_of(const py::handle& v, const std::string& what) {
  const Tensor* t = pipeline::as_tensor(v.ptr());
  if (!t) raise(ErrorKind::Type, what + " must be a Tensor, got " +
                                     std::string(Py_TYPE(v.ptr())->tp_name));
  return *t;
}

// The hooks' say on a gradient: each may return a replacement (None keeps it).
Obj run_hooks(Meta& m, Obj g) {
  if (m.hooks.empty() || g.is_none()) return g;
  auto hooks = m.hooks;  // a hook may remove itself
  for (auto& [id, fn] : hooks) {
    Obj r = fn(g);
    if (!r.is_none()) g = r;
  }
  return g;
}

// A gradient as its input holds it: the input's dtype (rules may compute wider) and device
// (Tensor.to's node), checked shape.
Obj fit(Obj g, const Edge& e, const Node& node, size_t input) {
  const Tensor& t = tensor_of(g, "autograd: a VJP rule's result");
  if (t.dtype != e.dtype) {
    g = op1("cast", {g.ptr()}, "dtype", py::cast(e.dtype).ptr());
  }
  if (e.device && pipeline::as_tensor(g.ptr())->device() != e.device)
    g = py::cast(to_device(*pipeline::as_tensor(g.ptr()), e.device));
  if (pipeline::as_tensor(g.ptr())->shape != e.shape) {
    const std::string got = shape_str(pipeline::as_tensor(g.ptr())->shape);
    if (!node.op)
      raise(ErrorKind::Value, "backward of PyLayer '" + node.name() + "' gave its tensor input " +
                                  std::to_string(input) + " a gradient of shape " + got +
                                  "; the input has shape " + shape_str(e.shape));
    raise(ErrorKind::Runtime,
          "autograd: the VJP rule of '" + node.name() + "' gave its input " +
              std::string(node.op->inputs[input].name) + " a gradient of shape " + got +
              "; the input has shape " + shape_str(e.shape) + " (a bug in ops.yaml `vjps`)");
  }
  return g;
}

// What a leaf keeps as .grad: its own tensor (a contiguous copy where the gradient is a view
// or shared with other tensors, so changing one .grad never changes another).
Obj owned(Obj g) {
  const Tensor* t = pipeline::as_tensor(g.ptr());
  if (Py_REFCNT(g.ptr()) > 1 || !t->is_contiguous()) return op1("copy", {g.ptr()});
  return g;
}

struct Run {
  // hwport.grad: the requested tensors, by leaf meta or by (node, output); their gradients.
  std::unordered_map<const Meta*, size_t> leaf_targets;
  std::unordered_map<const Node*, std::vector<std::pair<uint32_t, size_t>>> node_targets;
  std::vector<Obj> captured;
  bool capturing = false;
  std::unordered_map<const Node*, std::vector<Obj>> buffers;
  std::unordered_map<const Node*, int> deps;
  std::unordered_set<const Node*> needed;  // hwport.grad: nodes leading to a target

  void to_leaf(const std::shared_ptr<Meta>& leaf, Obj g) {
    g = run_hooks(*leaf, std::move(g));
    if (g.is_none()) return;
    if (capturing) {
      auto it = leaf_targets.find(leaf.get());
      if (it != leaf_targets.end()) captured[it->second] = sum_of(captured[it->second], g);
      return;
    }
    accumulate_grad(*leaf, std::move(g));
  }

  void to_node(const Edge& e, Obj g) {
    std::vector<Obj>& buf = buffers[e.fn.get()];
    if (buf.size() < e.fn->out_info.size()) buf.resize(e.fn->out_info.size(), py::none());
    buf[e.nr] = sum_of(buf[e.nr], g);
  }
};

void discover(const std::vector<std::shared_ptr<Node>>& roots, Run& run,
              std::vector<std::shared_ptr<Node>>* all) {
  std::vector<std::shared_ptr<Node>> stack(roots.begin(), roots.end());
  std::unordered_set<const Node*> seen;
  for (const auto& r : roots) seen.insert(r.get());
  all->assign(roots.begin(), roots.end());
  while (!stack.empty()) {
    std::shared_ptr<Node> n = stack.back();
    stack.pop_back();
    for (const auto& group : n->edges)
      for (const Edge& e : group) {
        if (!e.fn) continue;
        ++run.deps[e.fn.get()];
        if (seen.insert(e.fn.get()).second) {
          stack.push_back(e.fn);
          all->push_back(e.fn);
        }
      }
  }
}

// hwport.grad: the nodes from which a requested tensor is reached (the others need not run).
void mark_needed(const std::vector<std::shared_ptr<Node>>& all, Run& run) {
  // Later nodes consume earlier ones: by sequence, latest first, a node is needed when a
  // target is its output, or an edge reaches a target leaf or a needed node. Edges point to
  // earlier nodes, so visit earliest first.
  std::vector<std::shared_ptr<Node>> order(all);
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a->sequence < b->sequence; });
  for (const auto& n : order) {
    bool need = false;
    for (const auto& group : n->edges)
      for (const Edge& e : group) {
        if (e.leaf && run.leaf_targets.count(e.leaf.get())) need = true;
        if (e.fn && (run.needed.count(e.fn.get()) || run.node_targets.count(e.fn.get())))
          need = true;
      }
    if (need) run.needed.insert(n.get());
  }
}

// A PyLayer's backward: called with a gradient per output (zeros where none arrived), it
// returns one gradient (or None) per tensor input of its forward.
void run_py_layer(const std::shared_ptr<Node>& n, std::vector<Obj>& grads, Run& run) {
  for (size_t j = 0; j < grads.size(); ++j)
    if (grads[j].is_none() && n->out_info[j].differentiable) grads[j] = zeros(n->out_info[j]);
  py::tuple args(grads.size());
  for (size_t j = 0; j < grads.size(); ++j) args[j] = grads[j];
  py::object result = n->py_backward(*args);
  std::vector<Obj> per_input;
  if (py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result)) {
    for (const py::handle& g : result) per_input.push_back(py::reinterpret_borrow<Obj>(g));
  } else {
    per_input.push_back(result);
  }
  if (per_input.size() != n->edges.size())
    raise(ErrorKind::Value, "backward of PyLayer '" + n->name() + "' returned " +
                                std::to_string(per_input.size()) +
                                " gradients; its forward had " +
                                std::to_string(n->edges.size()) +
                                " tensor inputs (return one per input, None for those that "
                                "need none)");
  for (size_t k = 0; k < n->edges.size(); ++k) {
    const Edge& e = n->edges[k][0];
    if (!e.needed || per_input[k].is_none()) continue;
    if (!pipeline::as_tensor(per_input[k].ptr()))
      raise(ErrorKind::Type, "backward of PyLayer '" + n->name() + "': gradient " +
                                 std::to_string(k) + " is not a Tensor");
    Obj g = fit(per_input[k], e, *n, k);
    if (e.leaf)
      run.to_leaf(e.leaf, std::move(g));
    else
      run.to_node(e, std::move(g));
  }
}

// The rule's in[] (inputs, outputs, gradients) and its results, per input.
void run_node(const std::shared_ptr<Node>& n, std::vector<Obj>& grads, Run& run) {
  if (n->released)
    raise(ErrorKind::Runtime,
          "backward: the graph through op '" + n->name() + "' was freed by an earlier "
          "backward; pass retain_graph=True to the first backward() (or hwport.grad) to run "
          "backward through it again");
  if (n->py_backward) {
    run_py_layer(n, grads, run);
    return;
  }
  if (!n->rule)
    raise(ErrorKind::NotSupported, "backward: op '" + n->name() +
                                       "' has no VJP rule yet (ops.yaml `vjps`)");
  for (size_t j = 0; j < grads.size(); ++j)
    if (grads[j].is_none() && n->out_info[j].differentiable) grads[j] = zeros(n->out_info[j]);
  std::vector<Obj> slots;
  for (size_t k = 0; k < n->inputs.size(); ++k)
    slots.push_back(unpack(n->inputs[k], n, -1, n->op->inputs[k].name));
  std::vector<Obj> outs;
  for (size_t j = 0; j < n->outputs.size(); ++j)
    outs.push_back(unpack(n->outputs[j], n, static_cast<int>(j), "an output"));
  if (n->out_shape == Node::kList) {
    py::list o, g;
    for (auto& v : outs) o.append(v);
    for (auto& v : grads) g.append(v);
    slots.push_back(o);
    slots.push_back(g);
  } else {
    for (auto& v : outs) slots.push_back(v);
    for (auto& v : grads) slots.push_back(v);
  }
  std::vector<PyObject*> in, at;
  for (auto& v : slots) in.push_back(v.ptr());
  for (auto& v : n->attrs) at.push_back(v.ptr());
  for (size_t k = 0; k < n->edges.size(); ++k) {
    bool any = false;
    for (const Edge& e : n->edges[k]) any = any || e.needed;
    if (!any || !n->rule->fns[k]) continue;
    PyObject* r = n->rule->fns[k](in.data(), at.data());
    if (!r) {
      if (!PyErr_Occurred())
        raise(ErrorKind::Runtime, "backward: the VJP rule of '" + n->name() + "' failed");
      throw py::error_already_set();
    }
    Obj result = py::reinterpret_steal<Obj>(r);
    for (size_t i = 0; i < n->edges[k].size(); ++i) {
      const Edge& e = n->edges[k][i];
      if (!e.needed) continue;
      Obj g = n->input_is_list[k] ? Obj(py::reinterpret_borrow<py::list>(result)[i]) : result;
      if (g.is_none()) continue;
      g = fit(std::move(g), e, *n, k);
      if (e.leaf)
        run.to_leaf(e.leaf, std::move(g));
      else
        run.to_node(e, std::move(g));
    }
  }
}

}  // namespace

void accumulate_grad(Meta& m, py::object g) {
  const bool has = m.grad && !m.grad.is_none();
  m.pending_zeros.reset();  // zeros + g is g: no add, and the zeros are never made
  m.grad = has ? op1("add", {m.grad.ptr(), g.ptr()}) : owned(std::move(g));
}

std::vector<py::object> backward(const std::vector<py::object>& outputs,
                                 const std::vector<py::object>& grad_outputs,
                                 const std::vector<py::object>& inputs, bool retain_graph,
                                 bool create_graph, bool allow_unused) {
  Run run;
  run.capturing = !inputs.empty();
  run.captured.assign(inputs.size(), py::none());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = tensor_of(inputs[i], "grad: inputs[" + std::to_string(i) + "]");
    const Meta* m = meta_of(t);
    if (!m || !m->requires_grad())
      raise(ErrorKind::Runtime, "grad: inputs[" + std::to_string(i) +
                                    "] has stop_gradient=True: no gradient flows to it");
    if (m->grad_fn)
      run.node_targets[m->grad_fn.get()].push_back({m->output_nr, i});
    else
      run.leaf_targets[m] = i;
  }
  GradMode mode(create_graph);
  std::vector<std::shared_ptr<Node>> roots;
  std::vector<std::pair<Edge, Obj>> seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string what = "backward: tensor " + std::to_string(i);
    const Tensor& t = tensor_of(outputs[i], what);
    const std::shared_ptr<Meta>& m = t.autograd.meta;
    if (!m || !m->requires_grad())
      raise(ErrorKind::Runtime,
            what + " has stop_gradient=True: nothing it was computed from needs a gradient");
    Obj g = i < grad_outputs.size() ? grad_outputs[i] : py::none();
    if (g.is_none()) {
      if (t.numel() != 1)
        raise(ErrorKind::Runtime,
              what + " has shape " + shape_str(t.shape) +
                  ": only a one-element tensor gets an implicit gradient of ones; pass "
                  "grad_tensor (grad_outputs) of its shape");
      g = py::cast(full(t.shape, AttrValue::of_float(1.0), t.dtype, t.device()));
    } else {
      const Tensor& gt = tensor_of(g, "backward: grad_tensor " + std::to_string(i));
      if (gt.shape != t.shape)
        raise(ErrorKind::Value, "backward: grad_tensor " + std::to_string(i) + " has shape " +
                                    shape_str(gt.shape) + ", the tensor has shape " +
                                    shape_str(t.shape));
    }
    Edge e;
    e.needed = true;
    e.shape = t.shape;
    e.dtype = t.dtype;
    if (m->grad_fn) {
      e.fn = m->grad_fn;
      e.nr = m->output_nr;
      roots.push_back(m->grad_fn);
    } else {
      e.leaf = m;
    }
    seeds.emplace_back(std::move(e), std::move(g));
  }
  std::vector<std::shared_ptr<Node>> all;
  discover(roots, run, &all);
  if (run.capturing) mark_needed(all, run);
  for (auto& [e, g] : seeds) {
    Obj fitted = g;
    const Tensor& gt = *pipeline::as_tensor(fitted.ptr());
    if (gt.dtype != e.dtype) fitted = op1("cast", {g.ptr()}, "dtype", py::cast(e.dtype).ptr());
    if (e.leaf)
      run.to_leaf(e.leaf, fitted);
    else
      run.to_node(e, fitted);
  }
  auto later = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) {
    return a->sequence < b->sequence;
  };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>,
                      decltype(later)>
      ready(later);
  std::unordered_set<const Node*> queued;
  for (const auto& r : roots)
    if (run.deps[r.get()] == 0 && queued.insert(r.get()).second) ready.push(r);
  while (!ready.empty()) {
    std::shared_ptr<Node> n = ready.top();
    ready.pop();
    std::vector<Obj> grads = std::move(run.buffers[n.get()]);
    run.buffers.erase(n.get());
    grads.resize(n->out_info.size(), py::none());
    for (size_t j = 0; j < grads.size(); ++j) {
      std::shared_ptr<Meta> m = n->out_info[j].meta.lock();
      if (!m) continue;
      grads[j] = run_hooks(*m, grads[j]);
      if (m->retain_grads && !grads[j].is_none() && !run.capturing) accumulate_grad(*m, grads[j]);
    }
    auto t = run.node_targets.find(n.get());
    if (t != run.node_targets.end())
      for (auto [nr, i] : t->second) run.captured[i] = sum_of(run.captured[i], grads[nr]);
    bool any = false;
    for (auto& g : grads) any = any || !g.is_none();
    const bool needed = !run.capturing || run.needed.count(n.get());
    if (any && needed) {
      run_node(n, grads, run);
      if (!retain_graph) n->release();
    }
    for (const auto& group : n->edges)
      for (const Edge& e : group)
        if (e.fn && --run.deps[e.fn.get()] == 0 && queued.insert(e.fn.get()).second)
          ready.push(e.fn);
  }
  std::vector<py::object> result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (run.captured[i].is_none() && !allow_unused)
      raise(ErrorKind::Runtime, "grad: inputs[" + std::to_string(i) +
                                    "] was not used to compute the outputs; pass "
                                    "allow_unused=True to get None for it");
    result.push_back(run.captured[i]);
  }
  return result;
}

}  // namespace hwport::autograd
