#include "pipeline_ops.h"

#include <cstring>

namespace hwport::pipeline {
namespace {
#include "pipeline_ops.inc"
}  // namespace

bool OpSpec::float_only() const {
  for (int d = 0; d < kNumDTypes; ++d)
    if (((dtypes >> d) & 1u) && !is_floating(static_cast<DType>(d))) return false;
  return true;
}

int num_ops() { return kNumOpSpecs; }

const OpSpec* op_spec(int id) { return id >= 0 && id < kNumOpSpecs ? &kOpTable[id] : nullptr; }

const OpSpec* op_spec(const char* name) {
  for (const OpSpec& op : kOpTable)
    if (std::strcmp(op.name, name) == 0) return &op;
  return nullptr;
}

}  // namespace hwport::pipeline
