// SweepTestUtil.h - writing sweep specs for the explore tests: a spec text around the bundled
// npu-base target and models, written to a fresh file under the test's temporary directory.
#pragma once

#include "explore/Sweep.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

namespace exploretest {

inline std::string src(const std::string &rel) {
  return std::string(NPUC_SOURCE_DIR) + "/" + rel;
}

/// A directory of its own for the current test.
inline std::string testDir() {
  const auto *info = testing::UnitTest::GetInstance()->current_test_info();
  std::string d = testing::TempDir() + "/explore_" + info->test_suite_name() + "_" + info->name();
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

/// The spec `body` (axes and the rest) after a base and model lines, written to DIR/sweep.yaml.
inline std::string writeSpec(const std::string &dir, const std::string &body,
                             const std::string &models = "") {
  const std::string path = dir + "/sweep.yaml";
  std::ofstream(path) << "base: " << src("configs/npu-base.yaml") << "\n"
                      << (models.empty() ? "models: [" + src("models/tinycnn.onnx") + "]\n"
                                         : models)
                      << body;
  return path;
}

inline void expectSpecError(const std::string &dir, const std::string &body,
                            std::initializer_list<const char *> needles,
                            const std::string &models = "") {
  const std::string path = writeSpec(dir, body, models);
  try {
    npuc::explore::loadSweep(path);
    ADD_FAILURE() << "no error for:\n" << body;
  } catch (const npuc::Error &e) {
    for (const char *n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "missing '" << n << "' in: " << e.what();
  }
}

} // namespace exploretest
