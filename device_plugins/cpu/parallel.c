/* hwport CPU plugin — cpu_parallel_for (serial placeholder until the pool lands). */
#include "parallel.h"

void cpu_parallel_for(int64_t n, int64_t grain,
                      void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
  (void)grain;
  if (n > 0) fn(ctx, 0, n);
}

int cpu_parallel_threads(void) { return 1; }
