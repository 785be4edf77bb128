// Ops.cpp - the operator table (Ops.def) as an array indexed by OpKind, and name lookup.
#include "graph/Ops.h"

#include "support/Error.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <ostream>

namespace npuc::graph {

namespace {

using namespace optrait;

constexpr OpInfo kOps[] = {
#define NPUC_OP(Kind, Name, Family, Pattern, Traits, Shape, Ref, Lower)                            \
  {Name, OpFamily::Family, OpPattern::Pattern, Traits},
#include "graph/Ops.def"
};

constexpr size_t kNumOps = std::size(kOps);
static_assert(kNumOps == kNumOpKinds, "one OpInfo per OpKind");

// Kinds sorted by name, for opFromName's binary search (built once at compile time).
constexpr std::array<OpKind, kNumOps> sortedByName() {
  std::array<OpKind, kNumOps> a{};
  for (size_t i = 0; i < kNumOps; ++i)
    a[i] = static_cast<OpKind>(i);
  std::sort(a.begin(), a.end(), [](OpKind x, OpKind y) {
    return std::string_view(kOps[static_cast<size_t>(x)].name) <
           std::string_view(kOps[static_cast<size_t>(y)].name);
  });
  return a;
}

constexpr std::array<OpKind, kNumOps> kByName = sortedByName();

} // namespace

const char *opPatternName(OpPattern p) {
  switch (p) {
  case OpPattern::ElemWise:
    return "elementwise";
  case OpPattern::Broadcast:
    return "broadcast";
  case OpPattern::Injective:
    return "injective";
  case OpPattern::CommReduce:
    return "reduction";
  case OpPattern::OutEWiseFusable:
    return "complex-out-fusable";
  case OpPattern::Opaque:
    return "opaque";
  }
  return "?";
}

const OpInfo &opInfo(OpKind k) {
  auto i = static_cast<size_t>(k);
  NPUC_ASSERT(i < kNumOps, "an OpKind is a row of Ops.def");
  return kOps[i];
}

std::optional<OpKind> opFromName(std::string_view name) {
  auto it =
      std::lower_bound(kByName.begin(), kByName.end(), name, [](OpKind k, std::string_view n) {
        return std::string_view(opName(k)) < n;
      });
  if (it == kByName.end() || opName(*it) != name)
    return std::nullopt;
  return *it;
}

std::ostream &operator<<(std::ostream &os, OpKind k) {
  return os << opName(k);
}

} // namespace npuc::graph
