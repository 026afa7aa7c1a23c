// ABI layout golden test: sizes, alignments, field offsets and field types of every struct
// in runtime/include/hwport/*.h, the value of every enum constant and ABI macro, and the
// scalar/function typedefs, written out literally for LP64 targets (x86_64/aarch64 Linux).
// It is compiled as part of the default build (tests/abi/CMakeLists.txt) and by
// tests/test_abi_headers.py, so ANY layout change fails the build. Tables grow only by
// appending (a minor version bump): then, and only then, update this file (see
// gen_abi_golden.py) and review the diff: existing lines must not change.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwport/hwport.h"

static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8 && alignof(uint64_t) == 8,
              "the golden numbers below are for 64-bit (LP64) targets");

#define HWP_GOLDEN_SIZE(T, size, align) \
  static_assert(sizeof(T) == (size), "sizeof(" #T ") changed: the ABI broke"); \
  static_assert(alignof(T) == (align), "alignof(" #T ") changed: the ABI broke")
#define HWP_GOLDEN_FIELD(T, field, offset, ...)                                       \
  static_assert(offsetof(T, field) == (offset), "offset of " #T "." #field " changed"); \
  static_assert(std::is_same<decltype(T::field), __VA_ARGS__>::value,                   \
                "type of " #T "." #field " changed")
constexpr bool hwp_golden_streq(const char *a, const char *b) {
  return *a == *b && (*a == '\0' || hwp_golden_streq(a + 1, b + 1));
}
#define HWP_GOLDEN_VALUE(name, value) \
  static_assert((name) == (value), #name " changed: its value is part of the ABI")

// ---- versions and macros
HWP_GOLDEN_VALUE(HWP_ABI_VERSION_MAJOR, 1);
HWP_GOLDEN_VALUE(HWP_ABI_VERSION_MINOR, 2);
HWP_GOLDEN_VALUE(HWP_MAX_NDIM, 16);
HWP_GOLDEN_VALUE(HWP_CCL_UNIQUE_ID_MAX_BYTES, 128);
static_assert(hwp_golden_streq(HWP_PLUGIN_INIT_SYMBOL, "hwport_plugin_init"),
              "the entry point symbol is part of the ABI");

// ---- typedefs
static_assert(std::is_same<HWP_Status, int32_t>::value, "typedef HWP_Status changed");
static_assert(std::is_same<HWP_DType, int32_t>::value, "typedef HWP_DType changed");
static_assert(std::is_same<HWP_KernelFn, HWP_Status (*)(const HWP_KernelContext *)>::value,
    "typedef HWP_KernelFn changed");
static_assert(std::is_same<HWP_AttrType, int32_t>::value, "typedef HWP_AttrType changed");
static_assert(std::is_same<HWP_CclAdapterInitFn, HWP_Status (*)(const HWP_CclAdapterHost *,
    const HWP_CclTable **, const char *(**get_last_error)(void))>::value, "typedef HWP_CclAdapterInitFn changed");
static_assert(std::is_same<HWP_CclReduceOp, int32_t>::value, "typedef HWP_CclReduceOp changed");
static_assert(std::is_same<HWP_CodegenArgKind, int32_t>::value,
    "typedef HWP_CodegenArgKind changed");
static_assert(std::is_same<HWP_DeviceSpanSink, void (*)(void *, const HWP_DeviceSpan *)>::value,
    "typedef HWP_DeviceSpanSink changed");
static_assert(std::is_same<HWP_PluginInitFn, HWP_Status (*)(const HWP_HostApi *,
    const HWP_PluginApi **)>::value, "typedef HWP_PluginInitFn changed");
static_assert(std::is_same<HWP_LogLevel, int32_t>::value, "typedef HWP_LogLevel changed");

// ---- enum constants
// HWP_StatusCode
HWP_GOLDEN_VALUE(HWP_OK, 0);
HWP_GOLDEN_VALUE(HWP_ERROR_INVALID_ARGUMENT, 1);
HWP_GOLDEN_VALUE(HWP_ERROR_OUT_OF_MEMORY, 2);
HWP_GOLDEN_VALUE(HWP_ERROR_NOT_SUPPORTED, 3);
HWP_GOLDEN_VALUE(HWP_ERROR_NOT_READY, 4);
HWP_GOLDEN_VALUE(HWP_ERROR_NOT_FOUND, 5);
HWP_GOLDEN_VALUE(HWP_ERROR_DEVICE, 6);
HWP_GOLDEN_VALUE(HWP_ERROR_VERSION_MISMATCH, 7);
HWP_GOLDEN_VALUE(HWP_ERROR_INTERNAL, 8);
// HWP_DTypeCode
HWP_GOLDEN_VALUE(HWP_DTYPE_BOOL, 0);
HWP_GOLDEN_VALUE(HWP_DTYPE_INT8, 1);
HWP_GOLDEN_VALUE(HWP_DTYPE_UINT8, 2);
HWP_GOLDEN_VALUE(HWP_DTYPE_INT16, 3);
HWP_GOLDEN_VALUE(HWP_DTYPE_INT32, 4);
HWP_GOLDEN_VALUE(HWP_DTYPE_INT64, 5);
HWP_GOLDEN_VALUE(HWP_DTYPE_FLOAT16, 6);
HWP_GOLDEN_VALUE(HWP_DTYPE_BFLOAT16, 7);
HWP_GOLDEN_VALUE(HWP_DTYPE_FLOAT32, 8);
HWP_GOLDEN_VALUE(HWP_DTYPE_FLOAT64, 9);
HWP_GOLDEN_VALUE(HWP_DTYPE_COUNT, 10);
// HWP_DeviceFlag
HWP_GOLDEN_VALUE(HWP_DEVICE_HOST_MEMORY, 1);
HWP_GOLDEN_VALUE(HWP_DEVICE_FLOAT16_ARITHMETIC, 2);
HWP_GOLDEN_VALUE(HWP_DEVICE_BFLOAT16_ARITHMETIC, 4);
// HWP_DLPackDeviceType
HWP_GOLDEN_VALUE(HWP_DLPACK_NONE, 0);
HWP_GOLDEN_VALUE(HWP_DLPACK_CUDA, 2);
HWP_GOLDEN_VALUE(HWP_DLPACK_OPENCL, 4);
HWP_GOLDEN_VALUE(HWP_DLPACK_VULKAN, 7);
HWP_GOLDEN_VALUE(HWP_DLPACK_METAL, 8);
HWP_GOLDEN_VALUE(HWP_DLPACK_VPI, 9);
HWP_GOLDEN_VALUE(HWP_DLPACK_ROCM, 10);
HWP_GOLDEN_VALUE(HWP_DLPACK_EXT_DEV, 12);
HWP_GOLDEN_VALUE(HWP_DLPACK_ONEAPI, 14);
HWP_GOLDEN_VALUE(HWP_DLPACK_WEBGPU, 15);
HWP_GOLDEN_VALUE(HWP_DLPACK_HEXAGON, 16);
HWP_GOLDEN_VALUE(HWP_DLPACK_MAIA, 17);
// HWP_AttrTypeCode
HWP_GOLDEN_VALUE(HWP_ATTR_BOOL, 0);
HWP_GOLDEN_VALUE(HWP_ATTR_INT64, 1);
HWP_GOLDEN_VALUE(HWP_ATTR_FLOAT64, 2);
HWP_GOLDEN_VALUE(HWP_ATTR_STRING, 3);
HWP_GOLDEN_VALUE(HWP_ATTR_INT64_ARRAY, 4);
HWP_GOLDEN_VALUE(HWP_ATTR_FLOAT64_ARRAY, 5);
HWP_GOLDEN_VALUE(HWP_ATTR_DTYPE, 6);
// HWP_KernelFlag
HWP_GOLDEN_VALUE(HWP_KERNEL_ACCEPTS_STRIDED, 1);
// HWP_CclReduceOpCode
HWP_GOLDEN_VALUE(HWP_CCL_SUM, 0);
HWP_GOLDEN_VALUE(HWP_CCL_PROD, 1);
HWP_GOLDEN_VALUE(HWP_CCL_MAX, 2);
HWP_GOLDEN_VALUE(HWP_CCL_MIN, 3);
HWP_GOLDEN_VALUE(HWP_CCL_AVG, 4);
HWP_GOLDEN_VALUE(HWP_CCL_REDUCE_OP_COUNT, 5);
// HWP_CodegenFlag
HWP_GOLDEN_VALUE(HWP_CODEGEN_SIMT, 1);
HWP_GOLDEN_VALUE(HWP_CODEGEN_SUBGROUP_SHUFFLE, 2);
HWP_GOLDEN_VALUE(HWP_CODEGEN_FLOAT16, 4);
HWP_GOLDEN_VALUE(HWP_CODEGEN_FLOAT64, 8);
HWP_GOLDEN_VALUE(HWP_CODEGEN_SERIALIZE, 16);
// HWP_CodegenArgKindCode
HWP_GOLDEN_VALUE(HWP_CODEGEN_ARG_BUFFER, 0);
HWP_GOLDEN_VALUE(HWP_CODEGEN_ARG_INT64, 1);
HWP_GOLDEN_VALUE(HWP_CODEGEN_ARG_FLOAT64, 2);
// HWP_LogLevelCode
HWP_GOLDEN_VALUE(HWP_LOG_DEBUG, 0);
HWP_GOLDEN_VALUE(HWP_LOG_INFO, 1);
HWP_GOLDEN_VALUE(HWP_LOG_WARNING, 2);
HWP_GOLDEN_VALUE(HWP_LOG_ERROR, 3);

// ---- structs: size and alignment, then every field in declaration order
HWP_GOLDEN_SIZE(HWP_TensorView, 48, 8);
HWP_GOLDEN_FIELD(HWP_TensorView, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_TensorView, buffer, 8, HWP_Buffer);
HWP_GOLDEN_FIELD(HWP_TensorView, byte_offset, 16, uint64_t);
HWP_GOLDEN_FIELD(HWP_TensorView, dtype, 24, HWP_DType);
HWP_GOLDEN_FIELD(HWP_TensorView, ndim, 28, int32_t);
HWP_GOLDEN_FIELD(HWP_TensorView, shape, 32, const int64_t *);
HWP_GOLDEN_FIELD(HWP_TensorView, strides, 40, const int64_t *);

HWP_GOLDEN_SIZE(HWP_DeviceProperties, 584, 8);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, name, 8, char[256]);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, vendor, 264, char[128]);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, driver_version, 392, char[64]);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, total_memory, 456, uint64_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, memory_alignment, 464, uint64_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, compute_units, 472, int32_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, max_work_group_size, 476, int32_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, flags, 480, uint32_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, max_allocation, 488, uint64_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, architecture, 496, char[64]);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, architecture_major, 560, int32_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, architecture_minor, 564, int32_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, simd_width, 568, int32_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, max_threads_per_compute_unit, 572, int32_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, dlpack_device_type, 576, int32_t);
HWP_GOLDEN_FIELD(HWP_DeviceProperties, dlpack_device_id, 580, int32_t);

