#include "py_convert.h"

#include "errors.h"

namespace hwport {

Place place_of(const Device* device) { return Place{device->plugin->device_type, device->index}; }

Device* device_from_py(py::handle place) {
  DeviceManager& dm = DeviceManager::instance();
  if (place.is_none()) return dm.current();
  if (py::isinstance<py::str>(place)) return dm.resolve(place.cast<std::string>());
  if (py::isinstance<Place>(place)) {
    const Place& p = place.cast<const Place&>();
    return dm.find(p.device_type, p.index);
  }
  raise(ErrorKind::Type, "place must be a str such as 'custom:cpu:0' or a hwport.CustomPlace, "
                         "got " + std::string(py::str(py::type::of(place).attr("__name__"))));
}

std::string supported_dtypes() {
  std::string s;
  for (int i = 0; i < kNumDTypes; ++i)
    s += (i ? ", " : "") + std::string(dtype_name(static_cast<DType>(i)));
  return s;
}

bool dtype_from_numpy(const py::dtype& dt, DType* out) {
  const char kind = dt.kind();
  if (kind == 'c' || kind == 'O' || kind == 'U' || kind == 'S' || kind == 'V' || kind == 'M' ||
      kind == 'm') {
    // 'V' is also how ml_dtypes' bfloat16 shows itself; check it by name.
    std::string name = py::str(dt.attr("name"));
    if (name == "bfloat16") {
      *out = DType::BFloat16;
      return true;
    }
    return false;
  }
  std::string name = py::str(dt.attr("name"));
  return dtype_from_name(name, out);
}

DType dtype_from_py(py::handle obj, const char* op, const char* arg) {
  if (py::isinstance<DType>(obj)) return obj.cast<DType>();
  if (py::isinstance<py::str>(obj)) {
    DType d;
    if (dtype_from_name(obj.cast<std::string>(), &d)) return d;
  } else if (obj.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) {
    return DType::Bool;
  } else if (obj.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) {
    return DType::Int64;
  } else if (obj.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) {
    return DType::Float32;
  } else {
    try {
      py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
      DType d;
      if (dtype_from_numpy(dt, &d)) return d;
    } catch (const py::error_already_set&) {
    }
  }
  raise(ErrorKind::Type, std::string(op) + ": " + arg + "=" + std::string(py::repr(obj)) +
                             " is not a supported dtype; supported: " + supported_dtypes());
}

py::dtype numpy_dtype(DType dtype) {
  if (dtype == DType::BFloat16) {
    // Leaked on purpose: a static py::object would be released after the interpreter is gone.
    static py::handle bf16 = py::object(py::module_::import("ml_dtypes").attr("bfloat16")).release();
    return py::dtype::from_args(py::reinterpret_borrow<py::object>(bf16));
  }
  return py::dtype(dtype_name(dtype));
}

}  // namespace hwport
