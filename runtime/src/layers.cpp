#include "layers.h"

#include "device_profiler.h"
#include "errors.h"

namespace hwport::layers {

thread_local uint32_t active_mask = 0;
thread_local bool grad_enabled = true;
int64_t grad_tensors_alive = 0;

namespace {

constexpr std::array<const char*, kNumLayers> kNames = {"profiler", "trace", "dist", "autograd",
                                                        "amp"};

int index_of(Bit slot) {
  for (int i = 0; i < kNumLayers; ++i)
    if (kOrder[i] == slot) return i;
  raise(ErrorKind::Value, "unknown pipeline layer bit " + std::to_string(slot));
}

// Process-wide registrations, one per slot in kOrder's order (accessed with the GIL held).
// Never destroyed: a layer may hold Python objects, and a C exit() (a plugin calling exit() while
// cffi released the GIL, say) runs static destructors without the GIL. Python's atexit drops the
// registrations on a normal interpreter exit (bind_layers.cpp).
std::array<std::shared_ptr<Layer>, kNumLayers>& registry() {
  static auto* layers = new std::array<std::shared_ptr<Layer>, kNumLayers>();
  return *layers;
}

// How many enters each slot has on this thread that no leave matched yet.
thread_local std::array<int, kNumLayers> depth = {};

Step g_autograd_step = nullptr;
constexpr int kAutogradIndex = 3;  // kOrder's
static_assert(kOrder[kAutogradIndex] == kAutograd);

}  // namespace

const char* name_of(Bit slot) { return kNames[index_of(slot)]; }

Bit slot_of(const std::string& name) {
  for (int i = 0; i < kNumLayers; ++i)
    if (name == kNames[i]) return kOrder[i];
  std::string known;
  for (const char* n : kNames) known += std::string(known.empty() ? "" : ", ") + n;
  raise(ErrorKind::Value, "unknown pipeline layer '" + name + "'; the layers are " + known);
}

void register_layer(Bit slot, std::shared_ptr<Layer> layer) {
  registry()[index_of(slot)] = std::move(layer);
}

std::shared_ptr<Layer> registered(Bit slot) { return registry()[index_of(slot)]; }

void enter(Bit slot) {
  const int i = index_of(slot);
  if (!registry()[i])
    raise(ErrorKind::Value, std::string("no layer is registered as '") + kNames[i] +
                                "'; register one before activating it");
  ++depth[i];
  active_mask |= slot;
}

void leave(Bit slot) {
  const int i = index_of(slot);
  if (depth[i] == 0)
    raise(ErrorKind::Runtime, std::string("leaving the '") + kNames[i] +
                                  "' layer, which is not active on this thread");
  if (--depth[i] == 0) active_mask &= ~slot;
}

void set_autograd_step(Step step) { g_autograd_step = step; }

py::object Next::operator()(const std::shared_ptr<OpCall>& call) const {
  for (int step = from_; step < 2 * kNumLayers; ++step) {
    const int i = step / 2;
    if (step % 2) {
      if (i == kAutogradIndex && g_autograd_step && autograd_wanted())
        return g_autograd_step(call, Next(step + 1, inner_));
      continue;
    }
    if (!(active_mask & kOrder[i])) continue;
    // A copy: the layer stays alive through its call even if it unregisters itself.
    std::shared_ptr<Layer> layer = registry()[i];
    if (!layer) continue;
    if (kOrder[i] == kProfiler) {
      // The call's device work, its nested calls' excepted, is correlated with it.
      call->correlation_id = device_profiler::next_correlation_id();
      device_profiler::CorrelationScope scope(call->correlation_id);
      return layer->on_call(call, Next(step + 1, inner_));
    }
    return layer->on_call(call, Next(step + 1, inner_));
  }
  return (*inner_)(call);
}

py::object run(const std::shared_ptr<OpCall>& call, const Inner& inner) {
  return Next(0, &inner)(call);
}

py::object run_py(const std::shared_ptr<OpCall>& call, py::object inner) {
  const Inner wrapped = [&inner](const std::shared_ptr<OpCall>& c) { return inner(c); };
  return run(call, wrapped);
}

py::list& OpCall::inputs() {
  if (!has_inputs_) {
    if (source) inputs_ = source->inputs();
    has_inputs_ = true;
  }
  return inputs_;
}

py::dict& OpCall::attrs() {
  if (attrs_state_ == kNone && source) {
    attrs_ = source->given_attrs();
    attrs_state_ = kGiven;
  }
  if (attrs_state_ != kNormalized) {
    // The Python rules (phi_ops/dispatch.py layer_attrs): the same dict the Python path's
    // layers see. Only a layer that reads attrs pays for it.
    py::object normalize = py::module_::import("hwport.phi_ops.dispatch").attr("layer_attrs");
    attrs_ = normalize(op, attrs_);
    attrs_state_ = kNormalized;
  }
  return attrs_;
}

py::object& OpCall::place() {
  if (!has_place_) {
    if (source) place_ = source->place();
    has_place_ = true;
  }
  return place_;
}

void OpCall::detach() {
  if (!source) return;
  inputs();
  place();
  if (attrs_state_ == kNone) {
    attrs_ = source->given_attrs();
    attrs_state_ = kGiven;  // normalized when read
  }
  source = nullptr;
}

}  // namespace hwport::layers
