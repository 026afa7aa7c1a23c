/* hwport CPU plugin — data-parallel loops over the plugin's thread pool. */
#ifndef HWPORT_CPU_PARALLEL_H
#define HWPORT_CPU_PARALLEL_H

#include <stdint.h>

/* Runs fn(ctx, begin, end) over [0, n) in chunks of at least `grain` items, on the calling
 * thread and the plugin's worker pool, and returns when every chunk is done. Chunks never
 * overlap; fn must be safe to run concurrently on disjoint ranges. Nested calls run serially. */
void cpu_parallel_for(int64_t n, int64_t grain,
                      void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

/* Threads cpu_parallel_for may use (HWPORT_CPU_THREADS, default: online cores). */
int cpu_parallel_threads(void);

#endif /* HWPORT_CPU_PARALLEL_H */
