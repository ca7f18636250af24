/* The part of libnrt's public C ABI torchneuron calls, declared from AWS's headers (aws-neuron-sdk,
 * src/libnrt/include/nrt/: nrt.h, nrt_status.h, nrt_experimental.h, nrt_version.h) with the same names, types
 * and enum values. Only what is called is declared. libnrt is opened with dlopen and never linked, so these
 * are declarations of the symbols torchneuron looks up, and the function-pointer types it calls them through.
 *
 * The contract fake (torchneuron/testing/fake_nrt/fake_nrt.c) is written from this same file, so the product
 * and the fake cannot disagree about a signature.
 *
 * C, not C++: the fake is a C library. */
#ifndef TORCHNEURON_NRT_ABI_H
#define TORCHNEURON_NRT_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nrt_status.h */
typedef enum {
  NRT_SUCCESS = 0,
  NRT_FAILURE = 1,
  NRT_INVALID = 2,
  NRT_INVALID_HANDLE = 3,
  NRT_RESOURCE = 4,
  NRT_TIMEOUT = 5,
  NRT_HW_ERROR = 6,
  NRT_QUEUE_FULL = 7,
  NRT_LOAD_NOT_ENOUGH_NC = 9,
  NRT_UNSUPPORTED_NEFF_VERSION = 10,
  NRT_UNINITIALIZED = 13,
  NRT_CLOSED = 14,
  NRT_EXEC_BAD_INPUT = 1002,
  NRT_EXEC_COMPLETED_WITH_NUM_ERR = 1003,
  NRT_EXEC_COMPLETED_WITH_ERR = 1004,
  NRT_EXEC_NC_BUSY = 1005,
  NRT_COLL_PENDING = 1100,
} NRT_STATUS;

/* nrt.h */
#define NRT_MAJOR_VERSION 2 /* the ABI generation these declarations follow */

typedef struct nrt_model nrt_model_t;
typedef struct nrt_tensor nrt_tensor_t;
typedef void nrt_tensor_set_t;

typedef enum {
  NRT_TENSOR_PLACEMENT_DEVICE,
  NRT_TENSOR_PLACEMENT_HOST,
  NRT_TENSOR_PLACEMENT_VIRTUAL,
} nrt_tensor_placement_t;

typedef enum {
  NRT_FRAMEWORK_TYPE_INVALID = 0,
  NRT_FRAMEWORK_TYPE_NO_FW = 1,
  NRT_FRAMEWORK_TYPE_TENSORFLOW,
  NRT_FRAMEWORK_TYPE_PYTORCH,
  NRT_FRAMEWORK_TYPE_MXNET,
  NRT_FRAMEWORK_TYPE_PRECHECK,
} nrt_framework_type_t;

/* nrt_instance_info_t.family */
enum {
  NRT_INSTANCE_UNKNOWN = 0,
  NRT_INSTANCE_INF1 = 1,
  NRT_INSTANCE_TRN1 = 2,
  NRT_INSTANCE_TRN1N = 3,
  NRT_INSTANCE_INF2 = 4,
  NRT_INSTANCE_TRN2 = 5,
  NRT_INSTANCE_TRN2N = 6,
  NRT_INSTANCE_INF2E = 7,
  NRT_INSTANCE_TRN2P = 8,
  NRT_INSTANCE_TRN2U = 9,
  NRT_INSTANCE_TRN2E = 10,
  NRT_INSTANCE_TRN2EU = 11,
  NRT_INSTANCE_TRN2AC = 12,
  NRT_INSTANCE_TRN2UAC = 13,
  NRT_INSTANCE_TRN3 = 14,
  NRT_INSTANCE_TRN3PDS98 = 15
};

/* nrt_instance_info_t.size */
enum {
  NRT_INSTANCE_SIZE_1XL,
  NRT_INSTANCE_SIZE_2XL,
  NRT_INSTANCE_SIZE_4XL,
  NRT_INSTANCE_SIZE_6XL,
  NRT_INSTANCE_SIZE_8XL,
  NRT_INSTANCE_SIZE_24XL,
  NRT_INSTANCE_SIZE_32XL,
  NRT_INSTANCE_SIZE_48XL,
  NRT_INSTANCE_SIZE_3XL,
  NRT_INSTANCE_SIZE_UNKNOWN,
  NRT_INSTANCE_SIZE_NUM = NRT_INSTANCE_SIZE_UNKNOWN,
};

typedef enum nrt_dtype {
  NRT_DTYPE_UNKNOWN = 0x0,
  NRT_DTYPE_INVALID = 0x0,
  NRT_DTYPE_FP8_E3 = 0xD,
  NRT_DTYPE_FP8_E4 = 0xE,
  NRT_DTYPE_FP8_E5 = 0xF,
  NRT_DTYPE_FLOAT16 = 0x7,
  NRT_DTYPE_BFLOAT16 = 0x6,
  NRT_DTYPE_FLOAT32 = 0xA,
  NRT_DTYPE_FP32R = 0xB,
  NRT_DTYPE_UINT8 = 0x3,
  NRT_DTYPE_UINT16 = 0x5,
  NRT_DTYPE_UINT32 = 0x9,
  NRT_DTYPE_UINT64 = 0x1,
  NRT_DTYPE_INT8 = 0x2,
  NRT_DTYPE_INT16 = 0x4,
  NRT_DTYPE_INT32 = 0x8,
  NRT_DTYPE_INT64 = 0xC,
} nrt_dtype_t;

