// Npy.cpp - .npy parsing and writing; malformed files are user errors naming the file.
#include "support/Npy.h"

#include "support/Error.h"
#include "support/Half.h"

#include <cstring>
#include <type_traits>

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

// The .npy descr of each DType (little endian; one-byte types have no byte order).
const char *npyDescr(DType t) {
  switch (t) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::F16:
    return "<f2";
  case DType::I8:
    return "|i1";
  case DType::I16:
    return "<i2";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::U8:
    return "|u1";
  case DType::U16:
    return "<u2";
  case DType::U32:
    return "<u4";
  case DType::U64:
    return "<u8";
  case DType::Bool:
    return "|b1";
  }
  NPUC_ASSERT(false, "npyDescr covers every DType");
  return "";
}

// The DType of a header's descr value ('<f4', "'float32'" as old writers spell float32, and the
// byte-order-free '|i1'/'<i1' forms of the one-byte types); big endian and the rest are errors.
DType npyDType(const std::string &path, const std::string &descr) {
  std::string d = descr.size() >= 2 && (descr.front() == '\'' || descr.front() == '"')
                      ? descr.substr(1, descr.size() - 2)
                      : descr;
  if (d == "float32")
    return DType::F32;
  if (d.size() == 3 && (d[0] == '<' || d[0] == '|' || d[0] == '='))
    for (DType t : kAllDTypes) {
      std::string want = npyDescr(t);
      if (d.substr(1) == want.substr(1) && (d[0] != '|' || dtypeSize(t) == 1))
        return t;
    }
  fail("{}: dtype {} is not supported (little-endian float32/float64/float16, int8..int64, "
       "uint8..uint64 and bool are)",
       path, descr);
}

template <typename T> void decodeAs(HostTensor &t, const char *src) {
  const size_t n = static_cast<size_t>(numElements(t.shape));
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + i * sizeof(T), sizeof(T));
    if constexpr (std::is_floating_point_v<T>)
      t.data[i] = static_cast<float>(v);
    else
      t.ints[i] = static_cast<int64_t>(v);
  }
}

// Fills t (shape and dtype set) from the raw little-endian elements at src. A bool byte other
// than 0/1 is an error: numpy never writes one.
void decodeElements(const std::string &path, HostTensor &t, const char *src) {
  switch (t.dtype) {
  case DType::F32:
    return decodeAs<float>(t, src);
  case DType::F64:
    return decodeAs<double>(t, src);
  case DType::F16:
    for (size_t i = 0; i < t.data.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      t.data[i] = halfToFloat(h);
    }
    return;
  case DType::I8:
    return decodeAs<int8_t>(t, src);
  case DType::I16:
    return decodeAs<int16_t>(t, src);
  case DType::I32:
    return decodeAs<int32_t>(t, src);
  case DType::I64:
  case DType::U64:
    return decodeAs<int64_t>(t, src);
  case DType::U8:
    return decodeAs<uint8_t>(t, src);
  case DType::U16:
    return decodeAs<uint16_t>(t, src);
  case DType::U32:
    return decodeAs<uint32_t>(t, src);
  case DType::Bool:
    decodeAs<uint8_t>(t, src);
    for (size_t i = 0; i < t.ints.size(); ++i)
      if (t.ints[i] > 1)
        fail("{}: bool element {} is {} (not 0 or 1)", path, i, t.ints[i]);
    return;
  }
}

template <typename T> void encodeAs(const HostTensor &t, std::string &out) {
  const size_t n = static_cast<size_t>(t.size());
  const size_t at = out.size();
  out.resize(at + n * sizeof(T));
  for (size_t i = 0; i < n; ++i) {
    T v;
    if constexpr (std::is_floating_point_v<T>)
      v = static_cast<T>(t.data[i]);
    else
      v = static_cast<T>(t.ints[i]);
    std::memcpy(&out[at + i * sizeof(T)], &v, sizeof(T));
  }
}

// Appends t's elements in its dtype's little-endian encoding.
void encodeElements(const HostTensor &t, std::string &out) {
  switch (t.dtype) {
  case DType::F32:
    return encodeAs<float>(t, out);
  case DType::F64:
    return encodeAs<double>(t, out);
  case DType::F16:
    for (float f : t.data) {
      uint16_t h = floatToHalf(f);
      out.append(reinterpret_cast<const char *>(&h), 2);
    }
    return;
  case DType::I8:
    return encodeAs<int8_t>(t, out);
  case DType::I16:
    return encodeAs<int16_t>(t, out);
  case DType::I32:
    return encodeAs<int32_t>(t, out);
  case DType::I64:
  case DType::U64:
    return encodeAs<int64_t>(t, out);
  case DType::U8:
  case DType::Bool:
    return encodeAs<uint8_t>(t, out);
  case DType::U16:
    return encodeAs<uint16_t>(t, out);
  case DType::U32:
    return encodeAs<uint32_t>(t, out);
  }
}

} // namespace

HostTensor readNpy(const std::string &path) {
  return parseNpy(readFile(path), path);
}

HostTensor parseNpy(const std::string &bytes, const std::string &path) {
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
  const DType dt = npyDType(path, dictValue(path, hdr, "descr"));
  if (dictValue(path, hdr, "fortran_order") != "False")
    fail("{}: Fortran-ordered arrays are not supported; save a C-ordered array", path);
  Shape shape = parseShape(path, dictValue(path, hdr, "shape"));
  // Checked before allocating: a header may declare far more elements than the file holds.
  const size_t have = bytes.size() - off - hlen;
  int64_t elems = 1;
  for (int64_t d : shape)
    if (d != 0 && elems > int64_t(have / size_t(dtypeSize(dt))) / d)
      fail("{}: truncated data: shape {} needs more than the {} bytes the file has", path,
           shapeToString(shape), have);
    else
      elems *= d;
  const size_t need = size_t(elems) * size_t(dtypeSize(dt));
  if (have < need)
    fail("{}: truncated data: shape {} needs {} bytes, file has {}", path, shapeToString(shape),
         need, have);
  HostTensor t(shape, dt);
  decodeElements(path, t, bytes.data() + off + hlen);
  return t;
}

NpyArray readNpyArray(const std::string &path) {
  HostTensor t = readNpy(path);
  NpyArray a;
  a.path = path;
  a.descr = npyDescr(t.dtype);
  a.shape = t.shape;
  encodeElements(t, a.bytes);
  return a;
}

void writeNpy(const std::string &path, const HostTensor &t,
              const std::vector<std::string> &inputs) {
  writeFileAtomic(path, encodeNpy(t), inputs);
}

std::string encodeNpy(const HostTensor &t) {
  std::string shp = "(";
  for (size_t i = 0; i < t.shape.size(); ++i)
    shp += std::to_string(t.shape[i]) +
           (t.shape.size() == 1 ? "," : (i + 1 < t.shape.size() ? ", " : ""));
  shp += ")";
  std::string hdr = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                npyDescr(t.dtype), shp);
  size_t total = 10 + hdr.size() + 1;
  hdr.append((64 - total % 64) % 64, ' ');
  hdr += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(hdr.size() & 0xff);
  out += static_cast<char>((hdr.size() >> 8) & 0xff);
  out += hdr;
  encodeElements(t, out);
  return out;
}

} // namespace npuc
