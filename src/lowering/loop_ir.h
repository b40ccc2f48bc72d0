// The loop-level program that lowering produces (Definition 6.1): every buffer is either a
// graph input or a computed buffer whose body is a pointwise or reduction function of index
// variables. Views never appear here: they were folded into the index expressions of the
// loads that read through them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "index/expr.h"
#include "index/shape_exprs.h"
#include "ir/dtype.h"
#include "ir/index_rule.h"
#include "ir/scan_args.h"
#include "ir/scatter_args.h"
#include "lowering/ops_handler.h"
#include "lowering/source_op.h"

namespace stax::lowering {

// Reads one element of a (possibly unrealized) value at a logical index. Loaders capture the
// loaders of their operands, so they are shared, never cloned: copying one is O(1) however
// long the chain of values composed into it (a std::function copy would clone the chain).
class Loader {
 public:
  using Function = std::function<OpsValue(OpsHandler&, const std::vector<index::Expr>& index)>;
  Loader() = default;
  template <typename F>
    requires std::is_invocable_r_v<OpsValue, F&, OpsHandler&, const std::vector<index::Expr>&>
  Loader(F f)  // NOLINT(google-explicit-constructor): lambdas convert as to std::function
      : function_(std::make_shared<const Function>(std::move(f))) {}
  OpsValue operator()(OpsHandler& handler, const std::vector<index::Expr>& index) const {
    return (*function_)(handler, index);
  }
  explicit operator bool() const { return function_ != nullptr; }

