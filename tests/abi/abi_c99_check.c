/* The ABI headers compile as strict ISO C99 (built with -std=c99 -pedantic -Wall -Wextra
 * -Werror by tests/abi/CMakeLists.txt), and a C compiler lays the structs out exactly as the
 * C++ host does: on 64-bit targets these sizes must equal the ones in abi_layout_golden.cpp. */
#include "hwport/hwport.h"

/* C99 has no _Static_assert: a negative array size is the compile-time error. */
#define HWP_C99_ASSERT(cond, tag) typedef char hwp_c99_assert_##tag[(cond) ? 1 : -1]

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu && SIZE_MAX == 0xFFFFFFFFFFFFFFFFu
HWP_C99_ASSERT(sizeof(void *) == 8 && sizeof(size_t) == 8, lp64);
HWP_C99_ASSERT(sizeof(HWP_TensorView) == 48, tensor_view);
HWP_C99_ASSERT(sizeof(HWP_DeviceProperties) == 584, device_properties);
HWP_C99_ASSERT(sizeof(HWP_MemoryStats) == 48, memory_stats);
HWP_C99_ASSERT(sizeof(HWP_DeviceTable) == 56, device_table);
HWP_C99_ASSERT(sizeof(HWP_MemoryTable) == 136, memory_table);
HWP_C99_ASSERT(sizeof(HWP_StreamTable) == 104, stream_table);
HWP_C99_ASSERT(sizeof(HWP_KernelContext) == 88, kernel_context);
HWP_C99_ASSERT(sizeof(HWP_KernelRegistration) == 40, kernel_registration);
HWP_C99_ASSERT(sizeof(HWP_CclTable) == 144, ccl_table);
HWP_C99_ASSERT(sizeof(HWP_CclDeviceAccess) == 56, ccl_device_access);
HWP_C99_ASSERT(sizeof(HWP_CclAdapterHost) == 40, ccl_adapter_host);
HWP_C99_ASSERT(sizeof(HWP_CodegenTable) == 64, codegen_table);
HWP_C99_ASSERT(sizeof(HWP_CodegenTargetInfo) == 64, codegen_target_info);
HWP_C99_ASSERT(sizeof(HWP_CodegenArg) == 32, codegen_arg);
HWP_C99_ASSERT(sizeof(HWP_CodegenLaunch) == 56, codegen_launch);
HWP_C99_ASSERT(sizeof(HWP_ProfilerTable) == 24, profiler_table);
HWP_C99_ASSERT(sizeof(HWP_HostApi) == 48, host_api);
HWP_C99_ASSERT(sizeof(HWP_DeviceSpan) == 48, device_span);
HWP_C99_ASSERT(sizeof(HWP_PluginApi) == 96, plugin_api);
HWP_C99_ASSERT(offsetof(HWP_TensorView, ndim) == 28, tensor_view_ndim);
HWP_C99_ASSERT(offsetof(HWP_DeviceProperties, flags) == 480, device_properties_flags);
HWP_C99_ASSERT(offsetof(HWP_DeviceProperties, max_allocation) == 488,
               device_properties_max_allocation);
HWP_C99_ASSERT(offsetof(HWP_KernelContext, num_outputs) == 28, kernel_context_num_outputs);
HWP_C99_ASSERT(offsetof(HWP_KernelRegistration, flags) == 20, kernel_registration_flags);
HWP_C99_ASSERT(offsetof(HWP_PluginApi, get_last_error) == 48, plugin_api_get_last_error);
#endif

/* The macros and inline helpers are usable from C99 too. */
int hwp_c99_check_uses(const HWP_PluginApi *api, HWP_DType dtype);
int hwp_c99_check_uses(const HWP_PluginApi *api, HWP_DType dtype) {
  int ok = HWP_HAS_FIELD(api, HWP_PluginApi, get_last_error) ? 1 : 0;
  HWP_PluginInitFn init = 0;
  (void)init;
  return ok + (int)hwp_dtype_size(dtype) + (int)sizeof(HWP_PLUGIN_INIT_SYMBOL) +
         HWP_ABI_VERSION_MAJOR + HWP_ABI_VERSION_MINOR;
}
