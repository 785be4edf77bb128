// Type.h - scalar data types of the loop IR (TIR).
//
// A DataType is a (code, bits) pair, like LLVM's and TVM's scalar types. Buffers, expressions and
// loop variables carry one; the printer and the CPU code generator map it to a name and to an LLVM
// type. Index arithmetic is Int(64) throughout, so that flattened element indices of large tensors
// never overflow.
#pragma once

#include <string>

namespace npuc::tir {

struct DataType {
  // Scoped, because the unscoped enumerators would clash with the factories Int(bits), ...
  enum class Code { Int, UInt, Float, Bool, Handle };
  Code code = Code::Int;
  int bits = 64;

  static DataType Int(int bits) { return {Code::Int, bits}; }
  static DataType UInt(int bits) { return {Code::UInt, bits}; }
  static DataType Float(int bits) { return {Code::Float, bits}; }
  static DataType Bool() { return {Code::Bool, 1}; }
  static DataType Handle() { return {Code::Handle, 64}; }

  bool isInt() const { return code == Code::Int; }
  bool isUInt() const { return code == Code::UInt; }
  bool isFloat() const { return code == Code::Float; }
  bool isBool() const { return code == Code::Bool; }
  bool isHandle() const { return code == Code::Handle; }
  /// Int, UInt or Bool: values that integer evaluation (Eval.h) can compute.
  bool isIntegral() const { return isInt() || isUInt() || isBool(); }
  int bytes() const { return (bits + 7) / 8; }

  bool operator==(const DataType &o) const { return code == o.code && bits == o.bits; }
  bool operator!=(const DataType &o) const { return !(*this == o); }
};

/// "int64", "float32", "bool", ...
std::string toString(DataType t);

} // namespace npuc::tir
