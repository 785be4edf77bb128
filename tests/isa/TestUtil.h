// TestUtil.h - helpers shared by the isa tests: the bundled config texts, a checked text edit
// for deriving bad descriptions from a good one, and an "expect npuc::Error containing"
// assertion.
#pragma once

#include "isa/Target.h"

#include <string>

namespace npuc::isa::test {

std::string configPath(const std::string &file); // configs/<file>
std::string baseText();                          // configs/npu-base.yaml
/// Replaces the single occurrence of `from` in `text`; fails the test if it is not unique.
std::string edit(const std::string &text, const std::string &from, const std::string &to);
/// Parses `yaml` expecting an npuc::Error whose message contains every one of `needles`.
void expectParseError(const std::string &yaml, std::initializer_list<const char *> needles);

} // namespace npuc::isa::test
