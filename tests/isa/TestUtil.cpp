// TestUtil.cpp - see TestUtil.h.
#include "TestUtil.h"

#include "support/Error.h"
#include "support/Npy.h"

#include <gtest/gtest.h>

namespace npuc::isa::test {

std::string configPath(const std::string &file) {
  return std::string(NPUC_CONFIG_DIR) + "/" + file;
}

std::string baseText() {
  return readFile(configPath("npu-base.yaml"));
}

std::string edit(const std::string &text, const std::string &from, const std::string &to) {
  size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "edit anchor not found: " << from;
  if (pos == std::string::npos)
    return text;
  EXPECT_EQ(text.find(from, pos + 1), std::string::npos) << "edit anchor not unique: " << from;
  std::string out = text;
  out.replace(pos, from.size(), to);
  return out;
}

void expectParseError(const std::string &yaml, std::initializer_list<const char *> needles) {
  try {
    parseTarget(yaml, "bad.yaml");
    ADD_FAILURE() << "expected an npuc::Error mentioning: " << *needles.begin();
  } catch (const npuc::Error &e) {
    std::string msg = e.what();
    for (const char *n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "message: " << msg << "\nmissing: " << n;
  }
}

} // namespace npuc::isa::test