HWP_GOLDEN_SIZE(HWP_MemoryStats, 48, 8);
HWP_GOLDEN_FIELD(HWP_MemoryStats, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_MemoryStats, bytes_in_use, 8, uint64_t);
HWP_GOLDEN_FIELD(HWP_MemoryStats, peak_bytes_in_use, 16, uint64_t);
HWP_GOLDEN_FIELD(HWP_MemoryStats, bytes_limit, 24, uint64_t);
HWP_GOLDEN_FIELD(HWP_MemoryStats, num_allocs, 32, uint64_t);
HWP_GOLDEN_FIELD(HWP_MemoryStats, num_frees, 40, uint64_t);

HWP_GOLDEN_SIZE(HWP_DeviceTable, 56, 8);
HWP_GOLDEN_FIELD(HWP_DeviceTable, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_DeviceTable, get_device_count, 8, HWP_Status (*)(int32_t *));
HWP_GOLDEN_FIELD(HWP_DeviceTable, synchronize_device, 16, HWP_Status (*)(int32_t));
HWP_GOLDEN_FIELD(HWP_DeviceTable, get_properties, 24, HWP_Status (*)(int32_t,
    HWP_DeviceProperties *));
HWP_GOLDEN_FIELD(HWP_DeviceTable, init_device, 32, HWP_Status (*)(int32_t));
HWP_GOLDEN_FIELD(HWP_DeviceTable, deinit_device, 40, HWP_Status (*)(int32_t));
HWP_GOLDEN_FIELD(HWP_DeviceTable, set_device, 48, HWP_Status (*)(int32_t));

