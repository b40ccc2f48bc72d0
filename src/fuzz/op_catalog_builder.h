// The vocabulary the op catalogue's files share (op_catalog.cpp: the loop ops;
// op_catalog_library.cpp: the ops that lower to library and runtime calls): the dtype sets,
// call-text helpers and the builder that collects the entries.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/op_catalog.h"

namespace stax::fuzz::catalog {

using D = Domain;
using R = Reference;

constexpr DTypeSet kBool = dtype_bit(DType::Bool);
constexpr DTypeSet kInts = dtype_bit(DType::UInt8) | dtype_bit(DType::Int8) |
                           dtype_bit(DType::Int16) | dtype_bit(DType::Int32) |
                           dtype_bit(DType::Int64);
constexpr DTypeSet kFloats = dtype_bit(DType::Float16) | dtype_bit(DType::BFloat16) |
                             dtype_bit(DType::Float32) | dtype_bit(DType::Float64);
constexpr DTypeSet kAll = kBool | kInts | kFloats;
constexpr DTypeSet kNoBool = kInts | kFloats;
constexpr DTypeSet kIntBool = kInts | kBool;
// hardtanh: signed integers and floats (PyTorch refuses uint8 and bool).
constexpr DTypeSet kSignedFloats = kNoBool & ~dtype_bit(DType::UInt8);

using Call = std::function<std::optional<std::string>(const CallSite&)>;

inline std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

inline int64_t last_size(const CallSite& s) {
  return s.sizes.back();
}
inline int rank(const CallSite& s) {
  return static_cast<int>(s.sizes.size());
}

// "op(a, b, ..., extra)" over the operands.
inline Call call_on(const std::string& op, const std::string& extra = "") {
  return [op, extra](const CallSite& s) -> std::optional<std::string> {
    std::string text = op + "(";
    for (size_t i = 0; i < s.operands.size(); ++i) text += (i ? ", " : "") + s.operands[i];
    if (!extra.empty()) text += ", " + extra;
    return text + ")";
  };
}

struct Builder {
  std::vector<CatalogEntry> entries;

  void add(std::string op, std::string name, std::vector<Domain> operands, DTypeSet dtypes,
           Reference reference, bool exact, Call call, bool bool_condition = false) {
    CatalogEntry e;
    e.op = std::move(op);
    e.name = std::move(name);
    e.operands = std::move(operands);
    e.bool_condition = bool_condition;
    e.dtypes = dtypes;
    e.reference = reference;
    e.exact = exact;
    e.call = std::move(call);
    entries.push_back(std::move(e));
  }
  // An op whose one case calls it on its operands.
  void simple(const std::string& op, std::vector<Domain> operands, DTypeSet dtypes,
              Reference reference = R::Float64, bool exact = false) {
    add(op, op, std::move(operands), dtypes, reference, exact, call_on(op));
  }
};

// The families of op_catalog_library.cpp.
void add_contractions(Builder& b);  // issue 14, point 3
void add_convolutions(Builder& b);  // issue 15, point 2
void add_pooling(Builder& b);
void add_scatters(Builder& b);   // issue 15, point 4
void add_attention(Builder& b);  // issue 15, point 1
void add_scans(Builder& b);      // issue 16, point 7
void add_mutations(Builder& b);  // issue 16, point 6: copy_ into a new input

}  // namespace stax::fuzz::catalog
