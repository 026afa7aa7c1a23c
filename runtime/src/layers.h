// The op-call pipeline's layers (DESIGN.md, "The op-call pipeline"): the profiler, then trace,
// dist, autograd and amp, outermost first. Each layer has one bit in a thread-local mask, set
// while it is active on this thread, so that the pipeline's fast path pays one test per call
// when no layer is active.
//
// A layer is registered once per process (register_layer: at most one per slot; none of trace,
// dist, autograd, amp is registered yet, their issues fill them) and activated per thread,
// nestably (enter/leave, or a Scope). A call made while some bit is set goes through run():
// each active, registered layer in order sees the call and continues it (Next), changes it, or
// replaces it; after the last one, the pipeline's own kernel selection runs.
//
// Everything here runs with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hwport::layers {

namespace py = pybind11;

enum Bit : uint32_t {
  kTrace = 1u << 0,
  kDist = 1u << 1,
  kAutograd = 1u << 2,
  kAmp = 1u << 3,
  kProfiler = 1u << 4,
};

// The layers active on the calling thread (a bit per layer).
extern thread_local uint32_t active_mask;

inline bool any_active() { return active_mask != 0; }

// The autograd engine's step (autograd.h) is not a registered layer: it runs right after the
// autograd slot's layer (if any) for a call with an input needing a gradient, while grad mode is
// on (thread-local) and some tensor needing a gradient is alive (a process-wide count, kept by
// autograd::Meta), so that a program without one pays a test per call.
extern thread_local bool grad_enabled;
extern int64_t grad_tensors_alive;  // under the GIL
inline bool autograd_wanted() { return grad_tensors_alive > 0 && grad_enabled; }

// The pipeline's order, outermost first. The profiler is outermost: it times what the user
// called, the other layers' work included; the calls a layer or a decomposition makes come back
// through the pipeline and show up nested under the call that made them.
inline constexpr int kNumLayers = 5;
inline constexpr std::array<Bit, kNumLayers> kOrder = {kProfiler, kTrace, kDist, kAutograd, kAmp};

// "profiler", "trace", ...; slot_of raises ValueError naming the known ones.
const char* name_of(Bit slot);
Bit slot_of(const std::string& name);

// One op call as the layers see it, after argument parsing and infer-meta (so `inputs` are the
// normalized tensor inputs in ops.yaml order and `dtype` the kernel key), before kernel
// selection. A layer may replace inputs with tensors of the same shapes and dtypes (the plan is
// already made); one that needs other metas calls the op again instead. Kernel selection fills
// `path`: "native" (the device's kernel), "decomposition" or "fallback" (the counted CPU one).
//
// The C++ pipeline (pipeline_layered.cpp) makes the call after its C++ infer-meta with a
// Source: `inputs` (the arguments as given, a Python scalar as the 0-d tensor the call uses),
// `attrs` (every attribute, normalized by the Python rules) and `place` are made from it the
// first time something reads them, so a layer written in C++ that reads none costs no Python
// object. The source lives for the call; detach() materializes everything before it goes.
struct OpCall {
  // The lazy fields' maker (the C++ pipeline's bound arguments).
  class Source {
   public:
    virtual ~Source() = default;
    virtual py::list inputs() = 0;
    virtual py::dict given_attrs() = 0;  // the attributes given (the rest take defaults)
    virtual py::object place() = 0;
    // Attr k (OpSpec order) as the call gave it (*out nullptr: left out, its default); false
    // when the source cannot say (read attrs() then). No Python object is made.
    virtual bool given_attr(int k, PyObject** out) {
      (void)k;
      (void)out;
      return false;
    }
  };

  std::string op;
  std::string dtype;
  std::string path;
  // Given by the pipeline as the profiler layer takes the call (0 before): the launches the
  // call makes carry it to plugins that time device work (device_profiler.h).
  uint64_t correlation_id = 0;
  Source* source = nullptr;

  py::list& inputs();
  py::dict& attrs();  // as phi_ops/dispatch.py normalizes them (defaults filled)
  py::object& place();
  void set_inputs(py::list v) {
    inputs_ = std::move(v);
    has_inputs_ = true;
  }
  void set_attrs(py::dict v) {
    attrs_ = std::move(v);
    attrs_state_ = kNormalized;
    attrs_replaced_ = true;
  }
  // Whether a layer set the attrs (then the source's given ones are not the call's).
  bool attrs_replaced() const { return attrs_replaced_; }
  void set_place(py::object v) {
    place_ = std::move(v);
    has_place_ = true;
  }
  // Whether inputs were made (and so may have been replaced by a layer).
  bool inputs_made() const { return has_inputs_; }
  // Makes every lazy field and drops the source (the call ends; a layer may keep the OpCall).
  void detach();

 private:
  enum AttrsState { kNone, kGiven, kNormalized };
  py::list inputs_;
  py::dict attrs_;
  py::object place_;
  bool has_inputs_ = false, has_place_ = false, attrs_replaced_ = false;
  AttrsState attrs_state_ = kNone;
};

class Next;

// A layer of the pipeline. on_call runs `call` through it: observe it, change it, continue it
// with next(call), or return something else without continuing (the call is replaced).
class Layer {
 public:
  virtual ~Layer() = default;
  virtual py::object on_call(const std::shared_ptr<OpCall>& call, const Next& next) = 0;
};

class Next;
// autograd::record, installed by the engine (layers sit below it).
using Step = py::object (*)(const std::shared_ptr<OpCall>& call, const Next& next);
void set_autograd_step(Step step);

// Kernel selection, after the last layer: the C++ pipeline's own, or a Python callable taking
// the OpCall (the Python path's).
using Inner = std::function<py::object(const std::shared_ptr<OpCall>&)>;

// The rest of the pipeline after one layer: the inner active layers, then `inner`.
class Next {
 public:
  // from: a step: 2 * the layer's index in kOrder, + 1 for the autograd engine's step.
  Next(int from, const Inner* inner) : from_(from), inner_(inner) {}
  py::object operator()(const std::shared_ptr<OpCall>& call) const;

 private:
  int from_;
  const Inner* inner_;  // owned by run(), which outlives every Next of the call
};

// Registers `layer` in `slot` (replacing the one there; nullptr unregisters).
void register_layer(Bit slot, std::shared_ptr<Layer> layer);
std::shared_ptr<Layer> registered(Bit slot);

// Activates the slot's layer on this thread; nestable (the bit stays set until as many leaves
// as enters). enter raises ValueError when nothing is registered there; leave without an enter
// raises RuntimeError.
void enter(Bit slot);
void leave(Bit slot);

// Clears the slot's bit on this thread for its lifetime and restores it after (a layer making
// calls that should not come back through itself); exceptions restore it too.
class Suspend {
 public:
  explicit Suspend(Bit slot) : was_(active_mask & slot) { active_mask &= ~slot; }
  ~Suspend() { active_mask |= was_; }
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;

 private:
  uint32_t was_;
};

// Runs `call` through this thread's active layers, outermost first, then `inner`.
py::object run(const std::shared_ptr<OpCall>& call, const Inner& inner);
py::object run_py(const std::shared_ptr<OpCall>& call, py::object inner);

}  // namespace hwport::layers
