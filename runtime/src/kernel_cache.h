// Kernel selection of the op-call pipeline for (op, device type, dtype): the op's id in the
// kernel registry is resolved once per op (op_id takes a lock and hashes the name), then the
// device plugin's table (indexed by (registry id, dtype)) answers in O(1). A composite runs in
// C++ only with a native kernel; otherwise its decomposition (in Python for now) is used.
#pragma once

#include "device.h"
#include "kernel_registry.h"
#include "pipeline_ops.h"

namespace hwport::pipeline {

// The op's id in the kernel registry (op_id(name)), cached.
int registry_id(const OpSpec& op);
// A native kernel of `op` for `dtype` on `device`'s plugin, or nullptr.
const KernelEntry* native_kernel(const OpSpec& op, Device* device, DType dtype);

}  // namespace hwport::pipeline
