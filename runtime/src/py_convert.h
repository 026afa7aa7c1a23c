// Conversions between Python objects and core types, with errors that name the op/argument.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "device.h"
#include "dtype.h"
#include "tensor.h"

namespace hwport {

namespace py = pybind11;

// None -> the current device; a str place; a Place object.
Device* device_from_py(py::handle place);
// A DType, a dtype name, a numpy dtype or scalar type, or the Python types bool/int/float.
DType dtype_from_py(py::handle obj, const char* op, const char* arg);
py::dtype numpy_dtype(DType dtype);
// numpy dtype -> DType; false when unsupported.
bool dtype_from_numpy(const py::dtype& dt, DType* out);
std::string supported_dtypes();

struct Place {
  std::string device_type;
  int64_t index = 0;
  std::string str() const { return "custom:" + device_type + ":" + std::to_string(index); }
};
Place place_of(const Device* device);

}  // namespace hwport