typedef struct nrt_instance_info {
  uint32_t family;
  uint32_t size;
  char arch_name[16];
  char device_revision[8];
} nrt_instance_info_t;

typedef struct nrt_vnc_memory_stats {
  size_t bytes_used;
  size_t bytes_limit;
} nrt_vnc_memory_stats_t;

/* nrt_version.h */
typedef struct nrt_version {
  uint64_t rt_major;
  uint64_t rt_minor;
  uint64_t rt_patch;
  uint64_t rt_maintenance;
  char rt_detail[128];
  char git_hash[64];
} nrt_version_t;

/* nrt_experimental.h */
typedef enum nrt_tensor_usage {
  NRT_TENSOR_USAGE_INPUT = 0,
  NRT_TENSOR_USAGE_OUTPUT,
} nrt_tensor_usage_t;

#define NRT_TENSOR_NAME_MAX 256

typedef struct nrt_tensor_info {
  char name[NRT_TENSOR_NAME_MAX];
  nrt_tensor_usage_t usage;
  size_t size;
  nrt_dtype_t dtype;
  uint32_t* shape;
  uint32_t ndim;
} nrt_tensor_info_t;

typedef struct nrt_tensor_info_array {
  uint64_t tensor_count;
  nrt_tensor_info_t tensor_array[];
} nrt_tensor_info_array_t;

/* The entry points, as X(return type, name, parameter list). One list drives the function-pointer types,
 * the symbol lookup in the loader and the fake's definitions. */
#define TORCHNEURON_NRT_FUNCTIONS(X)                                                                          \
  X(NRT_STATUS, nrt_get_version, (nrt_version_t * ver, size_t size))                                         \
  X(NRT_STATUS, nrt_get_instance_info, (nrt_instance_info_t * info, size_t instance_info_len))                \
  X(NRT_STATUS, nrt_get_visible_vnc_count, (uint32_t * vnc_count))                                           \
  X(NRT_STATUS, nrt_init, (nrt_framework_type_t framework, const char* fw_version, const char* fal_version))  \
  X(void, nrt_close, (void))                                                                                  \
  X(NRT_STATUS, nrt_get_vnc_memory_stats,                                                                     \
    (uint32_t vnc, nrt_vnc_memory_stats_t * stats, size_t stats_size_in, size_t * stats_size_out))            \
  X(NRT_STATUS, nrt_tensor_allocate, (nrt_tensor_placement_t tensor_placement, int vnc, size_t size,         \
                                      const char* name, nrt_tensor_t** tensor))                               \
  X(void, nrt_tensor_free, (nrt_tensor_t * *tensor))                                                          \
  X(NRT_STATUS, nrt_tensor_allocate_slice, (const nrt_tensor_t* tensor_source, size_t offset, size_t size,   \
                                            const char* name, nrt_tensor_t** tensor_slice))                   \
  X(void*, nrt_tensor_get_va, (const nrt_tensor_t* tensor))                                                   \
  X(NRT_STATUS, nrt_tensor_read, (const nrt_tensor_t* tensor, void* buf, size_t offset, size_t size))        \
  X(NRT_STATUS, nrt_tensor_write, (nrt_tensor_t * tensor, const void* buf, size_t offset, size_t size))      \
  X(NRT_STATUS, nrt_tensor_copy, (const nrt_tensor_t* src, size_t src_offset, nrt_tensor_t* dst,              \
                                  size_t dst_offset, size_t size))                                            \
  X(NRT_STATUS, nrt_tensor_memset, (nrt_tensor_t * tensor, uint64_t offset, int value, size_t size))         \
  X(NRT_STATUS, nrt_load, (const void* neff_bytes, size_t size, int32_t vnc, int32_t vnc_count,              \
                           nrt_model_t** model))                                                              \
  X(NRT_STATUS, nrt_unload, (nrt_model_t * model))                                                            \
  X(NRT_STATUS, nrt_get_model_tensor_info, (nrt_model_t * model, nrt_tensor_info_array_t** tensor_info))     \
  X(NRT_STATUS, nrt_free_model_tensor_info, (nrt_tensor_info_array_t * tensor_info))                         \
  X(NRT_STATUS, nrt_allocate_tensor_set, (nrt_tensor_set_t * *result))                                       \
  X(void, nrt_destroy_tensor_set, (nrt_tensor_set_t * *tensor_set))                                          \
  X(NRT_STATUS, nrt_add_tensor_to_tensor_set,                                                                 \
    (nrt_tensor_set_t * tensor_set, const char* tensor_name, nrt_tensor_t* tensor))                          \
  X(NRT_STATUS, nrt_execute,                                                                                  \
    (nrt_model_t * model, const nrt_tensor_set_t* input_set, nrt_tensor_set_t* output_set))

#define TORCHNEURON_NRT_FN_TYPE(ret, name, params) typedef ret(*name##_fn) params;
TORCHNEURON_NRT_FUNCTIONS(TORCHNEURON_NRT_FN_TYPE)
#undef TORCHNEURON_NRT_FN_TYPE

#ifdef __cplusplus
}
#endif

#endif /* TORCHNEURON_NRT_ABI_H */
