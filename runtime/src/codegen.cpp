#include "codegen.h"
#include "device_profiler.h"

#include <cstring>

namespace hwport {

namespace {

constexpr size_t kLogCapacity = 64 * 1024;     // the build log buffer handed to compile
constexpr size_t kMaxTargetStrings = 4096;     // architecture and dialect names, each
constexpr size_t kMaxDialects = 64;

const Plugin& target_plugin(Device* device, const char* what) {
  const Plugin& p = *device->plugin;
  if (!p.has_codegen_target)
    raise(ErrorKind::NotSupported,
          std::string(what) + ": " + device->name + " has no codegen target (the " +
              p.device_type + " plugin provides no ABI 1.2 HWP_CodegenTable)");
  device->ensure_initialized();
  return p;
}

// A string the plugin returned, read without trusting the pointer.
std::string plugin_string(const char* s, const char* what) {
  std::string out;
  const StringRead r = read_plugin_string(s, kMaxTargetStrings, &out);
  if (r == StringRead::Unreadable || r == StringRead::TooLong)
    raise(ErrorKind::Runtime, std::string("codegen.get_target_info: ") + what +
                                  " does not point to a readable NUL-terminated string");
  return out;
}

}  // namespace

std::optional<CodegenTargetInfo> codegen_target_info(Device* device) {
  const Plugin& p = *device->plugin;
  if (!p.has_codegen_target) return std::nullopt;
  device->ensure_initialized();
  HWP_CodegenTargetInfo raw{};
  raw.struct_size = sizeof(raw);
  const HWP_Status st = p.codegen.get_target_info(device->index, &raw);
  if (st == HWP_ERROR_NOT_SUPPORTED) return std::nullopt;
  if (st != HWP_OK)
    raise(st == HWP_ERROR_OUT_OF_MEMORY ? ErrorKind::OutOfMemory : ErrorKind::Runtime,
          "codegen target of " + device->name + ": " + p.describe("codegen.get_target_info", st));
  CodegenTargetInfo info;
  // A plugin of an older minor fills fewer fields: the rest stay zero.
  if (HWP_HAS_FIELD(&raw, HWP_CodegenTargetInfo, dialects) && raw.dialects) {
    for (size_t i = 0;; ++i) {
      if (i == kMaxDialects)
        raise(ErrorKind::Runtime, "codegen.get_target_info of " + device->name +
                                      ": the dialect list has no NULL within " +
                                      std::to_string(kMaxDialects) + " entries");
      const char* d = raw.dialects[i];
      if (!d) break;
      info.dialects.push_back(plugin_string(d, "a dialect name"));
    }
  }
  if (HWP_HAS_FIELD(&raw, HWP_CodegenTargetInfo, architecture) && raw.architecture)
    info.architecture = plugin_string(raw.architecture, "architecture");
  info.flags = raw.flags;
  info.simd_width = raw.simd_width;
  info.preferred_vector_width = raw.preferred_vector_width;
  info.max_group_size = raw.max_group_size;
  info.compute_units = raw.compute_units;
  info.local_memory_bytes = raw.local_memory_bytes;
  info.max_grid_size = raw.max_grid_size;
  return info;
}

std::shared_ptr<CodegenModule> CodegenModule::compile(Device* device, const std::string& dialect,
                                                      const std::string& source,
                                                      const std::string& options) {
  const Plugin& p = target_plugin(device, "codegen compile");
  if (source.find('\0') != std::string::npos)
    raise(ErrorKind::Value, "codegen compile: the source contains a NUL character");
  std::string log(kLogCapacity, '\0');
  HWP_CodegenModule handle = nullptr;
  const HWP_Status st = p.codegen.compile(device->index, dialect.c_str(), source.c_str(),
                                          options.c_str(), &handle, log.data(), log.size());
  if (st != HWP_OK) {
    log.resize(strnlen(log.data(), log.size()));
    const std::string what = "codegen compile (" + dialect + ") on " + device->name + ": " +
                             p.describe("codegen.compile", st);
    if (st == HWP_ERROR_INVALID_ARGUMENT) throw CodegenCompileError(what, log);
    raise(st == HWP_ERROR_NOT_SUPPORTED   ? ErrorKind::NotSupported
          : st == HWP_ERROR_OUT_OF_MEMORY ? ErrorKind::OutOfMemory
                                          : ErrorKind::Runtime,
          what);
  }
  if (!handle)
    raise(ErrorKind::Runtime, "codegen compile on " + device->name +
                                  ": the plugin returned HWP_OK and no module");
  return std::shared_ptr<CodegenModule>(new CodegenModule(device, handle, dialect));
}

std::shared_ptr<CodegenModule> CodegenModule::deserialize(Device* device,
                                                          const std::string& dialect,
                                                          const std::string& data) {
  const Plugin& p = target_plugin(device, "codegen deserialize");
  if (!p.codegen.serialize || !p.codegen.deserialize)
    raise(ErrorKind::NotSupported, "codegen deserialize: the " + p.device_type +
                                       " plugin cannot serialize modules");
  HWP_CodegenModule handle = nullptr;
  const HWP_Status st = p.codegen.deserialize(device->index, dialect.c_str(), data.data(),
                                              data.size(), &handle);
  if (st != HWP_OK)
    raise(st == HWP_ERROR_NOT_SUPPORTED   ? ErrorKind::NotSupported
          : st == HWP_ERROR_INVALID_ARGUMENT ? ErrorKind::Value
          : st == HWP_ERROR_OUT_OF_MEMORY    ? ErrorKind::OutOfMemory
                                             : ErrorKind::Runtime,
          "codegen deserialize (" + dialect + ") on " + device->name + ": " +
              p.describe("codegen.deserialize", st));
  if (!handle)
    raise(ErrorKind::Runtime, "codegen deserialize on " + device->name +
                                  ": the plugin returned HWP_OK and no module");
  return std::shared_ptr<CodegenModule>(new CodegenModule(device, handle, dialect));
}

CodegenModule::~CodegenModule() {
  const Plugin& p = *device_->plugin;
  // The contract: no launch of its functions may be pending when a module is unloaded.
  p.device.synchronize_device(device_->index);
  p.codegen.unload(handle_);
}

std::shared_ptr<CodegenFunction> CodegenModule::function(const std::string& name) {
  const Plugin& p = *device_->plugin;
  HWP_CodegenFunction fn = nullptr;
  const HWP_Status st = p.codegen.get_function(handle_, name.c_str(), &fn);
  if (st == HWP_ERROR_NOT_FOUND)
    raise(ErrorKind::Index, "codegen module (" + dialect_ + ") on " + device_->name +
                                " has no function '" + name + "': " +
                                p.describe("codegen.get_function", st));
  p.check(st, "codegen.get_function");
  if (!fn)
    raise(ErrorKind::Runtime, "codegen.get_function('" + name +
                                  "') returned HWP_OK and no function");
  return std::make_shared<CodegenFunction>(shared_from_this(), fn, name);
}

std::optional<std::string> CodegenModule::serialize() const {
  const Plugin& p = *device_->plugin;
  if (!p.codegen.serialize || !p.codegen.deserialize) return std::nullopt;
  size_t size = 0;
  const HWP_Status st = p.codegen.serialize(handle_, nullptr, 0, &size);
  if (st == HWP_ERROR_NOT_SUPPORTED) return std::nullopt;
  p.check(st, "codegen.serialize (size)");
  std::string data(size, '\0');
  size_t written = size;
  p.check(p.codegen.serialize(handle_, data.data(), data.size(), &written), "codegen.serialize");
  if (written > size)
    raise(ErrorKind::Runtime, "codegen.serialize wrote " + std::to_string(written) +
                                  " bytes into a buffer of the " + std::to_string(size) +
                                  " it asked for");
  data.resize(written);
  return data;
}

void CodegenFunction::launch(const uint32_t grid[3], const uint32_t group[3],
                             const std::vector<CodegenArg>& args) const {
  Device* device = module_->device();
  const Plugin& p = *device->plugin;
  HWP_Stream stream = device->current_stream();
  std::vector<HWP_CodegenArg> raw(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const CodegenArg& a = args[i];
    HWP_CodegenArg& r = raw[i];
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    switch (a.kind) {
      case CodegenArg::Kind::Tensor: {
        const Tensor& t = *a.tensor;
        if (!t.storage || t.device() != device)
          raise(ErrorKind::Value, "launch of '" + name_ + "': argument " + std::to_string(i) +
                                      " is a tensor on " +
                                      (t.storage ? t.device()->name : std::string("no device")) +
                                      ", the function is compiled for " + device->name);
        t.storage->record_stream(stream);
        r.kind = HWP_CODEGEN_ARG_BUFFER;
        r.value.buffer.buffer = t.storage->buffer();
        r.value.buffer.byte_offset = t.byte_offset();
        break;
      }
      case CodegenArg::Kind::Int64:
        r.kind = HWP_CODEGEN_ARG_INT64;
        r.value.i64 = a.i64;
        break;
      case CodegenArg::Kind::Float64:
        r.kind = HWP_CODEGEN_ARG_FLOAT64;
        r.value.f64 = a.f64;
        break;
    }
  }
  HWP_CodegenLaunch l{};
  l.struct_size = sizeof(l);
  for (int d = 0; d < 3; ++d) {
    l.grid[d] = grid[d];
    l.group[d] = group[d];
  }
  l.num_args = static_cast<int32_t>(raw.size());
  l.args = raw.data();
  l.correlation_id = device_profiler::current_correlation_id;  // the op call, when profiled
  const HWP_Status st = p.codegen.launch(device->index, handle_, stream, &l);
  if (st != HWP_OK)
    raise(st == HWP_ERROR_OUT_OF_MEMORY ? ErrorKind::OutOfMemory
          : st == HWP_ERROR_INVALID_ARGUMENT ? ErrorKind::Value
                                             : ErrorKind::Runtime,
          "launch of '" + name_ + "' on " + device->name + ": " +
              p.describe("codegen.launch", st));
}

}  // namespace hwport