HWP_GOLDEN_SIZE(HWP_MemoryTable, 136, 8);
HWP_GOLDEN_FIELD(HWP_MemoryTable, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_MemoryTable, allocate, 8, HWP_Status (*)(int32_t, uint64_t, HWP_Buffer *));
HWP_GOLDEN_FIELD(HWP_MemoryTable, deallocate, 16, HWP_Status (*)(int32_t, HWP_Buffer));
HWP_GOLDEN_FIELD(HWP_MemoryTable, copy_h2d, 24, HWP_Status (*)(int32_t, HWP_Buffer, uint64_t,
    const void *, uint64_t));
HWP_GOLDEN_FIELD(HWP_MemoryTable, copy_d2h, 32, HWP_Status (*)(int32_t, void *, HWP_Buffer,
    uint64_t, uint64_t));
HWP_GOLDEN_FIELD(HWP_MemoryTable, copy_d2d, 40, HWP_Status (*)(int32_t, HWP_Buffer, uint64_t,
    HWP_Buffer, uint64_t, uint64_t));
HWP_GOLDEN_FIELD(HWP_MemoryTable, copy_h2d_async, 48, HWP_Status (*)(int32_t, HWP_Stream,
    HWP_Buffer, uint64_t, const void *, uint64_t));
HWP_GOLDEN_FIELD(HWP_MemoryTable, copy_d2h_async, 56, HWP_Status (*)(int32_t, HWP_Stream, void *,
    HWP_Buffer, uint64_t, uint64_t));
