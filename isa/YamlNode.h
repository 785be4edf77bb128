// YamlNode.h - a yaml-cpp node that knows where it is (the isa loader's, and the sweep spec
// loader's in explore/, which reads YAML with the same located errors).
//
// Every value the target loader reads goes through this wrapper so that each error message
// names the file and the dotted field path ("configs/x.yaml: tensor_unit.rows: ...") plus the
// YAML line, and so that yaml-cpp's own conversion exceptions never escape as bare
// YAML::Exception text without a location.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace npuc::isa::detail {

/// Throws npuc::Error "origin:line:column: duplicate key 'k' (first at line L)" for the first
/// map anywhere in `doc` that has a key twice. yaml-cpp keeps both entries and lookups see only
/// one, so a deleted line such as `- mnemonic: vop` silently merged two instructions.
void rejectDuplicateKeys(const YAML::Node &doc, const std::string &origin);

class YNode {
public:
  YNode(YAML::Node node, std::string path, const std::string *origin)
      : node_(std::move(node)), path_(std::move(path)), origin_(origin) {}

  const std::string &path() const { return path_; }
  const std::string &origin() const { return *origin_; }
  /// The same node under another path label (e.g. "instructions[2] (mm)").
  YNode relabel(std::string path) const { return YNode(node_, std::move(path), origin_); }
  /// Path of a child key, for messages about values that are not nodes themselves.
  std::string child(const std::string &key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  /// Throws npuc::Error "origin: path: msg (line N)".
  [[noreturn]] void error(const std::string &msg) const;

  bool isMap() const { return node_.IsMap(); }
  bool isSequence() const { return node_.IsSequence(); }
  bool isScalar() const { return node_.IsScalar(); }

  /// A required key of a map; "missing required field" otherwise.
  YNode req(const std::string &key) const;
  std::optional<YNode> opt(const std::string &key) const;
  /// Rejects keys outside `allowed` (typos would otherwise be silently ignored).
  void allowKeys(std::initializer_list<const char *> allowed) const;

  /// Sequence access; errors when the node is not a sequence.
  size_t size() const;
  YNode at(size_t i) const;
  /// Map entries in file order; errors when the node is not a map.
  std::vector<std::pair<std::string, YNode>> entries() const;

  /// Scalars. Integers accept decimal, 0x hex and a KiB/MiB/GiB suffix ("64 KiB").
  int64_t asInt() const;
  double asDouble() const;
  bool asBool() const;
  std::string asString() const;
  /// Integer range check with a message naming the bounds.
  int64_t asIntIn(int64_t lo, int64_t hi) const;

  int64_t intOr(const std::string &key, int64_t dflt, int64_t lo, int64_t hi) const;
  /// The wrapped node, for readers that take values of any shape (explore/Sweep.cpp's axis
  /// values).
  const YAML::Node &raw() const { return node_; }
  double doubleOr(const std::string &key, double dflt) const;

private:
  void requireMap() const;
  std::string scalarText() const;

  YAML::Node node_;
  std::string path_;
  const std::string *origin_;
};

} // namespace npuc::isa::detail
