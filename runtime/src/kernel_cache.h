// Kernel selection of the op-call pipeline for (op, device type, dtype): the op's id in the
// kernel registry is resolved once per op (op_id takes a lock and hashes the name), then the
// device plugin's table (indexed by (registry id, dtype)) answers in O(1). A composite without
// a native kernel runs its C++ formula (decomp_formulas.h), else its Python decomposition.
#pragma once

#include <string>
#include <vector>

#include "device.h"
#include "kernel_registry.h"
#include "pipeline_ops.h"

namespace hwport::pipeline {

// The op's id in the kernel registry (op_id(name)), cached.
int registry_id(const OpSpec& op);
// A native kernel of `op` for `dtype` on `device`'s plugin, or nullptr.
const KernelEntry* native_kernel(const OpSpec& op, Device* device, DType dtype);

// Test/benchmark hook: native_kernel ignores these ops' kernels on every device (the C++
// selection only; phi_ops/dispatch.py still sees them), standing for a primitives-only plugin.
void hide_native_kernels(const std::vector<int>& op_ids);
std::vector<std::string> hidden_native_kernels();

}  // namespace hwport::pipeline
