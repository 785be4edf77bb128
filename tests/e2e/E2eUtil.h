// E2eUtil.h - shared helpers of the end-to-end tests: locating bundled files and comparing
// tensors with the documented fp16 tolerance.
//
// Tolerance (why): the NPU stores every activation and weight as fp16 (relative rounding error
// 2^-11 per rounding) and accumulates in fp32; across the few layers of the bundled models the
// errors compound to a few 1e-3 relative to the output's scale. We therefore require
// max|npu - ref| <= 1e-2 * max|ref| and cosine(npu, ref) >= 0.999, and for classifier outputs
// the same top-1 class.
#pragma once

#include "support/Tensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

namespace npuc::e2e {

inline std::string repoPath(const std::string &rel) {
  return (std::filesystem::path(NPUC_SOURCE_DIR) / rel).string();
}

/// Skips the calling test when a bundled file is absent (models/configs land separately).
#define NPUC_REQUIRE_FILE(path)                                                                    \
  do {                                                                                             \
    if (!std::filesystem::exists(path))                                                            \
      GTEST_SKIP() << "missing bundled file " << (path);                                           \
  } while (0)

struct Diff {
  double maxAbsErr = 0, maxAbsRef = 0, cosine = 1;
  long top1Got = -1, top1Ref = -1;
};

inline Diff diff(const HostTensor &got, const HostTensor &ref) {
  Diff d;
  double dot = 0, ng = 0, nr = 0;
  for (size_t i = 0; i < got.data.size() && i < ref.data.size(); ++i) {
    double g = got.data[i], r = ref.data[i];
    d.maxAbsErr = std::max(d.maxAbsErr, std::abs(g - r));
    d.maxAbsRef = std::max(d.maxAbsRef, std::abs(r));
    dot += g * r;
    ng += g * g;
    nr += r * r;
  }
  d.cosine = ng > 0 && nr > 0 ? dot / std::sqrt(ng * nr) : (ng == nr ? 1.0 : 0.0);
  if (!got.data.empty() && !ref.data.empty()) {
    d.top1Got = std::max_element(got.data.begin(), got.data.end()) - got.data.begin();
    d.top1Ref = std::max_element(ref.data.begin(), ref.data.end()) - ref.data.begin();
  }
  return d;
}

inline void expectClose(const HostTensor &got, const HostTensor &ref, const std::string &what) {
  ASSERT_EQ(got.shape, ref.shape) << what;
  ASSERT_EQ(got.data.size(), ref.data.size()) << what;
  for (float v : got.data)
    ASSERT_TRUE(std::isfinite(v)) << what << ": non-finite output";
  Diff d = diff(got, ref);
  EXPECT_LE(d.maxAbsErr, 1e-2 * d.maxAbsRef) << what << ": max |err| vs max |ref|";
  EXPECT_GE(d.cosine, 0.999) << what;
  if (got.shape.size() == 2 && got.shape[0] == 1) { // a classifier row
    EXPECT_EQ(d.top1Got, d.top1Ref) << what << ": top-1 class";
  }
}

} // namespace npuc::e2e
