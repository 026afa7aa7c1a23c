// _core.Executor: the program executor (executor.h) for Python. hwport.pir.Executor flattens a
// kernel-dialect program into the plain lists this constructor takes (see pir/executor.py).
#include <pybind11/stl.h>

#include <algorithm>
#include <iterator>

#include "bindings.h"
#include "codegen.h"
#include "errors.h"
#include "executor.h"

namespace hwport {

namespace {

thread_local LaunchTimer t_timer;  // _launch_timer_start / _launch_timer_stop

// `at`: the instruction's index in the list (an if's or while's regions follow it).
Executor::Instr instr_from_py(const py::tuple& t, size_t at) {
  Executor::Instr ins;
  const std::string kind = py::str(t[0]);
  if (kind == "if") {  // ("if", cond, results, n_then, n_else, then_yields, else_yields)
    ins.kind = Executor::Kind::If;
    ins.in = {t[1].cast<int>()};
    ins.out = t[2].cast<std::vector<int>>();
    ins.mid = at + 1 + t[3].cast<size_t>();
    ins.end = ins.mid + t[4].cast<size_t>();
    ins.yields = t[5].cast<std::vector<int>>();
    ins.else_yields = t[6].cast<std::vector<int>>();
    return ins;
  }
  if (kind == "while") {  // ("while", cond, inits, results, args, n_body, yields)
    ins.kind = Executor::Kind::While;
    ins.in = {t[1].cast<int>()};
    for (int s : t[2].cast<std::vector<int>>()) ins.in.push_back(s);
    ins.out = t[3].cast<std::vector<int>>();
    ins.args = t[4].cast<std::vector<int>>();
    ins.mid = ins.end = at + 1 + t[5].cast<size_t>();
    ins.yields = t[6].cast<std::vector<int>>();
    return ins;
  }
  if (kind == "view") {
    ins.kind = Executor::Kind::View;
    ins.in = {t[1].cast<int>()};
    ins.out = {t[2].cast<int>()};
    ins.shape = t[3].cast<Shape>();
    ins.strides = t[4].cast<Shape>();
    ins.offset = t[5].cast<int64_t>();
    if (ins.shape.size() != ins.strides.size())
      raise(ErrorKind::Value, "Executor: a view's shape and strides differ in length");
    return ins;
  }
  if (kind == "launch") {  // ("launch", function, grid[3], group[3], ins, outs, args)
    ins.kind = Executor::Kind::Launch;
    ins.function = t[1].cast<std::shared_ptr<CodegenFunction>>();
    const auto grid = t[2].cast<std::vector<uint32_t>>();
    const auto group = t[3].cast<std::vector<uint32_t>>();
    if (grid.empty() || grid.size() > 3 || group.empty() || group.size() > 3)
      raise(ErrorKind::Value, "Executor: a launch's grid and group have 1-3 entries");
    for (size_t d = 0; d < grid.size(); ++d) ins.grid[d] = grid[d];
    for (size_t d = 0; d < group.size(); ++d) ins.group[d] = group[d];
    ins.in = t[4].cast<std::vector<int>>();
    ins.out = t[5].cast<std::vector<int>>();
    for (py::handle h : t[6].cast<py::list>()) {  // ("in", i) | ("out", j) | ("i64", v) | ("f64", v)
      auto a = h.cast<py::tuple>();
      const std::string k = py::str(a[0]);
      Executor::LaunchArg arg;
      if (k == "in" || k == "out") {
        arg.kind = k == "in" ? Executor::LaunchArg::Kind::In : Executor::LaunchArg::Kind::Out;
        arg.index = a[1].cast<int>();
      } else if (k == "i64") {
        arg.kind = Executor::LaunchArg::Kind::Int64;
        arg.i64 = int64_from_py(a[1], "Executor", "a launch's i64 argument");
      } else if (k == "f64") {
        arg.kind = Executor::LaunchArg::Kind::Float64;
        arg.f64 = a[1].cast<double>();
      } else {
        raise(ErrorKind::Value, "Executor: unknown launch argument kind '" + k +
                                    "' (in, out, i64, f64)");
      }
      ins.launch_args.push_back(arg);
    }
    return ins;
  }
  if (kind == "ccl") {  // ("ccl", comm, call, reduce_op, root or peer, ins, outs)
    static const char* const calls[] = {"all_reduce", "broadcast", "reduce", "all_gather",
                                        "reduce_scatter", "all_to_all", "send", "recv"};
    ins.kind = Executor::Kind::Ccl;
    ins.comm = t[1].cast<std::shared_ptr<CclComm>>();
    const std::string call = py::str(t[2]);
    const auto* found = std::find(std::begin(calls), std::end(calls), call);
    if (found == std::end(calls))
      raise(ErrorKind::Value, "Executor: unknown collective '" + call + "'");
    ins.ccl = static_cast<Executor::CclCall>(found - std::begin(calls));
    ins.reduce_op = t[3].cast<int32_t>();
    ins.peer = t[4].cast<int32_t>();
    ins.in = t[5].cast<std::vector<int>>();
    ins.out = t[6].cast<std::vector<int>>();
    return ins;
  }
  if (kind != "kernel") raise(ErrorKind::Value, "Executor: unknown instruction kind '" + kind + "'");
  ins.kernel = t[1].cast<std::string>();
  ins.dtype = dtype_from_py(t[2], ins.kernel.c_str(), "dtype");
  ins.in = t[3].cast<std::vector<int>>();
  ins.out = t[4].cast<std::vector<int>>();
  ins.elementwise = t.size() > 6 && t[6].cast<bool>();
  if (t.size() > 7) ins.own_inputs = t[7].cast<std::vector<int>>();
  for (int k : ins.own_inputs)
    if (k < 0 || static_cast<size_t>(k) >= ins.in.size() ||
        ins.own_inputs.size() != ins.out.size())
      raise(ErrorKind::Value, "Executor: bad own inputs of instruction " + std::to_string(at));
  for (auto item : t[5].cast<py::dict>()) {
    if (item.second.is_none()) continue;  // as _core.launch: an absent attribute
    const std::string name = py::str(item.first);
    ins.attrs.emplace_back(name, attr_value_from_py(ins.kernel, name, item.second));
  }
  return ins;
}

}  // namespace

void bind_executor(py::module_& m) {
  py::class_<Executor>(m, "Executor",
      "A lowered program as a flat instruction list with planned memory (runtime/src/executor.h).")
      .def(py::init([](py::handle place, const py::list& slots, const py::list& feeds,
                       const py::list& bound, const py::list& instrs, std::vector<int> outputs,
                       std::vector<std::pair<int, int>> writes) {
             std::vector<Executor::SlotMeta> metas;
             for (py::handle s : slots) {
               auto t = s.cast<py::tuple>();
               metas.push_back({t[0].cast<Shape>(), dtype_from_py(t[1], "Executor", "dtype")});
             }
             std::vector<std::pair<std::string, int>> fs;
             for (py::handle f : feeds) fs.push_back(f.cast<std::pair<std::string, int>>());
             std::vector<std::pair<int, Tensor>> bs;
             for (py::handle b : bound) bs.push_back(b.cast<std::pair<int, Tensor>>());
             std::vector<Executor::Instr> is;
             for (py::handle i : instrs)
               is.push_back(instr_from_py(i.cast<py::tuple>(), is.size()));
             return std::make_unique<Executor>(device_from_py(place), std::move(metas),
                                               std::move(fs), std::move(bs), std::move(is),
                                               std::move(outputs), std::move(writes));
           }), py::arg("place"), py::arg("slots"), py::arg("feeds"), py::arg("bound"),
           py::arg("instructions"), py::arg("outputs"),
           py::arg("writes") = std::vector<std::pair<int, int>>{})
      .def("run", &Executor::run, py::arg("feeds"), "Feeds in the constructor's order.")
      .def("set_kernel_attrs", [](Executor& e, size_t index, const std::string& kernel,
                                  const py::dict& attrs) {
             Attrs packed;
             for (auto item : attrs) {
               if (item.second.is_none()) continue;
               const std::string name = py::str(item.first);
               packed.emplace_back(name, attr_value_from_py(kernel, name, item.second));
             }
             e.set_kernel_attrs(index, std::move(packed));
           }, py::arg("index"), py::arg("kernel"), py::arg("attrs"),
           "Replaces kernel instruction `index`'s attributes before the next run.")
      .def_property_readonly("num_instructions", &Executor::num_instructions)
      .def_property_readonly("arena_bytes", &Executor::arena_bytes)
      .def_property_readonly("num_in_place", &Executor::num_in_place)
      .def_property_readonly("num_written_in_place", &Executor::num_written_in_place)
      .def("describe", &Executor::describe);
  // benchmarks/bench_executor.py: the time spent inside the plugins' kernel functions (the
  // launch cost eager and the executor share) between start and stop, on this thread.
  m.def("_launch_timer_start", [] {
    t_timer = LaunchTimer{};
    set_launch_timer(&t_timer);
  });
  m.def("_launch_timer_stop", [] {
    set_launch_timer(nullptr);
    return py::make_tuple(t_timer.ns, t_timer.launches);
  }, "(nanoseconds inside kernel functions, launches) since _launch_timer_start.");
  // The lowering pass traces decompositions and tells views from fresh tensors by this.
  m.def("_storage_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.storage.get()); },
        py::arg("tensor"), "An id of the storage under a tensor (shared by its views).");
  // to_static's capture tells an in-place write (Tensor.set_value) into a traced tensor by this.
  m.def("_storage_version", [](const Tensor& t) { return t.storage->version(); },
        py::arg("tensor"), "How many in-place writes the storage under a tensor has had.");
}

}  // namespace hwport
