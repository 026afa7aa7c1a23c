// Stream and Event objects for Python, with the plugin's semantics; on plugins without a
// stream table they degrade to the implicit in-order stream and device synchronization.
#include <memory>

#include "bindings.h"
#include "errors.h"

namespace hwport {

namespace {

// A Python Stream shares its stream's handle with the threads that made it current and with
// the events recorded on it; the last of them destroys the stream (StreamHandle).
struct StreamObject {
  StreamRef handle;
  Device* device() const { return handle->device(); }
  HWP_Stream stream() const { return handle->get(); }
};

struct EventObject {
  Device* device = nullptr;
  HWP_Event event = nullptr;
  // The stream of the last record: it outlives the event, whatever the plugin's events need.
  StreamRef recorded_on;
  ~EventObject() {
    if (event) device->plugin->stream.destroy_event(device->index, event);
  }
};

std::shared_ptr<StreamObject> new_stream(py::handle place) {
  auto s = std::make_shared<StreamObject>();
  s->handle = device_from_py(place)->create_stream();
  return s;
}

std::shared_ptr<StreamObject> current(py::handle place) {
  auto s = std::make_shared<StreamObject>();
  s->handle = device_from_py(place)->current_stream_ref();
  return s;
}

std::shared_ptr<EventObject> new_event(py::handle place) {
  auto e = std::make_shared<EventObject>();
  e->device = device_from_py(place);
  e->device->ensure_initialized();
  const Plugin& p = *e->device->plugin;
  if (p.has_streams) p.check(p.stream.create_event(e->device->index, &e->event), "create_event");
  return e;
}

void record(EventObject& e, const StreamObject* s) {
  Device* d = e.device;
  if (s && s->device() != d)
    raise(ErrorKind::Value, "Event.record: the event is on " + d->name +
                                " but the stream is on " + s->device()->name);
  StreamRef stream = s ? s->handle : d->current_stream_ref();
  if (!e.event) return;  // no streams: synchronize() does the work
  {
    py::gil_scoped_release nogil;
    d->plugin->check(d->plugin->stream.record_event(d->index, stream->get(), e.event),
                     "record_event");
  }
  e.recorded_on = std::move(stream);  // may release the previous stream (with the GIL held)
}

}  // namespace

void bind_streams(py::module_& m) {
  py::class_<StreamObject, std::shared_ptr<StreamObject>>(m, "Stream",
      "An in-order queue of device work. Stream(place=None) creates a new one.")
      .def(py::init(&new_stream), py::arg("place") = py::none())
      .def_property_readonly("place", [](const StreamObject& s) { return place_of(s.device()); })
      .def("synchronize", [](const StreamObject& s) {
             py::gil_scoped_release nogil;
             s.device()->synchronize_stream(s.stream());
           })
      .def("query", [](const StreamObject& s) {
             const Plugin& p = *s.device()->plugin;
             if (!s.stream() || !p.stream.query_stream) {
               py::gil_scoped_release nogil;
               s.device()->synchronize_stream(s.stream());
               return true;
             }
             HWP_Status st = p.stream.query_stream(s.device()->index, s.stream());
             if (st == HWP_ERROR_NOT_READY) return false;
             p.check(st, "query_stream");
             return true;
           }, "True when all work submitted so far has completed.")
      .def("wait_event", [](const StreamObject& s, const EventObject& e) {
             if (e.device != s.device())
               raise(ErrorKind::Value, "Stream.wait_event: stream on " + s.device()->name +
                                           ", event on " + e.device->name);
             const Plugin& p = *s.device()->plugin;
             if (!e.event || !s.stream()) {
               py::gil_scoped_release nogil;
               s.device()->synchronize();
               return;
             }
             p.check(p.stream.stream_wait_event(s.device()->index, s.stream(), e.event),
                     "stream_wait_event");
           }, py::arg("event"))
      .def("record_event", [](const std::shared_ptr<StreamObject>& s, py::object event) {
             std::shared_ptr<EventObject> e = event.is_none()
                                                  ? new_event(py::str(place_of(s->device()).str()))
                                                  : event.cast<std::shared_ptr<EventObject>>();
             record(*e, s.get());
             return e;
           }, py::arg("event") = py::none())
      .def("__eq__", [](const StreamObject& a, const StreamObject& b) {
             return a.device() == b.device() && a.stream() == b.stream();
           })
      .def("__hash__", [](const StreamObject& s) {
             return std::hash<const void*>()(s.stream()) ^
                    static_cast<size_t>(s.device()->global_id);
           })
      .def("__repr__", [](const StreamObject& s) {
             return "Stream(place=" + s.device()->name + (s.handle->owned() ? ")" : ", current)");
           });

  py::class_<EventObject, std::shared_ptr<EventObject>>(m, "Event",
      "Marks a point in a stream's work. Event(place=None).")
      .def(py::init(&new_event), py::arg("place") = py::none())
      .def("record", [](EventObject& e, const StreamObject* s) { record(e, s); },
           py::arg("stream") = nullptr)
      .def("synchronize", [](const EventObject& e) {
             py::gil_scoped_release nogil;
             const Plugin& p = *e.device->plugin;
             if (!e.event) {
               e.device->synchronize();
               return;
             }
             p.check(p.stream.synchronize_event(e.device->index, e.event), "synchronize_event");
           })
      .def("query", [](const EventObject& e) {
             const Plugin& p = *e.device->plugin;
             if (!e.event) {
               py::gil_scoped_release nogil;
               e.device->synchronize();
               return true;
             }
             HWP_Status st = p.stream.query_event(e.device->index, e.event);
             if (st == HWP_ERROR_NOT_READY) return false;
             p.check(st, "query_event");
             return true;
           });

  m.def("current_stream", &current, py::arg("place") = py::none());
  m.def("set_current_stream",
        [](const StreamObject& s) { s.device()->set_current_stream(s.handle); },
        py::arg("stream"));
}

}  // namespace hwport
