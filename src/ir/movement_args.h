// The normalized arguments of the data-movement ops (issue 6, point 6): slice windows after
// PyTorch's clamping, the operands of cat and stack, split results, pad amounts, roll shifts,
// flipped dims, and how the indirect ops (gather, index_select, embedding, index.Tensor) map
// an output index to a source index and an index-tensor index. Type inference, the eager
// interpreter and lowering all read the arguments through these functions, so the three can
// never disagree on what an argument means. Each throws GraphError with PyTorch's message
// (prefixed by the op) for arguments PyTorch refuses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/index_rule.h"

namespace stax::ir {

// Output index k along `dim` reads input index start + k * step; `length` output elements.
// slice, narrow, split and split_with_sizes (the result of Node::result_index).
struct DimWindow {
  int64_t dim = 0;
  int64_t start = 0;
  int64_t step = 1;
  int64_t length = 0;
};
DimWindow window_args(const Graph& graph, const Node& node);
// How many results split / split_with_sizes give for the node's arguments.
int64_t split_count(const Graph& graph, const Node& node);

// select: the dim removed and the (wrapped) index taken along it.
struct SelectArgs {
  int64_t dim = 0;
  int64_t index = 0;
};
SelectArgs select_args(const Graph& graph, const Node& node);

// slice_scatter(self, src, dim, start, end, step) and select_scatter(self, src, dim, index):
// self with the elements of a slice along `window.dim` (select_scatter: the one index
// window.start) replaced by src's, which has the slice's sizes (select_scatter: without the
// dim, `selected`) and self's dtype.
struct ScatterWindowArgs {
  DimWindow window;
  bool selected = false;
};
ScatterWindowArgs scatter_window_args(const Graph& graph, const Node& node);

// cat and stack: output positions [offset, offset + size) along `dim` come from `value`
// (stack: each operand is seen with a size-1 dim inserted at `dim`). cat skips PyTorch's
// legacy empty operands (1-D of size 0) here: they contribute nothing.
struct CatPart {
  ValueRef value;
  int64_t offset = 0;
  int64_t size = 0;
};
struct CatArgs {
  int64_t dim = 0;
  bool stacked = false;  // stack: the operand has no dim `dim` (it is inserted)
  std::vector<CatPart> parts;
  DType dtype = DType::Float32;  // the promoted result dtype
  std::vector<int64_t> sizes;    // the result sizes
};
CatArgs cat_args(const Graph& graph, const Node& node);

// constant_pad_nd: (before, after) for every dim of self, outermost first (the pad list names
// the last dims first); negative amounts cut. `value` is checked to fit the dtype.
struct PadArgs {
  std::vector<int64_t> before;
  std::vector<int64_t> after;
  double value = 0.0;
};
PadArgs pad_args(const Graph& graph, const Node& node);

// roll: the shift of every dim in [0, size) (repeated dims add up); `flattened` when dims
// was empty: then shifts[0] applies to the row-major flattening of self.
struct RollArgs {
  bool flattened = false;
  int64_t flat_shift = 0;
  std::vector<int64_t> shifts;  // per dim of self, wrapped into [0, size) at self's sizes
  // The same before wrapping (the shifts of a dim added up), for sizes known only at run
  // time (issue 33), where the wrap depends on each call's size.
  int64_t raw_flat_shift = 0;
  std::vector<int64_t> raw_shifts;
};
RollArgs roll_args(const Graph& graph, const Node& node);

// flip: which dims of self are reversed.
std::vector<bool> flip_dims(const Graph& graph, const Node& node);

// gather, index_select, embedding and index.Tensor: output element `out` reads the source at
// the index whose dims are out[source_dims[d]], except that each dim a term selects along is
// the value of that term's index tensor at `index_dims` of `out` (wrapped once when negative,
// for index.Tensor only). index.Tensor has a term per tensor index (the tensors broadcast
// together; the others have one). Each term's `rule` says which values are valid and what
// PyTorch raises for the others. A 0-dim source has dim = -1 and size 1.
struct IndexTerm {
  ValueRef index;
  int64_t dim = 0;                  // the source dim it selects along
  int64_t size = 0;                 // the source's size along dim
  std::vector<int64_t> index_dims;  // per index-tensor dim: the output dim it takes (-1: at 0)
  IndexRule rule;
};
struct IndirectArgs {
  ValueRef source;
  std::vector<IndexTerm> terms;      // in the order of the indices (their checks' order)
  std::vector<int64_t> source_dims;  // per source dim: the output dim it takes, or -1 - k
                                     // where terms[k] selects along it
  std::vector<int64_t> sizes;        // the result sizes
  // When the result has no elements but the indices have some, no element reads through
  // them, yet eager may still check every value: by this rule, applied to terms[0]'s values
  // (nullopt: eager checks nothing then, or the case cannot arise).
  std::optional<IndexRule> empty_result_rule;

  // The term a source dim's entry in source_dims names, if any.
  static std::optional<size_t> term_of(int64_t source_dim) {
    if (source_dim >= 0) return std::nullopt;
    return static_cast<size_t>(-1 - source_dim);
  }
  // The one term of the ops that have one (every one but index.Tensor).
  const IndexTerm& term() const { return terms.front(); }
  IndexTerm& term() { return terms.front(); }
};
IndirectArgs indirect_args(const Graph& graph, const Node& node);
// The layout part of indirect_args (all but the rules) of `as_op`'s reading of node's leading
// arguments: the scatters take it from their gather twins (index_put from index, index_add
// from index_select, scatter and scatter_add from gather; ir/scatter_args.h).
IndirectArgs indirect_layout(const Graph& graph, const Node& node, const std::string& as_op);
// index.Tensor's index rules (shared with index_put, whose messages name node.op).
void set_index_tensor_rules(const Node& node, IndirectArgs& a);

// as_strided: the strides and storage offset given (nullopt: the input's own offset).
struct AsStridedArgs {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  std::optional<int64_t> storage_offset;
};
AsStridedArgs as_strided_args(const Graph& graph, const Node& node);

// Throws GraphError naming `op` when `value` does not convert to `dtype` without overflow
// (PyTorch's check of fill values: integers out of the dtype's range, finite floats beyond
// the dtype's largest value).
void check_fill_value(const std::string& op, DType dtype, double value);

}  // namespace stax::ir
