// Conversions between Python objects and core types, with errors that name the op/argument.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "device.h"
#include "dispatch.h"
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

// A Python int as int64: ValueError naming op and arg when it does not fit (pybind11's cast
// would only say "Unable to cast"), TypeError for a non-int.
int64_t int64_from_py(py::handle v, const std::string& op, const std::string& arg);
// A Python bool/int/float (or numpy scalar) as a value of `dtype`. The one rule for every
// scalar that becomes a value of a dtype (numpy 2 / NEP 50): an int outside the dtype's range
// is a ValueError naming op, arg, value and the range, never a wrap; a float is passed on as
// a float (too large for a float dtype: inf, as numpy); any number fits bool. TypeError for
// other objects.
AttrValue scalar_from_py(py::handle v, DType dtype, const std::string& op,
                         const std::string& arg);

struct Place {
  std::string device_type;
  int64_t index = 0;
  std::string str() const { return "custom:" + device_type + ":" + std::to_string(index); }
};
Place place_of(const Device* device);

}  // namespace hwport
