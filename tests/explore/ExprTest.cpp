// ExprTest.cpp - constraint expressions (explore/Expr.h): precedence, units, names, errors.
#include "explore/Expr.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <map>

using namespace npuc::explore;

namespace {

double eval(const std::string &text, const std::map<std::string, double> &vars = {}) {
  return Expr::parse(text, "c").eval([&](const std::string &n) -> std::optional<double> {
    auto it = vars.find(n);
    return it == vars.end() ? std::nullopt : std::optional<double>(it->second);
  });
}

void expectError(const std::string &text, const std::string &needle,
                 const std::map<std::string, double> &vars = {}) {
  try {
    eval(text, vars);
    FAIL() << "no error for " << text;
  } catch (const npuc::Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

} // namespace

TEST(ExploreExpr, ArithmeticAndPrecedence) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("10 - 4 - 3"), 3); // left associative
  EXPECT_EQ(eval("-2 * -3"), 6);
  EXPECT_EQ(eval("7 % 4 + 8 / 2"), 7);
  EXPECT_EQ(eval("0x10"), 16);
}

TEST(ExploreExpr, UnitsNamesAndLogic) {
  EXPECT_EQ(eval("512 KiB"), 512 * 1024);
  EXPECT_EQ(eval("2MiB / 1 KiB"), 2048);
  const std::map<std::string, double> v = {{"memory.l1.size", 1 << 20}, {"tensor_unit.rows", 16}};
  EXPECT_EQ(eval("memory.l1.size >= 512 KiB", v), 1);
  EXPECT_EQ(eval("memory.l1.size < 512 KiB or tensor_unit.rows == 16", v), 1);
  EXPECT_EQ(eval("memory.l1.size < 512 KiB || tensor_unit.rows != 16", v), 0);
  EXPECT_EQ(eval("not tensor_unit.rows > 8 and 1", v), 0);
  EXPECT_EQ(eval("!(tensor_unit.rows > 32) && 1 <= 1", v), 1);
  // `and` binds tighter than `or`.
  EXPECT_EQ(eval("1 or 0 and 0"), 1);
  // A keyword inside a name is part of the name.
  EXPECT_EQ(eval("order + 1", {{"order", 2}}), 3);
  EXPECT_EQ(Expr::parse("a + b.c * a", "c").names(), (std::vector<std::string>{"a", "b.c", "a"}));
}

TEST(ExploreExpr, ErrorsNameTheProblem) {
  expectError("1 +", "c: expected a number, a name or '(' at column 4 of '1 +'");
  expectError("(1 + 2", "expected ')'");
  expectError("1 2", "unexpected '2' at column 3");
  expectError("3 # 4", "unexpected '#'");
  expectError("l2.size > 0", "c: 'l2.size' is neither an axis nor a numeric field of the target");
  expectError("1 / (2 - 2)", "c: division by zero");
}

TEST(ExploreExpr, Quantities) {
  EXPECT_EQ(parseQuantity("64 KiB"), 65536);
  EXPECT_EQ(parseQuantity("1GiB"), 1073741824.0);
  EXPECT_EQ(parseQuantity("0.5"), 0.5);
  EXPECT_EQ(parseQuantity("0x40"), 64);
  EXPECT_FALSE(parseQuantity("fp16"));
  EXPECT_FALSE(parseQuantity("12 apples"));
  EXPECT_FALSE(parseQuantity(""));
}