HWP_GOLDEN_FIELD(HWP_MemoryTable, copy_d2d_async, 64, HWP_Status (*)(int32_t, HWP_Stream,
    HWP_Buffer, uint64_t, HWP_Buffer, uint64_t, uint64_t));
HWP_GOLDEN_FIELD(HWP_MemoryTable, memset_async, 72, HWP_Status (*)(int32_t, HWP_Stream, HWP_Buffer,
    uint64_t, uint8_t, uint64_t));
HWP_GOLDEN_FIELD(HWP_MemoryTable, get_memory_stats, 80, HWP_Status (*)(int32_t, HWP_MemoryStats *));
HWP_GOLDEN_FIELD(HWP_MemoryTable, host_address, 88, HWP_Status (*)(int32_t, HWP_Buffer, uint64_t,
    void **));
HWP_GOLDEN_FIELD(HWP_MemoryTable, wrap_host_memory, 96, HWP_Status (*)(int32_t, void *, uint64_t,
    HWP_Buffer *));
HWP_GOLDEN_FIELD(HWP_MemoryTable, release_host_buffer, 104, HWP_Status (*)(int32_t, HWP_Buffer));
HWP_GOLDEN_FIELD(HWP_MemoryTable, device_address, 112, HWP_Status (*)(int32_t, HWP_Buffer,
    uint64_t, void **));
HWP_GOLDEN_FIELD(HWP_MemoryTable, wrap_device_memory, 120, HWP_Status (*)(int32_t, void *,
    uint64_t, HWP_Buffer *));
