/* hwport CPU plugin — per-dtype value conversions shared by cast and fill (see kernels_cast.c
 * for the semantics). A value is loaded into one of three intermediates: KI (int64: bool as 0/1
 * and the integers), KF (float: float16, bfloat16, float32, all exact) or KD (double). */
#ifndef HWPORT_CPU_CONVERT_H
#define HWPORT_CPU_CONVERT_H

#include "kernels.h"

/* Loaders: storage -> intermediate. */
#define CPU_LD_bool_(x) ((int64_t)((x) != 0))
#define CPU_LD_int8(x) ((int64_t)(x))
#define CPU_LD_uint8(x) ((int64_t)(x))
#define CPU_LD_int16(x) ((int64_t)(x))
#define CPU_LD_int32(x) ((int64_t)(x))
#define CPU_LD_int64(x) ((int64_t)(x))
#define CPU_LD_float16(x) cpu_f16_to_f32(x)
#define CPU_LD_bfloat16(x) cpu_bf16_to_f32(x)
#define CPU_LD_float32(x) (x)
#define CPU_LD_float64(x) (x)

#define CPU_KIND_bool_ KI
#define CPU_KIND_int8 KI
#define CPU_KIND_uint8 KI
#define CPU_KIND_int16 KI
#define CPU_KIND_int32 KI
#define CPU_KIND_int64 KI
#define CPU_KIND_float16 KF
#define CPU_KIND_bfloat16 KF
#define CPU_KIND_float32 KF
#define CPU_KIND_float64 KD

/* Converters: intermediate kind -> destination storage. */
#define CPU_CV_KI_bool_(v) ((uint8_t)((v) != 0))
#define CPU_CV_KI_int8(v) ((int8_t)(v))
#define CPU_CV_KI_uint8(v) ((uint8_t)(v))
#define CPU_CV_KI_int16(v) ((int16_t)(v))
#define CPU_CV_KI_int32(v) ((int32_t)(v))
#define CPU_CV_KI_int64(v) ((int64_t)(v))
#define CPU_CV_KI_float16(v) cpu_f64_to_f16((double)(v))
#define CPU_CV_KI_bfloat16(v) cpu_f64_to_bf16((double)(v))
#define CPU_CV_KI_float32(v) ((float)(v))
#define CPU_CV_KI_float64(v) ((double)(v))

#define CPU_CV_KF_bool_(v) ((uint8_t)((v) != 0))
#define CPU_CV_KF_int8(v) cpu_sat_int8((double)(v))
#define CPU_CV_KF_uint8(v) cpu_sat_uint8((double)(v))
#define CPU_CV_KF_int16(v) cpu_sat_int16((double)(v))
#define CPU_CV_KF_int32(v) cpu_sat_int32((double)(v))
#define CPU_CV_KF_int64(v) cpu_sat_int64((double)(v))
#define CPU_CV_KF_float16(v) cpu_f32_to_f16(v)
#define CPU_CV_KF_bfloat16(v) cpu_f32_to_bf16(v)
#define CPU_CV_KF_float32(v) (v)
#define CPU_CV_KF_float64(v) ((double)(v))

#define CPU_CV_KD_bool_(v) ((uint8_t)((v) != 0))
#define CPU_CV_KD_int8(v) cpu_sat_int8(v)
#define CPU_CV_KD_uint8(v) cpu_sat_uint8(v)
#define CPU_CV_KD_int16(v) cpu_sat_int16(v)
#define CPU_CV_KD_int32(v) cpu_sat_int32(v)
#define CPU_CV_KD_int64(v) cpu_sat_int64(v)
#define CPU_CV_KD_float16(v) cpu_f64_to_f16(v)
#define CPU_CV_KD_bfloat16(v) cpu_f64_to_bf16(v)
#define CPU_CV_KD_float32(v) ((float)(v))
#define CPU_CV_KD_float64(v) (v)

/* Two expansion levels so that CPU_KIND_<src> becomes KI/KF/KD before pasting. */
#define CPU_CONVERT(kind, dst, v) CPU_CONVERT_(kind, dst, v)
#define CPU_CONVERT_(kind, dst, v) CPU_CV_##kind##_##dst(v)

#endif /* HWPORT_CPU_CONVERT_H */
