// Python bindings of Tensor: the hot arithmetic path stays in C++ (pybind11), convenience
// methods are attached from Python (hwport/tensor.py).
#include <pybind11/stl.h>

#include <cstring>
#include <utility>

#include "bindings.h"
#include "autograd.h"
#include "decomp_formulas.h"
#include "formula_builtins.h"
#include "layers.h"
#include "dlpack.h"
#include "errors.h"
#include "ops.h"

namespace hwport {

namespace {

// The dtype a Python scalar takes next to a tensor of `dtype` (weak scalar typing, as in
// NEP 50 and PyTorch): it never widens the tensor's category's precision.
DType scalar_dtype(py::handle scalar, DType tensor_dtype, bool* ok) {
  *ok = true;
  if (PyBool_Check(scalar.ptr())) return tensor_dtype;
  if (PyLong_Check(scalar.ptr())) return tensor_dtype == DType::Bool ? DType::Int64 : tensor_dtype;
  if (PyFloat_Check(scalar.ptr())) return is_floating(tensor_dtype) ? tensor_dtype : DType::Float32;
  *ok = false;
  return tensor_dtype;
}

py::object binary_py(int op, const Tensor& self, py::handle other, bool reflected) {
  const bool operand = py::isinstance<Tensor>(other) || PyBool_Check(other.ptr()) ||
                       PyLong_Check(other.ptr()) || PyFloat_Check(other.ptr());
  if (operand && (layers::any_active() ||  // a layer (the profiler, autograd) sees the call
                  (layers::autograd_wanted() &&
                   (autograd::needs_grad(self) || autograd::needs_grad(other.ptr()))))) {
    py::object me = py::cast(self);
    const pipeline::OpSpec* spec = pipeline::op_spec(op_name(op).c_str());
    pipeline::BoundArgs a;
    a.count = spec->num_inputs + spec->num_attrs;
    a.slot[reflected ? 1 : 0] = me.ptr();
    a.slot[reflected ? 0 : 1] = other.ptr();
    PyObject* out = pipeline::call_op_entry(*spec, a);
    if (!out) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(out);
  }
  if (py::isinstance<Tensor>(other)) {
    const Tensor& o = other.cast<const Tensor&>();
    return py::cast(reflected ? binary(op, o, self) : binary(op, self, o));
  }
  bool ok = false;
  DType dt = scalar_dtype(other, self.dtype, &ok);
  if (!ok) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  // The scalar must fit the dtype it becomes (`int8_tensor + 1000` raises, as numpy 2 does).
  const AttrValue value = scalar_from_py(other, dt, op_name(op), reflected ? "x" : "y");
  Tensor scalar = full({}, value, dt, self.device());
  return py::cast(reflected ? binary(op, scalar, self) : binary(op, self, scalar));
}

py::tuple to_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (size_t i = 0; i < s.size(); ++i) t[i] = py::int_(s[i]);
  return t;
}

py::array to_numpy(const Tensor& t) {
  py::dtype dt = numpy_dtype(t.dtype);
  const uint64_t nbytes = tensor_nbytes(t.shape, t.dtype, "numpy");
  py::array out(dt, t.shape);
  if (nbytes == 0) return out;
  Device* dev = t.device();
  const Plugin& p = *dev->plugin;
  if (t.is_contiguous() || dev->plugin->kernels.find(core_ops().copy, t.dtype)) {
    Tensor c = contiguous(t);
    void* dst = out.mutable_data();
    py::gil_scoped_release nogil;
    p.check(p.memory.copy_d2h(dev->index, dst, c.storage->buffer(), c.byte_offset(), nbytes),
            "copy_d2h");
    return out;
  }
  // No copy kernel on this device: fetch the bytes the view spans, gather on the host.
  uint64_t lo = 0, hi = 0;
  t.byte_span(&lo, &hi);
  py::array_t<uint8_t> span(static_cast<py::ssize_t>(hi - lo));
  {
    void* dst = span.mutable_data();
    py::gil_scoped_release nogil;
    p.check(p.memory.copy_d2h(dev->index, dst, t.storage->buffer(), lo, hi - lo), "copy_d2h");
  }
  std::vector<py::ssize_t> byte_strides;
  for (int64_t s : t.strides) byte_strides.push_back(s * static_cast<py::ssize_t>(itemsize(t.dtype)));
  py::array view(dt, t.shape, byte_strides,
                 span.data() + (t.byte_offset() - lo), span);
  return py::module_::import("numpy").attr("ascontiguousarray")(view);
}

template <typename Managed>
void delete_unconsumed(PyObject* capsule, const char* name) {
  // Runs only if no consumer took the tensor (a consumer renames the capsule).
  if (PyCapsule_IsValid(capsule, name)) {
    auto* mt = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
    if (mt && mt->deleter) mt->deleter(mt);
  }
}

// The producer side of the DLPack protocol: a versioned (1.0) capsule when the consumer asks
// for one with max_version, the pre-1.0 capsule otherwise.
py::capsule dlpack_capsule(const Tensor& t, py::handle stream, py::handle max_version,
                           py::handle dl_device, py::handle copy) {
  // copy: True = always a copy, False = never, None = only if the requested device needs one.
  std::optional<bool> want_copy;
  if (!copy.is_none()) want_copy = copy.cast<bool>();
  Tensor src = t;
  const DLDevice own = dlpack_device_of(*t.device());
  if (!dl_device.is_none()) {
    auto dev = dl_device.cast<std::pair<int, int>>();
    Device* cpu = DeviceManager::instance().cpu();
    const bool other = dev.first != own.device_type || dev.second != own.device_id;
    if (other && dev.first == kDLCPU && dev.second == 0 && want_copy != false && cpu) {
      py::gil_scoped_release nogil;
      src = to_device(t, cpu);  // a host copy, as the consumer asked
      want_copy = false;
    } else if (other) {
      const Device& d = *t.device();
      raise(ErrorKind::Value, "__dlpack__: " + d.name + " can export only to " +
                                  (exchanges_memory(d) ? "its own DLPack device " + dlpack_device_str(own) +
                                                   " or "
                                             : std::string()) +
                                  "(1, 0) kDLCPU as a copy (copy=None or True), not to " +
                                  dlpack_device_str({dev.first, dev.second}) +
                                  (want_copy == false ? " with copy=False" : ""));
    }
  }
  if (want_copy == true) src = clone(t);  // GIL held: it allocates (see empty_cache)
  std::optional<int64_t> consumer_stream;
  if (!stream.is_none()) {
    if (!py::isinstance<py::int_>(stream))
      raise(ErrorKind::Type, "__dlpack__: stream must be an int or None, got " +
                                 std::string(py::str(py::type::of(stream))));
    consumer_stream = stream.cast<int64_t>();
  }
  bool versioned = false;
  if (!max_version.is_none()) versioned = max_version.cast<std::pair<int, int>>().first >= 1;
  if (versioned) {
    DLManagedTensorVersioned* managed;
    {
      py::gil_scoped_release nogil;
      managed = to_dlpack_versioned(src, consumer_stream);
    }
    return py::capsule(managed, "dltensor_versioned", [](PyObject* capsule) {
      delete_unconsumed<DLManagedTensorVersioned>(capsule, "dltensor_versioned");
    });
  }
  DLManagedTensor* managed;
  {
    py::gil_scoped_release nogil;
    managed = to_dlpack(src, consumer_stream);
  }
  return py::capsule(managed, "dltensor", [](PyObject* capsule) {
    delete_unconsumed<DLManagedTensor>(capsule, "dltensor");
  });
}

Tensor make_view(const Tensor& t, const Shape& shape, const Shape& strides, int64_t offset) {
  if (shape.size() != strides.size() || shape.size() > HWP_MAX_NDIM)
    raise(ErrorKind::Value, "_view: shape " + shape_str(shape) + " and strides " +
                                shape_str(strides) + " must have the same length (at most " +
                                std::to_string(HWP_MAX_NDIM) + ")");
  const std::string what = "_view";
  check_shape(shape, what);
  tensor_nbytes(shape, t.dtype, what);  // every tensor, a view too, fits the byte limit
  if (offset < 0)
    raise(ErrorKind::Value, "_view: offset must be >= 0, got " + std::to_string(offset));
  int64_t lo = 0, hi = 0;
  const bool empty = !view_extent(shape, strides, t.dtype, what, &lo, &hi);
  const int64_t capacity = static_cast<int64_t>(t.storage->nbytes() / itemsize(t.dtype));
  // offset + lo >= 0 and offset + hi < capacity, without forming either sum (it may overflow).
  if (!empty && (lo < -offset || hi >= capacity - offset))
    raise(ErrorKind::Value, "_view: shape " + shape_str(shape) + ", strides " +
                                shape_str(strides) + ", offset " + std::to_string(offset) +
                                " reach outside the storage of " + std::to_string(capacity) +
                                " elements");
  Tensor v;
  v.storage = t.storage;
  v.dtype = t.dtype;
  v.shape = shape;
  v.strides = strides;
  v.offset = offset;
  return v;
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::class_<Tensor>(m, "Tensor", "A strided view of device memory. Create with hwport.to_tensor.")
      // Tensor(other): the same data as a new tensor object (a Python subclass such as
      // nn's Parameter wraps an existing tensor this way); it needs no gradient.
      .def(py::init([](const Tensor& other) { return Tensor(other); }), py::arg("other"))
      .def_property_readonly("shape", [](const Tensor& t) { return to_tuple(t.shape); })
      .def_property_readonly("strides", [](const Tensor& t) { return to_tuple(t.strides); },
                             "Strides in elements.")
      .def_property_readonly("dtype", [](const Tensor& t) { return t.dtype; })
      .def_property_readonly("place", [](const Tensor& t) { return place_of(t.device()); })
      .def_property_readonly("ndim", [](const Tensor& t) { return t.ndim(); })
      .def_property_readonly("size", [](const Tensor& t) { return t.numel(); })
      .def_property_readonly("_offset", [](const Tensor& t) { return t.offset; },
                             "Element offset of the view into its storage.")
      .def("_view", &make_view, py::arg("shape"), py::arg("strides"), py::arg("offset"),
           "A view sharing this tensor's storage (strides and offset in elements).")
      .def("_shares_storage", [](const Tensor& a, const Tensor& b) {
        return a.storage == b.storage;
      }, py::arg("other"), "Whether the two tensors view the same memory.")
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("contiguous", [](py::object self) -> py::object {
             const Tensor& t = self.cast<const Tensor&>();
             if (layers::autograd_wanted() && autograd::needs_grad(self.ptr())) {
               // the copy op, so that autograd records it
               if (t.is_contiguous()) return self;
               py::object out = pipeline::formula::op_call("copy", {self.ptr()});
               if (!out) throw py::error_already_set();
               return out;
             }
             return py::cast(contiguous(t));
           })
      .def("numpy", &to_numpy, "A copy of the data as a numpy array (synchronizes).")
      .def("astype", [](const Tensor& t, py::handle dtype) {
             return cast(t, dtype_from_py(dtype, "astype", "dtype"));
           }, py::arg("dtype"))
      .def("to", [](py::object self, py::handle place) -> py::object {
             const Tensor& t = self.cast<const Tensor&>();
             Device* device = device_from_py(place);
             if (device == t.device()) return self;  // as torch: the tensor itself
             return autograd::record_device_copy(self, py::cast(to_device(t, device)));
           }, py::arg("place"))
      .def("__add__", [](const Tensor& a, py::handle b) { return binary_py(core_ops().add, a, b, false); })
      .def("__radd__", [](const Tensor& a, py::handle b) { return binary_py(core_ops().add, a, b, true); })
      .def("__mul__", [](const Tensor& a, py::handle b) { return binary_py(core_ops().multiply, a, b, false); })
      .def("__rmul__", [](const Tensor& a, py::handle b) { return binary_py(core_ops().multiply, a, b, true); })
      .def("__len__", [](const Tensor& t) {
             if (t.shape.empty()) raise(ErrorKind::Type, "len() of a 0-d tensor");
             return t.shape[0];
           })
      .def("__dlpack_device__", [](const Tensor& t) {
             const DLDevice d = dlpack_device_of(*t.device());
             return py::make_tuple(d.device_type, d.device_id);
           })
      .def("__dlpack__", &dlpack_capsule, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none());
}

Tensor tensor_from_numpy(py::array array, Device* device) {
  // Every numpy-to-device path passes here: devices take native byte order, C-contiguous
  // bytes, so a '>f8' array (or a strided one) is converted once, here, not copied raw.
  const bool native = array.dtype().attr("isnative").cast<bool>();
  if (!native || !(array.flags() & py::array::c_style))
    array = py::array(array.attr("astype")(array.dtype().attr("newbyteorder")("="),
                                           py::arg("order") = "C"));
  DType dtype;
  if (!dtype_from_numpy(array.dtype(), &dtype))
    raise(ErrorKind::Type, "to_tensor: numpy dtype " + std::string(py::str(array.dtype())) +
                               " is not supported; supported: " + supported_dtypes());
  Shape shape(array.shape(), array.shape() + array.ndim());
  Tensor t = Tensor::empty(shape, dtype, device);
  const uint64_t nbytes = tensor_nbytes(shape, dtype, "to_tensor");
  if (nbytes == 0) return t;
  const void* src = array.data();
  const Plugin& p = *device->plugin;
  py::gil_scoped_release nogil;
  p.check(p.memory.copy_h2d(device->index, t.storage->buffer(), t.byte_offset(), src, nbytes),
          "copy_h2d");
  return t;
}

Tensor tensor_from_dlpack(py::capsule capsule, Device* device) {
  const char* name = capsule.name();
  if (name && std::strcmp(name, "dltensor_versioned") == 0) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule.ptr(), "dltensor_versioned"));
    PyCapsule_SetName(capsule.ptr(), "used_dltensor_versioned");
    return from_dlpack(managed, device);
  }
  if (name && std::strcmp(name, "dltensor") == 0) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    return from_dlpack(managed, device);
  }
  raise(ErrorKind::Value, "from_dlpack: expected a 'dltensor' or 'dltensor_versioned' capsule, "
                          "got '" + std::string(name ? name : "(unnamed)") +
                          "' (a capsule can be consumed only once)");
}

}  // namespace hwport