HWP_GOLDEN_FIELD(HWP_MemoryTable, release_device_buffer, 128, HWP_Status (*)(int32_t, HWP_Buffer));

HWP_GOLDEN_SIZE(HWP_StreamTable, 104, 8);
HWP_GOLDEN_FIELD(HWP_StreamTable, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_StreamTable, create_stream, 8, HWP_Status (*)(int32_t, HWP_Stream *));
HWP_GOLDEN_FIELD(HWP_StreamTable, destroy_stream, 16, HWP_Status (*)(int32_t, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_StreamTable, synchronize_stream, 24, HWP_Status (*)(int32_t, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_StreamTable, query_stream, 32, HWP_Status (*)(int32_t, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_StreamTable, create_event, 40, HWP_Status (*)(int32_t, HWP_Event *));
HWP_GOLDEN_FIELD(HWP_StreamTable, destroy_event, 48, HWP_Status (*)(int32_t, HWP_Event));
HWP_GOLDEN_FIELD(HWP_StreamTable, record_event, 56, HWP_Status (*)(int32_t, HWP_Stream, HWP_Event));
HWP_GOLDEN_FIELD(HWP_StreamTable, synchronize_event, 64, HWP_Status (*)(int32_t, HWP_Event));
HWP_GOLDEN_FIELD(HWP_StreamTable, query_event, 72, HWP_Status (*)(int32_t, HWP_Event));
HWP_GOLDEN_FIELD(HWP_StreamTable, stream_wait_event, 80, HWP_Status (*)(int32_t, HWP_Stream,
    HWP_Event));
HWP_GOLDEN_FIELD(HWP_StreamTable, native_stream, 88, HWP_Status (*)(int32_t, HWP_Stream,
    uintptr_t *));
HWP_GOLDEN_FIELD(HWP_StreamTable, native_stream_wait, 96, HWP_Status (*)(int32_t, uintptr_t,
    HWP_Stream));

HWP_GOLDEN_SIZE(HWP_KernelContext, 88, 8);
HWP_GOLDEN_FIELD(HWP_KernelContext, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_KernelContext, device, 8, int32_t);
HWP_GOLDEN_FIELD(HWP_KernelContext, stream, 16, HWP_Stream);
HWP_GOLDEN_FIELD(HWP_KernelContext, num_inputs, 24, int32_t);
HWP_GOLDEN_FIELD(HWP_KernelContext, num_outputs, 28, int32_t);
HWP_GOLDEN_FIELD(HWP_KernelContext, inputs, 32, const HWP_TensorView *);
HWP_GOLDEN_FIELD(HWP_KernelContext, outputs, 40, const HWP_TensorView *);
HWP_GOLDEN_FIELD(HWP_KernelContext, user_data, 48, void *);
HWP_GOLDEN_FIELD(HWP_KernelContext, host_context, 56, void *);
HWP_GOLDEN_FIELD(HWP_KernelContext, get_attr, 64, HWP_Status (*)(const HWP_KernelContext *,
    const char *, HWP_AttrType, void *, int64_t *));
HWP_GOLDEN_FIELD(HWP_KernelContext, allocate_workspace, 72,
    HWP_Status (*)(const HWP_KernelContext *, uint64_t, HWP_Buffer *));
HWP_GOLDEN_FIELD(HWP_KernelContext, correlation_id, 80, uint64_t);

HWP_GOLDEN_SIZE(HWP_KernelRegistration, 40, 8);
HWP_GOLDEN_FIELD(HWP_KernelRegistration, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_KernelRegistration, op_name, 8, const char *);
HWP_GOLDEN_FIELD(HWP_KernelRegistration, dtype, 16, HWP_DType);
HWP_GOLDEN_FIELD(HWP_KernelRegistration, flags, 20, uint32_t);
HWP_GOLDEN_FIELD(HWP_KernelRegistration, fn, 24, HWP_KernelFn);
HWP_GOLDEN_FIELD(HWP_KernelRegistration, user_data, 32, void *);

HWP_GOLDEN_SIZE(HWP_CclTable, 144, 8);
HWP_GOLDEN_FIELD(HWP_CclTable, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_CclTable, unique_id_size, 8, uint32_t);
HWP_GOLDEN_FIELD(HWP_CclTable, get_unique_id, 16, HWP_Status (*)(void *));
HWP_GOLDEN_FIELD(HWP_CclTable, comm_init, 24, HWP_Status (*)(int32_t, int32_t, const void *,
    int32_t, HWP_CclComm *));
HWP_GOLDEN_FIELD(HWP_CclTable, comm_split, 32, HWP_Status (*)(HWP_CclComm, int32_t, int32_t,
    HWP_CclComm *));
HWP_GOLDEN_FIELD(HWP_CclTable, comm_destroy, 40, HWP_Status (*)(HWP_CclComm));
HWP_GOLDEN_FIELD(HWP_CclTable, comm_abort, 48, HWP_Status (*)(HWP_CclComm));
HWP_GOLDEN_FIELD(HWP_CclTable, comm_get_async_error, 56, HWP_Status (*)(HWP_CclComm, HWP_Status *));
HWP_GOLDEN_FIELD(HWP_CclTable, all_reduce, 64, HWP_Status (*)(HWP_Buffer, uint64_t, HWP_Buffer,
    uint64_t, uint64_t, HWP_DType, HWP_CclReduceOp, HWP_CclComm, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_CclTable, broadcast, 72, HWP_Status (*)(HWP_Buffer, uint64_t, HWP_Buffer,
    uint64_t, uint64_t, HWP_DType, int32_t, HWP_CclComm, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_CclTable, all_gather, 80, HWP_Status (*)(HWP_Buffer, uint64_t, HWP_Buffer,
    uint64_t, uint64_t, HWP_DType, HWP_CclComm, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_CclTable, send, 88, HWP_Status (*)(HWP_Buffer, uint64_t, uint64_t, HWP_DType,
    int32_t, HWP_CclComm, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_CclTable, recv, 96, HWP_Status (*)(HWP_Buffer, uint64_t, uint64_t, HWP_DType,
    int32_t, HWP_CclComm, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_CclTable, group_start, 104, HWP_Status (*)(void));
HWP_GOLDEN_FIELD(HWP_CclTable, group_end, 112, HWP_Status (*)(void));
HWP_GOLDEN_FIELD(HWP_CclTable, reduce, 120, HWP_Status (*)(HWP_Buffer, uint64_t, HWP_Buffer,
    uint64_t, uint64_t, HWP_DType, HWP_CclReduceOp, int32_t, HWP_CclComm, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_CclTable, reduce_scatter, 128, HWP_Status (*)(HWP_Buffer, uint64_t,
    HWP_Buffer, uint64_t, uint64_t, HWP_DType, HWP_CclReduceOp, HWP_CclComm, HWP_Stream));
HWP_GOLDEN_FIELD(HWP_CclTable, all_to_all, 136, HWP_Status (*)(HWP_Buffer, uint64_t, HWP_Buffer,
    uint64_t, uint64_t, HWP_DType, HWP_CclComm, HWP_Stream));

HWP_GOLDEN_SIZE(HWP_CclDeviceAccess, 56, 8);
HWP_GOLDEN_FIELD(HWP_CclDeviceAccess, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_CclDeviceAccess, device, 8, int32_t);
HWP_GOLDEN_FIELD(HWP_CclDeviceAccess, flags, 12, uint32_t);
HWP_GOLDEN_FIELD(HWP_CclDeviceAccess, device_table, 16, const HWP_DeviceTable *);
HWP_GOLDEN_FIELD(HWP_CclDeviceAccess, memory, 24, const HWP_MemoryTable *);
HWP_GOLDEN_FIELD(HWP_CclDeviceAccess, stream, 32, const HWP_StreamTable *);
HWP_GOLDEN_FIELD(HWP_CclDeviceAccess, get_last_error, 40, const char *(*)(void));
HWP_GOLDEN_FIELD(HWP_CclDeviceAccess, dlpack_device_type, 48, int32_t);
HWP_GOLDEN_FIELD(HWP_CclDeviceAccess, dlpack_device_id, 52, int32_t);

HWP_GOLDEN_SIZE(HWP_CclAdapterHost, 40, 8);
HWP_GOLDEN_FIELD(HWP_CclAdapterHost, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_CclAdapterHost, abi_major, 8, uint32_t);
HWP_GOLDEN_FIELD(HWP_CclAdapterHost, abi_minor, 12, uint32_t);
HWP_GOLDEN_FIELD(HWP_CclAdapterHost, host_context, 16, void *);
HWP_GOLDEN_FIELD(HWP_CclAdapterHost, describe_device, 24, HWP_Status (*)(void *, int32_t,
    HWP_CclDeviceAccess *));
HWP_GOLDEN_FIELD(HWP_CclAdapterHost, log, 32, void (*)(void *, int32_t, const char *));

HWP_GOLDEN_SIZE(HWP_CodegenTargetInfo, 64, 8);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, dialects, 8, const char *const *);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, architecture, 16, const char *);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, flags, 24, uint32_t);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, simd_width, 28, uint32_t);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, preferred_vector_width, 32, uint32_t);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, max_group_size, 36, uint32_t);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, compute_units, 40, uint32_t);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, reserved, 44, uint32_t);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, local_memory_bytes, 48, uint64_t);
HWP_GOLDEN_FIELD(HWP_CodegenTargetInfo, max_grid_size, 56, uint64_t);

