// Tensor.cpp - element types (DType.h) and the typed host tensor's conversions (Tensor.h).
#include "support/Tensor.h"

#include "support/Error.h"
#include "support/Half.h"

#include <cmath>

namespace npuc {

namespace {

struct DTypeRow {
  DType type;
  const char *name;
  int size;
};
constexpr DTypeRow kRows[] = {
    {DType::F32, "f32", 4}, {DType::I64, "i64", 8}, {DType::Bool, "bool", 1},
    {DType::F64, "f64", 8}, {DType::F16, "f16", 2}, {DType::I8, "i8", 1},
    {DType::I16, "i16", 2}, {DType::I32, "i32", 4}, {DType::U8, "u8", 1},
    {DType::U16, "u16", 2}, {DType::U32, "u32", 4}, {DType::U64, "u64", 8},
};
static_assert(std::size(kRows) == std::size(kAllDTypes), "one row per DType");

const DTypeRow &row(DType t) {
  const DTypeRow &r = kRows[static_cast<size_t>(t)];
  NPUC_ASSERT(r.type == t, "kRows is in enumerator order");
  return r;
}

} // namespace

const char *dtypeName(DType t) {
  return row(t).name;
}

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const DTypeRow &r : kRows)
    if (name == r.name)
      return r.type;
  return std::nullopt;
}

int dtypeSize(DType t) {
  return row(t).size;
}

int64_t wrapToType(DType t, int64_t v) {
  switch (t) {
  case DType::Bool:
    return v != 0;
  case DType::I8:
    return static_cast<int8_t>(v);
  case DType::I16:
    return static_cast<int16_t>(v);
  case DType::I32:
    return static_cast<int32_t>(v);
  case DType::U8:
    return static_cast<uint8_t>(v);
  case DType::U16:
    return static_cast<uint16_t>(v);
  case DType::U32:
    return static_cast<uint32_t>(v);
  case DType::I64:
  case DType::U64:
    return v;
  default:
    break;
  }
  NPUC_ASSERT(false, fmt::format("wrapToType of float type {}", dtypeName(t)));
  return v;
}

int64_t floatToIntType(DType t, double f) {
  if (t == DType::Bool)
    return f != 0;
  if (std::isnan(f))
    return 0;
  double tr = std::trunc(f);
  if (t == DType::U64 && tr >= 9223372036854775808.0) // 2^63: held as the bit pattern
    return tr >= 18446744073709551616.0 ? -1 : static_cast<int64_t>(static_cast<uint64_t>(tr));
  if (tr >= 9223372036854775808.0)
    return wrapToType(t, INT64_MAX);
  if (tr < -9223372036854775808.0)
    return wrapToType(t, INT64_MIN);
  return wrapToType(t, static_cast<int64_t>(tr));
}

HostTensor::HostTensor(Shape s, DType t) : shape(std::move(s)), dtype(t) {
  if (isIntStored(t))
    ints.assign(static_cast<size_t>(numElements(shape)), 0);
  else
    data.assign(static_cast<size_t>(numElements(shape)), 0.0f);
}

HostTensor::HostTensor(Shape s, DType t, std::vector<int64_t> v)
    : shape(std::move(s)), ints(std::move(v)), dtype(t) {
  NPUC_ASSERT(isIntStored(t), "integer storage is for integer and bool types");
}

HostTensor castTensor(const HostTensor &t, DType to) {
  HostTensor out(t.shape, to);
  const size_t n = static_cast<size_t>(t.size());
  if (isIntStored(to)) {
    for (size_t i = 0; i < n; ++i)
      out.ints[i] = t.isInt() ? wrapToType(to, t.ints[i]) : floatToIntType(to, t.data[i]);
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    float f;
    if (!t.isInt())
      f = t.data[i];
    else if (t.dtype == DType::U64)
      f = static_cast<float>(static_cast<uint64_t>(t.ints[i]));
    else
      f = static_cast<float>(t.ints[i]);
    out.data[i] = to == DType::F16 ? roundToHalf(f) : f;
  }
  return out;
}

int64_t firstInexactInFloat(const HostTensor &t) {
  if (!t.isInt())
    return -1;
  constexpr int64_t kExact = int64_t{1} << 24;
  for (size_t i = 0; i < t.ints.size(); ++i) {
    int64_t v = t.ints[i];
    if (v > kExact || v < -kExact || (t.dtype == DType::U64 && v < 0))
      return static_cast<int64_t>(i);
  }
  return -1;
}

} // namespace npuc
