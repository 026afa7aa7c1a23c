// C++-side errors of the runtime core. They never cross the C ABI (plugins see HWP_Status);
// the pybind11 layer maps each kind to a Python exception type.
#pragma once

#include <stdexcept>
#include <string>

#include "hwport/types.h"

namespace hwport {

enum class ErrorKind { Value, Type, Index, Runtime, OutOfMemory, Fallback, NotSupported };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

[[noreturn]] inline void raise(ErrorKind kind, const std::string& message) {
  throw Error(kind, message);
}

const char* status_name(HWP_Status status);

}  // namespace hwport
