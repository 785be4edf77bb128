// DType.h - the closed set of element types a tensor can have: ONNX's numeric types (float,
// double, float16, the signed and unsigned integers of 8..64 bits, bool), their names, sizes and
// the wrap-around of integer values to a type's range.
//
// How values are held (support/Tensor.h): the float types in fp32 (double and float16 values are
// computed in fp32 and float16 results rounded to fp16), the integer types and bool exactly as
// int64 (a uint64 value above 2^63 - 1 is held as its two's-complement bit pattern).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace npuc {

enum class DType : uint8_t { F32, I64, Bool, F64, F16, I8, I16, I32, U8, U16, U32, U64 };

/// Every DType, in enumerator order (for tests and tables).
inline constexpr DType kAllDTypes[] = {DType::F32, DType::I64, DType::Bool, DType::F64,
                                       DType::F16, DType::I8,  DType::I16,  DType::I32,
                                       DType::U8,  DType::U16, DType::U32,  DType::U64};

/// The short name graph text and packages use: f32, f64, f16, i8..i64, u8..u64, bool.
const char *dtypeName(DType t);
/// The DType named `name` (dtypeName's spelling), or nullopt.
std::optional<DType> dtypeFromName(std::string_view name);
/// Bytes per element in memory and in .npy files (bool: 1).
int dtypeSize(DType t);

/// Float types hold their values in fp32 (HostTensor::data).
inline bool isFloatType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16;
}
/// The integer types and bool: exact int64 storage (HostTensor::ints).
inline bool isIntStored(DType t) {
  return !isFloatType(t);
}
inline bool isSignedInt(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}

/// `v` wrapped to the range of integer type `t` as ONNX's integer arithmetic does (two's
/// complement modulo 2^bits; bool: v != 0). The identity for I64 and U64.
int64_t wrapToType(DType t, int64_t v);

/// The value of a float `f` converted to integer type `t` by ONNX's Cast: truncation toward
/// zero, then wrap-around (NaN gives 0; values beyond int64 saturate before wrapping); bool is
/// f != 0.
int64_t floatToIntType(DType t, double f);

} // namespace npuc