 private:
  std::shared_ptr<const Function> function_;
};

// Sizes, strides and loop ranges of the loop-level program are expressions over the graph's
// size symbols (issue 33; constants where a dim is static): LoweredGraph::symbols says what
// is known of each.
struct InputBuffer {
  std::string name;
  DType dtype;
  std::vector<index::Expr> sizes;
  std::vector<index::Expr> strides;
};

// An operand of an external call: a strided view of a graph input or a computed buffer,
// passed to the library as a layout (no copy).
// Its layout is over the graph's size symbols (issue 33; constants for a static call): a call
// over symbols is bound to each call's sizes (bind_external_call) before a library plan is
// built for it.
struct ExternalOperand {
  std::string buffer;
  bool is_input = false;
  DType dtype = DType::Float32;
  std::vector<index::Expr> sizes;
  std::vector<index::Expr> strides;  // in elements; 0 where the view broadcasts
  index::Expr offset;
};

// The window of a convolution call, with PyTorch's meanings (one entry per spatial dim;
// dilation 1 is a dense window), and which of the forward convolution's values the call
// computes: its output (a = input, b = weight, bias), or, for convolution_backward, the
// gradient of its input (a = grad_output, b = weight) or of its weight (a = grad_output,
// b = input).
struct ConvolutionWindow {
  enum class Direction : uint8_t { Forward, BackwardInput, BackwardWeight };
  std::vector<int64_t> stride;
  std::vector<int64_t> padding;
  std::vector<int64_t> dilation;
  int64_t groups = 1;
  Direction direction = Direction::Forward;
  // The sizes of the buffer the call writes (a gradient's sizes are not implied by a and b),
  // over the size symbols as the operands' layouts are (bound with them).
  std::vector<index::Expr> result_sizes;
};

// A scatter (issue 15, point 4: index_put, index_add, scatter, scatter_add, scatter_reduce;
// ir/scatter_args.h)
// run by Stax's runtime: the output starts as a copy of `self` (zeros when self is a fill of
// zeros, which is then not read), then every position r of `space`, in row-major order,
// combines values(r) (or the scalar `value`) into the output element whose dim d is
// r[dest_dims[d]], or, where dest_dims[d] is -1 - k, the value of indices[k] at r. Indices and
// values are read at r through their dims' maps (index_dims: per index dim, the space dim it
// takes, -1 for none; values_dims: per space dim, the values dim read there, -1 for a
// broadcast). Several indices are index_put's tensor indices; the others have one.
struct ScatterIndex {
  ExternalOperand operand;
  std::vector<int64_t> index_dims;
  ir::IndexRule rule;
  // A value that names no element: positions holding it are skipped, and the rule does not
  // refuse it (max_pool2d_with_indices_backward's -1).
  std::optional<int64_t> skipped;
  // The rule's size over size symbols (issue 33), which bind_external_call evaluates into
  // rule.size, and into the message where it says "{size}"; unset where rule.size holds at
  // every size.
  std::optional<index::Expr> rule_size;
};

// A rule message that names the size `hint_size` (PyTorch's "with size 64"), with "{size}"
// where it names it, for a rule whose size is `size` over size symbols.
std::string symbolic_rule_message(std::string message, int64_t hint_size, const index::Expr& size);
struct ScatterCall {
  std::vector<ScatterIndex> indices;
  std::optional<ExternalOperand> values;  // absent: `value`
  std::optional<ExternalOperand> self;    // absent: zeros
  std::vector<index::Expr> space;  // expressions over size symbols where sizes are (issue 33)
  std::vector<int64_t> dest_dims;
  std::vector<int64_t> values_dims;
  ir::ScatterCombine combine = ir::ScatterCombine::Assign;
  bool float_sum = false;    // 16-bit sums kept in float, rounded once per element
  bool include_self = true;  // scatter_reduce: else an element's first value replaces self's
  // index_add's arithmetic (ir::ScatterArgs).
  bool fused_multiply_add = false;
  bool product_in_dtype = false;
  // The scalar value and index_add's alpha, converted as the eager kernel converts them: to
  // the dtype (value), to the opmath type or, for integer dtypes, the dtype (alpha).
  double value = 0.0;
  int64_t int_value = 0;
  double alpha = 1.0;
  int64_t int_alpha = 1;
};

// Scaled dot-product attention (issue 15, point 1; ir/attention_args.h) run by Stax's runtime
// (external/attention.h): the forward writes the output (its logsumexp is a further result,
// ResultOf), the backward the query's gradient (the key's and value's are further results).
// Operands are read where they are stored, through any strides; the mask keeps its own
// sizes, and mask_dims says which of its dims each of [B, Hq, Lq, Lk] reads (-1: broadcast).
struct AttentionCall {
  bool backward = false;
  ExternalOperand query, key, value;
  std::optional<ExternalOperand> mask;
  std::vector<int64_t> mask_dims;
  bool causal = false;
  // softmax_attention: a row whose scores are all -inf gives NaN (flash attention gives 0).
  bool masked_rows_nan = false;
  double scale = 1.0;
  // Backward only: the gradient of the output, the forward's output and logsumexp.
  std::optional<ExternalOperand> grad_out, out, logsumexp;
};

// A scan (issue 16, point 7: cumsum, cumprod, logcumsumexp, cummax, cummin; ir/scan_args.h)
// run by Stax's runtime (external/scan.h): `input` (already in the values' dtype) scanned
// along `dim`; cummax's and cummin's indices are a further result (ResultOf).
struct ScanCall {
  ir::ScanKind kind = ir::ScanKind::Sum;
  ExternalOperand input;
  int64_t dim = 0;
};

// A further result of a call with several results (the attention's logsumexp, the key's and
// value's gradients): written by the call that computes `call_buffer`, whose operands list
// this buffer as an output. Its node reads `call_buffer`, so that it is ordered after the
// call; it runs nothing itself.
struct ResultOf {
  std::string call_buffer;
  int index = 1;  // the op's result index
};

// A computation whose indices Stax does not analyze: a library call that writes its whole
// output buffer (Definition 7.1's whole dependences). Issue 14 brings matrix products:
//   out[b] = alpha * (a[b] @ mat2[b]) + beta * bias[b]
// over a batch (bmm, baddbmm; one matrix for mm, addmm), bias absent for mm and bmm.
// Issue 15 brings convolutions (`convolution` set): a is the input [N, C_in, spatial...], b
// the weight [C_out, C_in / groups, kernel...] and bias [C_out] (not broadcast).
struct ExternalCall {
  std::string op;  // the graph op: mm, bmm, addmm, baddbmm, convolution
  ExternalOperand a;
  ExternalOperand b;
  std::optional<ExternalOperand> bias;  // products: broadcast to the output's sizes
  std::optional<ConvolutionWindow> convolution;
  // A scatter (op: index_put, ...): its operands are the ScatterCall's (a and b are unused).
  std::optional<ScatterCall> scatter;
  // Attention (op: _scaled_dot_product_flash_attention_for_cpu[_backward]).
  std::optional<AttentionCall> attention;
  // A scan (op: cumsum, ...): its operand is the ScanCall's input.
  std::optional<ScanCall> scan;
  // A further result of another call (`a` names that call's buffer).
  std::optional<ResultOf> result_of;
  double alpha = 1.0;
  double beta = 1.0;
  // Eager's float32 and float64 addmm (a BLAS call) skip the product when alpha == 0: the
  // result is beta * bias even where the product would be NaN.
  bool alpha_zero_skips_product = false;
  std::string library;  // the implementation the target chose ("oneDNN matmul"), for explain
  std::string reason;   // why this is a library call rather than a loop nest

