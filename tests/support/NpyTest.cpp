// NpyTest.cpp - the .npy header is parsed strictly, and a header declaring more elements than
// the file holds is an error naming the file before anything is allocated (issue 18).
#include "support/Npy.h"
#include "support/Error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

// A version 1.0 .npy file with `shape` as written in the header and `dataBytes` zero bytes.
std::string npyFile(const std::string &shape, size_t dataBytes,
                    const std::string &descr = "'<f4'") {
  std::string hdr = "{'descr': " + descr + ", 'fortran_order': False, 'shape': " + shape + ", }";
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

// Typed files: the bytes of numpy's encodings, written out by hand (little endian), read into
// the exact integer storage or fp32; each dtype written and read back keeps type and values.
std::string typedFile(const std::string &descr, const std::string &shape,
                      const std::string &bytes) {
  std::string f = npyFile(shape, 0, descr);
  return f + bytes;
}

npuc::HostTensor readBytes(const std::string &descr, const std::string &shape,
                           const std::string &bytes) {
  const std::string path = tempPath("typed.npy");
  std::ofstream(path, std::ios::binary) << typedFile(descr, shape, bytes);
  npuc::HostTensor t = npuc::readNpy(path);
  fs::remove(path);
  return t;
}

TEST(Npy, ReadsIntegerAndBoolTypesExactly) {
  // int64 -1 and 2^40 + 1 (beyond fp32's exact range): FF..FF and 01 00 00 00 00 01 00 00.
  std::string i8bytes("\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\x00\x00\x00\x01\x00\x00", 16);
  npuc::HostTensor t = readBytes("'<i8'", "(2,)", i8bytes);
  EXPECT_EQ(t.dtype, npuc::DType::I64);
  EXPECT_TRUE(t.data.empty());
  EXPECT_EQ(t.ints, (std::vector<int64_t>{-1, (int64_t{1} << 40) + 1}));
  t = readBytes("'|u1'", "(3,)", std::string("\x00\x80\xff", 3));
  EXPECT_EQ(t.dtype, npuc::DType::U8);
  EXPECT_EQ(t.ints, (std::vector<int64_t>{0, 128, 255}));
  t = readBytes("'|i1'", "(2,)", std::string("\x80\x7f", 2));
  EXPECT_EQ(t.ints, (std::vector<int64_t>{-128, 127}));
  t = readBytes("'<i4'", "(1, 1)", std::string("\xfe\xff\xff\xff", 4));
  EXPECT_EQ(t.dtype, npuc::DType::I32);
  EXPECT_EQ(t.ints, (std::vector<int64_t>{-2}));
  t = readBytes("'<u2'", "()", std::string("\x34\x12", 2));
  EXPECT_EQ(t.ints, (std::vector<int64_t>{0x1234}));
  t = readBytes("'|b1'", "(3,)", std::string("\x01\x00\x01", 3));
  EXPECT_EQ(t.dtype, npuc::DType::Bool);
  EXPECT_EQ(t.ints, (std::vector<int64_t>{1, 0, 1}));
}

TEST(Npy, ReadsFloatTypesIntoFp32) {
  // float16 1.0 = 0x3C00, -2.0 = 0xC000; float64 0.5 = 0x3FE0000000000000.
  npuc::HostTensor h = readBytes("'<f2'", "(2,)", std::string("\x00\x3c\x00\xc0", 4));
  EXPECT_EQ(h.dtype, npuc::DType::F16);
  EXPECT_EQ(h.data, (std::vector<float>{1.0f, -2.0f}));
  npuc::HostTensor d =
      readBytes("'<f8'", "(1,)", std::string("\x00\x00\x00\x00\x00\x00\xe0\x3f", 8));
  EXPECT_EQ(d.dtype, npuc::DType::F64);
  EXPECT_EQ(d.data, (std::vector<float>{0.5f}));
}

TEST(Npy, TypedRoundTrip) {
  const std::string path = tempPath("roundtrip.npy");
  for (npuc::DType t : npuc::kAllDTypes) {
    npuc::HostTensor x({2, 2}, t);
    if (x.isInt())
      x.ints = {1, 0, 1, 1};
    else
      x.data = {1.5f, -2.0f, 0.25f, 3.0f};
    npuc::writeNpy(path, x);
    npuc::HostTensor y = npuc::readNpy(path);
    EXPECT_EQ(y.dtype, t) << npuc::dtypeName(t);
    EXPECT_EQ(y.shape, x.shape);
    EXPECT_EQ(y.ints, x.ints) << npuc::dtypeName(t);
    EXPECT_EQ(y.data, x.data) << npuc::dtypeName(t);
  }
  fs::remove(path);
}

std::string typedError(const std::string &descr, const std::string &shape,
                       const std::string &bytes) {
  const std::string path = tempPath("typedbad.npy");
  std::ofstream(path, std::ios::binary) << typedFile(descr, shape, bytes);
  std::string msg;
  try {
    npuc::readNpy(path);
    ADD_FAILURE() << descr << " was accepted";
  } catch (const npuc::Error &e) {
    msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
  }
  fs::remove(path);
  return msg;
}

TEST(Npy, UnsupportedTypesAndBadBoolsAreErrorsNamingTheFile) {
  EXPECT_NE(typedError("'>i8'", "(1,)", std::string(8, '\0')).find("dtype '>i8' is not supported"),
            std::string::npos);
  EXPECT_NE(typedError("'<c8'", "(1,)", std::string(8, '\0')).find("dtype '<c8'"),
            std::string::npos);
  EXPECT_NE(typedError("'|b1'", "(2,)", std::string("\x01\x02", 2))
                .find("bool element 1 is 2 (not 0 or 1)"),
            std::string::npos);
  // The element size of the type decides the bytes needed: 2 int64 need 16.
  EXPECT_NE(typedError("'<i8'", "(2,)", std::string(8, '\0')).find("truncated data"),
            std::string::npos);
}
