// The builtins of the formula language (phi_ops/codegen/gen_cpp_decomp.py and gen_cpp_vjp.py):
// what the generated composites' formulas (decomp_formulas.inc) and VJP rules (vjp_rules.inc)
// call besides ops. Each returns a new reference, or a null Obj with a Python error set.
#pragma once

#include <pybind11/pybind11.h>

#include <initializer_list>
#include <utility>
#include <vector>

#include "tensor.h"

namespace hwport::pipeline::formula {

using Obj = pybind11::object;

inline Obj steal(PyObject* p) { return pybind11::reinterpret_steal<Obj>(p); }
inline Obj borrow(PyObject* p) { return pybind11::reinterpret_borrow<Obj>(p); }

// One sub-op through the pipeline's C++ entry: inputs by position, attrs by their OpSpec index.
Obj call(int op_id, std::initializer_list<PyObject*> in,
         std::initializer_list<std::pair<int, PyObject*>> attrs);
// A sub-op by name, its attrs by name (for code written once for every op: the builtins, the
// autograd engine). A null Obj with a Python error set on failure.
Obj op_call(const char* name, std::initializer_list<PyObject*> in,
            std::initializer_list<std::pair<const char*, PyObject*>> attrs = {});
// A Python list of the items (a list literal of a formula).
Obj list_of(std::initializer_list<PyObject*> items);
Obj int_list(const std::vector<int64_t>& v);

// ---- the composites' formulas -------------------------------------------------------------
Obj up(PyObject* x);                    // float16/bfloat16 -> float32, else x
Obj down(PyObject* x, PyObject* like);  // x in like's dtype
Obj bound(PyObject* value, PyObject* like);
Obj axes(PyObject* axis, PyObject* like);
Obj all_axes(PyObject* axis, PyObject* like);
Obj count(PyObject* x, PyObject* axis);
bool is_empty(PyObject* x);

// ---- the VJP rules (gen_cpp_vjp.py's docstring says what each does) ------------------------
Obj unbroadcast(PyObject* g, PyObject* like);
Obj expand_reduced(PyObject* g, PyObject* like, PyObject* axes, PyObject* keepdim);
Obj shape(PyObject* t);
Obj ndim(PyObject* t);
Obj rows(PyObject* t);
Obj inv_perm(PyObject* perm, PyObject* like);
Obj sizes(PyObject* xs, PyObject* axis);
Obj slice_grad(PyObject* g, PyObject* like, PyObject* axes, PyObject* starts, PyObject* ends,
               PyObject* strides);
Obj unpad(PyObject* g, PyObject* like, PyObject* pad);
Obj dtype_of(PyObject* t);
// the dtype a binary op gives tensors a and b (and c: then a ternary op's)
Obj result_dtype(PyObject* a, PyObject* b, PyObject* c = nullptr);
Obj dtype_name(PyObject* t);                        // "float32", "bool", ...
Obj attention_scale(PyObject* scale, PyObject* query);  // scale, None: 1/sqrt(query's E)
Obj causal_mask(PyObject* query, PyObject* key);        // [L, S] bool, j <= i
Obj axis_in(PyObject* axis, PyObject* like);
Obj unstack(PyObject* g, PyObject* xs, PyObject* axis);
Obj untile(PyObject* g, PyObject* like, PyObject* repeats);
Obj neg_ints(PyObject* v);
Obj rotate_half(PyObject* t);
Obj unrotate_half(PyObject* t);
Obj last_axes(PyObject* n, PyObject* like);

}  // namespace hwport::pipeline::formula
