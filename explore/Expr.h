// Expr.h - the constraint expressions of a sweep spec (docs/EXPLORE.md, "Constraints").
//
// A constraint is a boolean expression over a design point's numbers, for example
//   memory.l0a.size >= tensor_unit.rows * tensor_unit.cols * 2 and dram.bytes_per_cycle <= 32
// Grammar (lowest precedence first): `or` (also ||), `and` (&&), `not` (!), comparisons
// (< <= > >= == !=), + -, * / %, unary -, parentheses. Numbers may carry a KiB, MiB or GiB
// suffix. A name is an axis name or a dotted path into the point's target description (the
// `param:` syntax of an axis); the caller's lookup resolves it. Every value is a double; a
// comparison or logical operator yields 1 or 0, and a constraint holds when its value is not 0.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace npuc::explore {

/// A number as a sweep spec writes it: decimal, 0x hex, or with a KiB/MiB/GiB suffix
/// ("512 KiB"); nullopt when the text is no such number.
std::optional<double> parseQuantity(std::string_view text);

class Expr {
public:
  /// Resolves a name to its value; nullopt when the name means nothing.
  using Lookup = std::function<std::optional<double>(const std::string &)>;

  /// Parses `text`; throws npuc::Error "`where`: ... at column C" on a syntax error.
  static Expr parse(const std::string &text, const std::string &where);
  /// The value under `lookup`; throws npuc::Error naming `where` and the name for a name the
  /// lookup does not resolve, and for a division by zero.
  double eval(const Lookup &lookup) const;
  const std::string &text() const { return text_; }
  /// Every name the expression reads, in order of appearance.
  const std::vector<std::string> &names() const { return names_; }

  struct Node;

private:
  std::shared_ptr<const Node> root_;
  std::string text_, where_;
  std::vector<std::string> names_;
};

} // namespace npuc::explore
