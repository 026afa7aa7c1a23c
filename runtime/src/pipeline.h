// The op-call pipeline's C++ fast path (DESIGN.md, "The op-call pipeline"): an op call from the
// generated phi_ops/functional.py (or a Tensor operator) is bound by the generated op table
// (pipeline_ops.h), its family's infer-meta runs in C++ (infer_meta.h), its kernel is selected
// (kernel_cache.h) and launched, without entering Python. Whatever the fast path does not
// handle -- an op of no family, an argument it does not accept as is, a composite without a
// native kernel, an active layer, a swapped phi_ops.dispatch.output_allocator, any error --
// goes to the Python path, phi_ops.dispatch.call(name, inputs, attrs), unchanged: it raises
// every error message and serves every rare form.
#pragma once

#include <pybind11/pybind11.h>

namespace hwport::pipeline {

// _core._op_call(op_id, *args, **kwargs), _core._pipeline_register(dispatch_module),
// _core._pipeline_operator(op_id, reflected, name), and the tests' _core._pipeline_infer and
// _core._pipeline_ops. `empty`, `launch` and `has_kernel` must already be defined on `m`
// (the defaults of the hooks the Python path calls).
void register_pipeline(pybind11::module_& m);

}  // namespace hwport::pipeline
