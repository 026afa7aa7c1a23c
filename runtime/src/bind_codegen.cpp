// _core's codegen API (codegen.h): codegen_target_info, codegen_compile, codegen_deserialize,
// CodegenModule, CodegenFunction, and hwport.runtime.CodegenCompileError (a RuntimeError whose
// `log` is the compiler's output).
#include <pybind11/stl.h>

#include <limits>

#include "bindings.h"
#include "codegen.h"

namespace hwport {

namespace {

// grid / group: an int or 1-3 ints, padded with 1.
void dims_from_py(py::handle v, const char* what, uint32_t out[3]) {
  out[0] = out[1] = out[2] = 1;
  std::vector<py::handle> items;
  if (py::isinstance<py::int_>(v)) {
    items.push_back(v);
  } else if (py::isinstance<py::sequence>(v) && !py::isinstance<py::str>(v)) {
    for (py::handle h : v.cast<py::sequence>()) items.push_back(h);
  } else {
    raise(ErrorKind::Type, std::string("launch: ") + what + " must be an int or 1-3 ints, got " +
                               std::string(py::str(py::type::handle_of(v).attr("__name__"))));
  }
  if (items.empty() || items.size() > 3)
    raise(ErrorKind::Value, std::string("launch: ") + what + " must have 1-3 entries, got " +
                                std::to_string(items.size()));
  for (size_t d = 0; d < items.size(); ++d) {
    if (py::isinstance<py::bool_>(items[d]) || !py::isinstance<py::int_>(items[d]))
      raise(ErrorKind::Type, std::string("launch: ") + what + "[" + std::to_string(d) +
                                 "] must be an int");
    const int64_t n = int64_from_py(items[d], "launch", what);
    if (n < 1 || n > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
      raise(ErrorKind::Value, std::string("launch: ") + what + "[" + std::to_string(d) + "] = " +
                                  std::to_string(n) + " is out of range [1, 2^32 - 1]");
    out[d] = static_cast<uint32_t>(n);
  }
}

py::object info_to_py(const CodegenTargetInfo& info) {
  py::dict d;
  d["dialects"] = info.dialects;
  d["architecture"] = info.architecture;
  d["flags"] = info.flags;
  d["is_simt"] = (info.flags & HWP_CODEGEN_SIMT) != 0;
  d["subgroup_shuffle"] = (info.flags & HWP_CODEGEN_SUBGROUP_SHUFFLE) != 0;
  d["float16"] = (info.flags & HWP_CODEGEN_FLOAT16) != 0;
  d["float64"] = (info.flags & HWP_CODEGEN_FLOAT64) != 0;
  d["serialize"] = (info.flags & HWP_CODEGEN_SERIALIZE) != 0;
  d["simd_width"] = info.simd_width;
  d["preferred_vector_width"] = info.preferred_vector_width;
  d["max_group_size"] = info.max_group_size;
  d["compute_units"] = info.compute_units;
  d["local_memory_bytes"] = info.local_memory_bytes;
  d["max_grid_size"] = info.max_grid_size;
  return std::move(d);
}

}  // namespace

std::vector<CodegenArg> codegen_args_from_py(const py::list& args) {
  std::vector<CodegenArg> out(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    py::handle a = args[i];
    CodegenArg& c = out[i];
    if (py::isinstance<Tensor>(a)) {
      c.kind = CodegenArg::Kind::Tensor;
      c.tensor = &a.cast<const Tensor&>();
    } else if (py::isinstance<py::int_>(a) && !py::isinstance<py::bool_>(a)) {
      c.kind = CodegenArg::Kind::Int64;
      c.i64 = int64_from_py(a, "launch", "args[" + std::to_string(i) + "]");
    } else if (py::isinstance<py::float_>(a)) {
      c.kind = CodegenArg::Kind::Float64;
      c.f64 = a.cast<double>();
    } else {
      raise(ErrorKind::Type, "launch: argument " + std::to_string(i) +
                                 " must be a hwport Tensor, an int or a float, got " +
                                 std::string(py::str(py::type::handle_of(a).attr("__name__"))));
    }
  }
  return out;
}

void bind_codegen(py::module_& m) {
  static py::exception<CodegenCompileError> compile_error(m, "CodegenCompileError",
                                                          PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CodegenCompileError& e) {
      py::object type = py::reinterpret_borrow<py::object>(compile_error.ptr());
      py::object exc = type(py::str(e.what()));
      exc.attr("log") = py::str(e.log());
      PyErr_SetObject(compile_error.ptr(), exc.ptr());
    }
  });

