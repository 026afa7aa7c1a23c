#include "kernel_cache.h"

#include <vector>

#include "plugin.h"

namespace hwport::pipeline {

int registry_id(const OpSpec& op) {
  // Filled under the GIL (every caller holds it), once per op.
  static std::vector<int> ids(static_cast<size_t>(num_ops()), -1);
  int& id = ids[static_cast<size_t>(op.id)];
  if (id < 0) id = op_id(op.name);
  return id;
}

const KernelEntry* native_kernel(const OpSpec& op, Device* device, DType dtype) {
  return device->plugin->kernels.find(registry_id(op), dtype);
}

}  // namespace hwport::pipeline
