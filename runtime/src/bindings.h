// Pieces of the pybind11 module `hwport.runtime._core`, one file each.
#pragma once

#include "py_convert.h"

namespace hwport {

void bind_tensor(py::module_& m);
void bind_streams(py::module_& m);
void bind_layers(py::module_& m);
Tensor tensor_from_numpy(py::array array, Device* device);
Tensor tensor_from_dlpack(py::capsule capsule, Device* device);

}  // namespace hwport
