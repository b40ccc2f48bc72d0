// Lowering of reductions: each is stored in a buffer whose body reduces over the reduced dims.
#include "lowering/lowerer.h"

namespace stax::lowering {

LoweredValue Lowerer::lower_reduction(const ir::Node& node, const ir::Value& out) {
  const ir::Value& in = ir::tensor_arg(graph_, node, 0);
  const LoweredValue& src = value(std::get<ir::ValueRef>(node.args[0]).index);
  const auto dims = ir::reduction_dims(ir::int_list_arg(node, 1), in.type.sizes.size(), node.op);
  const bool keepdim = ir::bool_arg(node, 2);
  std::vector<bool> reduced(in.type.sizes.size(), false);
  for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;

  ReductionType type = ReductionType::Sum;
  if (node.op == "amax") type = ReductionType::Max;
  if (node.op == "amin") type = ReductionType::Min;
  const bool is_mean = node.op == "mean";

  ComputedBuffer buf;
  buf.name = next_buffer_name();
  buf.dtype = out.type.dtype;
  buf.sizes = out.type.sizes;
  buf.strides = ir::contiguous_strides(out.type.sizes);
  buf.reduction = type;
  std::vector<int64_t> out_dim_of_kept;  // output dim index of each kept input dim
  int64_t reduced_count = 1;
  for (size_t d = 0; d < in.type.sizes.size(); ++d) {
    if (reduced[d]) {
      buf.reduction_ranges.push_back(in.type.sizes[d]);
      reduced_count *= in.type.sizes[d];
    } else {
      buf.ranges.push_back(in.type.sizes[d]);
      out_dim_of_kept.push_back(keepdim ? static_cast<int64_t>(d)
                                        : static_cast<int64_t>(buf.ranges.size() - 1));
    }
  }
  const auto strides = buf.strides;
  buf.output_index = [strides, out_dim_of_kept](const std::vector<Expr>& idx) {
    Expr offset(0);
    for (size_t k = 0; k < idx.size(); ++k) {
      offset = offset + idx[k] * Expr(strides[static_cast<size_t>(out_dim_of_kept[k])]);
    }
    return offset;
  };
  Loader loader = src.loader;
  const DType from = src.dtype;
  const DType to = out.type.dtype;
  buf.value = [loader, reduced, from, to](OpsHandler& h, const std::vector<Expr>& idx,
                                          const std::vector<Expr>& ridx) {
    std::vector<Expr> full;
    size_t k = 0;
    size_t r = 0;
    for (bool is_reduced : reduced) full.push_back(is_reduced ? ridx[r++] : idx[k++]);
    OpsValue x = loader(h, full);
    return from == to ? x : h.to_dtype(x, to);
  };
  std::vector<std::string> origin = src.origin;
  origin.push_back(is_mean ? "sum" : node.op);
  buf.origin = join(origin, "+");
  LoweredValue stored = add_buffer(std::move(buf));
  stored.origin.clear();
  if (!is_mean) return stored;

  LoweredValue mean;
  mean.dtype = stored.dtype;
  mean.sizes = stored.sizes;
  mean.origin = {"mean"};
  Loader sum = stored.loader;
  const double count = static_cast<double>(reduced_count);
  const DType dtype = stored.dtype;
  mean.loader = [sum, count, dtype](OpsHandler& h, const std::vector<Expr>& idx) {
    return apply(h, PointwiseOp::Div, {sum(h, idx), h.constant(count, dtype)});
  };
  mean.stats = stored.stats;
  mean.stats += op_stats(PointwiseOp::Div);
  return mean;
}

}  // namespace stax::lowering
