// NpyTest.cpp - the .npy header is parsed strictly, and a header declaring more elements than
// the file holds is an error naming the file before anything is allocated (issue 18).
#include "support/Npy.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

// A version 1.0 .npy file with `shape` as written in the header and `dataBytes` zero bytes.
std::string npyFile(const std::string &shape, size_t dataBytes) {
  std::string hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  hdr.append((64 - (10 + hdr.size() + 1) % 64) % 64, ' ');
  hdr += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += char(hdr.size() & 0xff);
  out += char(hdr.size() >> 8);
  return out + hdr + std::string(dataBytes, '\0');
}

std::string tempPath(const std::string &name) {
  return (fs::temp_directory_path() / ("npuc-npy-test-" + std::to_string(::getpid()) + name))
      .string();
}

std::string readError(const std::string &shape, size_t dataBytes) {
  const std::string path = tempPath("bad.npy");
  std::ofstream(path, std::ios::binary) << npyFile(shape, dataBytes);
  try {
    npuc::readNpy(path);
  } catch (const npuc::Error &e) {
    fs::remove(path);
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    return e.what();
  }
  fs::remove(path);
  ADD_FAILURE() << "shape " << shape << " was accepted";
  return "";
}

TEST(Npy, ShapesParse) {
  const std::string path = tempPath("ok.npy");
  struct Case {
    std::string text;
    npuc::Shape shape;
  };
  for (const Case &c : {Case{"(1, 3, 32, 32)", {1, 3, 32, 32}}, Case{"(16,)", {16}},
                        Case{"(2, 3,)", {2, 3}}, Case{"()", {}}, Case{"(0, 4)", {0, 4}}}) {
    int64_t n = 1;
    for (int64_t d : c.shape)
      n *= d;
    std::ofstream(path, std::ios::binary) << npyFile(c.text, size_t(n) * 4);
    EXPECT_EQ(npuc::readNpy(path).shape, c.shape) << c.text;
  }
  fs::remove(path);
}

TEST(Npy, MalformedShapesAreErrors) {
  EXPECT_NE(readError("(1, -3, 32, 32)", 4096).find("dimension '-3' is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(readError("(1, 3x, 32, 32)", 4 * 3 * 32 * 32).find("dimension '3x'"),
            std::string::npos);
  EXPECT_NE(readError("(1,, 3)", 12).find("empty dimension"), std::string::npos);
  EXPECT_NE(readError("(,)", 0).find("empty dimension"), std::string::npos);
  EXPECT_NE(readError("(1 3)", 12).find("dimension '1 3'"), std::string::npos);
  EXPECT_NE(readError("(99999999999999999999,)", 4).find("too large"), std::string::npos);
}

TEST(Npy, HugeDeclaredShapeIsTruncatedDataNotBadAlloc) {
  // 2^40 elements declared, 16 bytes present: must fail before allocating 4 TiB.
  std::string msg = readError("(1099511627776,)", 16);
  EXPECT_NE(msg.find("truncated data: shape 1099511627776 needs more than the 16 bytes"),
            std::string::npos)
      << msg;
  // Dims whose product overflows int64.
  msg = readError("(4294967296, 4294967296, 4294967296)", 16);
  EXPECT_NE(msg.find("truncated data"), std::string::npos) << msg;
}

} // namespace
