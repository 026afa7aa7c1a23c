// Devices of every loaded plugin, places ("custom:<type>[:<index>]"), the current device and
// the current stream per thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "allocator.h"
#include "plugin.h"

namespace hwport {

struct Device;

// A stream shared by everything that may still submit work to it or wait on it: Python Stream
// and Event objects, and the threads whose current stream it is. The allocator keeps only the
// raw handle (as a pool key and in blocks' stream lists); the last holder destroys the stream:
// it waits for the stream's work, makes the allocator forget the stream (its blocks go to the
// default stream), then has the plugin destroy it. A device's default stream (owned = false)
// lives as long as the device.
class StreamHandle {
 public:
  StreamHandle(Device* device, HWP_Stream stream, bool owned)
      : device_(device), stream_(stream), owned_(owned) {}
  ~StreamHandle();
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;

  Device* device() const { return device_; }
  HWP_Stream get() const { return stream_; }
  bool owned() const { return owned_; }

 private:
  Device* device_;
  HWP_Stream stream_;
  bool owned_;
};
using StreamRef = std::shared_ptr<StreamHandle>;

struct Device {
  Plugin* plugin = nullptr;
  int32_t index = 0;      // index within its plugin
  int32_t global_id = 0;  // index in DeviceManager::devices()
  std::string name;       // "custom:<type>:<index>"
  bool host_memory = false;
  // The DLPack device (type, id) under which other frameworks address this device's memory
  // (properties.dlpack_device_type, with memory.device_address; 0 when the plugin exchanges
  // none: ABI 1.1).
  int32_t dlpack_type = 0;
  int32_t dlpack_id = 0;
  std::unique_ptr<CachingAllocator> allocator;

  // Runs init_device and creates the default stream, once. Throws on failure.
  void ensure_initialized();
  HWP_Stream default_stream() {
    ensure_initialized();
    return default_stream_;
  }
  // The calling thread's current stream on this device (its default stream unless a
  // stream guard is active). NULL for plugins without streams. The raw handle stays valid
  // while the thread's current stream is not changed (the thread's slot holds a reference).
  HWP_Stream current_stream();
  StreamRef current_stream_ref();
  // A new stream owned by the returned handle (the default stream's handle for plugins without
  // streams). Throws on failure.
  StreamRef create_stream();
  void set_current_stream(StreamRef stream);
  void synchronize();
  void synchronize_stream(HWP_Stream stream);

 private:
  std::once_flag init_once_;
  bool init_ok_ = false;
  std::string init_error_;
  HWP_Stream default_stream_ = nullptr;
  StreamRef default_ref_;  // non-owning handle of default_stream_
};

class DeviceManager {
 public:
  static DeviceManager& instance();

  struct Candidate {
    std::string path;
    bool probe;  // run its init in an isolated process first
  };
  // Loads each candidate in order; failures are recorded, never thrown. `probe_exe` empty
  // disables probing.
  void load_plugins(const std::vector<Candidate>& candidates, const std::string& probe_exe,
                    double probe_timeout_s);
  const std::vector<std::unique_ptr<Plugin>>& plugins() const { return plugins_; }
  const std::vector<LoadError>& errors() const { return errors_; }
  const std::vector<std::unique_ptr<Device>>& devices() const { return devices_; }

  // Parses "cpu", "custom:<type>", "custom:<type>:<index>"; throws ValueError naming what is
  // available when the place is malformed, unknown or out of range.
  Device* resolve(const std::string& place);
  Device* find(const std::string& device_type, int64_t index);
  // The device whose memory other frameworks address as DLPack device (type, id); nullptr if
  // none.
  Device* find_dlpack(int32_t type, int32_t id) const;
  std::string available_places() const;
  // The calling thread's current device (custom:cpu:0 until set_device is called).
  Device* current();
  void set_current(Device* device);
  // custom:cpu:0, the fallback device; nullptr when the cpu plugin did not load.
  Device* cpu() const { return cpu_; }
  void shutdown();

 private:
  std::vector<std::unique_ptr<Plugin>> plugins_;
  std::vector<LoadError> errors_;
  std::vector<std::unique_ptr<Device>> devices_;
  Device* cpu_ = nullptr;
};

}  // namespace hwport
