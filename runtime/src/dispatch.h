// Eager dispatch: find the kernel for (op, device type, dtype) and call it through the C kernel
// ABI; without one, run the op on the CPU plugin with copies (counted, or an error under
// HWPORT_FALLBACK=error).
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "hwport/kernel.h"
#include "tensor.h"

namespace hwport {

struct AttrValue {
  HWP_AttrType type = HWP_ATTR_INT64;
  int64_t i = 0;  // BOOL, INT64, DTYPE
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;

  static AttrValue of_int(int64_t v) { AttrValue a; a.type = HWP_ATTR_INT64; a.i = v; return a; }
  static AttrValue of_float(double v) { AttrValue a; a.type = HWP_ATTR_FLOAT64; a.f = v; return a; }
  static AttrValue of_bool(bool v) { AttrValue a; a.type = HWP_ATTR_BOOL; a.i = v; return a; }
};
using Attrs = std::vector<std::pair<std::string, AttrValue>>;

// Kernel workspace a launch takes from its caller instead of the allocator (the program
// executor keeps its workspaces across runs). `k`: the request's index within the launch; the
// buffer must begin its segment (a bare HWP_Buffer crosses the ABI). Throws hwport::Error.
class WorkspaceSource {
 public:
  virtual ~WorkspaceSource() = default;
  virtual HWP_Buffer workspace(int k, uint64_t nbytes) = 0;
  // The kernel refused the call (HWP_ERROR_NOT_SUPPORTED; `why`: the plugin's message). True:
  // the caller runs the CPU fallback itself (run_kernel returns without running it).
  virtual bool take_refused(const std::string& why) {
    (void)why;
    return false;
  }
};

// Time spent inside plugins' kernel functions on this thread while a timer is set: the launch
// cost eager and the program executor share (benchmarks/bench_executor.py). nullptr: untimed.
struct LaunchTimer {
  uint64_t ns = 0, launches = 0;
};
void set_launch_timer(LaunchTimer* timer);

// Runs `op` keyed by `dtype` on `device`; inputs are on `device` in the exact dtypes/shapes
// the kernel expects, outputs are allocated contiguous. Throws hwport::Error. `workspaces`:
// where the kernel's workspace comes from (nullptr: the allocator, per call).
void run_kernel(int op, DType dtype, Device* device, const Tensor* const* inputs, int num_inputs,
                Tensor* const* outputs, int num_outputs, const Attrs& attrs,
                WorkspaceSource* workspaces = nullptr);

// A copy of `t`'s view on `device` (same shape and strides), moving only the bytes it spans.
Tensor transfer(const Tensor& t, Device* device);

enum class FallbackMode { Allow, Error };
void set_fallback_mode(FallbackMode mode);
FallbackMode fallback_mode();
// (op, device type, dtype name) -> number of fallbacks.
std::map<std::tuple<std::string, std::string, std::string>, uint64_t> fallback_stats();
void reset_fallback_stats();
// Counts one CPU fallback of (op, device's plugin, dtype) as run_kernel does: for a caller
// that runs the fallback itself (the program executor, with staging buffers it keeps).
void count_fallback(int op, const Device* device, DType dtype);

// The eager JIT (issue 17): where a device with a codegen target has no kernel for (op, dtype),
// or its kernel refuses the call, run_kernel first asks the provider to run the op through
// compiled kernels. Inputs are on `device`, strided ones as they are (the provider reads them
// in place or makes them contiguous with the device's copy kernel, which the device then has),
// outputs allocated contiguous. True:
// the outputs are written (counted in compiled_stats); false: the CPU fallback runs. Never
// throws (bind_jit.cpp reports a provider's exception as a warning and returns false). Not
// asked from inside itself (a nested miss takes the CPU fallback).
using JitProvider = bool (*)(int op, DType dtype, Device* device, const Tensor* const* inputs,
                             int num_inputs, Tensor* const* outputs, int num_outputs,
                             const Attrs& attrs);
void set_jit_provider(JitProvider provider);  // nullptr: none
// Asks the provider to run (op, dtype) on `device` as run_kernel does before its CPU fallback
// (strided inputs made contiguous by the device's copy kernel); true when compiled kernels wrote
// the outputs (counted), false when there is no provider or target, or it passed. The program
// executor calls it for an instruction the device has no kernel for, before its staged fallback.
bool run_compiled(int op, DType dtype, Device* device, const Tensor* const* inputs,
                  int num_inputs, Tensor* const* outputs, int num_outputs, const Attrs& attrs);
// (op, device type, dtype name) -> number of eager calls run by compiled kernels.
std::map<std::tuple<std::string, std::string, std::string>, uint64_t> compiled_stats();

}  // namespace hwport
