// Device time for hwport.profiler (ABI 1.2, hwport/profiler.h): correlation ids for op calls and
// the spans plugins report for the device work those calls launched.
//
// The profiler layer gives each op call an id (next_correlation_id) and makes it the thread's
// current one while the call runs (CorrelationScope); every kernel launched meanwhile carries it
// in HWP_KernelContext.correlation_id, and a plugin with a profiler table reports the work it
// timed for that launch as spans with the same id. Sessions nest and may overlap across threads:
// devices are timed while at least one session is open; each session's stop hands back the
// spans reported since the first open session began.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hwport::device_profiler {

// The op call running on this thread (0: none; then launches carry 0 and are not timed).
extern thread_local uint64_t current_correlation_id;

uint64_t next_correlation_id();

// Makes `id` the thread's current correlation id for its lifetime (nested calls restore).
class CorrelationScope {
 public:
  explicit CorrelationScope(uint64_t id) : saved_(current_correlation_id) {
    current_correlation_id = id;
  }
  ~CorrelationScope() { current_correlation_id = saved_; }
  CorrelationScope(const CorrelationScope&) = delete;
  CorrelationScope& operator=(const CorrelationScope&) = delete;

 private:
  uint64_t saved_;
};

struct Span {
  uint64_t correlation_id;
  std::string device;  // the place, "custom:<type>:<index>"
  std::string name;
  uint64_t begin_ns;  // CLOCK_MONOTONIC
  uint64_t end_ns;
};

// Opens a session: the first one starts timing on every initialized device whose plugin has
// device timing. Returns the places timed.
std::vector<std::string> start_session();

// Closes a session: synchronizes the timed devices, has their plugins report what is pending
// (stop, then start again while other sessions stay open) and returns every span collected
// since timing began. The last session's stop also ends timing and drops the spans. A failing
// plugin call raises after timing is left in a consistent state.
std::vector<Span> stop_session();

}  // namespace hwport::device_profiler
