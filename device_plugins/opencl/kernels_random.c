/* hwport OpenCL plugin — uniform (Philox-4x32-10). */
#include "kernels.h"

HWP_Status ocl_register_random_kernels(const HWP_HostApi *host) {
  (void)host;
  return HWP_OK;
}
