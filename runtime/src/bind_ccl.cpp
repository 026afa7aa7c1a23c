// Collectives for Python (`hwport.distributed` builds on these): adapters, unique ids,
// communicators over Tensors, the MPI bootstrap, traffic counters. Calls that wait for peers
// release the GIL.
#include "bindings.h"
#include "ccl.h"

namespace hwport {

void bind_ccl(py::module_& m) {
  using Release = py::call_guard<py::gil_scoped_release>;
  py::class_<CclComm, std::shared_ptr<CclComm>>(m, "CclComm")
      .def_property_readonly("rank", &CclComm::rank)
      .def_property_readonly("nranks", &CclComm::nranks)
      .def_property_readonly("backend", &CclComm::backend_name)
      .def_property_readonly("place", [](const CclComm& c) { return c.device()->name; })
      .def("all_reduce", &CclComm::all_reduce, py::arg("input"), py::arg("output"),
           py::arg("op"), Release())
      .def("broadcast", &CclComm::broadcast, py::arg("input"), py::arg("output"),
           py::arg("root"), Release())
      .def("reduce", &CclComm::reduce, py::arg("input"), py::arg("output"), py::arg("op"),
           py::arg("root"), Release())
      .def("all_gather", &CclComm::all_gather, py::arg("input"), py::arg("output"), Release())
      .def("reduce_scatter", &CclComm::reduce_scatter, py::arg("input"), py::arg("output"),
           py::arg("op"), Release())
      .def("all_to_all", &CclComm::all_to_all, py::arg("input"), py::arg("output"), Release())
      .def("send", &CclComm::send, py::arg("tensor"), py::arg("peer"), Release())
      .def("recv", &CclComm::recv, py::arg("tensor"), py::arg("peer"), Release())
      .def("split", &CclComm::split, py::arg("color"), py::arg("key"), py::arg("new_rank"),
           py::arg("new_nranks"), Release())
      .def("abort", &CclComm::abort)
      .def("async_error", &CclComm::async_error);

  m.def("ccl_load_adapter", &ccl_load_adapter, py::arg("name"), py::arg("path"), Release(),
        "Loads a CCL adapter library (the MPI adapter's start is collective over the job).");
  m.def(
      "ccl_backend",
      [](py::handle place) { return ccl_backend_for(device_from_py(place))->name; },
      py::arg("place"), "The name of the CCL backend that serves a place.");
  m.def(
      "ccl_unique_id_size",
      [](py::handle place) { return ccl_backend_for(device_from_py(place))->table.unique_id_size; },
      py::arg("place"));
  m.def(
      "ccl_unique_id",
      [](py::handle place) { return py::bytes(ccl_unique_id(device_from_py(place))); },
      py::arg("place"));
  m.def(
      "ccl_comm_init",
      [](py::handle place, int32_t nranks, int32_t rank, const py::bytes& id) {
        Device* d = device_from_py(place);
        std::string raw = id;
        py::gil_scoped_release nogil;
        return ccl_comm_init(d, nranks, rank, raw);
      },
      py::arg("place"), py::arg("nranks"), py::arg("rank"), py::arg("id"));
  m.def(
      "ccl_group_start",
      [](py::handle place) { ccl_group(device_from_py(place), true); }, py::arg("place"));
  m.def(
      "ccl_group_end",
      [](py::handle place) {
        Device* d = device_from_py(place);
        py::gil_scoped_release nogil;
        ccl_group(d, false);
      },
      py::arg("place"));
  m.def("ccl_world", &ccl_world, "(rank, size) of the MPI job.");
  m.def(
      "ccl_world_broadcast",
      [](const py::bytes& data, int32_t root) {
        std::string raw = data;
        std::string out;
        {
          py::gil_scoped_release nogil;
          out = ccl_world_broadcast(raw, root);
        }
        return py::bytes(out);
      },
      py::arg("data"), py::arg("root"));
  m.def("ccl_traffic", []() {
    py::dict d;
    for (const auto& [kind, t] : ccl_traffic()) {
      py::dict e;
      e["calls"] = t.calls;
      e["bytes"] = t.bytes;
      d[py::str(kind)] = e;
    }
    return d;
  });
  m.def("ccl_reset_traffic", &ccl_reset_traffic);
}

}  // namespace hwport
