#include "dispatch.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "device_profiler.h"
#include "errors.h"
#include "jit_composite.h"
#include "ops.h"

namespace hwport {

namespace {

FallbackMode initial_fallback_mode() {
  const char* env = std::getenv("HWPORT_FALLBACK");
  return env && std::strcmp(env, "error") == 0 ? FallbackMode::Error : FallbackMode::Allow;
}
FallbackMode g_fallback_mode = initial_fallback_mode();

thread_local LaunchTimer* t_launch_timer = nullptr;

std::mutex g_stats_mutex;
std::map<std::tuple<int, const Plugin*, DType>, uint64_t> g_fallbacks;
std::map<std::tuple<int, const Plugin*, DType>, uint64_t> g_compiled;

std::atomic<JitProvider> g_jit_provider{nullptr};
thread_local bool t_in_jit = false;  // the provider's own launches never ask it again

struct KernelCall {
  const Attrs* attrs;
  Device* device;
  std::vector<std::shared_ptr<Storage>> workspaces;
  WorkspaceSource* source = nullptr;  // the caller's workspaces instead of the allocator's
  int requests = 0;
};

const AttrValue* find_attr(const Attrs& attrs, const char* name) {
  for (const auto& kv : attrs)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

HWP_Status host_get_attr(const HWP_KernelContext* ctx, const char* name, HWP_AttrType type,
                         void* out, int64_t* count) {
  if (!ctx || !name || !out) return HWP_ERROR_INVALID_ARGUMENT;
  const auto* call = static_cast<const KernelCall*>(ctx->host_context);
  const AttrValue* a = find_attr(*call->attrs, name);
  if (!a) return HWP_ERROR_NOT_FOUND;
  const bool numeric = a->type == HWP_ATTR_INT64 || a->type == HWP_ATTR_BOOL ||
                       a->type == HWP_ATTR_FLOAT64;
  switch (type) {
    case HWP_ATTR_INT64:
    case HWP_ATTR_BOOL: {
      if (!numeric) return HWP_ERROR_INVALID_ARGUMENT;
      int64_t v = a->i;
      if (a->type == HWP_ATTR_FLOAT64) {
        if (!(std::nearbyint(a->f) == a->f) || std::fabs(a->f) > 9.2e18)
          return HWP_ERROR_INVALID_ARGUMENT;
        v = static_cast<int64_t>(a->f);
      }
      if (type == HWP_ATTR_BOOL) {
        if (v != 0 && v != 1) return HWP_ERROR_INVALID_ARGUMENT;
        *static_cast<uint8_t*>(out) = static_cast<uint8_t>(v);
      } else {
        *static_cast<int64_t*>(out) = v;
      }
      return HWP_OK;
    }
    case HWP_ATTR_FLOAT64: {
      if (!numeric) return HWP_ERROR_INVALID_ARGUMENT;
      if (a->type != HWP_ATTR_FLOAT64) {
        double d = static_cast<double>(a->i);
        if (static_cast<int64_t>(d) != a->i) return HWP_ERROR_INVALID_ARGUMENT;  // inexact
        *static_cast<double*>(out) = d;
      } else {
        *static_cast<double*>(out) = a->f;
      }
      return HWP_OK;
    }
    case HWP_ATTR_STRING:
      if (a->type != HWP_ATTR_STRING) return HWP_ERROR_INVALID_ARGUMENT;
      *static_cast<const char**>(out) = a->s.c_str();
      return HWP_OK;
    case HWP_ATTR_INT64_ARRAY:
      if (a->type != HWP_ATTR_INT64_ARRAY) return HWP_ERROR_INVALID_ARGUMENT;
      *static_cast<const int64_t**>(out) = a->ints.data();
      if (count) *count = static_cast<int64_t>(a->ints.size());
      return HWP_OK;
    case HWP_ATTR_FLOAT64_ARRAY:
      if (a->type != HWP_ATTR_FLOAT64_ARRAY) return HWP_ERROR_INVALID_ARGUMENT;
      *static_cast<const double**>(out) = a->floats.data();
      if (count) *count = static_cast<int64_t>(a->floats.size());
      return HWP_OK;
    case HWP_ATTR_DTYPE:
      if (a->type != HWP_ATTR_DTYPE) return HWP_ERROR_INVALID_ARGUMENT;
      *static_cast<HWP_DType*>(out) = static_cast<HWP_DType>(a->i);
      return HWP_OK;
    default:
      return HWP_ERROR_INVALID_ARGUMENT;
  }
}

HWP_Status host_allocate_workspace(const HWP_KernelContext* ctx, uint64_t nbytes,
                                   HWP_Buffer* out) {
  if (!ctx || !out || nbytes == 0) return HWP_ERROR_INVALID_ARGUMENT;
  auto* call = static_cast<KernelCall*>(ctx->host_context);
  try {
    if (call->source) {
      *out = call->source->workspace(call->requests++, nbytes);
      return HWP_OK;
    }
    // The ABI hands out a bare buffer, so the block must begin its segment.
    auto storage = Storage::allocate(call->device, nbytes, /*segment_start=*/true);
    *out = storage->buffer();
    call->workspaces.push_back(std::move(storage));
    return HWP_OK;
  } catch (const Error& e) {
    return e.kind() == ErrorKind::OutOfMemory ? HWP_ERROR_OUT_OF_MEMORY : HWP_ERROR_INTERNAL;
  } catch (const std::bad_alloc&) {  // nothing may unwind into the plugin
    return HWP_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return HWP_ERROR_INTERNAL;
  }
}

constexpr int kMaxOperands = 16;

void fill_view(const Tensor& t, HWP_TensorView* v) {
  v->struct_size = sizeof(HWP_TensorView);
  v->buffer = t.storage->buffer();
  v->byte_offset = t.byte_offset();
  v->dtype = static_cast<HWP_DType>(t.dtype);
  v->ndim = static_cast<int32_t>(t.shape.size());
  v->shape = t.shape.data();
  v->strides = t.strides.data();
}

// `refused`: why the device's kernel refused the call (empty: the device has no kernel).
void run_fallback(int op, DType dtype, Device* device, const Tensor* const* inputs,
                  int num_inputs, Tensor* const* outputs, int num_outputs, const Attrs& attrs,
                  const std::string& refused = "") {
  Device* cpu = DeviceManager::instance().cpu();
  const std::string& name = op_name(op);
  if (device == cpu || !cpu) {
    raise(ErrorKind::NotSupported,
          name + ": no kernel for dtype " + dtype_name(dtype) + " on " + device->name +
              (cpu ? "" : " and no cpu plugin to fall back to"));
  }
  if (g_fallback_mode == FallbackMode::Error) {
    const std::string why = refused.empty()
                                ? std::string(": no kernel for dtype ") + dtype_name(dtype) +
                                      " on " + device->name
                                : std::string(" (") + dtype_name(dtype) + ") on " + device->name +
                                      ": the kernel refused the call: " + refused;
    raise(ErrorKind::Fallback,
          name + why + ", and HWPORT_FALLBACK=error forbids the CPU fallback");
  }
  count_fallback(op, device, dtype);
  std::vector<Tensor> cpu_in, cpu_out;
  cpu_in.reserve(num_inputs);
  cpu_out.reserve(num_outputs);
  for (int i = 0; i < num_inputs; ++i) cpu_in.push_back(transfer(*inputs[i], cpu));
  for (int i = 0; i < num_outputs; ++i)
    cpu_out.push_back(Tensor::empty(outputs[i]->shape, outputs[i]->dtype, cpu));
  const Tensor* in_ptrs[kMaxOperands];
  Tensor* out_ptrs[kMaxOperands];
  for (int i = 0; i < num_inputs; ++i) in_ptrs[i] = &cpu_in[i];
  for (int i = 0; i < num_outputs; ++i) out_ptrs[i] = &cpu_out[i];
  run_kernel(op, dtype, cpu, in_ptrs, num_inputs, out_ptrs, num_outputs, attrs);
  for (int i = 0; i < num_outputs; ++i) {
    Tensor moved = transfer(cpu_out[i], device);
    const Plugin& p = *device->plugin;
    const uint64_t nbytes = tensor_nbytes(outputs[i]->shape, outputs[i]->dtype, name);
    if (nbytes == 0) continue;
    p.check(p.memory.copy_d2d(device->index, outputs[i]->storage->buffer(),
                              outputs[i]->byte_offset(), moved.storage->buffer(),
                              moved.byte_offset(), nbytes),
            "copy_d2d");
  }
}

// The eager JIT's try (dispatch.h): true when compiled kernels wrote the outputs. Strided
// inputs go to the provider as they are (it reads a transposed or broadcast view in place, or
// makes it contiguous with the device's copy kernel); without a copy kernel the JIT passes.
bool try_jit(int op, DType dtype, Device* device, const Tensor* const* inputs, int num_inputs,
             Tensor* const* outputs, int num_outputs, const Attrs& attrs) {
  const JitProvider provider = g_jit_provider.load();
  if (!provider || t_in_jit || !device->plugin->has_codegen_target) return false;
  if (device == DeviceManager::instance().cpu() || op == core_ops().copy) return false;
  struct Reentry {  // RAII: cleared however the call ends
    Reentry() { t_in_jit = true; }
    ~Reentry() { t_in_jit = false; }
    Reentry(const Reentry&) = delete;
    Reentry& operator=(const Reentry&) = delete;
  } reentry;
  for (int i = 0; i < num_inputs; ++i)
    if (!inputs[i]->is_contiguous() && !device->plugin->kernels.find(core_ops().copy,
                                                                      inputs[i]->dtype))
      return false;
  for (int i = 0; i < num_outputs; ++i)
    if (!outputs[i]->is_contiguous()) return false;
  if (!provider(op, dtype, device, inputs, num_inputs, outputs, num_outputs, attrs))
    return false;
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  ++g_compiled[{op, device->plugin, dtype}];
  return true;
}

}  // namespace

bool run_compiled(int op, DType dtype, Device* device, const Tensor* const* inputs,
                  int num_inputs, Tensor* const* outputs, int num_outputs, const Attrs& attrs) {
  return try_jit(op, dtype, device, inputs, num_inputs, outputs, num_outputs, attrs);
}

void set_jit_provider(JitProvider provider) { g_jit_provider.store(provider); }

void set_launch_timer(LaunchTimer* timer) { t_launch_timer = timer; }

void count_compiled(int op, const Device* device, DType dtype) {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  ++g_compiled[{op, device->plugin, dtype}];
}

void count_fallback(int op, const Device* device, DType dtype) {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  ++g_fallbacks[{op, device->plugin, dtype}];
}

void run_kernel(int op, DType dtype, Device* device, const Tensor* const* inputs, int num_inputs,
                Tensor* const* outputs, int num_outputs, const Attrs& attrs,
                WorkspaceSource* workspaces) {
  if (num_inputs > kMaxOperands || num_outputs > kMaxOperands)
    raise(ErrorKind::Value, op_name(op) + ": too many operands");
  const KernelEntry* entry = device->plugin->kernels.find(op, dtype);
  if (!entry) {
    if (try_jit(op, dtype, device, inputs, num_inputs, outputs, num_outputs, attrs)) return;
    run_fallback(op, dtype, device, inputs, num_inputs, outputs, num_outputs, attrs);
    return;
  }
  HWP_Stream stream = device->current_stream();
  HWP_TensorView in_views[kMaxOperands], out_views[kMaxOperands];
  Tensor contiguous_inputs[kMaxOperands];  // keeps copies alive for the call
  for (int i = 0; i < num_inputs; ++i) {
    const Tensor* t = inputs[i];
    if (!entry->accepts_strided() && op != core_ops().copy && !t->is_contiguous()) {
      contiguous_inputs[i] = contiguous(*t);
      t = &contiguous_inputs[i];
    }
    t->storage->record_stream(stream);
    fill_view(*t, &in_views[i]);
  }
  for (int i = 0; i < num_outputs; ++i) {
    outputs[i]->storage->record_stream(stream);
    fill_view(*outputs[i], &out_views[i]);
  }
  KernelCall call{&attrs, device, {}, workspaces};
  HWP_KernelContext ctx;
  ctx.struct_size = sizeof(ctx);
  ctx.device = device->index;
  ctx.stream = stream;
  ctx.num_inputs = num_inputs;
  ctx.num_outputs = num_outputs;
  ctx.inputs = in_views;
  ctx.outputs = out_views;
  ctx.user_data = entry->user_data;
  ctx.host_context = &call;
  ctx.get_attr = host_get_attr;
  ctx.allocate_workspace = host_allocate_workspace;
  ctx.correlation_id = device_profiler::current_correlation_id;
  using Clock = std::chrono::steady_clock;
  LaunchTimer* timer = t_launch_timer;
  const Clock::time_point t0 = timer ? Clock::now() : Clock::time_point{};
  HWP_Status status = entry->fn(&ctx);
  if (timer) {
    const auto dt = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0);
    timer->ns += static_cast<uint64_t>(dt.count());
    ++timer->launches;
  }
  // A kernel may refuse a call it cannot handle (a shape or attribute value) with
  // HWP_ERROR_NOT_SUPPORTED: the call then runs on the counted CPU fallback, as if there were
  // no kernel (docs/abi.md). On the CPU device itself there is nothing to fall back to.
  if (status == HWP_ERROR_NOT_SUPPORTED && device != DeviceManager::instance().cpu() &&
      DeviceManager::instance().cpu() != nullptr) {
    if (workspaces && workspaces->take_refused(device->plugin->describe("kernel", status)))
      return;
    const std::string refused = device->plugin->describe("kernel", status);
    if (try_jit(op, dtype, device, inputs, num_inputs, outputs, num_outputs, attrs)) return;
    run_fallback(op, dtype, device, inputs, num_inputs, outputs, num_outputs, attrs, refused);
    return;
  }
  if (status != HWP_OK) {
    const Plugin& p = *device->plugin;
    std::string msg = op_name(op) + " (" + dtype_name(dtype) + ") on " + device->name + ": " +
                      p.describe("kernel", status);
    raise(status == HWP_ERROR_OUT_OF_MEMORY ? ErrorKind::OutOfMemory
          : status == HWP_ERROR_NOT_SUPPORTED ? ErrorKind::NotSupported
                                              : ErrorKind::Runtime,
          msg);
  }
}

Tensor transfer(const Tensor& t, Device* device) {
  uint64_t lo = 0, hi = 0;
  t.byte_span(&lo, &hi);
  Tensor out;
  out.shape = t.shape;
  out.strides = t.strides;
  out.dtype = t.dtype;
  out.storage = Storage::allocate(device, hi - lo);
  out.offset = static_cast<int64_t>((t.byte_offset() - lo) / itemsize(t.dtype));
  if (hi == lo) return out;
  const Plugin& src = *t.device()->plugin;
  const Plugin& dst = *device->plugin;
  if (t.device() == device) {
    src.check(src.memory.copy_d2d(device->index, out.storage->buffer(),
                                  out.storage->base_offset(), t.storage->buffer(), lo, hi - lo),
              "copy_d2d");
    return out;
  }
  std::vector<uint8_t> staging(hi - lo);
  src.check(src.memory.copy_d2h(t.device()->index, staging.data(), t.storage->buffer(), lo,
                                hi - lo),
            "copy_d2h");
  dst.check(dst.memory.copy_h2d(device->index, out.storage->buffer(),
                                out.storage->base_offset(), staging.data(), hi - lo),
            "copy_h2d");
  return out;
}

void set_fallback_mode(FallbackMode mode) { g_fallback_mode = mode; }
FallbackMode fallback_mode() { return g_fallback_mode; }

namespace {
// A counter map by (op, device type, dtype) names, read under the stats lock.
std::map<std::tuple<std::string, std::string, std::string>, uint64_t> named_counts(
    const std::map<std::tuple<int, const Plugin*, DType>, uint64_t>& counts) {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> out;
  for (const auto& kv : counts) {
    out[{op_name(std::get<0>(kv.first)), std::get<1>(kv.first)->device_type,
         dtype_name(std::get<2>(kv.first))}] = kv.second;
  }
  return out;
}
}  // namespace

std::map<std::tuple<std::string, std::string, std::string>, uint64_t> fallback_stats() {
  return named_counts(g_fallbacks);
}

std::map<std::tuple<std::string, std::string, std::string>, uint64_t> compiled_stats() {
  return named_counts(g_compiled);
}

void reset_fallback_stats() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  g_fallbacks.clear();
  g_compiled.clear();
}

}  // namespace hwport
