// Npy.cpp - .npy parsing and writing; malformed files are user errors naming the file.
#include "support/Npy.h"

#include "support/Error.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace npuc {

std::string shapeToString(const Shape &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i)
      out += 'x';
    out += std::to_string(s[i]);
  }
  return out.empty() ? "scalar" : out;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("{}: cannot open file", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFileAtomic(const std::string &path, const std::string &bytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      fail("{}: cannot write file", path);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::remove(tmp.c_str());
      fail("{}: write failed", path);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("{}: cannot write file", path);
  }
}

namespace {

// Extracts the value text of `key` from the header dict: "{'descr': '<f4', ...}".
std::string dictValue(const std::string &path, const std::string &hdr, const std::string &key) {
  auto k = hdr.find("'" + key + "'");
  if (k == std::string::npos)
    fail("{}: .npy header has no '{}' entry", path, key);
  auto colon = hdr.find(':', k);
  if (colon == std::string::npos)
    fail("{}: malformed .npy header", path);
  size_t b = colon + 1;
  while (b < hdr.size() && hdr[b] == ' ')
    ++b;
  size_t e = b;
  if (hdr[b] == '(') {
    e = hdr.find(')', b);
    if (e == std::string::npos)
      fail("{}: malformed .npy header (shape)", path);
    return hdr.substr(b, e - b + 1);
  }
  while (e < hdr.size() && hdr[e] != ',' && hdr[e] != '}')
    ++e;
  std::string v = hdr.substr(b, e - b);
  while (!v.empty() && v.back() == ' ')
    v.pop_back();
  return v;
}

} // namespace

HostTensor readNpy(const std::string &path) {
  std::string bytes = readFile(path);
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    fail("{}: not a .npy file (bad magic)", path);
  int major = static_cast<unsigned char>(bytes[6]);
  size_t hlen, off;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    off = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      fail("{}: truncated .npy header", path);
    hlen = 0;
    for (int i = 0; i < 4; ++i)
      hlen |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    off = 12;
  } else {
    fail("{}: unsupported .npy version {}", path, major);
  }
  if (off + hlen > bytes.size())
    fail("{}: truncated .npy header", path);
  std::string hdr = bytes.substr(off, hlen);
  std::string descr = dictValue(path, hdr, "descr");
  if (descr != "'<f4'" && descr != "'float32'")
    fail("{}: dtype {} is not float32 ('<f4'); convert the array with .astype(numpy.float32)", path,
         descr);
  if (dictValue(path, hdr, "fortran_order") != "False")
    fail("{}: Fortran-ordered arrays are not supported; save a C-ordered array", path);
  std::string shp = dictValue(path, hdr, "shape");
  Shape shape;
  std::string num;
  for (char c : shp) {
    if (c >= '0' && c <= '9') {
      num += c;
    } else if (!num.empty()) {
      shape.push_back(std::stoll(num));
      num.clear();
    }
  }
  HostTensor t(shape);
  size_t need = static_cast<size_t>(t.size()) * 4;
  if (bytes.size() - off - hlen < need)
    fail("{}: truncated data: shape {} needs {} bytes, file has {}", path, shapeToString(shape),
         need, bytes.size() - off - hlen);
  if (need > 0) // an empty tensor's data() may be null, which memcpy must not get
    std::memcpy(t.data.data(), bytes.data() + off + hlen, need);
  return t;
}

void writeNpy(const std::string &path, const HostTensor &t) {
  std::string shp = "(";
  for (size_t i = 0; i < t.shape.size(); ++i)
    shp += std::to_string(t.shape[i]) +
           (t.shape.size() == 1 ? "," : (i + 1 < t.shape.size() ? ", " : ""));
  shp += ")";
  std::string hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shp + ", }";
  size_t total = 10 + hdr.size() + 1;
  hdr.append((64 - total % 64) % 64, ' ');
  hdr += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(hdr.size() & 0xff);
  out += static_cast<char>((hdr.size() >> 8) & 0xff);
  out += hdr;
  out.append(reinterpret_cast<const char *>(t.data.data()), t.data.size() * 4);
  writeFileAtomic(path, out);
}

} // namespace npuc
