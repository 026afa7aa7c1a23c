/* hwport CPU plugin — cpu_verff_f, the float32 erf of fast_erff.h as a function with GCC simd
 * clones (one per x86-64 vector ABI set, each compiled and vectorized from this body by GCC).
 * The generated loops call it rather than the inline cpu_erff where they can: gelu's loop holds
 * both of its forms under a runtime condition, and GCC vectorizes that over two calls but not
 * over the whole inlined erf (it was 4x slower than the erf loop). */
#include "fast_erff.h"

#if CPU_ERFF_SIMD_CLONES
float cpu_verff_f(float x) { return cpu_erff(x); }
#endif
