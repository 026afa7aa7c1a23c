#include "py_convert.h"

#include <limits>

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

namespace {

std::string repr_of(py::handle v) {
  std::string r = py::repr(v);
  return r.size() > 60 ? r.substr(0, 57) + "..." : r;
}

// The range of an integer dtype; false for bool and float dtypes.
bool int_range(DType d, int64_t* lo, int64_t* hi) {
  switch (d) {
    case DType::Int8: *lo = -128; *hi = 127; return true;
    case DType::UInt8: *lo = 0; *hi = 255; return true;
    case DType::Int16: *lo = -32768; *hi = 32767; return true;
    case DType::Int32: *lo = std::numeric_limits<int32_t>::min();
      *hi = std::numeric_limits<int32_t>::max(); return true;
    case DType::Int64: *lo = std::numeric_limits<int64_t>::min();
      *hi = std::numeric_limits<int64_t>::max(); return true;
    default: return false;
  }
}

[[noreturn]] void raise_unfit(py::handle v, DType d, const std::string& op,
                              const std::string& arg) {
  int64_t lo = 0, hi = 0;
  int_range(d, &lo, &hi);
  raise(ErrorKind::Value, op + ": " + arg + "=" + repr_of(v) + " does not fit in " +
                              dtype_name(d) + " (range [" + std::to_string(lo) + ", " +
                              std::to_string(hi) + "])");
}

}  // namespace

int64_t int64_from_py(py::handle v, const std::string& op, const std::string& arg) {
  if (!PyLong_Check(v.ptr()))
    raise(ErrorKind::Type, op + ": " + arg + " expected an int, got " +
                               std::string(py::str(py::type::of(v).attr("__name__"))) + " " +
                               repr_of(v));
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow || (x == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    raise_unfit(v, DType::Int64, op, arg);
  }
  return static_cast<int64_t>(x);
}

AttrValue scalar_from_py(py::handle v, DType dtype, const std::string& op,
                         const std::string& arg) {
  py::object value = py::reinterpret_borrow<py::object>(v);
  if (py::hasattr(value, "item") && !PyBool_Check(v.ptr()) && !PyLong_Check(v.ptr()) &&
      !PyFloat_Check(v.ptr()))
    value = value.attr("item")();  // a numpy scalar
  PyObject* o = value.ptr();
  int64_t lo = 0, hi = 0;
  const bool integer = int_range(dtype, &lo, &hi);
  if (PyBool_Check(o)) return AttrValue::of_bool(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      if (integer) raise_unfit(value, dtype, op, arg);
      if (dtype == DType::Bool) return AttrValue::of_bool(true);  // nonzero
      const double f = PyLong_AsDouble(o);  // beyond int64: the nearest double
      if (f == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        raise(ErrorKind::Value, op + ": " + arg + "=" + repr_of(value) +
                                    " is too large for any float dtype");
      }
      return AttrValue::of_float(f);
    }
    if (integer && (x < lo || x > hi)) raise_unfit(value, dtype, op, arg);
    return AttrValue::of_int(x);
  }
  if (PyFloat_Check(o)) {
    // A float for an integer dtype: the kernel converts it (fill/pad values are converted
    // as `cast` does on the host first: phi_ops.promotion.scalar_for_dtype).
    return AttrValue::of_float(PyFloat_AsDouble(o));
  }
  raise(ErrorKind::Type, op + ": " + arg + " expected a number (bool, int or float), got " +
                             std::string(py::str(py::type::of(value).attr("__name__"))) + " " +
                             repr_of(value));
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
