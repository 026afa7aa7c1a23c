// The op-call pipeline's layers (DESIGN.md, "The op-call pipeline"): trace, dist, autograd and
// amp, outermost first, plus the profiler. Each layer has one bit in a thread-local mask, set
// while it is active on this thread, so that the pipeline's fast path pays one test per call
// when no layer is active.
#pragma once

#include <cstdint>

namespace hwport::layers {

enum Bit : uint32_t {
  kTrace = 1u << 0,
  kDist = 1u << 1,
  kAutograd = 1u << 2,
  kAmp = 1u << 3,
  kProfiler = 1u << 4,
};

// The layers active on the calling thread (a bit per layer).
extern thread_local uint32_t active_mask;

inline bool any_active() { return active_mask != 0; }

}  // namespace hwport::layers
