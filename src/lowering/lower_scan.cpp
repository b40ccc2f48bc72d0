// Issue 16, point 7: the scans (cumsum, cumprod, logcumsumexp, cummax, cummin) as one external
// node each, run by Stax's runtime (external/scan.h; lowering/loop_ir.h: ScanCall) — the
// dedicated scan node of Section 7.7: element k of a line needs every element before it, so no
// loop nest over the output computes it without a sequential carried dim; the node depends on
// the whole input and writes its whole output (Definition 7.1's whole dependences).
// cumsum and cumprod convert their input to the result dtype first, as eager does (dtype=, or
// int64 for integer and bool inputs): that conversion is a pointwise value, stored for the
// call. cummax's and cummin's indices are a further result of the call (ResultOf).
#include "index/shape_exprs.h"
#include "lowering/lowerer.h"

namespace stax::lowering {

LoweredValue Lowerer::lower_scan(const ir::Node& node, const ir::Value& out) {
  const ir::ScanArgs a = ir::scan_args(graph_, node);
  if (node.result_index > 0) return lower_further_result(node, out, "Stax runtime scan");
  const std::string role =
      "the input of " + ir::describe_node(graph_, node) + ": the scan reads a stored tensor";
  ScanCall s;
  s.kind = a.kind;
  s.dim = a.dim;
  if (a.input_dtype == a.dtype) {
    s.input = stored_operand(a.self, role);
  } else {
    LoweredValue converted = computed_value(node, out);
    converted.loader = operand(node, 0, a.dtype, sizes_of(out.type));
    converted.stats = value(a.self.index).stats;
    converted.stats += load_stats();
    const LoweredValue stored = realize(
        converted, role + " in " + std::string(dtype_name(a.dtype)) + ", eager's conversion");
    s.input = ExternalOperand{stored.layout->buffer,  false, a.dtype, stored.sizes,
                              stored.layout->strides, 0};
  }
  ExternalCall call;
  call.op = node.op;
  call.scan = std::move(s);
  call.library = "Stax runtime scan";
  call.reason = std::string("a scan carries a running ") + ir::scan_kind_name(a.kind) +
                " along dim " + std::to_string(a.dim) +
                ": lines in parallel, a long line split by associativity (Section 7.7)";
  // Issue 33: over sizes known only at run time the call is bound to each call's sizes
  // (bind_external_call); its output is the contiguous tensor of the input's sizes.
  const std::vector<Expr> sizes = sizes_of(out.type);
  LoweredValue v = add_external_buffer(node, std::move(call), out.type.dtype, sizes,
                                       index::contiguous_strides(sizes));
  if (a.with_indices) first_result_calls_[node_index(node)] = v;
  return v;
}

}  // namespace stax::lowering
