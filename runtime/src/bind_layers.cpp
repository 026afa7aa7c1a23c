// The pipeline's layers for Python (layers.h): registration, per-thread activation, the OpCall
// record, and the trampoline that lets a Python object be a layer (its on_call(call, next) is
// called for every op call while it is active on the thread).
#include <pybind11/stl.h>

#include "bindings.h"
#include "device_profiler.h"
#include "errors.h"
#include "layers.h"

namespace hwport {

namespace {

using layers::Next;
using layers::OpCall;

// A Python object as a layer; on_call is looked up once, at registration.
class PyLayer final : public layers::Layer {
 public:
  explicit PyLayer(py::object obj) : obj_(std::move(obj)), on_call_(obj_.attr("on_call")) {}
  py::object on_call(const std::shared_ptr<OpCall>& call, const Next& next) override {
    return on_call_(call, next);
  }
  const py::object& object() const { return obj_; }

 private:
  py::object obj_;
  py::object on_call_;
};

// A C++ layer that counts the calls it sees and continues them: what a C++ layer (autograd's)
// pays for the hop, for tests and benchmarks/bench_layers.py.
class PassthroughLayer final : public layers::Layer {
 public:
  py::object on_call(const std::shared_ptr<OpCall>& call, const Next& next) override {
    ++calls;
    return next(call);
  }
  static inline uint64_t calls = 0;  // under the GIL
};

// Clears the thread's bit for the slot while it lives (a layer's own calls skip it).
struct SuspendScope {
  layers::Bit slot;
  std::unique_ptr<layers::Suspend> active;
};

// The one check the pipeline's Python entry makes per call: a plain C function (no argument
// parsing), so an inactive pipeline costs about what a global lookup does.
PyObject* layers_active(PyObject*, PyObject*) {
  // The autograd step counts: the Python path then runs the layers, which record the call.
  return PyBool_FromLong(layers::any_active() || layers::autograd_wanted() ? 1 : 0);
}
PyMethodDef layers_active_def = {"layers_active", layers_active, METH_NOARGS,
                                 "True when some pipeline layer is active on this thread."};

}  // namespace

void bind_layers(py::module_& m) {
  py::class_<OpCall, std::shared_ptr<OpCall>>(m, "OpCall",
      "One op call as the pipeline's layers see it (after infer-meta, before kernel "
      "selection); kernel selection fills `path`.")
      .def(py::init([](std::string op, py::list inputs, py::dict attrs, py::object place,
                       std::string dtype) {
             auto c = std::make_shared<OpCall>();
             c->op = std::move(op);
             c->set_inputs(std::move(inputs));
             c->set_attrs(std::move(attrs));
             c->set_place(std::move(place));
             c->dtype = std::move(dtype);
             return c;
           }), py::arg("op"), py::arg("inputs"), py::arg("attrs"), py::arg("place"),
           py::arg("dtype"))
      .def_readwrite("op", &OpCall::op)
      .def_property("inputs", [](OpCall& c) { return c.inputs(); },
                    [](OpCall& c, py::list v) { c.set_inputs(std::move(v)); })
      .def_property("attrs", [](OpCall& c) { return c.attrs(); },
                    [](OpCall& c, py::dict attrs) { c.set_attrs(std::move(attrs)); })
      .def_property("place", [](OpCall& c) { return c.place(); },
                    [](OpCall& c, py::object v) { c.set_place(std::move(v)); })
      .def_readwrite("dtype", &OpCall::dtype)
      .def_readwrite("path", &OpCall::path)
      .def_readonly("correlation_id", &OpCall::correlation_id,
                    "The id the launches of this call carry to plugins that time device work "
                    "(given as the profiler layer takes the call; 0 before).")
      .def("__repr__", [](const OpCall& c) {
        return "OpCall(" + c.op + ", dtype=" + c.dtype +
               (c.path.empty() ? "" : ", path=" + c.path) + ")";
      });

  // Both release the GIL: they call plugins, and a Python plugin takes it on its own threads.
  m.def("device_profiler_start", &device_profiler::start_session,
        py::call_guard<py::gil_scoped_release>(),
        "Opens a device-timing session; returns the places whose plugins time device work.");
  m.def("device_profiler_stop", []() {
        std::vector<device_profiler::Span> spans;
        {
          py::gil_scoped_release release;
          spans = device_profiler::stop_session();
        }
        py::list out;
        for (const auto& s : spans)
          out.append(py::make_tuple(s.correlation_id, s.device, s.name, s.begin_ns, s.end_ns));
        return out;
      }, "Closes a session; returns (correlation_id, place, name, begin_ns, end_ns) per span "
         "reported since timing began (CLOCK_MONOTONIC, time.perf_counter_ns's clock).");

  py::class_<Next>(m, "LayerNext", "The rest of the pipeline after a layer: call it with the "
                                   "OpCall to continue the call.")
      .def("__call__", &Next::operator(), py::arg("call"));

  m.def("register_layer", [](const std::string& name, py::object layer) {
    const layers::Bit slot = layers::slot_of(name);
    if (layer.is_none()) {
      layers::register_layer(slot, nullptr);
      return;
    }
    if (!py::hasattr(layer, "on_call") || !PyCallable_Check(layer.attr("on_call").ptr()))
      raise(ErrorKind::Type, "register_layer: the " + name + " layer must have a callable "
                             "on_call(call, next), got " +
                             std::string(py::str(py::type::of(layer).attr("__name__"))));
    layers::register_layer(slot, std::make_shared<PyLayer>(std::move(layer)));
  }, py::arg("name"), py::arg("layer"),
     "Registers a Python object as the pipeline layer `name` (None unregisters).");
  m.def("register_passthrough_layer", [](const std::string& name) {
    layers::register_layer(layers::slot_of(name), std::make_shared<PassthroughLayer>());
  }, py::arg("name"), "Test/benchmark hook: registers a C++ layer as `name` that counts the "
     "calls it sees (passthrough_layer_calls()) and continues them.");
  m.def("passthrough_layer_calls", []() { return PassthroughLayer::calls; });
  m.def("registered_layer", [](const std::string& name) -> py::object {
    auto layer = layers::registered(layers::slot_of(name));
    if (auto* py_layer = dynamic_cast<PyLayer*>(layer.get())) return py_layer->object();
    if (layer) return py::str("<C++ layer>");
    return py::none();
  }, py::arg("name"));
  m.def("layer_enter", [](const std::string& name) { layers::enter(layers::slot_of(name)); },
        py::arg("name"), "Activates the layer on this thread (nestable).");
  m.def("layer_leave", [](const std::string& name) { layers::leave(layers::slot_of(name)); },
        py::arg("name"), "Undoes one layer_enter on this thread.");
  m.def("layer_mask", []() { return layers::active_mask; },
        "This thread's active layers, a bit per layer (layer_bits()).");
  m.def("layer_bits", []() {
    py::dict out;
    for (layers::Bit b : layers::kOrder) out[layers::name_of(b)] = static_cast<uint32_t>(b);
    return out;
  });
  m.def("layer_order", []() {
    py::list out;
    for (layers::Bit b : layers::kOrder) out.append(layers::name_of(b));
    return out;
  }, "The layers' names, outermost first.");
  m.def("run_layers", &layers::run_py, py::arg("call"), py::arg("inner"),
        "Runs `call` through this thread's active layers, then inner(call).");
  m.add_object("layers_active",
               py::reinterpret_steal<py::object>(
                   PyCFunction_NewEx(&layers_active_def, nullptr, m.attr("__name__").ptr())));

  py::class_<SuspendScope>(m, "suspend_layer",
      "with suspend_layer(name): the layer is inactive on this thread inside (restored after).")
      .def(py::init([](const std::string& name) {
             return SuspendScope{layers::slot_of(name), nullptr};
           }), py::arg("name"))
      .def("__enter__", [](SuspendScope& s) {
        s.active = std::make_unique<layers::Suspend>(s.slot);
      })
      .def("__exit__", [](SuspendScope& s, py::args) {
        s.active.reset();
        return false;
      });

  // The registrations hold Python objects: drop them while the interpreter still runs.
  py::module_::import("atexit").attr("register")(py::cpp_function([]() {
    for (layers::Bit b : layers::kOrder) layers::register_layer(b, nullptr);
  }));
}

}  // namespace hwport
