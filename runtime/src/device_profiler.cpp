#include "device_profiler.h"

#include <atomic>
#include <cstring>
#include <mutex>

#include "device.h"
#include "errors.h"
#include "plugin.h"

namespace hwport::device_profiler {

thread_local uint64_t current_correlation_id = 0;

namespace {

std::atomic<uint64_t> g_next_id{0};

// Sessions and spans. The sink runs on plugin threads, so everything it touches is locked;
// plugin calls (start/stop/synchronize) are made without holding g_mu, so that a plugin that
// reports spans from inside stop() does not deadlock.
std::mutex g_mu;
int g_sessions = 0;
std::vector<Device*> g_timed;  // the devices timing was started on
std::vector<Span> g_spans;
std::mutex g_session_mu;  // serializes start_session/stop_session (plugin calls included)

constexpr size_t kMaxNameLength = 256;

void sink(void* context, const HWP_DeviceSpan* span) {
  if (span == nullptr || context == nullptr) return;
  const auto* device = static_cast<const Device*>(context);
  Span s;
  s.correlation_id = span->correlation_id;
  s.device = device->name;
  s.name = span->name ? std::string(span->name, strnlen(span->name, kMaxNameLength)) : "";
  s.begin_ns = span->begin_ns;
  s.end_ns = span->end_ns < span->begin_ns ? span->begin_ns : span->end_ns;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sessions > 0) g_spans.push_back(std::move(s));
}

std::vector<Device*> timing_devices() {
  std::vector<Device*> out;
  for (const auto& d : DeviceManager::instance().devices())
    if (d->plugin && d->plugin->has_device_timing) out.push_back(d.get());
  return out;
}

void plugin_start(Device* d) {
  d->ensure_initialized();
  d->plugin->check(d->plugin->profiler.start(d->index, sink, d), "profiler.start");
}

void plugin_stop(Device* d) { d->plugin->check(d->plugin->profiler.stop(d->index), "profiler.stop"); }

}  // namespace

uint64_t next_correlation_id() { return ++g_next_id; }

std::vector<std::string> start_session() {
  std::lock_guard<std::mutex> session(g_session_mu);
  bool first;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    first = g_sessions++ == 0;
  }
  if (first) {
    std::vector<Device*> devices = timing_devices();
    std::vector<Device*> started;
    try {
      for (Device* d : devices) {
        plugin_start(d);
        started.push_back(d);
      }
    } catch (...) {
      for (Device* d : started) d->plugin->profiler.stop(d->index);
      std::lock_guard<std::mutex> lock(g_mu);
      --g_sessions;
      throw;
    }
    std::lock_guard<std::mutex> lock(g_mu);
    g_timed = std::move(started);
  }
  std::vector<std::string> places;
  std::lock_guard<std::mutex> lock(g_mu);
  for (Device* d : g_timed) places.push_back(d->name);
  return places;
}

std::vector<Span> stop_session() {
  std::lock_guard<std::mutex> session(g_session_mu);
  std::vector<Device*> timed;
  bool last;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_sessions == 0)
      raise(ErrorKind::Runtime, "device profiler: stop without a started session");
    last = g_sessions == 1;
    timed = g_timed;
  }
  // Every launch so far completes, then the plugins report what they still hold; while other
  // sessions stay open, timing resumes at once.
  std::string error;
  for (Device* d : timed) {
    try {
      d->synchronize();
      plugin_stop(d);
      if (!last) plugin_start(d);
    } catch (const std::exception& e) {
      if (error.empty()) error = e.what();
    }
  }
  std::vector<Span> spans;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    --g_sessions;
    spans = last ? std::move(g_spans) : g_spans;
    if (last) {
      g_spans.clear();
      g_timed.clear();
    }
  }
  if (!error.empty()) raise(ErrorKind::Runtime, "device profiler: " + error);
  return spans;
}

}  // namespace hwport::device_profiler
