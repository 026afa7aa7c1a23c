/* hwport C ABI v1 — everything a vendor plugin includes. */
#ifndef HWPORT_HWPORT_H
#define HWPORT_HWPORT_H

#include "hwport/ccl.h"
#include "hwport/codegen.h"
#include "hwport/device.h"
#include "hwport/kernel.h"
#include "hwport/kernel_util.h"
#include "hwport/ops.h"
#include "hwport/plugin.h"
#include "hwport/profiler.h"
#include "hwport/types.h"

#endif /* HWPORT_HWPORT_H */
