// Element types: names, sizes and the promotion lattice used by binary ops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hwport/types.h"

namespace hwport {

enum class DType : int32_t {
  Bool = HWP_DTYPE_BOOL,
  Int8 = HWP_DTYPE_INT8,
  UInt8 = HWP_DTYPE_UINT8,
  Int16 = HWP_DTYPE_INT16,
  Int32 = HWP_DTYPE_INT32,
  Int64 = HWP_DTYPE_INT64,
  Float16 = HWP_DTYPE_FLOAT16,
  BFloat16 = HWP_DTYPE_BFLOAT16,
  Float32 = HWP_DTYPE_FLOAT32,
  Float64 = HWP_DTYPE_FLOAT64,
};

constexpr int kNumDTypes = HWP_DTYPE_COUNT;

size_t itemsize(DType dtype);
const char* dtype_name(DType dtype);
bool is_floating(DType dtype);
bool is_integral(DType dtype);  // bool excluded
bool dtype_from_name(const std::string& name, DType* out);
bool valid_dtype_code(int32_t code);

// Promotion of two tensor dtypes (numpy's table restricted to these types, without
// value-based casting): bool < integers < floats; int8 with uint8 -> int16; float16 with
// bfloat16 -> float32; an integer with a float keeps the float.
DType promote_types(DType a, DType b);

}  // namespace hwport
