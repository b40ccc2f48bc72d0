// Normalized arguments of the data-movement ops, with PyTorch's clamping rules and refusals
// (messages checked against torch 2.13.0).
#include "ir/movement_args.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/op_schema.h"
#include "ir/op_schemas_internal.h"
#include "ir/text_format.h"
#include "ir/type_promotion.h"

namespace stax::ir {

namespace {

using detail::arg_prefix;
using detail::wrap_dim;

[[noreturn]] void fail(const Node& node, const std::string& message) {
  throw GraphError(node.op + ": " + message);
}

const std::vector<int64_t>& self_sizes(const Graph& graph, const Node& node) {
  return tensor_arg(graph, node, 0).type.sizes;
}

void require_dims(const Graph& graph, const Node& node) {
  if (self_sizes(graph, node).empty()) fail(node, "cannot be applied to a 0-dim tensor");
}

// The split results' windows along dim: (start, length) of each.
std::vector<std::pair<int64_t, int64_t>> split_windows(const Graph& graph, const Node& node,
                                                       int64_t& dim) {
  const std::vector<int64_t>& sizes = self_sizes(graph, node);
  if (sizes.empty()) fail(node, "expects at least a 1-dimensional tensor");
  dim = wrap_dim(int_arg(node, 2), sizes.size(), node.op, "dim");
  const int64_t size = sizes[static_cast<size_t>(dim)];
  std::vector<std::pair<int64_t, int64_t>> out;
  if (node.op == "split") {
    const int64_t split_size = int_arg(node, 1);
    if (split_size < 0) {
      fail(node,
           "expects split_size be non-negative, but got split_size=" + std::to_string(split_size));
    }
    if (split_size == 0 && size != 0) {
      fail(node, "split_size can only be 0 if dimension size is 0, but got dimension size of " +
                     std::to_string(size));
    }
    if (size == 0) return {{0, 0}};
    for (int64_t start = 0; start < size; start += split_size) {
      out.emplace_back(start, std::min(split_size, size - start));
    }
    return out;
  }
  const std::vector<int64_t> split_sizes = *int_list_arg(node, 1);
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    if (s < 0) {
      fail(node, "expects split_sizes have only non-negative entries, but got split_sizes=" +
                     format_sizes(split_sizes));
    }
    out.emplace_back(start, s);
    start += s;
  }
  if (start != size) {
    fail(node, "expects split_sizes to sum exactly to " + std::to_string(size) +
                   " (input tensor's size at dimension " + std::to_string(dim) +
                   "), but got split_sizes=" + format_sizes(split_sizes));
  }
  if (out.empty()) fail(node, "split_sizes=[] gives no results");
  return out;
}

void check_index_dtype(const Node& node, const Value& index) {
  const DType d = index.type.dtype;
  if (d != DType::Int64 && d != DType::Int32) {
    fail(node, "expected dtype int32 or int64 for the index '" + index.name + "', got " +
                   std::string(dtype_name(d)));
  }
}

// slice's window along `dim` (of `size` elements) from its start, end and step arguments at
// `first`, first + 1, first + 2: negative bounds count from the end, then both clamp into
// [0, size].
DimWindow slice_window(const Node& node, int64_t dim, int64_t size, size_t first) {
  const int64_t step = int_arg(node, first + 2);
  if (step <= 0) fail(node, "slice step must be positive, got " + std::to_string(step));
  int64_t start = optional_int_arg(node, first).value_or(0);
  int64_t end = optional_int_arg(node, first + 1).value_or(size);
  if (start < 0) start = start < -size ? 0 : start + size;
  if (end < 0) end = end < -size ? 0 : end + size;
  start = std::min(start, size);
  end = std::clamp(end, start, size);
  DimWindow w;
  w.dim = dim;
  w.start = start;
  w.step = step;
  w.length = (end - start + step - 1) / step;
  return w;
}

// select's index argument (at `position`) along dim `dim` of `sizes`, wrapped.
int64_t select_index(const Node& node, const std::vector<int64_t>& sizes, int64_t dim,
                     size_t position) {
  const int64_t size = sizes[static_cast<size_t>(dim)];
  const int64_t index = int_arg(node, position);
  if (index < -size || index >= size) {
    fail(node, "index " + std::to_string(index) + " out of range for tensor of size " +
                   format_sizes(sizes) + " at dimension " + std::to_string(dim));
  }
  return index < 0 ? index + size : index;
}

}  // namespace