HWP_GOLDEN_SIZE(HWP_CodegenArg, 32, 8);
HWP_GOLDEN_FIELD(HWP_CodegenArg, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_CodegenArg, kind, 8, HWP_CodegenArgKind);
HWP_GOLDEN_FIELD(HWP_CodegenArg, reserved, 12, int32_t);
HWP_GOLDEN_FIELD(HWP_CodegenArg, value.buffer.buffer, 16, HWP_Buffer);
HWP_GOLDEN_FIELD(HWP_CodegenArg, value.buffer.byte_offset, 24, uint64_t);
HWP_GOLDEN_FIELD(HWP_CodegenArg, value.i64, 16, int64_t);
HWP_GOLDEN_FIELD(HWP_CodegenArg, value.f64, 16, double);

HWP_GOLDEN_SIZE(HWP_CodegenLaunch, 56, 8);
HWP_GOLDEN_FIELD(HWP_CodegenLaunch, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_CodegenLaunch, grid, 8, uint32_t[3]);
HWP_GOLDEN_FIELD(HWP_CodegenLaunch, group, 20, uint32_t[3]);
HWP_GOLDEN_FIELD(HWP_CodegenLaunch, num_args, 32, int32_t);
HWP_GOLDEN_FIELD(HWP_CodegenLaunch, reserved, 36, int32_t);
HWP_GOLDEN_FIELD(HWP_CodegenLaunch, args, 40, const HWP_CodegenArg *);
HWP_GOLDEN_FIELD(HWP_CodegenLaunch, correlation_id, 48, uint64_t);

