// The fast paths of the op-call pipeline's families beyond the elementwise and reduction ones
// (pipeline_families.cpp, pipeline_views.cpp), and what they share with pipeline.cpp. Each returns the result, or
// nullptr to send the call to the Python path (never with a Python error set); hwport::Error
// thrown inside also sends it there (pipeline.cpp call_op).
#pragma once

#include <Python.h>

#include <string>
#include <vector>

#include "arg_parse.h"
#include "dispatch.h"
#include "infer_meta.h"
#include "pipeline_ops.h"
#include "tensor.h"

namespace hwport::pipeline {

// The device of the first n slots when each is a tensor and all are on it (filling t), else
// nullptr: the call goes to the Python path (a scalar to convert, or a device mismatch to
// report).
inline Device* tensors_on_one_device(const BoundArgs& a, int n, Tensor** t) {
  for (int i = 0; i < n; ++i)
    if (!a.slot[i] || !(t[i] = as_tensor(a.slot[i]))) return nullptr;
  for (int i = 1; i < n; ++i)
    if (t[i]->device() != t[0]->device()) return nullptr;
  return t[0]->device();
}

// What kernel selection chose for one call of `op` on this thread. With layers active the
// pipeline runs the op's family twice (pipeline_layered.cpp): first `dry` -- argument checks,
// infer-meta, outputs made, but neither the op's own kernel launched nor its formula run -- so
// that a bad call raises before any layer sees it and the layers get the kernel key; then for
// real, as the innermost step, recording the path it took.
struct SelectionProbe {
  const OpSpec* op = nullptr;
  bool dry = false;
  bool launched = false;  // the op's kernel ran (dry: would have)
  bool formula = false;   // its C++ formula ran (dry: would have)
  DType key = DType::Float32;
  Device* device = nullptr;
};
extern thread_local SelectionProbe* g_probe;
inline SelectionProbe* probe_for(const OpSpec& op) {
  return g_probe && g_probe->op == &op ? g_probe : nullptr;
}
// Installs `probe` on this thread for its lifetime (nullptr: none), restoring the one before.
class ProbeScope {
 public:
  explicit ProbeScope(SelectionProbe* probe) : saved_(g_probe) {
    if (probe || saved_) g_probe = probe;
  }
  ~ProbeScope() { g_probe = saved_; }
  ProbeScope(const ProbeScope&) = delete;
  ProbeScope& operator=(const ProbeScope&) = delete;

