#include "pipeline_ops.h"

#include <cstring>

namespace hwport::pipeline {
namespace {
#include "pipeline_ops.inc"
}  // namespace

int num_ops() { return kNumOpSpecs; }

const OpSpec* op_spec(int id) { return id >= 0 && id < kNumOpSpecs ? &kOpTable[id] : nullptr; }

const OpSpec* op_spec(const char* name) {
  for (const OpSpec& op : kOpTable)
    if (std::strcmp(op.name, name) == 0) return &op;
  return nullptr;
}

}  // namespace hwport::pipeline
