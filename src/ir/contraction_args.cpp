// The meaning and the checks of a contraction node's arguments (contraction_args.h). The
// refusals are torch 2.13.0's (probed with torch.mm, bmm, addmm and baddbmm on CPU): which
// dtypes it implements (every Stax dtype but bool), the rank, inner-size and batch-size checks,
// the dtype checks (the bias included, also when beta is 0), expand's rule for the bias, and
// the checked conversion of alpha and beta.
#include "ir/contraction_args.h"

#include <string>

#include "ir/op_schema.h"
#include "ir/op_schemas_internal.h"
#include "ir/text_format.h"

namespace stax::ir {

namespace {

// "2x3", as PyTorch spells a matrix shape in its messages.
std::string times(const std::vector<int64_t>& sizes) {
  std::string s;
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "x" : "") + std::to_string(sizes[i]);
  return s;
}

// Parameter names of the factors and the bias, as the schemas spell them.
struct Names {
  const char* lhs;
  const char* rhs;
  const char* bias;  // nullptr for mm and bmm
};

Names names_of(const std::string& op) {
  if (op == "addmm") return {"mat1", "mat2", "self"};
  if (op == "baddbmm") return {"batch1", "batch2", "self"};
  return {"self", "mat2", nullptr};  // mm, bmm
}

void check_rank(const Node& n, const char* name, const TensorType& t, size_t rank) {
  if (t.sizes.size() == rank) return;
  const std::string what = rank == 2 ? "a matrix (2-D)" : "a 3-D tensor (a batch of matrices)";
  throw GraphError(detail::arg_prefix(n.op, name) + "must be " + what + ", got a " +
                   std::to_string(t.sizes.size()) + "-D tensor of sizes " + format_sizes(t.sizes));
}

// The bias (a tensor of any rank up to the result's) expanded to the result's sizes, as
// torch's expand: aligned from the right, each of its sizes equal to the result's or 1.
void check_bias_expands(const Node& n, const TensorType& bias, const std::vector<int64_t>& out) {
  const std::string prefix = detail::arg_prefix(n.op, "self") + "sizes " +
                             format_sizes(bias.sizes) + " do not expand to the result's sizes " +
                             format_sizes(out);
  if (bias.sizes.size() > out.size()) {
    throw GraphError(prefix + ": it has " + std::to_string(bias.sizes.size()) +
                     " dims, the result " + std::to_string(out.size()));
  }
  const size_t lead = out.size() - bias.sizes.size();
  for (size_t i = 0; i < bias.sizes.size(); ++i) {
    const int64_t have = bias.sizes[i];
    const int64_t want = out[lead + i];
    if (have != want && have != 1) {
      throw GraphError(prefix + " (size " + std::to_string(have) + " at its dim " +
                       std::to_string(i) + " against " + std::to_string(want) + ")");
    }
  }
}

}  // namespace

std::vector<int64_t> ContractionArgs::result_sizes() const {
  if (batched) return {batch, m, n};
  return {m, n};
}

ContractionArgs contraction_args(const Graph& graph, const Node& node) {
  const std::string& op = node.op;
  ContractionArgs a;
  a.batched = op == "bmm" || op == "baddbmm";
  const bool has_bias = op == "addmm" || op == "baddbmm";
  if (!a.batched && !has_bias && op != "mm") {
    throw GraphError(op + ": not a contraction (mm, bmm, addmm, baddbmm)");
  }
  const Names names = names_of(op);
  a.lhs = has_bias ? 1 : 0;
  a.rhs = a.lhs + 1;
  if (has_bias) a.bias = 0;
  const TensorType& lhs = tensor_arg(graph, node, a.lhs).type;
  const TensorType& rhs = tensor_arg(graph, node, a.rhs).type;
  const size_t rank = a.batched ? 3 : 2;
  check_rank(node, names.lhs, lhs, rank);
  check_rank(node, names.rhs, rhs, rank);

  // Every operand in one dtype: PyTorch neither promotes nor casts (not even an unused bias).
  const TensorType* bias = has_bias ? &tensor_arg(graph, node, 0).type : nullptr;
  a.dtype = lhs.dtype;
  const bool same_dtype = rhs.dtype == lhs.dtype && (bias == nullptr || bias->dtype == lhs.dtype);
  const auto operands = [&] {
    std::string s;
    if (bias != nullptr) s += std::string(names.bias) + " " + format_type(*bias) + ", ";
    return s + names.lhs + " " + format_type(lhs) + ", " + names.rhs + " " + format_type(rhs);
  };
  if (!same_dtype) {
    throw GraphError(op + ": expected its operands to have the same dtype, but got " + operands());
  }
  if (a.dtype == DType::Bool) {
    throw GraphError(op + ": bool is not supported (PyTorch implements " + op +
                     " for integer and floating dtypes only): " + operands());
  }

  const size_t row = rank - 2;
  if (a.batched && lhs.sizes[0] != rhs.sizes[0]) {
    throw GraphError(op + ": " + names.lhs + " and " + names.rhs + " have different batch sizes (" +
                     times(lhs.sizes) + " and " + times(rhs.sizes) + ")");
  }
  if (lhs.sizes[row + 1] != rhs.sizes[row]) {
    throw GraphError(op + ": " + names.lhs + " and " + names.rhs +
                     " shapes cannot be multiplied (" + times(lhs.sizes) + " and " +
                     times(rhs.sizes) + "): " + names.lhs + " has " +
                     std::to_string(lhs.sizes[row + 1]) + " columns, " + names.rhs + " has " +
                     std::to_string(rhs.sizes[row]) + " rows");
  }
  a.batch = a.batched ? lhs.sizes[0] : 1;
  a.m = lhs.sizes[row];
  a.k = lhs.sizes[row + 1];
  a.n = rhs.sizes[row + 1];
  if (bias != nullptr) check_bias_expands(node, *bias, a.result_sizes());

  // alpha and beta convert (checked) to the type PyTorch computes in: float32 for the 16-bit
  // floats (so 1e6 is accepted for float16 and gives inf, 1e39 is refused).
  a.scalar_dtype =
      a.dtype == DType::Float16 || a.dtype == DType::BFloat16 ? DType::Float32 : a.dtype;
  if (has_bias) {
    detail::check_scalar_fits(node, 3, "beta", a.scalar_dtype);
    detail::check_scalar_fits(node, 4, "alpha", a.scalar_dtype);
    a.beta = scalar_arg(node, 3);
    a.alpha = scalar_arg(node, 4);
  }
  return a;
}

}  // namespace stax::ir
