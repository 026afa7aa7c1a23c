// The op table of the op-call pipeline, generated from phi_ops/ops.yaml at build time
// (phi_ops/codegen/gen_cpp_ops.py -> pipeline_ops.inc): per op its id (its index, the one the
// generated phi_ops/functional.py passes), inputs, attributes, rule and dtypes.
#pragma once

#include <cstdint>

#include "dtype.h"

namespace hwport::pipeline {

// The C++ rule family serving an op; None: every call takes the Python path.
enum class Family : uint8_t {
  None, Unary, Binary, Reduce, Where, Norm, Matmul, Concat, Reshape, Transpose, Squeeze,
  Unsqueeze, Flatten, Expand, Slice, Split, Arg_reduce, Scan, Gather, Take_along_axis,
  Creation, Arange, Flip, Pad, Linear, Embedding,
  Stack, Matrix_unary, Like, Eye, Linspace, Tile, Roll, Topk,
  Random, Dropout, Rotary, Scatter, Attention, Cross_entropy, Optimizer_update, Grad_like,
  Cross_entropy_grad
};
enum class AttrKind : uint8_t { Bool, Int, Float, Str, DType, Ints, Floats };
// ops.yaml out_dtype; Attr (attr:<name>) is served by Python only for now.
enum class OutRule : uint8_t { Same, Bool, Int64, Float, Sum, Attr };

struct InputSpec {
  const char* name;
  bool optional;
  bool variadic;
};

struct AttrDefault {
  bool has_default;  // false: a required attribute
  bool is_none;      // default None (or [] for ints)
  bool b;
  int64_t i;
  double f;
  bool is_float;  // the default is a float (else an int: a float attribute passes it as one)
};

struct AttrSpec {
  const char* name;
  AttrKind kind;
  AttrDefault default_value;
  bool is_axis;  // an int `axis`: normalized against the input's rank
};

struct OpSpec {
  int id;
  const char* name;
  const char* category;
  const char* infer_meta;
  Family family;
  bool primitive;
  bool ints_as_float32;  // phi_ops/dispatch.py _promote_unsupported: category unary, float-only
  OutRule out_rule;
  int out_attr;            // OutRule::Attr: the index of the dtype attribute; else -1
  uint32_t dtypes;         // bit i: DType i
  uint32_t kernel_dtypes;  // the dtypes kernels register for
  int num_inputs;
  const InputSpec* inputs;
  int num_attrs;
  const AttrSpec* attrs;
  const char* keywords;  // the Python function's parameter names, comma separated

  bool has_dtype(DType d) const { return (dtypes >> static_cast<int>(d)) & 1u; }
  bool has_kernel_dtype(DType d) const { return (kernel_dtypes >> static_cast<int>(d)) & 1u; }
};

int num_ops();
// nullptr when out of range.
const OpSpec* op_spec(int id);
const OpSpec* op_spec(const char* name);

}  // namespace hwport::pipeline
