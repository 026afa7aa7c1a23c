// Pieces of the pybind11 module `hwport.runtime._core`, one file each.
#pragma once

#include "py_convert.h"

namespace hwport {

void bind_tensor(py::module_& m);
void bind_streams(py::module_& m);
void bind_layers(py::module_& m);
void bind_executor(py::module_& m);
void bind_autograd(py::module_& m);
void bind_codegen(py::module_& m);  // after bind_tensor: it adds Tensor's autograd API
void bind_jit(py::module_& m);
void bind_ccl(py::module_& m);
// A kernel attribute as _core.launch converts it (module.cpp).
AttrValue attr_value_from_py(const std::string& op, const std::string& name, py::handle v);
Tensor tensor_from_numpy(py::array array, Device* device);
Tensor tensor_from_dlpack(py::capsule capsule, Device* device);

}  // namespace hwport