DimWindow window_args(const Graph& graph, const Node& node) {
  const std::vector<int64_t>& sizes = self_sizes(graph, node);
  DimWindow w;
  if (node.op == "split" || node.op == "split_with_sizes") {
    const auto windows = split_windows(graph, node, w.dim);
    const auto k = static_cast<size_t>(node.result_index);
    if (k >= windows.size()) fail(node, "has no result " + std::to_string(k));
    w.start = windows[k].first;
    w.length = windows[k].second;
    return w;
  }
  require_dims(graph, node);
  w.dim = wrap_dim(int_arg(node, 1), sizes.size(), node.op, "dim");
  const int64_t size = sizes[static_cast<size_t>(w.dim)];
  if (node.op == "narrow") {
    int64_t start = int_arg(node, 2);
    const int64_t length = int_arg(node, 3);
    if (length < 0) fail(node, "length must be non-negative, got " + std::to_string(length));
    if (start < -size || start > size) {
      fail(node, "start out of range (expected to be in range of [" + std::to_string(-size) + ", " +
                     std::to_string(size) + "], but got " + std::to_string(start) + ")");
    }
    if (start < 0) start += size;
    if (start > size - length) {
      fail(node, "start (" + std::to_string(start) + ") + length (" + std::to_string(length) +
                     ") exceeds dimension size (" + std::to_string(size) + ")");
    }
    w.start = start;
    w.length = length;
    return w;
  }
  return slice_window(node, w.dim, size, 2);
}

int64_t split_count(const Graph& graph, const Node& node) {
  int64_t dim = 0;
  return static_cast<int64_t>(split_windows(graph, node, dim).size());
}

SelectArgs select_args(const Graph& graph, const Node& node) {
  const std::vector<int64_t>& sizes = self_sizes(graph, node);
  require_dims(graph, node);
  SelectArgs s;
  s.dim = wrap_dim(int_arg(node, 1), sizes.size(), node.op, "dim");
  s.index = select_index(node, sizes, s.dim, 2);
  return s;
}

ScatterWindowArgs scatter_window_args(const Graph& graph, const Node& node) {
  const std::vector<int64_t>& sizes = self_sizes(graph, node);
  require_dims(graph, node);
  const Value& self = graph.value(std::get<ValueRef>(node.args[0]));
  const Value& src = graph.value(std::get<ValueRef>(node.args[1]));
  ScatterWindowArgs a;
  a.selected = node.op == "select_scatter";
  const int64_t dim = wrap_dim(int_arg(node, 2), sizes.size(), node.op, "dim");
  std::vector<int64_t> slice_sizes = sizes;
  if (a.selected) {
    a.window.dim = dim;
    a.window.start = select_index(node, sizes, dim, 3);
    a.window.length = 1;
    slice_sizes.erase(slice_sizes.begin() + dim);
  } else {
    a.window = slice_window(node, dim, sizes[static_cast<size_t>(dim)], 3);
    slice_sizes[static_cast<size_t>(dim)] = a.window.length;
  }
  if (src.type.sizes != slice_sizes) {
    fail(node, "expected src to have a size equal to the slice of self. src size = " +
                   format_sizes(src.type.sizes) + ", slice size = " + format_sizes(slice_sizes));
  }
  // Eager converts src as copy_ does; the torch.compile bridge converts it first, so one
  // dtype is all the lowering needs.
  if (src.type.dtype != self.type.dtype) {
    fail(node, "expected src of self's dtype " + std::string(dtype_name(self.type.dtype)) +
                   ", got " + std::string(dtype_name(src.type.dtype)) +
                   " (convert it first, e.g. with convert_element_type)");
  }
  return a;
}

