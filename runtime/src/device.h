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
  // stream guard is active). NULL for plugins without streams.
  HWP_Stream current_stream();
  void set_current_stream(HWP_Stream stream);
  void synchronize();
  void synchronize_stream(HWP_Stream stream);

 private:
  std::once_flag init_once_;
  bool init_ok_ = false;
  std::string init_error_;
  HWP_Stream default_stream_ = nullptr;
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
