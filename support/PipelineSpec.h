// PipelineSpec.h - the syntax of a pass pipeline on the command line: `a,b{opt=v,opt2=w},c`.
//
// Only the syntax: which passes and options exist is the business of each pass table
// (graph/PassManager.h for graph passes). Errors are npuc::Error naming the spec and offset.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace npuc {

struct PassSpec {
  std::string name;
  std::map<std::string, std::string> options; // in the order given, later duplicates win
  std::vector<std::string> optionOrder;       // option names as written, for messages
};

std::vector<PassSpec> splitPipelineSpec(const std::string &spec);

} // namespace npuc
