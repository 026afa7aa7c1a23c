// The host side of a plugin's codegen table (hwport/codegen.h, ABI 1.2): target information,
// modules compiled (or deserialized) through the plugin, their functions, and launches on the
// device's current stream. A module unloads itself when its last holder lets go (after the
// device has finished its work); a function holds its module. Plugin errors become hwport
// Errors naming the call; a compile failure is a CodegenCompileError carrying the build log.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device.h"
#include "errors.h"
#include "tensor.h"

namespace hwport {

// Source that does not compile (HWP_ERROR_INVALID_ARGUMENT from compile): `log` is the
// compiler's output.
class CodegenCompileError : public Error {
 public:
  CodegenCompileError(const std::string& message, std::string log)
      : Error(ErrorKind::Runtime, message), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

struct CodegenTargetInfo {
  std::vector<std::string> dialects;  // preferred first
  std::string architecture;
  uint32_t flags = 0;  // HWP_CodegenFlag bits
  uint32_t simd_width = 0;
  uint32_t preferred_vector_width = 0;
  uint32_t max_group_size = 0;
  uint32_t compute_units = 0;
  uint64_t local_memory_bytes = 0;
  uint64_t max_grid_size = 0;  // as the plugin said (0: 2^31 - 1)
};

// The device's target, or nullopt when its plugin has none (no table, a 1.0/1.1 table, or
// get_target_info says HWP_ERROR_NOT_SUPPORTED). Throws for any other failure.
std::optional<CodegenTargetInfo> codegen_target_info(Device* device);

class CodegenFunction;

class CodegenModule : public std::enable_shared_from_this<CodegenModule> {
 public:
  // Throws NotSupported for a device without a target or a dialect it does not accept,
  // CodegenCompileError for source that does not compile.
  static std::shared_ptr<CodegenModule> compile(Device* device, const std::string& dialect,
                                                const std::string& source,
                                                const std::string& options);
  // A module from serialize()'s bytes; NotSupported where the plugin cannot serialize.
  static std::shared_ptr<CodegenModule> deserialize(Device* device, const std::string& dialect,
                                                    const std::string& data);
  ~CodegenModule();  // synchronizes the device, then unloads (never throws)
  CodegenModule(const CodegenModule&) = delete;
  CodegenModule& operator=(const CodegenModule&) = delete;

  // Index error (ErrorKind::Index) when the module has no function `name`.
  std::shared_ptr<CodegenFunction> function(const std::string& name);
  // The compiled form, or nullopt when the plugin cannot serialize.
  std::optional<std::string> serialize() const;

  Device* device() const { return device_; }
  const std::string& dialect() const { return dialect_; }

 private:
  CodegenModule(Device* device, HWP_CodegenModule handle, std::string dialect)
      : device_(device), handle_(handle), dialect_(std::move(dialect)) {}

  Device* device_;
  HWP_CodegenModule handle_;
  std::string dialect_;
};

// One kernel argument as the host passes it: a tensor (its buffer and the byte offset of its
// first element: the kernel sees the view from there on), an int64 or a float64.
struct CodegenArg {
  enum class Kind { Tensor, Int64, Float64 };
  Kind kind = Kind::Int64;
  const Tensor* tensor = nullptr;
  int64_t i64 = 0;
  double f64 = 0.0;
};

class CodegenFunction {
 public:
  CodegenFunction(std::shared_ptr<CodegenModule> module, HWP_CodegenFunction handle,
                  std::string name)
      : module_(std::move(module)), handle_(handle), name_(std::move(name)) {}

  // Enqueues one launch on the device's current stream. Every tensor must be on the module's
  // device; grid and group entries >= 1.
  void launch(const uint32_t grid[3], const uint32_t group[3],
              const std::vector<CodegenArg>& args) const;

  const std::string& name() const { return name_; }
  Device* device() const { return module_->device(); }
  const std::shared_ptr<CodegenModule>& module() const { return module_; }

 private:
  std::shared_ptr<CodegenModule> module_;
  HWP_CodegenFunction handle_;
  std::string name_;
};

}  // namespace hwport