CatArgs cat_args(const Graph& graph, const Node& node) {
  const auto& items = tensor_list_arg(node, 0);
  CatArgs c;
  c.stacked = node.op == "stack";
  if (items.empty()) fail(node, "expected a non-empty list of tensors");
  std::vector<const Value*> values;
  for (const auto& item : items) values.push_back(&graph.value(*item));
  c.dtype = values[0]->type.dtype;
  for (const Value* v : values) c.dtype = promote_types(c.dtype, v->type.dtype);
  if (c.stacked) {
    const std::vector<int64_t>& first = values[0]->type.sizes;
    for (size_t k = 1; k < values.size(); ++k) {
      if (values[k]->type.sizes != first) {
        fail(node, "expects each tensor to be equal size, but got " + format_sizes(first) +
                       " at entry 0 and " + format_sizes(values[k]->type.sizes) + " at entry " +
                       std::to_string(k));
      }
    }
    c.dim = wrap_dim(int_arg(node, 1), first.size() + 1, node.op, "dim");
    c.sizes = first;
    c.sizes.insert(c.sizes.begin() + c.dim, static_cast<int64_t>(values.size()));
    for (size_t k = 0; k < values.size(); ++k) {
      c.parts.push_back({*items[k], static_cast<int64_t>(k), 1});
    }
    return c;
  }
  // PyTorch's legacy rule: 1-D operands of size 0 are skipped, whatever their rank.
  auto legacy_empty = [](const Value* v) {
    return v->type.sizes.size() == 1 && v->type.sizes[0] == 0;
  };
  const Value* reference = nullptr;
  for (size_t k = 0; k < values.size(); ++k) {
    if (values[k]->type.sizes.empty()) {
      fail(node, "zero-dimensional tensor (at position " + std::to_string(k) +
                     ") cannot be concatenated");
    }
    if (!reference && !legacy_empty(values[k])) reference = values[k];
  }
  if (!reference) {  // only legacy empty operands: a 1-D empty result
    c.sizes = {0};
    return c;
  }
  const std::vector<int64_t>& ref = reference->type.sizes;
  c.dim = wrap_dim(int_arg(node, 1), ref.size(), node.op, "dim");
  int64_t offset = 0;
  for (size_t k = 0; k < values.size(); ++k) {
    if (legacy_empty(values[k])) continue;
    const std::vector<int64_t>& sizes = values[k]->type.sizes;
    if (sizes.size() != ref.size()) {
      fail(node, "Tensors must have same number of dimensions: got " + std::to_string(ref.size()) +
                     " and " + std::to_string(sizes.size()));
    }
    for (size_t d = 0; d < ref.size(); ++d) {
      if (static_cast<int64_t>(d) != c.dim && sizes[d] != ref[d]) {
        fail(node, "Sizes of tensors must match except in dimension " + std::to_string(c.dim) +
                       ". Expected size " + std::to_string(ref[d]) + " but got size " +
                       std::to_string(sizes[d]) + " for tensor number " + std::to_string(k) +
                       " in the list");
      }
    }
    const int64_t size = sizes[static_cast<size_t>(c.dim)];
    c.parts.push_back({*items[k], offset, size});
    offset += size;
  }
  c.sizes = ref;
  c.sizes[static_cast<size_t>(c.dim)] = offset;
  return c;
}

PadArgs pad_args(const Graph& graph, const Node& node) {
  const std::vector<int64_t>& sizes = self_sizes(graph, node);
  const std::vector<int64_t> pad = *int_list_arg(node, 1);
  if (pad.size() % 2 != 0) {
    fail(node, "Length of pad must be even but instead it equals " + std::to_string(pad.size()));
  }
  if (pad.size() / 2 > sizes.size()) {
    fail(node,
         "Length of pad should be no more than twice the number of dimensions of the "
         "input. Pad length is " +
             std::to_string(pad.size()) + " while the input has " + std::to_string(sizes.size()) +
             " dimensions");
  }
  PadArgs p;
  p.before.assign(sizes.size(), 0);
  p.after.assign(sizes.size(), 0);
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    const size_t d = sizes.size() - 1 - k;
    p.before[d] = pad[2 * k];
    p.after[d] = pad[2 * k + 1];
    const int64_t padded = sizes[d] + p.before[d] + p.after[d];
    if (padded < 0) {
      fail(node, "the padded size of dim " + std::to_string(d) + " is " + std::to_string(padded) +
                     " (size " + std::to_string(sizes[d]) + ", pads " +
                     std::to_string(p.before[d]) + " and " + std::to_string(p.after[d]) +
                     "); it must be non-negative");
    }
  }
  // PyTorch's constant_pad_nd reads its value as a double, rounding an int above 2^53
  // (pad(i64, value=2**53 + 1) fills 2**53 in torch 2.13.0).
  p.value = scalar_arg(node, 2).as_double();
  check_fill_value(node.op, tensor_arg(graph, node, 0).type.dtype, p.value);
  return p;
}

