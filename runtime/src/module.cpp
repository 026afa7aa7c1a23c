// The pybind11 module hwport.runtime._core: plugin loading, places, devices, memory, tensors.
#include <pybind11/stl.h>

#include "allocator.h"
#include "bindings.h"
#include "dispatch.h"
#include "dlpack.h"
#include "errors.h"
#include "indexing_fast.h"
#include "ops.h"
#include "pipeline.h"

namespace hwport {
namespace {

py::dict memory_stats(py::handle place) {
  Device* d = device_from_py(place);
  AllocatorStats s = d->allocator->stats();
  py::dict out;
  out["allocated_bytes"] = s.allocated_bytes;
  out["requested_bytes"] = s.requested_bytes;
  out["reserved_bytes"] = s.reserved_bytes;
  out["peak_allocated_bytes"] = s.peak_allocated_bytes;
  out["peak_requested_bytes"] = s.peak_requested_bytes;
  out["peak_reserved_bytes"] = s.peak_reserved_bytes;
  out["num_allocs"] = s.num_allocs;
  out["num_frees"] = s.num_frees;
  out["num_device_allocs"] = s.num_device_allocs;
  out["num_device_frees"] = s.num_device_frees;
  out["num_cache_flushes"] = s.num_cache_flushes;
  out["num_ooms"] = s.num_ooms;
  out["active_blocks"] = s.active_blocks;
  out["cached_blocks"] = s.cached_blocks;
  out["pending_frees"] = s.pending_frees;
  const Plugin& p = *d->plugin;
  HWP_MemoryStats ms{};
  ms.struct_size = sizeof(ms);
  if (p.memory.get_memory_stats && p.memory.get_memory_stats(d->index, &ms) == HWP_OK) {
    out["device_bytes_in_use"] = ms.bytes_in_use;
    out["device_peak_bytes_in_use"] = ms.peak_bytes_in_use;
    out["device_bytes_limit"] = ms.bytes_limit;
    out["device_num_allocs"] = ms.num_allocs;
    out["device_num_frees"] = ms.num_frees;
  }
  return out;
}

py::dict properties(py::handle place) {
  Device* d = device_from_py(place);
  py::dict out;
  out["place"] = d->name;
  out["host_memory"] = d->host_memory;
  const Plugin& p = *d->plugin;
  HWP_DeviceProperties props{};
  props.struct_size = sizeof(props);
  if (p.device.get_properties && p.device.get_properties(d->index, &props) == HWP_OK) {
    props.name[sizeof(props.name) - 1] = '\0';
    props.vendor[sizeof(props.vendor) - 1] = '\0';
    props.driver_version[sizeof(props.driver_version) - 1] = '\0';
    out["name"] = std::string(props.name);
    out["vendor"] = std::string(props.vendor);
    out["driver_version"] = std::string(props.driver_version);
    out["total_memory"] = props.total_memory;
    out["memory_alignment"] = props.memory_alignment;
    out["compute_units"] = props.compute_units;
    out["max_work_group_size"] = props.max_work_group_size;
    // ABI 1.1 (a 1.0 plugin leaves them zero: the struct was zero-filled).
    props.architecture[sizeof(props.architecture) - 1] = '\0';
    out["max_allocation"] = props.max_allocation ? props.max_allocation : props.total_memory;
    out["architecture"] = std::string(props.architecture);
    out["architecture_version"] =
        py::make_tuple(props.architecture_major, props.architecture_minor);
    out["simd_width"] = props.simd_width > 0 ? props.simd_width : 1;
    out["max_threads_per_compute_unit"] = props.max_threads_per_compute_unit;
    out["float16_arithmetic"] = (props.flags & HWP_DEVICE_FLOAT16_ARITHMETIC) != 0;
    out["bfloat16_arithmetic"] = (props.flags & HWP_DEVICE_BFLOAT16_ARITHMETIC) != 0;
  }
  const DLDevice dl = dlpack_device_of(*d);
  out["dlpack_device"] = exchanges_memory(*d) ? py::object(py::make_tuple(dl.device_type, dl.device_id))
                                   : py::object(py::none());
  return out;
}

// The place whose memory other frameworks address as DLPack device (type, id).
std::string dlpack_place(int32_t type, int32_t id) {
  Device* d = DeviceManager::instance().find_dlpack(type, id);
  if (!d || !d->plugin->memory.wrap_device_memory) {
    std::string exchanging;
    for (const auto& dev : DeviceManager::instance().devices())
      if (dev->dlpack_type != 0)
        exchanging += (exchanging.empty() ? "" : ", ") + dev->name + " " +
                      dlpack_device_str(dlpack_device_of(*dev));
    raise(ErrorKind::Value,
          "from_dlpack: no device imports memory of DLPack device " +
              dlpack_device_str({type, id}) + (d ? " (" + d->name + "'s plugin has no "
                                                   "memory.wrap_device_memory)" : "") +
              "; devices that exchange device memory: " +
              (exchanging.empty() ? "none" : exchanging) +
              "; available places: " + DeviceManager::instance().available_places());
  }
  return d->name;
}

// DLPack's `stream` for a producer handing memory to `place`: the native handle of the place's
// current stream, or None when the plugin has none to give.
py::object dlpack_stream(py::handle place) {
  Device* d = device_from_py(place);
  const Plugin& p = *d->plugin;
  if (!p.stream.native_stream) return py::none();
  uintptr_t handle = 0;
  p.check(p.stream.native_stream(d->index, d->current_stream(), &handle), "native_stream");
  return py::int_(handle);
}

// The optional functions and tables a plugin provides (NULL ones are left out), by ABI name.
py::list optional_parts(const Plugin& p) {
  py::list out;
  auto add = [&out](bool present, const char* name) {
    if (present) out.append(name);
  };
  add(p.device.get_properties, "device.get_properties");
  add(p.device.init_device, "device.init_device");
  add(p.device.set_device, "device.set_device");
  add(p.memory.copy_h2d_async && p.memory.copy_d2h_async && p.memory.copy_d2d_async,
      "memory.async_copies");
  add(p.memory.memset_async, "memory.memset_async");
  add(p.memory.get_memory_stats, "memory.get_memory_stats");
  add(p.memory.host_address, "memory.host_address");
  add(p.memory.wrap_host_memory, "memory.wrap_host_memory");
  add(p.memory.device_address, "memory.device_address");
  add(p.memory.wrap_device_memory, "memory.wrap_device_memory");
  add(p.has_streams, "stream");
  add(p.has_streams && p.stream.query_stream, "stream.query_stream");
  add(p.has_streams && p.stream.query_event, "stream.query_event");
  add(p.stream.native_stream, "stream.native_stream");
  add(p.stream.native_stream_wait, "stream.native_stream_wait");
  add(p.has_ccl, "ccl");
  add(p.has_codegen, "codegen");
  add(p.has_profiler, "profiler");
  return out;
}

py::list plugins() {
  py::list out;
  for (const auto& p : DeviceManager::instance().plugins()) {
    py::dict d;
    d["device_type"] = p->device_type;
    d["path"] = p->path;
    d["abi_version"] = std::to_string(p->abi_major) + "." + std::to_string(p->abi_minor);
    d["plugin_version"] = p->plugin_version;
    d["device_count"] = p->device_count;
    d["device_count_note"] = p->device_count_note;
    d["num_kernels"] = p->kernels.size();
    d["native_kernels_disabled"] = p->native_kernels_disabled;
    d["has_codegen_target"] = p->has_codegen_target;
    d["has_streams"] = p->has_streams;
    d["optional"] = optional_parts(*p);
    out.append(d);
  }
  return out;
}

AttrValue attr_from_py(const std::string& op, const std::string& name, py::handle v) {
  AttrValue a;
  if (PyBool_Check(v.ptr())) return AttrValue::of_bool(v.ptr() == Py_True);
  if (PyLong_Check(v.ptr())) return AttrValue::of_int(int64_from_py(v, op, name));
  if (PyFloat_Check(v.ptr())) return AttrValue::of_float(PyFloat_AsDouble(v.ptr()));
  if (py::isinstance<py::str>(v)) {
    a.type = HWP_ATTR_STRING;
    a.s = v.cast<std::string>();
    return a;
  }
  if (py::isinstance<DType>(v)) {
    a.type = HWP_ATTR_DTYPE;
    a.i = static_cast<int64_t>(v.cast<DType>());
    return a;
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
    bool all_int = true;
    size_t i = 0;
    for (py::handle item : seq) {
      if (!PyLong_Check(item.ptr()) && !PyFloat_Check(item.ptr()))
        raise(ErrorKind::Type, op + ": " + name + "[" + std::to_string(i) +
                                   "] expected an int or a float, got " +
                                   std::string(py::str(py::type::of(item).attr("__name__"))));
      all_int &= PyLong_Check(item.ptr()) != 0;
      ++i;
    }
    i = 0;
    a.type = all_int ? HWP_ATTR_INT64_ARRAY : HWP_ATTR_FLOAT64_ARRAY;
    for (py::handle item : seq) {
      const std::string at = name + "[" + std::to_string(i++) + "]";
      if (all_int) {
        a.ints.push_back(int64_from_py(item, op, at));
      } else {
        const AttrValue v = scalar_from_py(item, DType::Float64, op, at);
        a.floats.push_back(v.type == HWP_ATTR_FLOAT64 ? v.f : static_cast<double>(v.i));
      }
    }
    return a;
  }
  raise(ErrorKind::Type, op + ": attribute " + name + " of type " +
                             std::string(py::str(py::type::of(v).attr("__name__"))) +
                             " cannot cross the kernel ABI");
}

void launch_py(const std::string& op, py::handle dtype, const std::vector<Tensor*>& inputs,
               const std::vector<Tensor*>& outputs, const py::dict& attrs) {
  if (outputs.empty() && inputs.empty())
    raise(ErrorKind::Value, op + ": launch needs at least one tensor");
  Device* device = outputs.empty() ? inputs[0]->device() : outputs[0]->device();
  for (const Tensor* t : inputs)
    if (t->device() != device)
      raise(ErrorKind::Value, op + ": inputs are on " + t->device()->name + " and " +
                                  device->name + "; move them to one place first");
  Attrs converted;
  for (auto item : attrs) {
    if (item.second.is_none()) continue;
    std::string name = py::str(item.first);
    converted.emplace_back(name, attr_from_py(op, name, item.second));
  }
  std::vector<const Tensor*> in(inputs.begin(), inputs.end());
  run_kernel(op_id(op), dtype_from_py(dtype, op.c_str(), "dtype"), device, in.data(),
             static_cast<int>(in.size()), outputs.data(), static_cast<int>(outputs.size()),
             converted);
}

void register_exceptions(py::module_& m) {
  // A MemoryError (as PyTorch's and numpy's are), so generic handlers catch it; still a
  // RuntimeError, as before.
  static py::exception<Error> oom(
      m, "OutOfMemoryError",
      py::make_tuple(py::handle(PyExc_RuntimeError), py::handle(PyExc_MemoryError)));
  static py::exception<Error> fallback(m, "FallbackError", PyExc_RuntimeError);
  static py::exception<Error> unsupported(m, "NotSupportedError", PyExc_NotImplementedError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      switch (e.kind()) {
        case ErrorKind::Value: PyErr_SetString(PyExc_ValueError, e.what()); return;
        case ErrorKind::Type: PyErr_SetString(PyExc_TypeError, e.what()); return;
        case ErrorKind::Index: PyErr_SetString(PyExc_IndexError, e.what()); return;
        case ErrorKind::OutOfMemory: PyErr_SetString(oom.ptr(), e.what()); return;
        case ErrorKind::Fallback: PyErr_SetString(fallback.ptr(), e.what()); return;
        case ErrorKind::NotSupported: PyErr_SetString(unsupported.ptr(), e.what()); return;
        case ErrorKind::Runtime: PyErr_SetString(PyExc_RuntimeError, e.what()); return;
      }
    }
  });
}

}  // namespace

