// Package.h - the .npub compiled-model package: save a CompiledModel, load it back.
//
// Layout (all integers little endian):
//   bytes 0..3   magic "NPUB"
//   bytes 4..7   uint32 format version (kPackageVersion)
//   bytes 8..15  uint64 length H of the JSON header
//   bytes 16..   H bytes of JSON (nlohmann), then the blob area
// The header describes the graph (values, nodes, fused groups, placement), the target YAML source
// text (re-parsed with isa::parseTarget on load, so the package does not depend on the original
// file), and each NPU segment. Bulk data (constant tensors, encoded programs, constant images)
// lives in the blob area (so does the CPU groups' machine code, `cpu_code`, keyed as
// cpu_fallback/Jit.h says) and is referenced from the header as {"off", "len"}; the header stores
// the blob area's size and its checksum, so truncation and corruption are detected.
// Loading validates everything and reports "<file>: not an npuc package (...)" for foreign files
// and "<file>: corrupt npuc package: ..." for damaged ones.
#pragma once

#include "tools/driver/Compiler.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace npuc::driver {

// 2: DRAM tensors carry dtype and scale (int8); 3: a DRAM tensor's layout is any dim order, and
// each group says whether its layout ops cancel; 4: the blob area's checksum is xxHash64
// (`blob_xxh64`), not FNV-1a (`blob_fnv1a`). Versions 3 and 4 are read.
constexpr uint32_t kPackageVersion = 4;
constexpr uint32_t kOldestPackageVersion = 3;

/// Serialises to bytes (what savePackage writes).
std::string packageBytes(const CompiledModel &m);
/// Parses bytes; `origin` names the file in error messages.
CompiledModel parsePackage(std::string_view bytes, const std::string &origin);

/// Whether `bytes` start with the package magic (so that commands taking programs can tell a
/// package handed to them by mistake).
bool hasPackageMagic(std::string_view bytes);

/// Writes atomically: on error no file (and no partial file) exists at `path`.
void savePackage(const CompiledModel &m, const std::string &path);
CompiledModel loadPackage(const std::string &path);

} // namespace npuc::driver