RollArgs roll_args(const Graph& graph, const Node& node) {
  const std::vector<int64_t>& sizes = self_sizes(graph, node);
  const std::vector<int64_t> shifts = *int_list_arg(node, 1);
  const std::vector<int64_t> dims = *int_list_arg(node, 2);
  if (shifts.empty()) fail(node, "`shifts` required");
  RollArgs r;
  r.shifts.assign(sizes.size(), 0);
  auto wrap_shift = [](int64_t shift, int64_t size) {
    if (size == 0) return int64_t{0};
    const int64_t s = shift % size;
    return s < 0 ? s + size : s;
  };
  if (dims.empty()) {
    if (shifts.size() != 1) {
      fail(node, "shifts and dimensions must align. shifts: " + std::to_string(shifts.size()) +
                     ", dims:0");
    }
    int64_t numel = 1;
    for (int64_t s : sizes) numel *= s;
    r.flattened = true;
    r.flat_shift = wrap_shift(shifts[0], numel);
    r.raw_flat_shift = shifts[0];
    return r;
  }
  if (shifts.size() != dims.size()) {
    fail(node, "shifts and dimensions must align. shifts: " + std::to_string(shifts.size()) +
                   ", dims:" + std::to_string(dims.size()));
  }
  r.raw_shifts.assign(sizes.size(), 0);
  for (size_t k = 0; k < dims.size(); ++k) {
    const auto d = static_cast<size_t>(wrap_dim(dims[k], sizes.size(), node.op, "dims"));
    r.shifts[d] = wrap_shift(r.shifts[d] + wrap_shift(shifts[k], sizes[d]), sizes[d]);
    if (__builtin_add_overflow(r.raw_shifts[d], shifts[k], &r.raw_shifts[d])) {
      fail(node, "the shifts of dim " + std::to_string(d) + " add up past int64");
    }
  }
  return r;
}

std::vector<bool> flip_dims(const Graph& graph, const Node& node) {
  const std::vector<int64_t>& sizes = self_sizes(graph, node);
  std::vector<bool> flipped(sizes.size(), false);
  for (int64_t d :
       detail::wrap_dim_list(*int_list_arg(node, 1), sizes.size(), node.op, "dims", true)) {
    flipped[static_cast<size_t>(d)] = true;
  }
  return flipped;
}

