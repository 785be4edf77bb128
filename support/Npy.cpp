// Npy.cpp - .npy parsing and writing; malformed files are user errors naming the file.
#include "support/Npy.h"

#include "support/Error.h"

#include <cstring>

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

// The shape tuple "(1, 3, 32, 32)", "(16,)" or "()": non-negative decimal dims separated by
// commas, one trailing comma allowed; anything else is an error rather than a guess.
Shape parseShape(const std::string &path, const std::string &text) {
  auto bad = [&](const std::string &why) -> Shape {
    fail("{}: malformed .npy header: shape {}: {}", path, text, why);
  };
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    return bad("expected a tuple of dimensions");
  Shape shape;
  const std::string body = text.substr(1, text.size() - 2);
  size_t at = 0;
  while (at < body.size()) {
    size_t comma = body.find(',', at);
    std::string item = body.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) {
      // Only the single trailing comma of "(16,)" or "(2, 3,)" may leave an empty item.
      if (comma != std::string::npos || shape.empty())
        return bad("empty dimension");
      break;
    }
    item = item.substr(b, e - b + 1);
    if (item.find_first_not_of("0123456789") != std::string::npos)
      return bad("dimension '" + item + "' is not a non-negative integer");
    if (item.size() > 18)
      return bad("dimension '" + item + "' is too large");
    shape.push_back(std::stoll(item));
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return shape;
}

// The size in bytes of one element of a dtype descr such as '<f4', '|b1' or 'int64'; a byte order
// other than little endian or not applicable is refused.
size_t itemSize(const std::string &path, const std::string &descr) {
  static const std::pair<const char *, size_t> named[] = {
      {"float32", 4}, {"float64", 8}, {"int64", 8}, {"int32", 4},  {"int16", 2},
      {"int8", 1},    {"uint8", 1},   {"bool", 1},  {"float16", 2}};
  for (const auto &[name, size] : named)
    if (descr == name)
      return size;
  if (descr.size() >= 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=') &&
      descr.find_first_not_of("0123456789", 2) == std::string::npos && descr.size() <= 4)
    return static_cast<size_t>(std::stoi(descr.substr(2)));
  fail("{}: dtype '{}' is not supported (little-endian numeric arrays are)", path, descr);
}

} // namespace

NpyArray readNpyArray(const std::string &path) {
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
  NpyArray a;
  a.path = path;
  a.descr = dictValue(path, hdr, "descr");
  if (a.descr.size() < 2 || a.descr.front() != '\'' || a.descr.back() != '\'')
    fail("{}: malformed .npy header: descr {}", path, a.descr);
  a.descr = a.descr.substr(1, a.descr.size() - 2);
  const size_t item = itemSize(path, a.descr);
  if (dictValue(path, hdr, "fortran_order") != "False")
    fail("{}: Fortran-ordered arrays are not supported; save a C-ordered array", path);
  a.shape = parseShape(path, dictValue(path, hdr, "shape"));
  // Checked before allocating: a header may declare far more elements than the file holds.
  const size_t have = bytes.size() - off - hlen;
  int64_t elems = 1;
  for (int64_t d : a.shape)
    if (d != 0 && elems > int64_t(have / item) / d)
      fail("{}: truncated data: shape {} needs more than the {} bytes the file has", path,
           shapeToString(a.shape), have);
    else
      elems *= d;
  const size_t need = size_t(elems) * item;
  if (have < need)
    fail("{}: truncated data: shape {} needs {} bytes, file has {}", path, shapeToString(a.shape),
         need, have);
  a.bytes = bytes.substr(off + hlen, need);
  return a;
}

HostTensor readNpy(const std::string &path) {
  NpyArray a = readNpyArray(path);
  if (a.descr != "<f4" && a.descr != "float32")
    fail("{}: dtype '{}' is not float32 ('<f4'); convert the array with .astype(numpy.float32)",
         path, a.descr);
  HostTensor t(a.shape);
  if (!a.bytes.empty()) // an empty tensor's data() may be null, which memcpy must not get
    std::memcpy(t.data.data(), a.bytes.data(), a.bytes.size());
  return t;
}

void writeNpy(const std::string &path, const HostTensor &t,
              const std::vector<std::string> &inputs) {
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
  writeFileAtomic(path, out, inputs);
}

} // namespace npuc
