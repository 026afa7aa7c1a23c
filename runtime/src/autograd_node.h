// The autograd graph's nodes (autograd.h): what the recording step keeps of an op call for its
// VJP rule, and the rules' table (vjp_rules.cpp, generated from ops.yaml `vjps`).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "arg_parse.h"
#include "autograd.h"
#include "pipeline_ops.h"

namespace hwport::autograd {

// One input's gradient formula: in = the op's inputs, then its outputs, then their gradients
// (gen_cpp_vjp.py's order); at = its attrs in OpSpec order. A new reference (a tensor; a list
// for a variadic input), or nullptr with a Python error set.
using VjpFn = PyObject* (*)(PyObject* const* in, PyObject* const* at);

struct VjpEntry {
  VjpFn fns[pipeline::kMaxParams];  // per input; nullptr: that input gets no gradient
  // Per input j's formula: bit k of data_reads[j], it reads input k's data; of meta_reads[j],
  // only input k's shape, dtype and place; bit j of out_reads, it reads the outputs. A node
  // keeps what the formulas of its inputs that need a gradient read (saved_for).
  uint32_t data_reads[pipeline::kMaxParams];
  uint32_t meta_reads[pipeline::kMaxParams];
  uint32_t out_reads;
  PyObject* defaults[pipeline::kMaxParams];  // per attr (nullptr: ask the Python rules);
                                             // immortal, leaked on purpose
};

const VjpEntry* vjp_entry(int op_id);
bool through_decomposition(int op_id);  // a composite differentiated through its sub-ops
bool rule_missing(int op_id);           // a primitive with a `backward` name but no rule yet

// A tensor the node keeps for its rule, with the storage version it had (an in-place write
// after recording is an error at backward, as in PyTorch).
struct Saved {
  enum Kind { kAbsent, kData, kMetaOnly, kList } kind = kAbsent;
  Tensor data;                 // kData: the view; kMetaOnly: shape and dtype, no storage
  Device* device = nullptr;    // kMetaOnly: the place (without holding the input's memory)
  std::shared_ptr<Meta> meta;  // an input's identity (so create_graph differentiates it)
  uint64_t version = 0;
  std::vector<Saved> items;  // kList
};

// Where an input's gradient goes: the node that made it (output `nr`), or the leaf's meta.
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t nr = 0;
  std::shared_ptr<Meta> leaf;
  bool needed = false;  // the input needs a gradient
  Shape shape;
  DType dtype = DType::Float32;
  Device* device = nullptr;  // the input's (Tensor.to: the gradient is moved there)
};

struct OutputInfo {
  Shape shape;
  DType dtype = DType::Float32;
  Device* device = nullptr;
  std::weak_ptr<Meta> meta;  // for its hooks and retain_grads
  bool differentiable = false;
};

struct Node : std::enable_shared_from_this<Node> {
  Node();
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const pipeline::OpSpec* op = nullptr;
  const VjpEntry* rule = nullptr;  // nullptr: rule_missing (backward raises)
  uint64_t sequence = 0;           // creation order (later nodes run first)
  // Per op input: its edges (one, or one per element of a variadic list).
  std::vector<std::vector<Edge>> edges;
  std::vector<bool> input_is_list;
  std::vector<Saved> inputs;  // per op input
  std::vector<Saved> outputs;  // per flattened output (when the rule reads them)
  std::vector<OutputInfo> out_info;  // per flattened output
  enum Shape_ { kSingle, kTuple, kList } out_shape = kSingle;
  std::vector<py::object> attrs;  // in OpSpec order
  bool released = false;
  // A PyLayer's node (op is null): backward(*grads) returns one gradient per tensor input.
  py::object py_backward;
  std::string py_name;

  std::string name() const { return op ? op->name : (py_name.empty() ? "?" : py_name); }
  void release();  // drops what was saved (after a backward without retain_graph)
};

// The tensor as the rule reads it: a new Python Tensor viewing the saved data, carrying its
// identity (an input's meta; an output's: this node), after checking its version.
py::object unpack(const Saved& s, const std::shared_ptr<Node>& node, int output_nr,
                  const char* what);

}  // namespace hwport::autograd
