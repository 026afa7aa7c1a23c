#include "layers.h"

namespace hwport::layers {

thread_local uint32_t active_mask = 0;

}  // namespace hwport::layers