AttrValue attr_value_from_py(const std::string& op, const std::string& name, py::handle v) {
  return attr_from_py(op, name, v);
}

}  // namespace hwport

PYBIND11_MODULE(_core, m) {
  using namespace hwport;
  m.doc() = "hwport runtime core: plugin loader, devices, caching allocator, dispatch.";
  register_exceptions(m);

  auto dtype = py::enum_<DType>(m, "DType");
  for (int i = 0; i < kNumDTypes; ++i)
    dtype.value(dtype_name(static_cast<DType>(i)), static_cast<DType>(i));
  dtype.def("__str__", [](DType d) { return std::string(dtype_name(d)); })
      .def_property_readonly("itemsize", [](DType d) { return itemsize(d); })
      .def_property_readonly("is_floating_point", [](DType d) { return is_floating(d); })
      .def("to_numpy", [](DType d) { return numpy_dtype(d); });

  py::class_<Place>(m, "Place", "A device: custom:<device_type>:<index>.")
      .def(py::init([](std::string device_type, int64_t index) {
             Device* d = DeviceManager::instance().find(device_type, index);
             return place_of(d);
           }), py::arg("device_type"), py::arg("index") = 0)
      .def_readonly("device_type", &Place::device_type)
      .def_readonly("index", &Place::index)
      .def("__str__", &Place::str)
      .def("__repr__", [](const Place& p) { return "Place(" + p.str() + ")"; })
      .def("__eq__", [](const Place& p, py::handle other) {
             if (py::isinstance<Place>(other)) {
               const Place& o = other.cast<const Place&>();
               return p.device_type == o.device_type && p.index == o.index;
             }
             if (py::isinstance<py::str>(other)) {
               try {
                 return device_from_py(other) == DeviceManager::instance().find(p.device_type, p.index);
               } catch (const Error&) {
                 return false;
               }
             }
             return false;
           })
      .def("__hash__", [](const Place& p) { return std::hash<std::string>()(p.str()); });

  bind_tensor(m);
  bind_streams(m);
  bind_layers(m);
  bind_executor(m);
  bind_autograd(m);
  bind_codegen(m);
  bind_jit(m);
  bind_ccl(m);

  m.def("load_plugins", [](const std::vector<std::pair<std::string, bool>>& candidates,
                           const std::string& probe_exe, double probe_timeout_s) {
    std::vector<DeviceManager::Candidate> list;
    for (const auto& c : candidates) list.push_back({c.first, c.second});
    py::gil_scoped_release nogil;
    DeviceManager::instance().load_plugins(list, probe_exe, probe_timeout_s);
  }, py::arg("candidates"), py::arg("probe_exe") = "", py::arg("probe_timeout_s") = 30.0,
     "Loads plugins; (path, probe) pairs, probe = run its init in a throwaway process first.");
  m.def("plugins", &plugins);
  m.def("plugin_errors", []() {
    py::list out;
    for (const auto& e : DeviceManager::instance().errors()) {
      py::dict d;
      d["path"] = e.path;
      d["reason"] = e.reason;
      out.append(d);
    }
    return out;
  });
  m.def("plugin_log", []() {
    py::list out;
    for (const auto& e : plugin_log())
      out.append(py::make_tuple(e.device_type, e.level, e.message));
    return out;
  });
  m.def("fallback_stats", []() {
    py::dict out;
    for (const auto& kv : fallback_stats())
      out[py::make_tuple(std::get<0>(kv.first), std::get<1>(kv.first), std::get<2>(kv.first))] =
          kv.second;
    return out;
  });
  m.def("reset_fallback_stats", &reset_fallback_stats);
  m.def("set_fallback_mode", [](const std::string& mode) {
    if (mode != "allow" && mode != "error")
      raise(ErrorKind::Value, "fallback mode must be 'allow' or 'error', got '" + mode + "'");
    set_fallback_mode(mode == "error" ? FallbackMode::Error : FallbackMode::Allow);
  });
  m.def("fallback_mode", []() { return fallback_mode() == FallbackMode::Error ? "error" : "allow"; });
  m.def("places", []() {
    py::list out;
    for (const auto& d : DeviceManager::instance().devices()) out.append(place_of(d.get()));
    return out;
  });
  m.def("resolve_place", [](py::handle place) { return place_of(device_from_py(place)); },
        py::arg("place"));
  m.def("set_device", [](py::handle place) {
    Device* d = device_from_py(place);
    DeviceManager::instance().set_current(d);
    return place_of(d);
  }, py::arg("place"));
  m.def("get_device", []() { return place_of(DeviceManager::instance().current()); });
  m.def("memory_stats", &memory_stats, py::arg("place") = py::none());
  m.def("reset_peak_memory_stats", [](py::handle place) {
    device_from_py(place)->allocator->reset_peak();
  }, py::arg("place") = py::none());
  m.def("empty_cache", [](py::handle place) {
    // With the GIL held: the allocator calls the plugin under its mutex, and a plugin written
    // in Python (device_plugins/python) takes the GIL there; released, a thread holding the
    // GIL and waiting for the allocator's mutex would deadlock with it.
    device_from_py(place)->allocator->empty_cache();
  }, py::arg("place") = py::none());
  m.def("synchronize", [](py::handle place) {
    Device* d = device_from_py(place);
    py::gil_scoped_release nogil;
    d->synchronize();
  }, py::arg("place") = py::none());
  m.def("device_properties", &properties, py::arg("place") = py::none());
  m.def("from_numpy", [](py::array array, py::handle place) {
    return tensor_from_numpy(array, device_from_py(place));
  }, py::arg("array"), py::arg("place") = py::none());
  m.def("from_dlpack_capsule", [](py::capsule capsule, py::handle place) {
    return tensor_from_dlpack(capsule, device_from_py(place));
  }, py::arg("capsule"), py::arg("place") = py::none());
  m.def("full", [](const std::vector<int64_t>& shape, py::handle value, py::handle dtype,
                   py::handle place) {
    DType dt = dtype_from_py(dtype, "full", "dtype");
    return full(shape, scalar_from_py(value, dt, "full", "value"), dt, device_from_py(place));
  }, py::arg("shape"), py::arg("value"), py::arg("dtype"), py::arg("place") = py::none());
  m.def("empty", [](const std::vector<int64_t>& shape, py::handle dtype, py::handle place,
                    const std::string& op) {
    return Tensor::empty(shape, dtype_from_py(dtype, op.c_str(), "dtype"), device_from_py(place),
                         op.c_str());
  }, py::arg("shape"), py::arg("dtype"), py::arg("place") = py::none(), py::arg("op") = "empty",
     "Uninitialized contiguous memory; size errors name `op` (the op asking for it).");
  m.def("has_kernel", [](const std::string& op, py::handle place, py::handle dtype) {
    Device* d = device_from_py(place);
    return d->plugin->kernels.find(op_id(op), dtype_from_py(dtype, "has_kernel", "dtype")) !=
           nullptr;
  }, py::arg("op"), py::arg("place"), py::arg("dtype"));
  m.def("launch", &launch_py, py::arg("op"), py::arg("dtype"), py::arg("inputs"),
        py::arg("outputs"), py::arg("attrs"),
        "Runs `op` keyed by `dtype` on the outputs' device: its kernel, else the CPU fallback.");
  m.def("parse_dtype", [](py::handle dtype, const std::string& op, const std::string& arg) {
    return dtype_from_py(dtype, op.c_str(), arg.c_str());
  }, py::arg("dtype"), py::arg("op") = "dtype", py::arg("arg") = "dtype");
  m.def("is_host_memory", [](py::handle place) { return device_from_py(place)->host_memory; },
        py::arg("place") = py::none());
  m.def("dlpack_place", &dlpack_place, py::arg("device_type"), py::arg("device_id"));
  m.def("dlpack_stream", &dlpack_stream, py::arg("place"));
  m.def("shutdown", []() {
    py::gil_scoped_release nogil;
    DeviceManager::instance().shutdown();
  });
  // A thread holding the GIL waits for an allocator's mutex without it (allocator.h).
  set_allocator_lock_waiter([](std::mutex& mutex) {
    if (!PyGILState_Check()) return mutex.lock();
    py::gil_scoped_release nogil;
    mutex.lock();
  });
  pipeline::register_pipeline(m);  // after `empty`, the default output allocator
  register_indexing(m);
  m.attr("ABI_VERSION") = py::make_tuple(HWP_ABI_VERSION_MAJOR, HWP_ABI_VERSION_MINOR);
}
