// The scans (issue 16, point 7; the scan nodes at the end of Section 7.7): cumsum, cumprod,
// logcumsumexp, cummax and cummin along one dim, read as one description. Element k of a line
// along `dim` combines elements 0..k of the input's line under an associative operation:
//   cumsum        out[k] = out[k-1] + x[k]
//   cumprod       out[k] = out[k-1] * x[k]
//   logcumsumexp  out[k] = log(exp(out[k-1]) + exp(x[k])), as eager's _log_add_exp_helper
//   cummax/cummin out[k] = x[k] if x[k] is NaN, or out[k-1] is not NaN and x[k] >= out[k-1]
//                 (<= for cummin), else out[k-1]; the second result is the index taken, so a
//                 tie or a NaN moves it to the later element (torch 2.13.0 probed).
// Eager (torch 2.13.0, probed) converts the input to the result dtype first (cumsum and
// cumprod's dtype=, or int64 for bool and integer inputs), then carries the running value in
// PyTorch's CPU accumulation type: double for float32 and float64, float for float16 and
// bfloat16, int64 for integers, rounding each element of the result from it. Results are
// contiguous. Type inference, the eager interpreter and lowering read the arguments only
// through here.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace stax::ir {

enum class ScanKind : uint8_t { Sum, Prod, LogSumExp, Max, Min };

struct ScanArgs {
  ValueRef self;
  int64_t dim = 0;  // normalized; 0 for a 0-dim input (a line of one element)
  ScanKind kind = ScanKind::Sum;
  DType input_dtype = DType::Float32;
  DType dtype = DType::Float32;             // of the values: the input converted to it first
  DType accumulate_dtype = DType::Float64;  // of the running value
  bool with_indices = false;                // cummax and cummin: a second, int64 result

  // The result `result_index` of the node: the values, or cummax/cummin's indices (int64).
  DType result_dtype(int64_t result_index) const {
    return result_index == 1 ? DType::Int64 : dtype;
  }
};

bool is_scan_op(const std::string& op);
// Throws GraphError with eager's refusal (a dim out of range, logcumsumexp of an integer
// input, cumsum and cumprod into bool).
ScanArgs scan_args(const Graph& graph, const Node& node);
// PyTorch's CPU accumulation type of a scan whose values are of `dtype`.
DType scan_accumulate_dtype(DType dtype);
const char* scan_kind_name(ScanKind kind);

}  // namespace stax::ir