  // a, b, then bias if any; a scatter's index, values (if any) and self (unless zeros);
  // attention's query, key, value, the mask if any, then the backward's grad_out, out and
  // logsumexp; a scan's input; a further result's `a` (the call it is a result of).
  std::vector<const ExternalOperand*> operands() const;
  std::vector<ExternalOperand*> operands();
  // Whether some operand's layout is an expression over size symbols.
  bool is_symbolic() const;
};

// The call at these values of the size symbols: every operand's layout a constant.
ExternalCall bind_external_call(const ExternalCall& call,
                                const std::map<std::string, int64_t>& values);

// A buffer computed by a loop nest. Its pointwise loops run over `ranges`; a reduction also
// runs over `reduction_ranges` and combines `value` under `reduction`. A buffer with
// `external` set is computed by that call instead: it has no loops and no body.
struct ComputedBuffer {
  std::string name;
  DType dtype;
  std::vector<index::Expr> sizes;    // logical sizes of the stored tensor
  std::vector<index::Expr> strides;  // its layout (contiguous)
  std::vector<index::Expr> ranges;
  std::vector<index::Expr> reduction_ranges;  // empty for a pointwise buffer
  std::optional<ReductionType> reduction;
  // Storage offset written at pointwise loop index `index` (a function of the loop vars).
  std::function<index::Expr(const std::vector<index::Expr>& index)> output_index;
  // The value computed at (index, reduction_index).
  std::function<OpsValue(OpsHandler&, const std::vector<index::Expr>& index,
                         const std::vector<index::Expr>& reduction_index)>
      value;
  // The graph node it was stored for (ir::describe_node: op, value and FILE:LINE), so that
  // errors in scheduling and code generation name the statement of the program.
  std::string source;
  // What this buffer computes, for logs: "exp", "sum", "mul+sum", ...
  std::string origin;
  // The graph nodes whose element functions the body computes, in graph order: for a
  // pointwise chain inlined into a reduction, every op of the chain and the reduction. A
  // value inlined into two buffers is in both (provenance, source_op.h).
  std::vector<SourceOp> source_ops;
  std::shared_ptr<const ExternalCall> external;
  // Issue 16, point 6 (lower_mutation.cpp): the graph input whose memory this buffer is (copy_
  // writes the input in place, with the input's strides); empty for a buffer of its own.
  std::string mutated_input;

  bool is_reduction() const { return reduction.has_value(); }
  bool is_external() const { return external != nullptr; }
  index::Expr numel() const;
  // Runs the whole body under a handler: the value, the reduction, and the store.
  void run_body(OpsHandler& handler, const std::vector<index::Expr>& index,
                const std::vector<index::Expr>& reduction_index) const;
};

// Where a graph output lives: a strided view of an input or of a computed buffer.
struct OutputSpec {
  std::string buffer;
  bool is_input = false;
  DType dtype;
  std::vector<index::Expr> sizes;
  std::vector<index::Expr> strides;
  index::Expr offset = 0;
};

struct LoweredGraph {
  std::string name;
  std::vector<InputBuffer> inputs;
  std::vector<ComputedBuffer> buffers;  // in a valid execution order
  std::vector<OutputSpec> outputs;
  // The size symbols the sizes above are expressions over, with their facts (the graph's).
  index::SymbolTable symbols;
  // Lowering decisions worth explaining: which values were materialized and why.
  std::vector<std::string> log;

  const InputBuffer* find_input(const std::string& name) const;
  // Whether some size, stride or loop range is an expression over the symbols.
  bool is_symbolic() const;
  const ComputedBuffer* find_buffer(const std::string& name) const;
};

}  // namespace stax::lowering
