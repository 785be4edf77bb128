// PlotTest.cpp - support/Plot.h: gnuplot writes PNG and SVG files; bad extensions, a missing
// gnuplot and gnuplot's own failures are errors naming the path, and leave no file behind.
#include "support/Plot.h"
#include "support/Error.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace npuc::test {
namespace {

namespace fs = std::filesystem;

bool haveGnuplot() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

// A fresh directory for one test's files, removed afterwards.
struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() /
          ("npuc-plot-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::vector<std::string> files() const {
    std::vector<std::string> r;
    for (const auto &e : fs::directory_iterator(dir))
      r.push_back(e.path().filename().string());
    return r;
  }
};

std::vector<Series> twoSeries() {
  Series a{"best cycles", {}}, b{"it's untuned", {}}; // a quote in a name: gnuplot quoting
  for (int i = 1; i <= 20; ++i) {
    a.xy.emplace_back(i, 1000.0 / i + 50);
    b.xy.emplace_back(i, 1000.0);
  }
  return {a, b};
}

std::string slurp(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Plot, WritesPngAndSvg) {
  if (!haveGnuplot())
    GTEST_SKIP() << "gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)";
  TempDir t;
  const fs::path png = t.dir / "best.png", svg = t.dir / "best.svg";
  plotLines(png.string(), "conv1 on npu-base", "trials", "cycles", twoSeries());
  plotLines(svg.string(), "conv1 on npu-base", "trials", "cycles", twoSeries());
  const std::string p = slurp(png), s = slurp(svg);
  ASSERT_GT(p.size(), 8u);
  EXPECT_EQ(p.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)); // the PNG signature
  EXPECT_NE(s.find("<svg"), std::string::npos);
  EXPECT_NE(s.find("</svg>"), std::string::npos); // complete: the output was closed
  EXPECT_NE(s.find("it's untuned"), std::string::npos) << "the legend names the series";
  // Only the two plots remain: the temporary output names were renamed.
  std::vector<std::string> files = t.files();
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"best.png", "best.svg"}));
}

TEST(Plot, AnUnknownExtensionIsAnError) {
  TempDir t;
  const std::string path = (t.dir / "best.pdf").string();
  try {
    plotLines(path, "t", "x", "y", twoSeries());
    FAIL() << "a .pdf path was accepted";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "plot " + path + ": unknown format '.pdf' (the path must end in .png or .svg)");
  }
  EXPECT_TRUE(t.files().empty());
}

TEST(Plot, NoPointsIsAnError) {
  TempDir t;
  const std::string path = (t.dir / "empty.svg").string();
  try {
    plotLines(path, "t", "x", "y", {Series{"none", {}}});
    FAIL() << "an empty plot was accepted";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()), "plot " + path + ": no points to draw");
  }
  EXPECT_TRUE(t.files().empty());
}

TEST(Plot, AMissingGnuplotIsAnErrorNamingIt) {
  TempDir t;
  const std::string path = (t.dir / "best.png").string();
  const char *old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  setenv("PATH", t.dir.c_str(), 1); // a directory without gnuplot
  std::string msg;
  try {
    plotLines(path, "t", "x", "y", twoSeries());
  } catch (const Error &e) {
    msg = e.what();
  }
  setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(msg.rfind("plot " + path + ": cannot run the program 'gnuplot'", 0), 0u) << msg;
  EXPECT_NE(msg.find("install gnuplot-nox"), std::string::npos) << msg;
  EXPECT_TRUE(t.files().empty());
}

// gnuplot cannot write into a directory that does not exist: its failure is reported with what
// it printed, and no file is left.
TEST(Plot, AGnuplotFailureLeavesNoFile) {
  if (!haveGnuplot())
    GTEST_SKIP() << "gnuplot is not installed";
  TempDir t;
  const std::string path = (t.dir / "missing" / "best.svg").string();
  try {
    plotLines(path, "t", "x", "y", twoSeries());
    FAIL() << "a plot into a missing directory succeeded";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()).rfind("plot " + path + ": gnuplot failed", 0), 0u) << e.what();
  }
  EXPECT_TRUE(t.files().empty());
}

} // namespace
} // namespace npuc::test
