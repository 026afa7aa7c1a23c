// The eager JIT's composite hook (issue 17, bind_jit.cpp): a composite op on a device with a
// codegen target and no kernel for it runs as its decomposition fused into one compiled kernel
// (cinn_backends/eager_jit.py provide_composite) instead of the C++ formula's op-by-op
// primitives, each of which would launch and materialize its broadcasts separately.
#pragma once

#include <Python.h>

#include "dtype.h"

namespace hwport {

struct Device;

// Counts an eager call a compiled kernel ran outside run_kernel (dispatch.cpp), as
// compiled_stats shows them: `op` is the kernel registry's id.
void count_compiled(int op, const Device* device, DType dtype);

// Whether a composite provider is registered (_core.set_jit_composite_provider). GIL held.
bool jit_composite_registered();

// The composite's outputs (a new reference, as the formula would return them) or nullptr when
// the provider declines or fails (no Python error set; a failure warns once per op and device):
// the caller runs the formula. `inputs` is a tuple of the op's inputs, `attrs` a dict of the
// attributes given. GIL held.
PyObject* jit_composite(int op, const char* name, Device* device, PyObject* inputs,
                        PyObject* attrs);

namespace pipeline {

struct OpSpec;
struct BoundArgs;

// The pipeline's side (pipeline.cpp): `op`, a composite without a kernel on `device`, with
// its inputs `in` (op.num_inputs of them) and the attributes bound in `a`, through
// jit_composite when the device has a codegen target (never the CPU device). nullptr (no
// Python error set): the caller's formula or decomposition.
PyObject* jit_composite_for(const OpSpec& op, PyObject* const* in, const BoundArgs& a,
                            DType key, Device* device);

}  // namespace pipeline

}  // namespace hwport