namespace {

// PyTorch 2.13's CPU kernels, probed: gather raises RuntimeError naming the value and the dim.
// index_select (and embedding, which is index_select of its weight's rows) wraps nothing:
// along dim 1 of a tensor of rank > 1 a RuntimeError with the value, along an empty dim of
// such a tensor a RuntimeError for any value, otherwise IndexError "index out of range in
// self"; messages without the value get it appended, so Stax's errors always name the
// offending index. (index.Tensor's rules: set_index_tensor_rules.)
IndexRule indirect_index_rule(const Node& node, const IndexTerm& t, size_t source_rank) {
  IndexRule r;
  r.size = t.size;
  const std::string n = std::to_string(t.size);
  const std::string dim = std::to_string(std::max<int64_t>(t.dim, 0));
  const std::string where = " (index {} for dimension " + dim + " with size " + n + ")";
  if (node.op == "gather") {
    r.message = "index {} is out of bounds for dimension " + dim + " with size " + n;
  } else if (source_rank > 1 && t.size == 0) {
    r.message = "index_select(): self indexing axis dim should be positive" + where;
  } else if (source_rank > 1 && t.dim == 1) {
    r.message = "INDICES element is out of DATA bounds, id={} axis_dim=" + n;
  } else {
    r.index_error = true;
    r.message = "index out of range in self" + where;
  }
  r.message = node.op + ": " + r.message;
  return r;
}

// torch 2.13 on CPU, probed: when the result is empty while the index is not, index_select
// (and embedding) of a source of rank > 1 with no elements refuses an empty indexed dim
// outright (as `rule` does) and otherwise checks each value against [0, size) with one
// RuntimeError for any dim; index.Tensor refuses any index through an empty dim (as `rule`
// does) and checks nothing otherwise. A gather result has its index's shape, and a rank <= 1
// index_select result is empty only with its index: neither case arises.
std::optional<IndexRule> empty_result_rule(const Node& node, const IndirectArgs& a,
                                           int64_t index_numel) {
  int64_t result_numel = 1;
  for (int64_t s : a.sizes) result_numel *= s;
  if (result_numel != 0 || index_numel == 0 || node.op == "gather") return std::nullopt;
  if (a.term().size == 0 || node.op == "index") {
    // index.Tensor refuses every value when a term selects along an empty dim (its rules
    // then refuse all) and checks nothing otherwise.
    if (a.term().rule.size == 0) return a.term().rule;
    return std::nullopt;
  }
  IndexRule r;
  r.size = a.term().size;
  r.message =
      node.op + ": INDICES element is out of DATA bounds, id={} axis_dim=" + std::to_string(r.size);
  return r;
}

// index.Tensor's layout (torch 2.13 probed): the tensor indices broadcast together to a
// shape B; when they are adjacent, B takes their place among self's dims, otherwise B comes
// first and self's other dims follow in order.
void index_tensor_layout(const Graph& graph, const Node& node, IndirectArgs& a) {
  const std::vector<int64_t>& self = graph.value(a.source).type.sizes;
  const size_t rank = self.size();
  const auto& indices = tensor_list_arg(node, 1);
  if (indices.size() > rank) {
    fail(node, "too many indices for tensor of dimension " + std::to_string(rank) + " (got " +
                   std::to_string(indices.size()) + ")");
  }
  std::vector<size_t> positions;
  std::vector<int64_t> broadcast;
  for (size_t k = 0; k < indices.size(); ++k) {
    if (!indices[k]) continue;
    const Value& index = graph.value(*indices[k]);
    const DType d = index.type.dtype;
    if (d == DType::Bool || d == DType::UInt8) {
      fail(node, "the mask index '" + index.name + "' (" + std::string(dtype_name(d)) +
                     ") gives a result whose shape depends on the data; not supported");
    }
    if (d != DType::Int64 && d != DType::Int32) {
      fail(node, "tensors used as indices must be long, int, byte or bool tensors, got '" +
                     index.name + "' (" + std::string(dtype_name(d)) + ")");
    }
    if (!positions.empty()) {
      const std::vector<int64_t>& other = index.type.sizes;
      try {
        broadcast = broadcast_sizes(broadcast, other, node.op);
      } catch (const GraphError&) {  // eager's message names every index's shape
        std::string shapes;
        for (size_t p : positions) {
          shapes += format_sizes(graph.value(*indices[p]).type.sizes) + ", ";
        }
        fail(node, "shape mismatch: indexing tensors could not be broadcast together with shapes " +
                       shapes + format_sizes(other));
      }
    } else {
      broadcast = index.type.sizes;
    }
    positions.push_back(k);
  }
  if (positions.empty()) fail(node, "needs a tensor index (all indices are None)");
  const bool adjacent = positions.back() - positions.front() + 1 == positions.size();
  const size_t b_rank = broadcast.size();
  // Where B starts among the result's dims.
  const int64_t b_start = adjacent ? static_cast<int64_t>(positions.front()) : 0;
  std::vector<bool> indexed(rank, false);
  for (size_t k = 0; k < positions.size(); ++k) indexed[positions[k]] = true;
  a.sizes.clear();
  a.source_dims.clear();
  if (!adjacent) a.sizes = broadcast;
  for (size_t d = 0; d < rank; ++d) {
    if (adjacent && d == positions.front()) {
      a.sizes.insert(a.sizes.end(), broadcast.begin(), broadcast.end());
    }
    if (indexed[d]) {
      const auto k = static_cast<int64_t>(std::find(positions.begin(), positions.end(), d) -
                                          positions.begin());
      a.source_dims.push_back(-1 - k);
    } else {
      a.source_dims.push_back(static_cast<int64_t>(a.sizes.size()));
      a.sizes.push_back(self[d]);
    }
  }
  for (size_t p : positions) {
    IndexTerm t;
    t.index = *indices[p];
    t.dim = static_cast<int64_t>(p);
    t.size = self[p];
    const std::vector<int64_t>& isz = graph.value(t.index).type.sizes;
    for (size_t j = 0; j < isz.size(); ++j) {
      const size_t b = b_rank - isz.size() + j;
      const bool broadcast_here = isz[j] == 1 && broadcast[b] != 1;
      t.index_dims.push_back(broadcast_here ? -1 : b_start + static_cast<int64_t>(b));
    }
    a.terms.push_back(std::move(t));
  }
}

}  // namespace

