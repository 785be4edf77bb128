// TensorTest.cpp - element types and the typed host tensor: wrap-around to each integer type's
// range, ONNX's Cast rules between every kind of type, and the fp32-exactness test the
// reference and the compiled runtime rely on. Expected values are numpy's (astype with the same
// C casting rules), worked out by hand.
#include "support/Tensor.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace npuc;

namespace {

TEST(DType, NamesAndSizesRoundTrip) {
  for (DType t : kAllDTypes) {
    ASSERT_TRUE(dtypeFromName(dtypeName(t))) << dtypeName(t);
    EXPECT_EQ(*dtypeFromName(dtypeName(t)), t);
  }
  EXPECT_FALSE(dtypeFromName("f128"));
  EXPECT_EQ(dtypeSize(DType::Bool), 1);
  EXPECT_EQ(dtypeSize(DType::F16), 2);
  EXPECT_EQ(dtypeSize(DType::U32), 4);
  EXPECT_EQ(dtypeSize(DType::I64), 8);
  EXPECT_TRUE(isFloatType(DType::F64));
  EXPECT_TRUE(isIntStored(DType::Bool));
}

TEST(DType, WrapToType) {
  EXPECT_EQ(wrapToType(DType::U8, 300), 44); // numpy: np.int32(300).astype(np.uint8)
  EXPECT_EQ(wrapToType(DType::U8, -1), 255);
  EXPECT_EQ(wrapToType(DType::I8, 200), -56);
  EXPECT_EQ(wrapToType(DType::I16, 40000), -25536);
  EXPECT_EQ(wrapToType(DType::U32, -1), 4294967295);
  EXPECT_EQ(wrapToType(DType::I32, int64_t{1} << 31), -2147483648);
  EXPECT_EQ(wrapToType(DType::Bool, -3), 1);
  EXPECT_EQ(wrapToType(DType::I64, INT64_MIN), INT64_MIN);
}

TEST(DType, FloatToIntTruncatesTowardZero) {
  EXPECT_EQ(floatToIntType(DType::I32, 2.9), 2);
  EXPECT_EQ(floatToIntType(DType::I32, -2.9), -2);
  EXPECT_EQ(floatToIntType(DType::U8, 256.5), 0);
  EXPECT_EQ(floatToIntType(DType::Bool, 0.25), 1);
  EXPECT_EQ(floatToIntType(DType::Bool, -0.0), 0);
  EXPECT_EQ(floatToIntType(DType::I64, std::nan("")), 0);
}

TEST(Tensor, CastFollowsOnnx) {
  HostTensor f({4}, {1.7f, -1.7f, 0.0f, 300.0f});
  HostTensor i = castTensor(f, DType::I16);
  EXPECT_EQ(i.dtype, DType::I16);
  EXPECT_EQ(i.ints, (std::vector<int64_t>{1, -1, 0, 300}));
  EXPECT_EQ(castTensor(f, DType::U8).ints, (std::vector<int64_t>{1, 255, 0, 44}));
  EXPECT_EQ(castTensor(f, DType::Bool).ints, (std::vector<int64_t>{1, 1, 0, 1}));
  HostTensor b = castTensor(castTensor(f, DType::Bool), DType::F32);
  EXPECT_EQ(b.data, (std::vector<float>{1, 1, 0, 1}));
  // float16 rounds to its 11-bit significand: 1 + 2^-11 is halfway, ties to even (1.0).
  HostTensor h = castTensor(HostTensor({2}, {1.0f + 1.0f / 2048, 65504.0f}), DType::F16);
  EXPECT_EQ(h.data, (std::vector<float>{1.0f, 65504.0f}));
  // uint64 bit patterns above 2^63 convert as unsigned.
  HostTensor u({1}, DType::U64, {-1});
  EXPECT_EQ(castTensor(u, DType::F32).data[0], 18446744073709551616.0f);
}

TEST(Tensor, ExactInFloat) {
  HostTensor ok({3}, DType::I64, {1 << 24, -(1 << 24), 5});
  EXPECT_EQ(firstInexactInFloat(ok), -1);
  HostTensor big({2}, DType::I64, {1, (1 << 24) + 1});
  EXPECT_EQ(firstInexactInFloat(big), 1);
  EXPECT_EQ(firstInexactInFloat(HostTensor({1}, {1e30f})), -1); // floats are what they are
}

TEST(Tensor, StorageFollowsType) {
  HostTensor i({2, 3}, DType::I32);
  EXPECT_EQ(i.size(), 6);
  EXPECT_TRUE(i.data.empty());
  HostTensor f({2, 3}, DType::F64);
  EXPECT_EQ(f.size(), 6);
  EXPECT_TRUE(f.ints.empty());
}

} // namespace
