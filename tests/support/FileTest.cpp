// FileTest.cpp - outputs never replace what is not a regular file or what the command reads, and
// every failure names the file and the system's reason (issue 18).
#include "support/File.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using npuc::readFile;
using npuc::writeFileAtomic;

namespace {

class FileTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("npuc-file-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string &name) const { return (dir / name).string(); }
  // The names in the directory: no temporary file may be left behind.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto &e : fs::directory_iterator(dir))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  static void put(const std::string &path, const std::string &text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  fs::path dir;
};

// Runs `f` expecting an npuc::Error containing every needle.
template <typename F> void expectError(F f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "expected an npuc::Error";
  } catch (const npuc::Error &e) {
    for (const std::string &n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "message: " << e.what() << "\nmissing: " << n;
  }
}

TEST_F(FileTest, WritesAndReplacesRegularFiles) {
  writeFileAtomic(p("a.bin"), std::string("one\0two", 7));
  EXPECT_EQ(readFile(p("a.bin")), std::string("one\0two", 7));
  writeFileAtomic(p("a.bin"), "three");
  EXPECT_EQ(readFile(p("a.bin")), "three");
  EXPECT_EQ(names(), std::vector<std::string>{"a.bin"});
}

TEST_F(FileTest, RefusesAFifoAndADirectory) {
  ASSERT_EQ(::mkfifo(p("fifo").c_str(), 0600), 0);
  expectError([&] { writeFileAtomic(p("fifo"), "x"); },
              {p("fifo") + ": is a FIFO; refusing to replace it"});
  struct stat st {};
  ASSERT_EQ(::lstat(p("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  fs::create_directories(p("sub"));
  expectError([&] { writeFileAtomic(p("sub"), "x"); }, {p("sub") + ": is a directory"});
  EXPECT_TRUE(fs::is_directory(p("sub")));
  EXPECT_EQ(names(), (std::vector<std::string>{"fifo", "sub"}));
}

TEST_F(FileTest, WritesThroughASymlinkAndKeepsIt) {
  put(p("target.txt"), "old");
  fs::create_symlink(p("target.txt"), p("link.txt"));
  writeFileAtomic(p("link.txt"), "new");
  EXPECT_TRUE(fs::is_symlink(p("link.txt")));
  EXPECT_EQ(readFile(p("target.txt")), "new");
  EXPECT_EQ(names(), (std::vector<std::string>{"link.txt", "target.txt"}));
}

TEST_F(FileTest, RefusesToOverwriteAnInputUnderAnyName) {
  put(p("model.onnx"), "model");
  fs::create_symlink(p("model.onnx"), p("alias.onnx"));
  fs::create_hard_link(p("model.onnx"), p("hard.onnx"));
  for (const char *out : {"model.onnx", "alias.onnx", "hard.onnx"})
    expectError([&] { writeFileAtomic(p(out), "package", {p("model.onnx")}); },
                {p(out) + ": is an input of this command (" + p("model.onnx") +
                 "); refusing to overwrite it"});
  EXPECT_EQ(readFile(p("model.onnx")), "model");
  // Another file, and inputs that do not exist, are no obstacle.
  writeFileAtomic(p("out.npub"), "package", {p("model.onnx"), p("missing.npy")});
  EXPECT_EQ(readFile(p("out.npub")), "package");
}

TEST_F(FileTest, FailuresGiveTheSystemsReason) {
  expectError([&] { writeFileAtomic(p("no/such/dir/out.bin"), "x"); },
              {p("no/such/dir/out.bin") + ": cannot write file: No such file or directory"});
  expectError([&] { readFile(p("missing.onnx")); },
              {p("missing.onnx") + ": cannot open file: No such file or directory"});
  // A directory opens fine for reading and reads as 0 bytes; say what it is instead.
  expectError([&] { readFile(dir.string()); }, {dir.string() + ": is a directory, not a file"});
  EXPECT_TRUE(names().empty());
}

// MappedFile: what readFile reads, mapped for a regular file, read for anything else; its
// errors are readFile's.
TEST_F(FileTest, MappedFileHoldsWhatReadFileReads) {
  std::string bytes(300000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 7 + i / 13);
  put(p("big.bin"), bytes);
  put(p("empty.bin"), "");
  {
    npuc::MappedFile big(p("big.bin"));
    EXPECT_EQ(big.bytes(), bytes);
    npuc::MappedFile empty(p("empty.bin"));
    EXPECT_EQ(empty.bytes().size(), 0u);
  }
  ASSERT_EQ(::mkfifo(p("fifo").c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(p("fifo"), std::ios::binary) << "through a pipe"; });
  {
    npuc::MappedFile fifo(p("fifo"));
    EXPECT_EQ(fifo.bytes(), "through a pipe");
  }
  writer.join();
  expectError([&] { npuc::MappedFile m(p("missing.npub")); },
              {p("missing.npub") + ": cannot open file: No such file or directory"});
  expectError([&] { npuc::MappedFile m(dir.string()); },
              {dir.string() + ": is a directory, not a file"});
}

} // namespace
