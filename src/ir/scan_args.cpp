// The scans' arguments (see scan_args.h).
#include "ir/scan_args.h"

#include "ir/op_schemas_internal.h"

namespace stax::ir {

bool is_scan_op(const std::string& op) {
  return op == "cumsum" || op == "cumprod" || op == "logcumsumexp" || op == "cummax" ||
         op == "cummin";
}

DType scan_accumulate_dtype(DType dtype) {
  if (dtype == DType::Float16 || dtype == DType::BFloat16) return DType::Float32;
  if (is_floating(dtype)) return DType::Float64;
  return DType::Int64;
}

const char* scan_kind_name(ScanKind kind) {
  switch (kind) {
    case ScanKind::Sum:
      return "sum";
    case ScanKind::Prod:
      return "prod";
    case ScanKind::LogSumExp:
      return "logsumexp";
    case ScanKind::Max:
      return "max";
    case ScanKind::Min:
      return "min";
  }
  return "?";
}

ScanArgs scan_args(const Graph& graph, const Node& node) {
  ScanArgs a;
  a.self = std::get<ValueRef>(node.args.at(0));
  const TensorType& self = graph.value(a.self).type;
  a.input_dtype = self.dtype;
  a.dim = detail::wrap_dim(int_arg(node, 1), self.sizes.size(), node.op, "dim",
                           /*scalar_ok=*/true);
  const std::string& op = node.op;
  if (op == "cumsum" || op == "cumprod") {
    a.kind = op == "cumsum" ? ScanKind::Sum : ScanKind::Prod;
    a.dtype = is_floating(self.dtype) ? self.dtype : DType::Int64;
    if (std::optional<std::string> name = string_arg(node, 2)) {
      const std::optional<DType> dtype = parse_dtype(*name);
      if (!dtype) {
        throw GraphError(detail::arg_prefix(op, "dtype") + "unknown dtype '" + *name + "'");
      }
      a.dtype = *dtype;
    }
    if (a.dtype == DType::Bool) {
      // Eager's NotImplementedError: "cumsum_out_cpu" not implemented for 'Bool'.
      throw GraphError(op + ": \"" + op + "_out_cpu\" not implemented for 'Bool'");
    }
  } else if (op == "logcumsumexp") {
    a.kind = ScanKind::LogSumExp;
    if (!is_floating(self.dtype)) {
      throw GraphError(op + ": \"logcumsumexp_out_cpu\" not implemented for '" +
                       std::string(dtype_name(self.dtype)) + "' (it needs a floating input)");
    }
    a.dtype = self.dtype;
  } else if (op == "cummax" || op == "cummin") {
    a.kind = op == "cummax" ? ScanKind::Max : ScanKind::Min;
    a.dtype = self.dtype;
    a.with_indices = true;
  } else {
    throw GraphError(op + " is not a scan");
  }
  a.accumulate_dtype =
      a.kind == ScanKind::Max || a.kind == ScanKind::Min ? a.dtype : scan_accumulate_dtype(a.dtype);
  return a;
}

}  // namespace stax::ir
