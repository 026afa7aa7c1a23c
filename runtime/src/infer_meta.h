// Infer-meta of the op-call pipeline in C++, one rule per family (pipeline_ops.h Family),
// mirroring phi_ops/infer_meta.py (the oracle the tests compare these with on every op and
// every shape case of phi_ops.sample_inputs). A rule never raises: where the Python rule would
// raise (or a case is not covered), it returns false and the call takes the Python path,
// which raises the reliability issue's message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline_ops.h"
#include "tensor.h"

namespace hwport::pipeline {

struct MetaIn {
  const Shape* shape;
  DType dtype;
};

struct ElementwisePlan {
  Shape shape;      // of the output (the broadcast shape of binary ops)
  DType out;        // output dtype
  DType compute;    // the dtype inputs are cast to and the kernel is keyed by
  bool cast[3] = {false, false, false};  // input i is cast first (where's condition: to bool)
};

// infer_meta.normalize_axis: axis in [-max(ndim, 1), max(ndim, 1)) made non-negative (a 0-d
// tensor takes -1 and 0); false out of range.
bool normalize_axis(int64_t axis, int64_t ndim, int64_t* out);
// infer_meta.normalize_axes: each normalized, then sorted; false out of range or repeated.
bool normalize_axes(const std::vector<int64_t>& axes, int64_t ndim, std::vector<int64_t>* out);

// numpy broadcasting of two shapes; false where they do not broadcast.
bool broadcast(const Shape& a, const Shape& b, Shape* out);

// unary: float-only ops compute integer/bool inputs in float32 (phi_ops/dispatch.py
// _promote_unsupported); the key dtype must have a kernel dtype.
// attr_dtype: the dtype attribute of an attr:<name> out_dtype (cast), else unused.
bool infer_unary(const OpSpec& op, const MetaIn& x, DType attr_dtype, ElementwisePlan* plan);
// binary: numpy broadcasting; the promoted dtype must be one of the op's dtypes; the `float`
// rule computes integers in float32 (divide).
bool infer_binary(const OpSpec& op, const MetaIn& x, const MetaIn& y, ElementwisePlan* plan);
struct ReduceAttrs {
  std::vector<int64_t> axis;  // as given ([]: every dim)
  bool keepdim = false;
  bool has_dtype = false;  // sum's dtype attribute
  DType dtype = DType::Float32;
};

struct ReducePlan {
  Shape shape;
  DType out;
  DType key;  // the dtype x is cast to (sum's dtype) and the kernel is keyed by
  std::vector<int64_t> axes;  // normalized: non-negative, sorted, unique, never empty
};

// reduce: axes normalized (out of range or repeated: Python's error); a 0-d x or a zero-size
// reduced dim takes the Python path (its special forms and errors), as does a key dtype
// without kernels.
bool infer_reduce(const OpSpec& op, const MetaIn& x, const ReduceAttrs& attrs, ReducePlan* plan);
// where: condition, x and y broadcast together; x and y promoted (the output and key dtype);
// condition computed as bool.
bool infer_where(const OpSpec& op, const MetaIn& condition, const MetaIn& x, const MetaIn& y,
                 ElementwisePlan* plan);
// norm (layer_norm, rms_norm; phi_ops/infer_meta.py _check_norm): normalized_ndim in
// [1, ndim], each given affine input of x's trailing shape and a floating dtype, epsilon >= 0;
// the output is x's shape and dtype, which keys the kernel.
bool infer_norm(const OpSpec& op, const MetaIn& x, const MetaIn* const* affine, int n_affine,
                int64_t normalized_ndim, double epsilon, ElementwisePlan* plan);

struct MatmulPlan {
  Shape batch;      // the broadcast batch dims
  int64_t m, k, n;  // x [batch, m, k] @ y [batch, k, n] after transposes and unsqueezes
  Shape shape;      // of the result (vector operands' dims dropped)
  DType dtype;      // both operands are cast to it; it keys the kernel
};
// matmul: operands of >= 1 dim, transposes of the last two dims (of >= 2-D operands), 1-D
// operands as a row (x) or a column (y), inner dims equal, batch dims broadcast, promoted dtype.
bool infer_matmul(const OpSpec& op, const MetaIn& x, const MetaIn& y, bool transpose_x,
                  bool transpose_y, MatmulPlan* plan);
// concat: >= 1 inputs of >= 1 dim, equal except along `axis` (normalized into *norm_axis),
// promoted dtype.
bool infer_concat(const OpSpec& op, const std::vector<MetaIn>& xs, int64_t axis, Shape* shape,
                  DType* dtype, int64_t* norm_axis);
// reshape: at most one -1 (resolved), sizes >= 0, the element count kept.
bool infer_reshape(const MetaIn& x, const std::vector<int64_t>& shape, Shape* out);
// transpose: perm (nullptr: reversed dims) normalized, a permutation of x's dims.
bool infer_transpose(const MetaIn& x, const std::vector<int64_t>* perm,
                     std::vector<int64_t>* out);

// squeeze: axes ([]: every size-1 dim) normalized, unique; the listed size-1 dims dropped.
bool infer_squeeze(const MetaIn& x, const std::vector<int64_t>& axes, Shape* out,
                   std::vector<int64_t>* norm_axes);
// unsqueeze: axes normalized against the output's rank, unique.
bool infer_unsqueeze(const MetaIn& x, const std::vector<int64_t>& axes, Shape* out,
                     std::vector<int64_t>* norm_axes);
// flatten: start/stop normalized, start <= stop; a 0-d x becomes [1].
bool infer_flatten(const MetaIn& x, int64_t start, int64_t stop, Shape* out);
// expand: at least x's rank; -1 keeps x's dim (not for new leading dims); sizes 1 broadcast.
bool infer_expand(const MetaIn& x, const std::vector<int64_t>& shape, Shape* out);

// arg_reduce (argmax, argmin) and scan (cumsum, cumprod): one axis, or every element when
// none is given (the kernel then sees x flattened, a 0-d x as [1]).
struct AxisPlan {
  Shape shape;        // of the result
  DType out;          // its dtype; x's dtype keys the kernel
  bool flatten;       // axis None: the kernel runs on x flattened
  int64_t axis;       // normalized (0 when flattened)
};
// arg_reduce: a zero-size reduced dim (or no elements with axis None) is Python's error;
// keepdim keeps the reduced dim as 1 (every dim with axis None).
bool infer_arg_reduce(const OpSpec& op, const MetaIn& x, bool has_axis, int64_t axis,
                      bool keepdim, AxisPlan* plan);
// scan: x's shape ([numel] with axis None); the `sum` out_dtype (int64 for bool/integers).
bool infer_scan(const OpSpec& op, const MetaIn& x, bool has_axis, int64_t axis, AxisPlan* plan);

// slice: axes, starts, ends and strides (empty: all 1) of equal length; axes normalized and
// unique; bounds as Python's slice(start, end, step).indices(dim) gives them; a step larger
// than the dim is clamped to it (phi_ops/infer_meta.py slice_: the view's stride stays small).
struct SlicePlan {
  Shape shape;
  std::vector<int64_t> axes, starts, ends, steps;  // normalized, in the given order
};
bool infer_slice(const MetaIn& x, const std::vector<int64_t>& axes,
                 const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                 const std::vector<int64_t>& strides, SlicePlan* plan);
// split: `sizes_given` (a list was passed) means part sizes (one -1 inferred), else
// sections[0] equal parts; sizes >= 0 adding up to the dim; x has >= 1 dim.
bool infer_split(const MetaIn& x, const std::vector<int64_t>& sections, bool sizes_given,
                 int64_t axis, std::vector<int64_t>* sizes, int64_t* norm_axis);

// gather / index_select (a 1-D index) and take_along_axis (an index of x's rank, its other
// dims broadcast with x's): an int32/int64 index, x of >= 1 dim, axis normalized; the output
// has x's dtype. The index values are checked against *bound (x's dim along the axis) by
// the caller, on the device (phi_ops/dispatch.py _check_index).
bool infer_gather(const OpSpec& op, const MetaIn& x, const MetaIn& index, int64_t axis,
                  Shape* out, int64_t* norm_axis, int64_t* bound);
bool infer_take_along_axis(const OpSpec& op, const MetaIn& x, const MetaIn& index,
                           int64_t axis, Shape* out, int64_t* norm_axis, int64_t* bound);

// linear (x @ weight + bias): weight 2-D [in, out], x's last dim `in`, bias (optional) [out];
// the output x's leading dims + [out] in the promoted dtype; x's dtype keys the kernel.
bool infer_linear(const OpSpec& op, const MetaIn& x, const MetaIn& weight, const MetaIn* bias,
                  Shape* out, DType* dtype);
// embedding: an int32/int64 index, weight 2-D [V, D]; the output index's shape + [D] in
// weight's dtype; *bound = V (index values are checked against it); the index keys the kernel.
bool infer_embedding(const OpSpec& op, const MetaIn& index, const MetaIn& weight, Shape* out,
                     int64_t* bound);

// stack: >= 1 inputs of one shape, axis normalized against ndim + 1, promoted dtype (the key).
bool infer_stack(const OpSpec& op, const std::vector<MetaIn>& xs, int64_t axis, Shape* shape,
                 DType* dtype, int64_t* norm_axis);
// matrix_unary (tril, triu): x of >= 2 dims; x's shape and dtype.
bool infer_matrix_unary(const OpSpec& op, const MetaIn& x);
// like (full_like, zeros_like, ones_like): x's shape; the dtype given, else x's.
bool infer_like(const OpSpec& op, const MetaIn& x, bool has_dtype, DType dtype, DType* out);

// infer_meta.check_size: the contiguous span (zero dims counted as 1) in bytes fits int64.
bool fits_bytes(const Shape& shape, DType dtype);

// flip (the unary rule with an ints axis): axes normalized, sorted, unique; a 0-d x takes
// none (phi_ops/infer_meta.py _check_flip).
bool infer_flip(const OpSpec& op, const MetaIn& x, const std::vector<int64_t>& axes,
                std::vector<int64_t>* norm_axes);
// pad: (before, after) pairs for at most x's dims, each >= 0, extended with zeros to
// 2 * ndim (*full); the padded shape.
bool infer_pad(const OpSpec& op, const MetaIn& x, const std::vector<int64_t>& pad,
               std::vector<int64_t>* full, Shape* out);

// creation (fill, full, zeros, ones): shape sizes >= 0, at most 16 dims; the dtype (given, or
// the op's default) must have kernels.
bool infer_creation(const OpSpec& op, const std::vector<int64_t>& shape, DType dtype,
                    Shape* out);

// A number attribute as Python holds it: an int (int64) or a float.
struct Number {
  bool is_int = true;
  int64_t i = 0;
  double f = 0;
  double value() const { return is_int ? static_cast<double>(i) : f; }
};
struct ArangePlan {
  Number start, end, step;  // end None: [0, start)
  int64_t n = 0;
  DType out = DType::Int64;
};
// arange: finite bounds, step nonzero; dtype (has_dtype false: int64 when all are ints, else
// float32); n = ceil((end - start) / step) (exact for ints), at least 0.
bool infer_arange(const OpSpec& op, const Number& start, const Number* end, const Number& step,
                  bool has_dtype, DType dtype, ArangePlan* plan);

// tile: repeats >= 0, left-padded with 1s (and x's shape with 1s) to the longer; the product
// (*full: the padded repeats).
bool infer_tile(const OpSpec& op, const MetaIn& x, const std::vector<int64_t>& repeats,
                std::vector<int64_t>* full, Shape* out);
// roll (the unary rule with ints shifts and axis): each axis normalized (repeats add up),
// as many shifts as axes, or one shift without axes (phi_ops/infer_meta.py _check_roll).
bool infer_roll(const OpSpec& op, const MetaIn& x, const std::vector<int64_t>& shifts,
                const std::vector<int64_t>& axes, std::vector<int64_t>* norm_axes);
// topk: axis normalized (a 0-d x: k == 1), 0 <= k <= the axis' size; values of x's shape
// with k along axis (a 0-d x keeps its shape), a dtype the op lists.
bool infer_topk(const OpSpec& op, const MetaIn& x, int64_t k, int64_t axis, Shape* out,
                int64_t* norm_axis);
// scatter: index int32/int64 and 1-D, x not 0-d, axis normalized, updates of x's shape with
// index's length along axis (cast to x's dtype), reduce assign | add; *bound: x's axis size.
bool infer_scatter(const OpSpec& op, const MetaIn& x, const MetaIn& index, const MetaIn& updates,
                   int64_t axis, const std::string& reduce, int64_t* norm_axis, int64_t* bound);
// scaled_dot_product_attention (phi_ops/infer_meta.py attention): query, key, value
// [..., L, E] with matching E and S, batch dims broadcast; attn_mask (nullptr: absent)
// broadcasting to the scores and not with is_causal; the output in the promoted dtype.
bool infer_attention(const OpSpec& op, const MetaIn& q, const MetaIn& k, const MetaIn& v,
                     const MetaIn* mask, bool is_causal, Shape* out, DType* dtype);
// cross_entropy: logits [N, C], int32/int64 label [N], reduction mean | sum | none,
// ignore_index fitting label's dtype; [N] (none) or [] of logits' dtype.
bool infer_cross_entropy(const OpSpec& op, const MetaIn& logits, const MetaIn& label,
                         const std::string& reduction, int64_t ignore_index, Shape* out);
// eye: n, m >= 0 (m absent: n); (n, m) of a dtype the op lists.
bool infer_eye(const OpSpec& op, int64_t n, const int64_t* m, DType dtype, Shape* out);
// linspace: num >= 0, (num,) in float64 (its decomposition's dtype) fits; a dtype it lists.
bool infer_linspace(const OpSpec& op, int64_t num, DType dtype, Shape* out);

// The output dtype by the op's out_dtype rule from the promoted input dtype (false: a rule
// this slice leaves to Python).
bool out_dtype(const OpSpec& op, DType common, DType* out);

}  // namespace hwport::pipeline
