#include "device.h"

#include "errors.h"

namespace hwport {

namespace {
// Current stream per device for this thread, indexed by Device::global_id; empty = default.
// Holding the reference keeps the stream alive while it is current.
thread_local std::vector<StreamRef> tls_streams;
thread_local Device* tls_device = nullptr;
}  // namespace

StreamHandle::~StreamHandle() {
  if (!owned_ || !stream_) return;
  const Plugin& p = *device_->plugin;
  // Its work first: then nothing still uses the blocks it touched, and the allocator can hand
  // them to the default stream and drop the events it recorded on this one.
  p.stream.synchronize_stream(device_->index, stream_);
  try {
    device_->allocator->forget_stream(stream_, device_->default_stream());
  } catch (...) {
  }
  p.stream.destroy_stream(device_->index, stream_);
}

void Device::ensure_initialized() {
  std::call_once(init_once_, [this] {
    if (plugin->device.init_device) {
      HWP_Status st = plugin->device.init_device(index);
      if (st != HWP_OK) {
        init_error_ = plugin->describe("init_device", st);
        return;
      }
    }
    if (plugin->has_streams) {
      HWP_Status st = plugin->stream.create_stream(index, &default_stream_);
      if (st != HWP_OK) {
        init_error_ = plugin->describe("create_stream", st);
        return;
      }
    }
    default_ref_ = std::make_shared<StreamHandle>(this, default_stream_, false);
    init_ok_ = true;
  });
  if (!init_ok_) raise(ErrorKind::Runtime, name + " is unusable: " + init_error_);
}

HWP_Stream Device::current_stream() {
  if (static_cast<size_t>(global_id) < tls_streams.size() && tls_streams[global_id])
    return tls_streams[global_id]->get();
  return default_stream();
}

StreamRef Device::current_stream_ref() {
  if (static_cast<size_t>(global_id) < tls_streams.size() && tls_streams[global_id])
    return tls_streams[global_id];
  ensure_initialized();
  return default_ref_;
}

StreamRef Device::create_stream() {
  ensure_initialized();
  if (!plugin->has_streams) return default_ref_;
  HWP_Stream stream = nullptr;
  plugin->check(plugin->stream.create_stream(index, &stream), "create_stream");
  try {
    return std::make_shared<StreamHandle>(this, stream, true);
  } catch (...) {
    plugin->stream.destroy_stream(index, stream);
    throw;
  }
}

void Device::set_current_stream(StreamRef stream) {
  if (tls_streams.size() <= static_cast<size_t>(global_id))
    tls_streams.resize(static_cast<size_t>(global_id) + 1);
  // The previous stream is released after the slot changed (its last reference may destroy it).
  StreamRef previous = std::move(tls_streams[global_id]);
  tls_streams[global_id] = std::move(stream);
}

void Device::synchronize() {
  ensure_initialized();
  plugin->check(plugin->device.synchronize_device(index), "synchronize_device");
}

void Device::synchronize_stream(HWP_Stream stream) {
  if (plugin->has_streams && stream) {
    plugin->check(plugin->stream.synchronize_stream(index, stream), "synchronize_stream");
  } else {
    synchronize();
  }
}

DeviceManager& DeviceManager::instance() {
  // Never destroyed: tensors may outlive static destruction at exit, and plugins may still
  // run threads; hwport.runtime calls shutdown() from atexit instead.
  static DeviceManager* manager = std::make_unique<DeviceManager>().release();
  return *manager;
}

void DeviceManager::load_plugins(const std::vector<Candidate>& candidates,
                                 const std::string& probe_exe, double probe_timeout_s) {
  for (const auto& candidate : candidates) {
    const std::string& path = candidate.path;
    bool seen = false;
    for (const auto& p : plugins_) seen |= p->path == path;
    if (seen) continue;
    std::vector<std::string> taken;
    for (const auto& p : plugins_) taken.push_back(p->device_type);
    std::string reason;
    if (!is_loadable_file(path, &reason)) {
      errors_.push_back({path, reason});
      continue;
    }
    if (candidate.probe && !probe_exe.empty() &&
        !probe_plugin(probe_exe, path, probe_timeout_s, &reason)) {
      errors_.push_back({path, reason});
      continue;
    }
    std::unique_ptr<Plugin> plugin;
    try {
      plugin = load_plugin(path, taken, &reason);
    } catch (const std::exception& e) {
      reason = std::string("internal error while loading: ") + e.what();
    }
    if (!plugin) {
      errors_.push_back({path, reason});
      continue;
    }
    for (int32_t i = 0; i < plugin->device_count; ++i) {
      auto dev = std::make_unique<Device>();
      dev->plugin = plugin.get();
      dev->index = i;
      dev->global_id = static_cast<int32_t>(devices_.size());
      dev->name = "custom:" + plugin->device_type + ":" + std::to_string(i);
      if (plugin->device.get_properties) {
        HWP_DeviceProperties props{};
        props.struct_size = sizeof(props);
        if (plugin->device.get_properties(i, &props) == HWP_OK) {
          dev->host_memory = (props.flags & HWP_DEVICE_HOST_MEMORY) != 0 &&
                             plugin->memory.host_address != nullptr;
          // A plugin older than 1.1 leaves the field zero (the host zero-filled the struct);
          // a DLPack device counts only with the address to export.
          if (!dev->host_memory && props.dlpack_device_type != HWP_DLPACK_NONE &&
              plugin->memory.device_address) {
            dev->dlpack_type = props.dlpack_device_type;
            dev->dlpack_id = props.dlpack_device_id;
          }
        }
      }
      dev->allocator = std::make_unique<CachingAllocator>(dev.get());
      if (plugin->device_type == "cpu" && i == 0) cpu_ = dev.get();
      devices_.push_back(std::move(dev));
    }
    plugins_.push_back(std::move(plugin));
  }
}

std::string DeviceManager::available_places() const {
  std::string out;
  for (const auto& d : devices_) out += (out.empty() ? "" : ", ") + d->name;
  return out.empty() ? "(none: no plugin loaded)" : out;
}

Device* DeviceManager::find(const std::string& device_type, int64_t index) {
  for (const auto& p : plugins_) {
    if (p->device_type != device_type) continue;
    if (index < 0 || index >= p->device_count) {
      raise(ErrorKind::Value, "device index " + std::to_string(index) + " is out of range for custom:" +
                                  device_type + " (" + std::to_string(p->device_count) +
                                  " device" + (p->device_count == 1 ? "" : "s") +
                                  (p->device_count == 0 && !p->device_count_note.empty()
                                       ? ": " + p->device_count_note
                                       : "") +
                                  "); available places: " + available_places());
    }
    for (const auto& d : devices_)
      if (d->plugin == p.get() && d->index == index) return d.get();
  }
  raise(ErrorKind::Value, "unknown device type '" + device_type +
                              "'; available places: " + available_places());
}

Device* DeviceManager::find_dlpack(int32_t type, int32_t id) const {
  for (const auto& d : devices_)
    if (d->dlpack_type == type && d->dlpack_id == id) return d.get();
  return nullptr;
}

Device* DeviceManager::resolve(const std::string& place) {
  auto malformed = [&]() {
    raise(ErrorKind::Value, "invalid place '" + place +
                                "': expected 'cpu', 'custom:<device_type>' or "
                                "'custom:<device_type>:<index>'; available places: " +
                                available_places());
  };
  if (place == "cpu") return find("cpu", 0);
  const std::string prefix = "custom:";
  if (place.compare(0, prefix.size(), prefix) != 0) malformed();
  std::string rest = place.substr(prefix.size());
  size_t colon = rest.find(':');
  std::string type = rest.substr(0, colon);
  if (type.empty()) malformed();
  int64_t index = 0;
  if (colon != std::string::npos) {
    std::string idx = rest.substr(colon + 1);
    if (idx.empty() || idx.size() > 9) malformed();
    for (char c : idx)
      if (c < '0' || c > '9') malformed();
    index = std::stoll(idx);
  }
  return find(type, index);
}

Device* DeviceManager::current() {
  if (tls_device) return tls_device;
  if (!cpu_) raise(ErrorKind::Runtime, "no current device: the cpu plugin did not load (see "
                                       "hwport.runtime.plugin_errors())");
  return cpu_;
}

void DeviceManager::set_current(Device* device) {
  device->ensure_initialized();
  if (device->plugin->device.set_device)
    device->plugin->check(device->plugin->device.set_device(device->index), "set_device");
  tls_device = device;
}

void DeviceManager::shutdown() {
  for (const auto& d : devices_) {
    try {
      d->plugin->device.synchronize_device(d->index);
      d->allocator->empty_cache();
    } catch (...) {
    }
  }
}

}  // namespace hwport