 private:
  SelectionProbe* saved_;
};

// The family's run (nullptr: not one it serves as given; then a hwport::Error was caught, or
// *python_error says a Python error is set).
PyObject* run_family(const OpSpec& op, const BoundArgs& a);
PyObject* try_family(const OpSpec& op, const BoundArgs& a, bool* python_error);
// phi_ops.dispatch.call(name, inputs, attrs[, place][, selecting]) with the bound arguments;
// `selecting` (an OpCall): the layers ran already, only kernel selection is left.
PyObject* python_path(const OpSpec& op, const BoundArgs& a, PyObject* selecting = nullptr);
// The call through this thread's active layers (pipeline_layered.cpp).
PyObject* layered_call(const OpSpec& op, const BoundArgs& a);
// Kernel selection's second choice for a composite without a native kernel: its C++ formula
// on `in`, keyed by `key` (recorded in this thread's probe; dry: None, nothing run).
PyObject* select_formula(const OpSpec& op, PyObject* const* in, const BoundArgs& a, DType key,
                         Device* device);

PyObject* to_python(Tensor&& t);
// A Python scalar operand as a 0-d tensor of its weak dtype next to `like`, as
// phi_ops/dispatch.py _as_tensor makes it (false: not a plain scalar; an int that does not fit
// raises).
bool scalar_operand(const OpSpec& op, PyObject* obj, const Tensor& like, const char* arg,
                    Tensor* out);
// Runs the op's kernel keyed by `key` into `outs` (nothing where the first is empty); the
// kernel selection probe of the layered pipeline sees it as `launch`'s.
void launch_outputs(const OpSpec& op, DType key, Device* device, const Tensor* const* in, int n,
                    Tensor* const* outs, int n_out, const Attrs& attrs);
// Runs the op's kernel keyed by `key` into `out` (nothing for an empty output).
void launch(const OpSpec& op, DType key, Device* device, const Tensor* const* in, int n,
            Tensor* out, const Attrs& attrs);
// The per-op checks of phi_ops/infer_meta.py _UNARY_CHECKS that the unary family's attributes
// need (softplus: beta nonzero and not NaN).
bool unary_attrs_valid(const OpSpec& op, const Attrs& attrs);
// phi_ops/dispatch.py reshape_view: `t` (a contiguous copy where it is not contiguous) seen
// as `shape` with contiguous strides.
Tensor contiguous_view(const Tensor& t, const Shape& shape);
// A composite's native kernel runs only where every floating input has the key dtype
// (phi_ops/dispatch.py _fused_kernel_fits); a primitive always runs.
bool fused_kernel_fits(const OpSpec& op, Device* device, DType key, const Tensor* const* in,
                       int n);
// A composite of one input x keyed by x's dtype: its native kernel into a fresh output of
// (shape, dtype) where fused_kernel_fits, else nullptr (the Python path decomposes it).
PyObject* run_one_input_composite(const OpSpec& op, const Tensor* x, const Shape& shape,
                                  DType dtype, const Attrs& attrs);
// Every value of `index` in [0, bound), checked on the device (pipeline_families_index.cpp).
bool index_in_bounds(const Tensor& index, int64_t bound);
// An optional int attribute at `slot` (absent or None: *has = false); false where it is not a
// plain int.
bool optional_int(const BoundArgs& a, int slot, bool* has, int64_t* out);
// A bool attribute of the op (absent: its default); false where it is not a bool.
bool bool_attr(const OpSpec& op, const BoundArgs& a, int k, bool* out);

PyObject* run_norm(const OpSpec& op, const BoundArgs& a);
PyObject* run_matmul(const OpSpec& op, const BoundArgs& a);
PyObject* run_concat(const OpSpec& op, const BoundArgs& a);
// pipeline_views.cpp
PyObject* run_reshape(const OpSpec& op, const BoundArgs& a);
PyObject* run_flatten(const OpSpec& op, const BoundArgs& a);
PyObject* run_transpose(const OpSpec& op, const BoundArgs& a);
PyObject* run_squeeze(const OpSpec& op, const BoundArgs& a);
PyObject* run_unsqueeze(const OpSpec& op, const BoundArgs& a);
PyObject* run_expand(const OpSpec& op, const BoundArgs& a);
PyObject* run_flip(const OpSpec& op, const BoundArgs& a);
// pipeline_families.cpp: pad's plan and kernel attributes (false: Python's), its run
bool pad_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, Shape* shape,
              Attrs* attrs);
PyObject* run_pad(const OpSpec& op, const BoundArgs& a);
PyObject* run_stack(const OpSpec& op, const BoundArgs& a);
PyObject* run_matrix_unary(const OpSpec& op, const BoundArgs& a);
// tile, roll, topk: their plans and kernel attributes (false: Python's), their runs
bool tile_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, Shape* shape,
               Attrs* attrs);
PyObject* run_tile(const OpSpec& op, const BoundArgs& a);
bool roll_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, Attrs* attrs);
PyObject* run_roll(const OpSpec& op, const BoundArgs& a);
bool topk_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, Shape* shape,
               int64_t* norm_axis);
PyObject* run_topk(const OpSpec& op, const BoundArgs& a);
// pipeline_families_slicing.cpp
PyObject* run_slice(const OpSpec& op, const BoundArgs& a);
PyObject* run_split(const OpSpec& op, const BoundArgs& a);
// pipeline_families_scan.cpp
PyObject* run_arg_reduce(const OpSpec& op, const BoundArgs& a);
PyObject* run_scan(const OpSpec& op, const BoundArgs& a);
// pipeline_families_index.cpp
PyObject* run_gather(const OpSpec& op, const BoundArgs& a);
PyObject* run_take_along_axis(const OpSpec& op, const BoundArgs& a);
// pipeline_families_nn.cpp
PyObject* run_linear(const OpSpec& op, const BoundArgs& a);
PyObject* run_embedding(const OpSpec& op, const BoundArgs& a);
// pipeline_families_creation.cpp: the plan and kernel attributes of a call (false: Python's)
bool creation_call(const OpSpec& op, const BoundArgs& a, Shape* shape, DType* out,
                   Attrs* attrs);
