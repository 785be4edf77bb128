// PackageCodec.h - internal helpers shared by the .npub writer and reader (not a public API).
//
// BlobWriter appends bulk data to the blob area and returns {"off","len"} references; JsonIn is
// a checked view of the header that turns every missing or ill-typed field into an npuc::Error
// naming the package file and the JSON path of the field, so a damaged package never reaches an
// assertion or an out-of-range access. The graph codec (GraphCodec.cpp) and the package codec
// (Package.cpp) are both written against these helpers.
#pragma once

#include "graph/Graph.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace npuc::driver::detail {

using nlohmann::json;

class BlobWriter {
public:
  json add(const void *data, size_t bytes);
  template <typename T> json addVector(const std::vector<T> &v) {
    return add(v.data(), v.size() * sizeof(T));
  }
  const std::string &bytes() const { return bytes_; }
  /// Room for `bytes` more: a package's blobs are its weights (hundreds of MB for a large
  /// model), and growing by doubling would copy them again and touch fresh pages each time.
  void reserve(size_t bytes) { bytes_.reserve(bytes_.size() + bytes); }

private:
  std::string bytes_;
};

/// A checked JSON node: `path` is where it sits in the header ("npu_segments[0].inputs[2]").
class JsonIn {
public:
  JsonIn(const json &j, std::string origin, std::string path, std::string_view blobs)
      : j_(&j), origin_(std::move(origin)), path_(std::move(path)), blobs_(blobs) {}

  JsonIn operator[](const char *key) const; // required object member
  JsonIn at(size_t i) const;                // array element
  bool has(const char *key) const;
  size_t size() const; // array length (fails if not an array)
  int64_t asInt() const;
  int64_t asIntIn(int64_t lo, int64_t hi) const; // inclusive range check
  double asDouble() const;
  bool asBool() const;
  std::string asString() const;
  std::vector<int64_t> asInts() const;
  Shape asShape() const; // non-negative dims
  std::vector<std::string> asStrings() const;
  /// The blob this {"off","len"} reference names, bounds-checked against the blob area.
  std::string blob() const { return std::string(blobView()); }
  /// The same bytes, in place in the blob area.
  std::string_view blobView() const;
  const json &raw() const { return *j_; }
  const std::string &path() const { return path_; }
  [[noreturn]] void bad(const std::string &why) const;

private:
  const json *j_;
  std::string origin_;
  std::string path_;
  std::string_view blobs_;
};

json graphToJson(const graph::Graph &g, BlobWriter &blobs);
graph::Graph graphFromJson(const JsonIn &j);

} // namespace npuc::driver::detail