HWP_GOLDEN_SIZE(HWP_CodegenTable, 64, 8);
HWP_GOLDEN_FIELD(HWP_CodegenTable, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_CodegenTable, get_target_info, 8, HWP_Status (*)(int32_t,
    HWP_CodegenTargetInfo *));
HWP_GOLDEN_FIELD(HWP_CodegenTable, compile, 16, HWP_Status (*)(int32_t, const char *, const char *,
    const char *, HWP_CodegenModule *, char *, size_t));
HWP_GOLDEN_FIELD(HWP_CodegenTable, get_function, 24, HWP_Status (*)(HWP_CodegenModule,
    const char *, HWP_CodegenFunction *));
HWP_GOLDEN_FIELD(HWP_CodegenTable, launch, 32, HWP_Status (*)(int32_t, HWP_CodegenFunction,
    HWP_Stream, const HWP_CodegenLaunch *));
HWP_GOLDEN_FIELD(HWP_CodegenTable, unload, 40, HWP_Status (*)(HWP_CodegenModule));
HWP_GOLDEN_FIELD(HWP_CodegenTable, serialize, 48, HWP_Status (*)(HWP_CodegenModule, void *, size_t,
    size_t *));
HWP_GOLDEN_FIELD(HWP_CodegenTable, deserialize, 56, HWP_Status (*)(int32_t, const char *,
    const void *, size_t, HWP_CodegenModule *));

