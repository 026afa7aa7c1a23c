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

namespace {
std::vector<bool> g_hidden;  // by op id; empty: none (under the GIL)
}  // namespace

const KernelEntry* native_kernel(const OpSpec& op, Device* device, DType dtype) {
  if (!g_hidden.empty() && g_hidden[static_cast<size_t>(op.id)]) return nullptr;
  return device->plugin->kernels.find(registry_id(op), dtype);
}

void hide_native_kernels(const std::vector<int>& op_ids) {
  g_hidden.clear();
  if (op_ids.empty()) return;
  g_hidden.assign(static_cast<size_t>(num_ops()), false);
  for (int id : op_ids) g_hidden[static_cast<size_t>(id)] = true;
}

std::vector<std::string> hidden_native_kernels() {
  std::vector<std::string> out;
  for (size_t i = 0; i < g_hidden.size(); ++i)
    if (g_hidden[i]) out.emplace_back(op_spec(static_cast<int>(i))->name);
  return out;
}

}  // namespace hwport::pipeline
