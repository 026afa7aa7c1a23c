#include "kernel_registry.h"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace hwport {

namespace {
struct OpNames {
  std::mutex mutex;
  std::unordered_map<std::string, int> ids;
  std::deque<std::string> names;  // a deque keeps references stable as it grows
};
OpNames& op_names() {
  static OpNames names;
  return names;
}
}  // namespace

int op_id(const std::string& name) {
  OpNames& reg = op_names();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.ids.find(name);
  if (it != reg.ids.end()) return it->second;
  int id = static_cast<int>(reg.names.size());
  reg.names.push_back(name);
  reg.ids.emplace(name, id);
  return id;
}

const std::string& op_name(int id) {
  OpNames& reg = op_names();
  std::lock_guard<std::mutex> lock(reg.mutex);
  return reg.names.at(static_cast<size_t>(id));
}

const CoreOps& core_ops() {
  static const CoreOps ops{op_id("fill"), op_id("copy"), op_id("cast"), op_id("add"),
                           op_id("multiply")};
  return ops;
}

void KernelTable::add(int op, DType dtype, const KernelEntry& entry) {
  if (static_cast<size_t>(op) >= table_.size()) table_.resize(static_cast<size_t>(op) + 1);
  table_[op][static_cast<int>(dtype)] = entry;
}

size_t KernelTable::size() const {
  size_t n = 0;
  for (const auto& row : table_)
    for (const auto& e : row) n += e.fn != nullptr;
  return n;
}

}  // namespace hwport
