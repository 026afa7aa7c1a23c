// Argument binding of the op-call pipeline: a call's positional and keyword arguments mapped
// onto the op's parameters (its inputs, then its attributes, the names of the Python function
// generated from ops.yaml), and the conversions the fast path accepts (a Tensor; a Python
// bool/int/float). Nothing here raises a user-facing error: what does not bind or convert
// sends the call to the Python path, which raises its exact message.
#pragma once

#include <Python.h>

#include "dispatch.h"
#include "infer_meta.h"
#include "pipeline_ops.h"
#include "tensor.h"

namespace hwport::pipeline {

constexpr int kMaxParams = 16;

// The call's argument per parameter (borrowed; nullptr: not given).
struct BoundArgs {
  PyObject* slot[kMaxParams] = {};
  int count = 0;  // inputs + attributes of the op (+ `place` for an op without inputs)
};

// Binds args[0..nargs) and the keyword arguments (values after them, names in kwnames) by
// position and name. False: too many, unknown or repeated names (the Python path reports).
bool bind_args(const OpSpec& op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
               BoundArgs* out);

// The Tensor of `obj`, or nullptr when it is not one.
Tensor* as_tensor(PyObject* obj);
// A Python bool, int or float of exactly those types (numpy scalars take the Python path).
bool is_plain_scalar(PyObject* obj);
// The dtype a weak Python scalar takes next to a tensor of `tensor_dtype` (NEP 50 as
// phi_ops/promotion.py scalar_dtype): bool keeps it, int keeps it (bool tensor: int64),
// float keeps a float dtype, else float32.
DType weak_scalar_dtype(PyObject* scalar, DType tensor_dtype);

// The kernel attributes of the op from the bound arguments (defaults for those not given), as
// phi_ops/dispatch.py passes them: bools as they are; ints (an `axis` normalized against
// `ndim`, the input's); floats as FLOAT64, a Python int given for one as INT64, None (given or
// by default) left out; the dtype attribute of an attr:<name> out_dtype by name (its value in
// *out_dtype). False where one is of another kind or form, or out of range (a dtype that does
// not parse throws: the caller sends the call to Python).
bool kernel_attrs(const OpSpec& op, const BoundArgs& args, int64_t ndim, Attrs* out,
                  DType* out_dtype);
// The number an attribute of `attrs` holds (INT64 or FLOAT64), false when absent.
bool attr_number(const Attrs& attrs, const char* name, double* out);
// A plain Python int (not a bool, not a numpy int) that fits int64.
bool plain_int(PyObject* v, int64_t* out);
// None, an int or a list/tuple of ints (plain ints only); false otherwise.
bool int_list(PyObject* v, std::vector<int64_t>* out);

// promotion.scalar_for_dtype for a plain Python bool / int / float that becomes a value of
// `dtype` (fill's value, pad's value): a bool as BOOL, an int as INT64 (one outside an integer
// dtype's range: false, Python's error), a float as FLOAT64, or into an integer dtype as
// `cast` converts it (truncated, saturated, NaN -> 0). False for other objects.
bool value_for_dtype(PyObject* v, DType dtype, AttrValue* out);

// A reduction's attributes: axis (None, an int or a list of ints), keepdim (a bool), dtype
// (None or a dtype), the other bools as kernel attributes. False where one is of another form.
bool reduce_attrs(const OpSpec& op, const BoundArgs& args, ReduceAttrs* out, Attrs* kernel);

}  // namespace hwport::pipeline
