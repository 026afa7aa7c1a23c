#include "dtype.h"

#include <algorithm>

namespace hwport {

size_t itemsize(DType dtype) {
  switch (dtype) {
    case DType::Bool: case DType::Int8: case DType::UInt8: return 1;
    case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::Float32: return 4;
    case DType::Int64: case DType::Float64: return 8;
  }
  return 0;
}

static const char* const kNames[kNumDTypes] = {"bool",    "int8",     "uint8",   "int16",
                                               "int32",   "int64",    "float16", "bfloat16",
                                               "float32", "float64"};

const char* dtype_name(DType dtype) {
  auto code = static_cast<int32_t>(dtype);
  return valid_dtype_code(code) ? kNames[code] : "invalid";
}

bool valid_dtype_code(int32_t code) { return code >= 0 && code < kNumDTypes; }

bool is_floating(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 ||
         d == DType::Float64;
}

bool is_integral(DType d) { return !is_floating(d) && d != DType::Bool; }

bool dtype_from_name(const std::string& name, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == kNames[i]) {
      *out = static_cast<DType>(i);
      return true;
    }
  }
  return false;
}

namespace {
bool is_signed_int(DType d) {
  return d == DType::Int8 || d == DType::Int16 || d == DType::Int32 || d == DType::Int64;
}
int int_bits(DType d) { return static_cast<int>(itemsize(d)) * 8; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_floating(a) || is_floating(b)) {
    if (!is_floating(a)) return b;
    if (!is_floating(b)) return a;
    if ((a == DType::Float16 && b == DType::BFloat16) ||
        (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  // Both integers.
  if (is_signed_int(a) == is_signed_int(b)) return itemsize(a) >= itemsize(b) ? a : b;
  DType s = is_signed_int(a) ? a : b;  // the only unsigned type is uint8
  return int_bits(s) > 8 ? s : DType::Int16;
}

}  // namespace hwport