  py::class_<CodegenModule, std::shared_ptr<CodegenModule>>(
      m, "CodegenModule", "Kernels compiled through a plugin's codegen table (codegen.h).")
      .def("get_function", [](CodegenModule& mod, const std::string& name) {
             try {
               return mod.function(name);
             } catch (const Error& e) {
               if (e.kind() == ErrorKind::Index) throw py::key_error(e.what());
               throw;
             }
           }, py::arg("name"),
           "The kernel `name` (KeyError when the module has none).")
      .def("serialize", [](const CodegenModule& mod) -> py::object {
             std::optional<std::string> data = mod.serialize();
             if (!data) return py::none();
             return py::bytes(*data);
           }, "The compiled form (bytes), or None where the plugin cannot serialize.")
      .def_property_readonly("dialect", &CodegenModule::dialect)
      .def_property_readonly("place", [](const CodegenModule& mod) { return place_of(mod.device()); });

  py::class_<CodegenFunction, std::shared_ptr<CodegenFunction>>(
      m, "CodegenFunction", "One kernel of a CodegenModule (it keeps the module loaded).")
      .def("launch", [](const CodegenFunction& f, py::handle grid, py::handle group,
                        const py::list& args) {
             uint32_t g[3], b[3];
             dims_from_py(grid, "grid", g);
             dims_from_py(group, "group", b);
             f.launch(g, b, codegen_args_from_py(args));
           }, py::arg("grid"), py::arg("group"), py::arg("args"),
           "Enqueues one launch on the current stream: grid and group are 1-3 ints, args a "
           "list of Tensors (buffer + the byte offset of the view's first element), ints "
           "(int64) and floats (float64).")
      .def_property_readonly("name", &CodegenFunction::name)
      .def_property_readonly("module", &CodegenFunction::module)
      .def_property_readonly("place", [](const CodegenFunction& f) { return place_of(f.device()); })
      .def("__repr__", [](const CodegenFunction& f) {
             return "CodegenFunction(" + f.name() + ", " + f.module()->dialect() + ", " +
                    f.device()->name + ")";
           });

  m.def("codegen_target_info", [](py::handle place) -> py::object {
    std::optional<CodegenTargetInfo> info = codegen_target_info(device_from_py(place));
    if (!info) return py::none();
    return info_to_py(*info);
  }, py::arg("place"), "The place's codegen target as a dict, or None when it has none.");
  m.def("codegen_compile", [](py::handle place, const std::string& dialect,
                              const std::string& source, const std::string& options) {
    Device* device = device_from_py(place);
    py::gil_scoped_release nogil;
    return CodegenModule::compile(device, dialect, source, options);
  }, py::arg("place"), py::arg("dialect"), py::arg("source"), py::arg("options") = "",
     "Compiles `source` in `dialect` for the place (CodegenCompileError with .log when it "
     "does not compile).");
  m.def("codegen_deserialize", [](py::handle place, const std::string& dialect,
                                  const py::bytes& data) {
    Device* device = device_from_py(place);
    std::string bytes = data;
    py::gil_scoped_release nogil;
    return CodegenModule::deserialize(device, dialect, bytes);
  }, py::arg("place"), py::arg("dialect"), py::arg("data"),
     "A module from CodegenModule.serialize()'s bytes.");
}

}  // namespace hwport