IndirectArgs indirect_layout(const Graph& graph, const Node& node, const std::string& as_op) {
  IndirectArgs a;
  const bool embedding = as_op == "embedding";
  a.source = std::get<ValueRef>(node.args[0]);
  const std::vector<int64_t>& self = graph.value(a.source).type.sizes;
  const size_t rank = self.size();
  if (as_op == "index") {
    index_tensor_layout(graph, node, a);
    return a;
  }
  a.terms.emplace_back();
  IndexTerm& t = a.term();
  t.index = std::get<ValueRef>(node.args[embedding ? 1 : 2]);
  const Value& index = graph.value(t.index);
  const std::vector<int64_t>& isz = index.type.sizes;
  check_index_dtype(node, index);
  if (embedding) {
    if (rank != 2) fail(node, "'weight' must be 2-D, got sizes " + format_sizes(self));
    t.dim = 0;
    t.size = self[0];
    a.sizes = isz;
    a.sizes.push_back(self[1]);
    for (size_t k = 0; k < isz.size(); ++k) t.index_dims.push_back(static_cast<int64_t>(k));
    a.source_dims = {-1, static_cast<int64_t>(isz.size())};
    return a;
  }
  const int64_t dim = wrap_dim(int_arg(node, 1), rank, node.op, "dim", /*scalar_ok=*/true);
  t.dim = rank == 0 ? -1 : dim;
  t.size = rank == 0 ? 1 : self[static_cast<size_t>(dim)];
  if (as_op == "index_select") {
    if (isz.size() > 1)
      fail(node, "Index is supposed to be a vector, got sizes " + format_sizes(isz));
    int64_t count = 1;
    for (int64_t s : isz) count *= s;
    if (rank == 0) {
      if (count != 1) {
        fail(node,
             "Index to scalar can have only 1 value, got " + std::to_string(count) + " value(s)");
      }
      t.index_dims.assign(isz.size(), -1);  // the one index element, whatever its rank
      return a;
    }
    a.sizes = self;
    a.sizes[static_cast<size_t>(dim)] = count;
    for (size_t d = 0; d < rank; ++d) {
      a.source_dims.push_back(static_cast<int64_t>(d) == dim ? -1 : static_cast<int64_t>(d));
    }
    if (!isz.empty()) t.index_dims = {dim};
    return a;
  }
  // gather: the result has the index's sizes; every other dim must fit in self's.
  if (rank == 0) {
    if (isz.size() > 1) {
      fail(node, "Index tensor must have the same number of dimensions as input tensor");
    }
  } else if (isz.size() != rank) {
    fail(node, "Index tensor must have the same number of dimensions as input tensor");
  }
  for (size_t d = 0; d < rank; ++d) {
    if (static_cast<int64_t>(d) != dim && isz[d] > self[d]) {
      fail(node, "Size does not match at dimension " + std::to_string(d) + " expected index " +
                     format_sizes(isz) + " to be no larger than self " + format_sizes(self) +
                     " apart from dimension " + std::to_string(dim));
    }
  }
  a.sizes = isz;
  for (size_t d = 0; d < isz.size(); ++d) t.index_dims.push_back(static_cast<int64_t>(d));
  for (size_t d = 0; d < rank; ++d) {
    a.source_dims.push_back(static_cast<int64_t>(d) == dim ? -1 : static_cast<int64_t>(d));
  }
  return a;
}