HWP_GOLDEN_SIZE(HWP_DeviceSpan, 48, 8);
HWP_GOLDEN_FIELD(HWP_DeviceSpan, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_DeviceSpan, correlation_id, 8, uint64_t);
HWP_GOLDEN_FIELD(HWP_DeviceSpan, device, 16, int32_t);
HWP_GOLDEN_FIELD(HWP_DeviceSpan, name, 24, const char *);
HWP_GOLDEN_FIELD(HWP_DeviceSpan, begin_ns, 32, uint64_t);
HWP_GOLDEN_FIELD(HWP_DeviceSpan, end_ns, 40, uint64_t);

HWP_GOLDEN_SIZE(HWP_ProfilerTable, 24, 8);
HWP_GOLDEN_FIELD(HWP_ProfilerTable, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_ProfilerTable, start, 8, HWP_Status (*)(int32_t, HWP_DeviceSpanSink, void *));
HWP_GOLDEN_FIELD(HWP_ProfilerTable, stop, 16, HWP_Status (*)(int32_t));

HWP_GOLDEN_SIZE(HWP_HostApi, 48, 8);
HWP_GOLDEN_FIELD(HWP_HostApi, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_HostApi, abi_major, 8, uint32_t);
HWP_GOLDEN_FIELD(HWP_HostApi, abi_minor, 12, uint32_t);
HWP_GOLDEN_FIELD(HWP_HostApi, host_context, 16, void *);
HWP_GOLDEN_FIELD(HWP_HostApi, register_kernel, 24, HWP_Status (*)(void *,
    const HWP_KernelRegistration *));
HWP_GOLDEN_FIELD(HWP_HostApi, log, 32, void (*)(void *, HWP_LogLevel, const char *));
HWP_GOLDEN_FIELD(HWP_HostApi, trace_event, 40, void (*)(void *, const char *, int32_t, uint64_t,
    uint64_t));

HWP_GOLDEN_SIZE(HWP_PluginApi, 96, 8);
HWP_GOLDEN_FIELD(HWP_PluginApi, struct_size, 0, size_t);
HWP_GOLDEN_FIELD(HWP_PluginApi, abi_major, 8, uint32_t);
HWP_GOLDEN_FIELD(HWP_PluginApi, abi_minor, 12, uint32_t);
HWP_GOLDEN_FIELD(HWP_PluginApi, device_type, 16, const char *);
HWP_GOLDEN_FIELD(HWP_PluginApi, plugin_version, 24, const char *);
HWP_GOLDEN_FIELD(HWP_PluginApi, device, 32, const HWP_DeviceTable *);
HWP_GOLDEN_FIELD(HWP_PluginApi, memory, 40, const HWP_MemoryTable *);
HWP_GOLDEN_FIELD(HWP_PluginApi, get_last_error, 48, const char *(*)(void));
HWP_GOLDEN_FIELD(HWP_PluginApi, stream, 56, const HWP_StreamTable *);
HWP_GOLDEN_FIELD(HWP_PluginApi, ccl, 64, const HWP_CclTable *);
HWP_GOLDEN_FIELD(HWP_PluginApi, codegen, 72, const HWP_CodegenTable *);
HWP_GOLDEN_FIELD(HWP_PluginApi, profiler, 80, const HWP_ProfilerTable *);
HWP_GOLDEN_FIELD(HWP_PluginApi, shutdown, 88, void (*)(void));