bool arange_call(const OpSpec& op, const BoundArgs& a, ArangePlan* plan, Attrs* attrs);
PyObject* run_creation(const OpSpec& op, const BoundArgs& a);
PyObject* run_arange(const OpSpec& op, const BoundArgs& a);
bool eye_call(const OpSpec& op, const BoundArgs& a, Shape* shape, DType* out, Attrs* attrs);
bool linspace_call(const OpSpec& op, const BoundArgs& a, Shape* shape, DType* out,
                   Attrs* attrs);
PyObject* run_eye(const OpSpec& op, const BoundArgs& a);
PyObject* run_linspace(const OpSpec& op, const BoundArgs& a);
// A str attribute at `slot` (absent: `def`, ops.yaml's default); false where not a str.
bool str_attr(const BoundArgs& a, int slot, const char* def, std::string* out);
// scatter (pipeline_families_index.cpp)
PyObject* run_scatter(const OpSpec& op, const BoundArgs& a);
// scaled_dot_product_attention, cross_entropy (pipeline_families_nn.cpp): their plans and
// kernel attributes (false: Python's)
bool attention_call(const OpSpec& op, const BoundArgs& a, const MetaIn* const* in,
                    Shape* shape, DType* dtype, Attrs* attrs);
bool cross_entropy_call(const OpSpec& op, const BoundArgs& a, const MetaIn& logits,
                        const MetaIn& label, Shape* shape, Attrs* attrs);
PyObject* run_attention(const OpSpec& op, const BoundArgs& a);
PyObject* run_cross_entropy(const OpSpec& op, const BoundArgs& a);
// uniform, normal (pipeline_families_creation.cpp)
bool random_call(const OpSpec& op, const BoundArgs& a, Shape* shape, DType* out, Attrs* attrs);
PyObject* run_random(const OpSpec& op, const BoundArgs& a);
// dropout, rotary_embedding (pipeline_families_nn.cpp): their checks (false: Python's)
bool dropout_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, ElementwisePlan* plan,
                  Attrs* attrs);
bool infer_rotary(const OpSpec& op, const MetaIn& x, const MetaIn& cos, const MetaIn& sin,
                  ElementwisePlan* plan);
PyObject* run_dropout(const OpSpec& op, const BoundArgs& a);
PyObject* run_rotary(const OpSpec& op, const BoundArgs& a);
// adam_update (pipeline_families_nn.cpp): every input of the first's shape and dtype
bool infer_optimizer_update(const OpSpec& op, const MetaIn* const* in, int n);
PyObject* run_optimizer_update(const OpSpec& op, const BoundArgs& a);
// softmax_grad, layer_norm_grad, rms_norm_grad: the plugin's fused backward kernel, else the
// C++ formula.
PyObject* run_grad_like(const OpSpec& op, const BoundArgs& a);
// cross_entropy_grad: the plugin's kernel where every label is a class, else the C++ formula.
PyObject* run_cross_entropy_grad(const OpSpec& op, const BoundArgs& a);
// The test hook _pipeline_infer for the families above: a new reference to the meta tuple,
// or to None where the call takes the Python path.
PyObject* infer_more_meta(const OpSpec& op, const std::vector<MetaIn>& in,
                          const std::vector<bool>& present, const BoundArgs& a);
bool like_call(const OpSpec& op, const BoundArgs& a, const MetaIn& x, DType* out, Attrs* attrs);
PyObject* run_like(const OpSpec& op, const BoundArgs& a);

}  // namespace hwport::pipeline
