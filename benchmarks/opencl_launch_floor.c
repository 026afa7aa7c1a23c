/* The OpenCL driver's own cost per kernel launch, without hwport: what no plugin can go below.
 *
 * Enqueues a 1-element kernel with the OpenCL plugin's elementwise argument layout (17
 * arguments: 4 buffers, offsets, long16 shape and strides) in bursts of 2000 launches + clFinish,
 * the pattern of benchmarks/bench_dispatch.py's enqueue section, in five ways: a kernel object
 * fresh from clCreateKernel per launch (the plugin before its kernel cache) or one reused, each
 * with or without an event per launch, and a reused kernel behind a gate (each burst waits on a
 * user event set complete before the clFinish: what the plugin's stream_gate.c does). Prints us per launch, host side and with the finish;
 * the reused-kernel rows once before the fresh-kernel ones and once after them.
 *
 * Build and run (any OpenCL platform; here PoCL):
 *   cc -O2 benchmarks/opencl_launch_floor.c -o /tmp/ocl_floor -lOpenCL && /tmp/ocl_floor */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define LAUNCHES 20000
#define BURST 2000

static const char *src =
    "__kernel void k(__global uchar *o, ulong oo, __global uchar *a, ulong ao,"
    " __global uchar *b, ulong bo, __global uchar *c, ulong co, ulong n, int nd, int al,"
    " int arg, long16 sh, long16 sa, long16 sb, long16 sc, long4 at) {"
    " size_t i = get_global_id(0); if (i < n) ((__global float *)(o + oo))[i] ="
    " ((__global float *)(a + ao))[i] + ((__global float *)(b + bo))[i]; }";

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void) {
  cl_platform_id platform;
  cl_device_id dev;
  cl_int err;
  if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
    fprintf(stderr, "no OpenCL device\n");
    return 1;
  }
  char name[256] = "";
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  if (clBuildProgram(prog, 1, &dev, "", NULL, NULL) != CL_SUCCESS) return 1;
  cl_mem in = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
  cl_mem outs[64]; /* rotating outputs, as the host's caching allocator hands them out */
  for (int i = 0; i < 64; ++i) outs[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
  cl_ulong zero = 0, n = 1;
  cl_int one = 1;
  cl_long16 l16;
  cl_long4 l4;
  memset(&l16, 0, sizeof l16);
  memset(&l4, 0, sizeof l4);
  size_t global = 128, local = 128;
  cl_kernel reused = clCreateKernel(prog, "k", &err);
  printf("%s: us per launch, bursts of %d + clFinish\n", name, BURST);
  /* Reused kernels first, and again after the fresh ones: on PoCL 3.1 here the second pass
   * came out 1.4-1.7x slower than the first (per-kernel launch data piling up, it seems). */
  static const int order[7] = {2, 3, 0, 1, 2, 3, 4};
  for (int o = 0; o < 7; ++o) {
    const int mode = order[o];
    const int fresh = mode < 2, with_event = mode < 4 && (mode & 1), gated = mode == 4;
    cl_event gate = NULL;
    clFinish(q);
    double t0 = now_us(), host = 0;
    for (int i = 0; i < LAUNCHES; ++i) {
      double h0 = now_us();
      cl_kernel k = fresh ? clCreateKernel(prog, "k", &err) : reused;
      cl_mem out = outs[i % 64];
      const struct { size_t size; const void *value; } args[17] = {
          {8, &out}, {8, &zero}, {8, &in}, {8, &zero}, {8, &in}, {8, &zero}, {8, &out},
          {8, &zero}, {8, &n}, {4, &one}, {4, &one}, {4, &one}, {128, &l16}, {128, &l16},
          {128, &l16}, {128, &l16}, {32, &l4}};
      for (cl_uint a = 0; a < 17; ++a) clSetKernelArg(k, a, args[a].size, args[a].value);
      cl_event ev = NULL;
      if (gated && gate == NULL) {
        gate = clCreateUserEvent(ctx, &err);
        clEnqueueMarkerWithWaitList(q, 1, &gate, NULL);
      }
      clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, with_event ? &ev : NULL);
      if (ev != NULL) clReleaseEvent(ev);
      clFlush(q);
      if (fresh) clReleaseKernel(k);
      host += now_us() - h0;
      if ((i + 1) % BURST == 0) {
        if (gate != NULL) {
          clSetUserEventStatus(gate, CL_COMPLETE);
          clReleaseEvent(gate);
          gate = NULL;
        }
        clFinish(q);
      }
    }
    clFinish(q);
    printf("  %-28s host %6.2f  with finish %6.2f\n",
           mode == 0   ? "fresh kernel, no event"
           : mode == 1 ? "fresh kernel, event"
           : mode == 2 ? "reused kernel, no event"
           : mode == 3 ? "reused kernel, event"
                       : "reused kernel, gated burst",
           host / LAUNCHES, (now_us() - t0) / LAUNCHES);
  }
  return 0;
}