void set_index_tensor_rules(const Node& node, IndirectArgs& a) {
  // PyTorch 2.13's CPU kernel, probed: each value is wrapped once when negative, and a bad
  // one raises IndexError naming it and its term's position among the tensor indices
  // ("dimension k"). When any term selects along an empty dim, every value is refused with
  // the message of that dim (eager checks it before the others).
  bool any_empty = false;
  for (const IndexTerm& t : a.terms) any_empty = any_empty || t.size == 0;
  for (size_t k = 0; k < a.terms.size(); ++k) {
    IndexRule& r = a.terms[k].rule;
    r.size = any_empty ? 0 : a.terms[k].size;
    r.wraps = true;
    r.index_error = true;
    r.message = node.op + ": " +
                (any_empty ? std::string("index is out of bounds for dimension with size 0 "
                                         "(index {})")
                           : "index {} is out of bounds for dimension " + std::to_string(k) +
                                 " with size " + std::to_string(r.size));
  }
}

IndirectArgs indirect_args(const Graph& graph, const Node& node) {
  IndirectArgs a = indirect_layout(graph, node, node.op);
  int64_t index_numel = 1;
  if (node.op == "index") {
    set_index_tensor_rules(node, a);
    // The index positions are B's: the result dims the terms take.
    std::vector<bool> taken(a.sizes.size(), false);
    for (const IndexTerm& t : a.terms) {
      for (int64_t d : t.index_dims) {
        if (d >= 0) taken[static_cast<size_t>(d)] = true;
      }
    }
    for (size_t d = 0; d < taken.size(); ++d) {
      if (taken[d]) index_numel *= a.sizes[d];
    }
  } else {
    a.term().rule = indirect_index_rule(node, a.term(), graph.value(a.source).type.sizes.size());
    index_numel = graph.value(a.term().index).type.numel();
  }
  a.empty_result_rule = empty_result_rule(node, a, index_numel);
  return a;
}

AsStridedArgs as_strided_args(const Graph&, const Node& node) {
  AsStridedArgs a;
  a.sizes = *int_list_arg(node, 1);
  a.strides = *int_list_arg(node, 2);
  a.storage_offset = optional_int_arg(node, 3);
  if (a.sizes.size() != a.strides.size()) {
    fail(node, "mismatch in length of strides and shape (" + format_sizes(a.sizes) + " and " +
                   format_sizes(a.strides) + ")");
  }
  for (int64_t s : a.sizes) {
    if (s < 0) fail(node, "negative size in " + format_sizes(a.sizes));
  }
  for (int64_t s : a.strides) {
    if (s < 0) {
      fail(node, "Negative strides are not supported at the moment, got strides: " +
                     format_sizes(a.strides));
    }
  }
  if (a.storage_offset && *a.storage_offset < 0) {
    fail(node, "invalid storage offset " + std::to_string(*a.storage_offset));
  }
  return a;
}

void check_fill_value(const std::string& op, DType dtype, double value) {
  double lo = 0.0;
  double hi = 0.0;
  switch (dtype) {
    case DType::Bool:
      return;
    case DType::UInt8:
      lo = 0, hi = 255;
      break;
    case DType::Int8:
      lo = -128, hi = 127;
      break;
    case DType::Int16:
      lo = -32768, hi = 32767;
      break;
    case DType::Int32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case DType::Int64:
      // 2^63 itself is out of range; every double below it converts.
      if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) break;
      return;
    case DType::Float16:
      lo = -65504.0, hi = 65504.0;
      break;
    case DType::BFloat16:
      lo = -3.3895313892515355e38, hi = 3.3895313892515355e38;
      break;
    case DType::Float32:
      lo = -static_cast<double>(std::numeric_limits<float>::max());
      hi = static_cast<double>(std::numeric_limits<float>::max());
      break;
    case DType::Float64:
      return;
  }
  if (is_floating(dtype) && !std::isfinite(value)) return;  // inf and NaN are representable
  if (dtype != DType::Int64 && value >= lo && value <= hi) return;
  throw GraphError(op + ": value " + format_float(value) + " cannot be converted to type " +
                   std::string(dtype_name(dtype)) + " without overflow");
}

}  // namespace stax::ir
