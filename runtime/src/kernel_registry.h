// Op names -> small integer ids, and the per-plugin kernel table indexed by (op id, dtype).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dtype.h"
#include "hwport/kernel.h"

namespace hwport {

// Id of an op name, allocating a new id for a name seen for the first time. Thread-safe.
int op_id(const std::string& name);
// Name of an id from op_id.
const std::string& op_name(int id);

// Ids of the ops the runtime core itself dispatches, resolved once.
struct CoreOps {
  int fill, copy, cast, add, multiply;
};
const CoreOps& core_ops();

struct KernelEntry {
  HWP_KernelFn fn = nullptr;
  uint32_t flags = 0;
  void* user_data = nullptr;
  bool accepts_strided() const { return (flags & HWP_KERNEL_ACCEPTS_STRIDED) != 0; }
};

class KernelTable {
 public:
  const KernelEntry* find(int op, DType dtype) const {
    if (op < 0 || static_cast<size_t>(op) >= table_.size()) return nullptr;
    const KernelEntry& e = table_[op][static_cast<int>(dtype)];
    return e.fn ? &e : nullptr;
  }
  void add(int op, DType dtype, const KernelEntry& entry);
  size_t size() const;  // number of registered (op, dtype) kernels

 private:
  std::vector<std::array<KernelEntry, kNumDTypes>> table_;
};

}  // namespace hwport
