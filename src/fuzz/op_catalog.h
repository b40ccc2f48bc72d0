// The op catalogue shared by the differential sweep (tests/sweep) and the random program
// generator: every pointwise op, reduction and view of issue 6 (points 3, 4 and 6) under its
// ATen name, with the dtypes PyTorch accepts it for, the value domain of each operand that
// keeps it well-conditioned, which eager run is its reference, and how to spell a call in the
// text format for operands of given sizes.
//
// An entry is a *case* of an op (an op may have several: `div` true, trunc and floor; `sum`
// over the last dim, the first dim and all dims). Consumers run an entry only when its op is
// registered (ir::find_op_schema), so the catalogue can list ops before they land, and the
// sweep reports which are still missing.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace stax::fuzz {

// The values an operand is drawn from. Floating ranges are chosen so that a single op is
// well-conditioned there (a relative error of the operand of one ulp changes the result by a
// few ulps at most), so that a difference beyond the dtype's tolerance is a bug.
enum class Domain : uint8_t {
  Any,         // floats in [-4, 4] with NaN, +-inf, -0.0 mixed in; integers over their range
  Finite,      // floats in [-4, 4]; integers over their range
  Small,       // floats in [-2, 2]; integers in [-3, 3]
  Unit,        // floats in [-0.9, 0.9]; integers in [-1, 1]
  Positive,    // floats in [0.25, 4]; integers in [1, 10]
  AboveOne,    // floats in [1.25, 4]; integers in [2, 10] (acosh)
  NonZero,     // floats +-[0.25, 4]; integers in [-10, 10] without 0 (divisors)
  NearOne,     // floats in [0.5, 1.5]; integers in [-2, 2] (products)
  Coarse,      // a few values (-1, -0.5, 0, 0.5, 1, NaN for floats), so ties and equality occur
  Wide,        // floats in [-300, 300] (casts out of the range of narrow integers)
  ShiftCount,  // integers in [0, bits + 2] (shifts by the bit width and beyond)
  Exponent,    // floats in [-2, 2]; integers in [0, 3] (integer pow)
};

enum class Reference : uint8_t {
  // Floating results are compared with the op run eagerly on the floating inputs converted to
  // float64, with the output dtype's tolerance: the op is continuous in its operands.
  Float64,
  // Compared with eager in the operands' own dtype: the op is discontinuous in a value the
  // dtype rounds (floor(a / b), round(x * 10^d)), or its result depends on the dtype
  // (nan_to_num's largest finite value, casts, a scalar rounded to the dtype).
  SameDtype,
};

// A bit set of dtypes (bit = static_cast<int>(DType)).
using DTypeSet = uint16_t;
constexpr DTypeSet dtype_bit(DType d) {
  return static_cast<DTypeSet>(1u << static_cast<int>(d));
}
bool contains(DTypeSet set, DType dtype);
std::vector<DType> all_dtypes();  // the ten dtypes of issue 6, bool first

// What a call needs from the program that hosts it.
struct CallSite {
  std::vector<std::string> operands;  // one value name per CatalogEntry::operands, same sizes
  std::vector<int64_t> sizes;         // the operands' sizes (rank >= 1)
  DType dtype = DType::Float32;       // the operands' dtype (bool conditions aside)
  // Emits `tmp = expr` before the call and returns tmp's name (for ops that need a prepared
  // operand: expand of an unsqueezed value, as_strided over a dense copy).
  std::function<std::string(const std::string& expr)> temp;
  // Emits `t_0, ..., t_{count-1} = expr` for a call of several results (the indices of
  // max_pool2d_with_indices for its backward) and returns their names.
  std::function<std::vector<std::string>(const std::string& expr, int count)> temp_results;
  // Declares a new int64 input of `sizes` whose values lie in [0, bound) and returns its name
  // (index tensors of gather, index_select, embedding and index).
  std::function<std::string(const std::vector<int64_t>& sizes, int64_t bound)> index_input;
  // Declares a new input of `dtype` and `sizes` (laid out with `strides`, empty: contiguous)
  // and returns its name: the destination of copy_, which writes inputs only.
  std::function<std::string(DType dtype, const std::vector<int64_t>& sizes,
                            const std::vector<int64_t>& strides)>
      destination_input;
};

struct CatalogEntry {
  std::string op;                // the registry name (ATen)
  std::string name;              // unique case name: "div.floor", "sum.dim0", "_to_copy.i8"
  std::vector<Domain> operands;  // value operands (same dtype and sizes), before index inputs
  bool bool_condition = false;   // operand 0 is a bool condition (where)
  DTypeSet dtypes = 0;           // operand dtypes PyTorch accepts
  Reference reference = Reference::Float64;
  // The result is computed without rounding from its operands (views, comparisons, integer
  // ops, max/min, floor, casts of exact values): it can feed discontinuous ops in the fuzzer.
  bool exact = false;
  // The call expression, or nullopt when the op does not apply to operands of these sizes.
  std::function<std::optional<std::string>(const CallSite&)> call;
  // How many tensors the call returns (split: one per piece, var_mean: two), written
  // `a, b = op(...)`; empty: one.
  std::function<int(const CallSite&)> result_count;
};

// The left-hand side of a call with `count` results named after `name`: "name" for one,
// "name_0, name_1" for two; `names` receives them.
std::string result_targets(const std::string& name, int count, std::vector<std::string>& names);

// Every case, in a fixed order (pointwise, reductions, views).
const std::vector<CatalogEntry>& op_catalog();
// The distinct op names of the catalogue, sorted.
std::vector<std::string> catalog_op_names();
// Catalogue ops the registry does not know (not yet implemented), sorted.
std::vector<std::string> missing_catalog_ops();
// Registered ops the catalogue has no case for, sorted (a new op needs a case here).
std::vector<std::string> uncatalogued_registered_ops();
// Whether the entry's op is registered (its cases can run).
bool is_runnable(const CatalogEntry& entry);

}  // namespace stax::fuzz
