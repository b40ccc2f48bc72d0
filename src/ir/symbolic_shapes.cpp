// Symbolic shape rules, the overflow check over the symbols' ranges, and binding sizes (see
// symbolic_shapes.h). The rules are by op family; a family without one refuses a symbolic
// operand by name, so that no op silently computes its result at the hints.
#include "ir/symbolic_shapes.h"

#include <algorithm>
#include <climits>
#include <set>

#include "ir/checked_arith.h"
#include "ir/op_schema.h"
#include "ir/text_format.h"

namespace stax::ir {

using index::Expr;

bool is_size_symbol_name(const std::string& name) {
  return name.size() >= 2 && name[0] == 's' &&
         std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

index::SizeSymbol default_size_symbol() {
  index::SizeSymbol facts;
  facts.lo = 0;
  facts.hi = INT32_MAX;
  facts.multiple_of = 1;
  facts.hint = 64;
  return facts;
}

int64_t default_hint(const index::SizeSymbol& facts) {
  const int64_t m = std::max<int64_t>(facts.multiple_of, 1);
  const int64_t clamped = std::clamp(default_size_symbol().hint, facts.lo, facts.hi);
  const int64_t up = (clamped + m - 1) / m * m;
  if (up <= facts.hi) return up;
  return clamped / m * m;
}

std::vector<Expr> symbolic_sizes_of(const TensorType& type) {
  return type.is_symbolic() ? type.symbolic_sizes : index::to_exprs(type.sizes);
}

std::vector<Expr> symbolic_strides_of(const TensorType& type) {
  return type.is_symbolic() ? type.symbolic_strides : index::to_exprs(type.strides);
}

namespace {

[[noreturn]] void refuse(const Node& node, const std::string& why) {
  throw GraphError(node.op + ": " + why);
}

// PyTorch broadcasting where it does not depend on the symbols' values: equal sizes, or one of
// them the constant 1. A symbol against another size would broadcast only where they are
// equal (or where the symbol is 1), which a guard would have to decide; refused.
std::vector<Expr> broadcast(const Node& node, const std::vector<std::vector<Expr>>& shapes) {
  size_t rank = 0;
  for (const auto& shape : shapes) rank = std::max(rank, shape.size());
  std::vector<Expr> out(rank, Expr(1));
  for (size_t d = 0; d < rank; ++d) {
    for (const auto& shape : shapes) {
      if (shape.size() + d < rank) continue;
      const Expr& size = shape[shape.size() + d - rank];
      if (size == Expr(1) || size == out[d]) continue;
      if (out[d] == Expr(1)) {
        out[d] = size;
        continue;
      }
      refuse(node, "dim " + std::to_string(d) + " broadcasts sizes " + index::to_string(out[d]) +
                       " and " + index::to_string(size) +
                       ", which agree only for some values of the size symbols");
    }
  }
  return out;
}

std::optional<size_t> param_position(const OpSchema& schema, const std::string& name) {
  for (size_t i = 0; i < schema.params.size(); ++i) {
    if (schema.params[i].name == name) return i;
  }
  return std::nullopt;
}

std::vector<Expr> reduced(const Graph& graph, const Node& node, const OpSchema& schema) {
  const std::vector<Expr> self = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
  const std::optional<size_t> dim_at = param_position(schema, "dim");
  const std::optional<size_t> keepdim_at = param_position(schema, "keepdim");
  if (!dim_at || !keepdim_at) refuse(node, "has no symbolic shape rule yet");
  std::optional<std::vector<int64_t>> dims;
  const Arg& dim_arg = node.args[*dim_at];
  if (const auto* list = std::get_if<std::vector<int64_t>>(&dim_arg)) dims = *list;
  if (const auto* one = std::get_if<int64_t>(&dim_arg)) dims = std::vector<int64_t>{*one};
  const std::vector<int64_t> reduced_dims = reduction_dims(dims, self.size(), node.op);
  const bool keepdim = std::get<bool>(node.args[*keepdim_at]);
  // Reductions without an identity refuse an empty dim; with a symbol there it must be proved
  // non-empty.
  const bool needs_elements =
      node.op == "amax" || node.op == "amin" || node.op == "argmax" || node.op == "argmin";
  std::vector<Expr> out;
  for (size_t i = 0; i < self.size(); ++i) {
    const bool is_reduced = std::find(reduced_dims.begin(), reduced_dims.end(),
                                      static_cast<int64_t>(i)) != reduced_dims.end();
    if (!is_reduced) {
      out.push_back(self[i]);
      continue;
    }
    if (needs_elements &&
        index::is_nonnegative(self[i] - 1, index::Domain({}, graph.size_symbols())) !=
            index::Truth::kProved) {
      refuse(node, "reduces dim " + std::to_string(i) + " of size " + index::to_string(self[i]) +
                       ", which may be 0 (the reduction has no identity; declare its symbol at "
                       "least 1)");
    }
    if (keepdim) out.push_back(Expr(1));
  }
  return out;
}

std::vector<Expr> viewed(const Graph& graph, const Node& node,
                         const std::vector<int64_t>& at_hints) {
  const std::vector<Expr> self = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
  const size_t rank = self.size();
  if (node.op == "permute") {
    std::vector<Expr> out;
    const std::vector<int64_t> dims = int_list_arg(node, 1).value_or(std::vector<int64_t>{});
    for (int64_t d : dims) {
      out.push_back(self[static_cast<size_t>(normalize_dim(d, rank, node.op))]);
    }
    return out;
  }
  if (node.op == "transpose") {
    std::vector<Expr> out = self;
    if (rank == 0) return out;
    std::swap(out[static_cast<size_t>(normalize_dim(int_arg(node, 1), rank, node.op))],
              out[static_cast<size_t>(normalize_dim(int_arg(node, 2), rank, node.op))]);
    return out;
  }
  const index::Domain domain({}, graph.size_symbols());
  auto proved_nonnegative = [&](const Expr& e) {
    return index::is_nonnegative(e, domain) == index::Truth::kProved;
  };
  auto product = [](const std::vector<Expr>& sizes) {
    Expr p(1);
    for (const Expr& e : sizes) p = p * e;
    return p;
  };
  if (node.op == "view" || node.op == "reshape") {
    std::vector<Expr> out = *symbolic_int_list_arg(node, 1);
    const Expr numel = product(self);
    auto inferred = std::find(out.begin(), out.end(), Expr(-1));
    if (inferred != out.end()) {
      Expr known(1);
      for (auto it = out.begin(); it != out.end(); ++it) {
        if (it != inferred) known = known * *it;
      }
      if (!index::is_divisor(known)) {
        refuse(node, "can't infer the -1 of " + index::format_exprs(out) + " from " +
                         index::to_string(numel) + " elements");
      }
      *inferred = index::simplify(index::floordiv(numel, known), domain);
    }
    if (product(out) != numel) {
      refuse(node, "sizes " + index::format_exprs(out) + " hold as many elements as " +
                       index::format_exprs(self) + " only for some values of the size symbols");
    }
    // A view of a layout that is not contiguous may exist at some sizes only; the static rule
    // checked the hints, and a bound graph checks each call's sizes.
    if (node.op == "view" &&
        tensor_arg(graph, node, 0).type.symbolic_strides != contiguous_strides(self) &&
        tensor_arg(graph, node, 0).type.is_symbolic()) {
      refuse(node, "of a non-contiguous layout with symbolic sizes has no symbolic rule yet");
    }
    return out;
  }
  if (node.op == "expand") {
    std::vector<Expr> out = *symbolic_int_list_arg(node, 1);
    const size_t lead = out.size() - rank;
    for (size_t d = 0; d < rank; ++d) {
      Expr& want = out[lead + d];
      if (want == Expr(-1) || want == self[d]) {
        want = self[d];
      } else if (self[d] != Expr(1)) {
        refuse(node, "dim " + std::to_string(lead + d) + " expands size " +
                         index::to_string(self[d]) + " to " + index::to_string(want) +
                         ", which holds only for some values of the size symbols");
      }
    }
    return out;
  }
  if (node.op == "slice" || node.op == "narrow" || node.op == "select") {
    const SymbolicWindow w = symbolic_window(graph, node);
    const size_t dim = static_cast<size_t>(w.dim);
    const Expr& start = w.start;
    const Expr& end = w.end;
    const int64_t step = w.step;
    std::vector<Expr> out = self;
    if (node.op == "select") {
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(dim));
      return out;
    }
    out[dim] = step == 1 ? end - start
                         : index::simplify(index::floordiv(end - start + (step - 1), step), domain);
    return out;
  }
  if (node.op == "split" || node.op == "split_with_sizes") {
    // Along a static dim every result has a static size there (the static rule's).
    const size_t dim = static_cast<size_t>(normalize_dim(int_arg(node, 2), rank, node.op));
    if (!self[dim].is_constant()) {
      refuse(node, "of dim " + std::to_string(dim) + " of size " + index::to_string(self[dim]) +
                       " has no symbolic rule yet");
    }
    std::vector<Expr> out = self;
    out[dim] = Expr(at_hints.at(dim));
    return out;
  }
  if (node.op == "squeeze") {
    std::optional<std::vector<int64_t>> dims = int_list_arg(node, 1);
    std::vector<Expr> out;
    for (size_t d = 0; d < rank; ++d) {
      const bool named = !dims || std::any_of(dims->begin(), dims->end(), [&](int64_t k) {
        return normalize_dim(k, rank, node.op) == static_cast<int64_t>(d);
      });
      if (named && self[d] == Expr(1)) continue;
      if (named && !self[d].is_constant() && !proved_nonnegative(self[d] - 2)) {
        refuse(node, "dim " + std::to_string(d) + " of size " + index::to_string(self[d]) +
                         " may be 1 (squeezed) or not, depending on the size symbols");
      }
      out.push_back(self[d]);
    }
    return out;
  }
  if (node.op == "unsqueeze") {
    std::vector<Expr> out = self;
    const int64_t dim = normalize_dim(int_arg(node, 1), rank + 1, node.op);
    out.insert(out.begin() + dim, Expr(1));
    return out;
  }
  refuse(node, "has no symbolic shape rule yet (its operand '" + tensor_arg(graph, node, 0).name +
                   "' has sizes " + index::format_exprs(self) + ")");
}

// mm, bmm, addmm, baddbmm: the shared dims must be the same expression.
std::vector<Expr> contracted(const Graph& graph, const Node& node) {
  const bool with_bias = node.op == "addmm" || node.op == "baddbmm";
  const std::vector<Expr> a = symbolic_sizes_of(tensor_arg(graph, node, with_bias ? 1 : 0).type);
  const std::vector<Expr> b = symbolic_sizes_of(tensor_arg(graph, node, with_bias ? 2 : 1).type);
  std::vector<Expr> out;
  auto same = [&](const Expr& x, const Expr& y, const std::string& what) {
    if (x != y) {
      refuse(node, what + " " + index::to_string(x) + " and " + index::to_string(y) +
                       " agree only for some values of the size symbols");
    }
  };
  if (a.size() == 2) {
    same(a[1], b[0], "the shared dims");
    out = {a[0], b[1]};
  } else {
    same(a[0], b[0], "the batch dims");
    same(a[2], b[1], "the shared dims");
    out = {a[0], a[1], b[2]};
  }
  if (with_bias) {
    const std::vector<Expr> bias = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
    if (broadcast(node, {bias, out}) != out)
      refuse(node, "the bias does not broadcast to " + index::format_exprs(out));
  }
  return out;
}

// Factories: the sizes argument (full, zeros, ones), the operand's sizes (*_like, fill),
// arange's count (end - start at step 1, from a start and step that are plain numbers).
std::vector<Expr> made(const Graph& graph, const Node& node) {
  if (node.op == "full" || node.op == "zeros" || node.op == "ones") {
    return *symbolic_int_list_arg(node, 0);
  }
  if (node.op == "full_like" || node.op == "zeros_like" || node.op == "ones_like" ||
      node.op == "fill") {
    return symbolic_sizes_of(tensor_arg(graph, node, 0).type);
  }
  if (node.op == "arange") {
    auto bound = [&](size_t position) -> std::optional<Expr> {
      if (const auto* sym = std::get_if<SymInt>(&node.args[position])) return sym->expr;
      const Scalar s = scalar_arg(node, position);
      if (s.is_int()) return Expr(s.int_value());
      return std::nullopt;
    };
    const std::optional<Expr> start = bound(0), end = bound(1), step = bound(2);
    if (start && end && step == Expr(1)) {
      const Expr count = *end - *start;
      if (index::is_nonnegative(count, index::Domain({}, graph.size_symbols())) ==
          index::Truth::kProved) {
        return {count};
      }
    }
    refuse(node, "from " + (start ? index::to_string(*start) : "a float") + " to " +
                     (end ? index::to_string(*end) : "a float") +
                     " has no symbolic count unless its bounds are ints, its step 1 and "
                     "its end proved at least its start");
  }
  refuse(node, "has no symbolic shape rule yet (its arguments are symbolic)");
}

// Attention: [B, Hq, Lq, Ev] and the logsumexp [B, Hq, Lq]; a backward's gradients have their
// operands' sizes. The keys and values must have one length, and a mask must broadcast to the
// scores [B, Hq, Lq, Lk], whatever the sizes.
std::vector<Expr> attended(const Graph& graph, const Node& node) {
  const bool backward = node.op == "_scaled_dot_product_flash_attention_for_cpu_backward";
  const size_t first = backward ? 1 : 0;
  const std::vector<Expr> query = symbolic_sizes_of(tensor_arg(graph, node, first).type);
  const std::vector<Expr> key = symbolic_sizes_of(tensor_arg(graph, node, first + 1).type);
  const std::vector<Expr> value = symbolic_sizes_of(tensor_arg(graph, node, first + 2).type);
  if (query.size() != 4 || key.size() != 4 || value.size() != 4) {
    refuse(node, "has a symbolic rule for 4-D operands only");
  }
  if (key[2] != value[2] || key[0] != query[0] || value[0] != query[0]) {
    refuse(node, "key and value lengths " + index::to_string(key[2]) + " and " +
                     index::to_string(value[2]) +
                     " (or the batches) agree only for some values "
                     "of the size symbols");
  }
  const OpSchema& schema = *find_op_schema(node.op);
  const std::optional<size_t> mask_at = param_position(schema, "attn_mask");
  if (mask_at) {
    if (std::optional<ValueRef> mask = optional_tensor_arg(node, *mask_at)) {
      const std::vector<Expr> scores = {query[0], query[1], query[2], key[2]};
      if (broadcast(node, {symbolic_sizes_of(graph.value(*mask).type), scores}) != scores) {
        refuse(node, "the mask does not broadcast to the scores " + index::format_exprs(scores));
      }
    }
  }
  if (backward) return node.result_index == 0 ? query : node.result_index == 1 ? key : value;
  if (node.result_index == 0) return {query[0], query[1], query[2], value[3]};
  return {query[0], query[1], query[2]};
}

// A window's output length over an input of `size`: floor((size + 2*padding - dilation*(kernel
// - 1) - 1) / stride) + 1, refused unless the window is proved to fit (PyTorch refuses an
// empty output).
Expr window_length(const Node& node, const Graph& graph, const Expr& size, int64_t kernel,
                   int64_t stride, int64_t padding, int64_t dilation) {
  const index::Domain domain({}, graph.size_symbols());
  const Expr reach = size + 2 * padding - dilation * (kernel - 1) - 1;
  if (index::is_nonnegative(reach, domain) != index::Truth::kProved) {
    refuse(node, "a window of " + std::to_string(kernel) + " over a dim of size " +
                     index::to_string(size) + " fits only for some values of the size symbols");
  }
  return index::simplify(index::floordiv(reach, stride), domain) + 1;
}

// Convolutions and poolings over [N, C, spatial...]: the spatial dims follow the window (floor
// mode); a backward's gradients have their operands' sizes; an adaptive pooling's output is
// its argument.
std::vector<Expr> windowed(const Graph& graph, const Node& node) {
  auto list = [&](size_t position) {
    return int_list_arg(node, position).value_or(std::vector<int64_t>{});
  };
  auto at = [](const std::vector<int64_t>& v, size_t d, int64_t fallback) {
    return v.empty() ? fallback : v[v.size() == 1 ? 0 : d];
  };
  if (node.op == "convolution") {
    const std::vector<Expr> input = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
    const TensorType& weight = tensor_arg(graph, node, 1).type;
    if (std::get<bool>(node.args[6]) || weight.is_symbolic()) {
      refuse(node, "has a symbolic rule for forward convolutions with static weights only");
    }
    // The input's channels must be the weight's (times the groups): a symbol there would
    // equal it only at its hint.
    if (input.size() < 2 || !input[1].is_constant()) {
      refuse(node, "reads an input whose channels are a size symbol");
    }
    const std::vector<int64_t> stride = list(3), padding = list(4), dilation = list(5);
    std::vector<Expr> out = {input[0], Expr(weight.sizes[0])};
    for (size_t d = 2; d < input.size(); ++d) {
      out.push_back(window_length(node, graph, input[d], weight.sizes[d], at(stride, d - 2, 1),
                                  at(padding, d - 2, 0), at(dilation, d - 2, 1)));
    }
    return out;
  }
  if (node.op == "max_pool2d_with_indices" || node.op == "avg_pool2d") {
    const bool max = node.op == "max_pool2d_with_indices";
    const bool ceil_mode = std::get<bool>(node.args[max ? 5 : 4]);
    if (ceil_mode) refuse(node, "in ceil mode has no symbolic rule yet");
    std::vector<Expr> out = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
    const std::vector<int64_t> kernel = list(1), given_stride = list(2), padding = list(3);
    const std::vector<int64_t> dilation = max ? list(4) : std::vector<int64_t>{1};
    const std::vector<int64_t>& stride = given_stride.empty() ? kernel : given_stride;
    for (size_t d = out.size() - 2; d < out.size(); ++d) {
      const size_t k = d - (out.size() - 2);
      out[d] = window_length(node, graph, out[d], at(kernel, k, 1), at(stride, k, 1),
                             at(padding, k, 0), at(dilation, k, 1));
    }
    return out;
  }
  if (node.op == "_adaptive_avg_pool2d") {
    std::vector<Expr> out = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
    const std::vector<int64_t> size = list(1);
    for (size_t k = 0; k < 2 && k < size.size(); ++k) out[out.size() - 2 + k] = Expr(size[k]);
    return out;
  }
  if (node.op == "max_pool2d_with_indices_backward" || node.op == "avg_pool2d_backward" ||
      node.op == "_adaptive_avg_pool2d_backward") {
    return symbolic_sizes_of(tensor_arg(graph, node, 1).type);
  }
  if (node.op == "convolution_backward") {
    // A result output_mask leaves out is an empty [0]; grad_bias has the output's channels.
    const auto& mask = std::get<std::vector<int64_t>>(node.args[10]);
    if (mask.at(static_cast<size_t>(node.result_index)) == 0) return {Expr(0)};
    if (node.result_index == 2) {
      return {symbolic_sizes_of(tensor_arg(graph, node, 0).type).at(1)};
    }
    return symbolic_sizes_of(tensor_arg(graph, node, node.result_index == 0 ? 1 : 2).type);
  }
  refuse(node, "has no symbolic shape rule yet (an operand's sizes are symbolic)");
}

// cat: the operands agree on every other dim, and their sizes along `dim` add up. A 1-D
// operand of size 0 takes no part (PyTorch's legacy rule).
std::vector<Expr> concatenated(const Graph& graph, const Node& node) {
  std::vector<std::vector<Expr>> shapes;
  for (const auto& item : tensor_list_arg(node, 0)) {
    const TensorType& type = graph.value(*item).type;
    if (!type.is_symbolic() && type.sizes == std::vector<int64_t>{0}) continue;
    shapes.push_back(symbolic_sizes_of(type));
  }
  std::vector<Expr> out = shapes.at(0);
  const size_t dim = static_cast<size_t>(normalize_dim(int_arg(node, 1), out.size(), node.op));
  for (size_t k = 1; k < shapes.size(); ++k) {
    for (size_t d = 0; d < out.size(); ++d) {
      if (d == dim) {
        out[d] = out[d] + shapes[k][d];
      } else if (shapes[k][d] != out[d]) {
        refuse(node, "dim " + std::to_string(d) + " of its operands has sizes " +
                         index::to_string(out[d]) + " and " + index::to_string(shapes[k][d]) +
                         ", which agree only for some values of the size symbols");
      }
    }
  }
  return out;
}

}  // namespace

SymbolicWindow symbolic_window(const Graph& graph, const Node& node) {
  const std::vector<Expr> self = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
  const size_t rank = self.size();
  // slice_scatter(self, src, dim, start, end, step), select_scatter(self, src, dim, index).
  const bool scatter = node.op == "slice_scatter" || node.op == "select_scatter";
  const size_t at = scatter ? 1 : 0;
  const bool slice = node.op == "slice" || node.op == "slice_scatter";
  SymbolicWindow w;
  w.dim = normalize_dim(int_arg(node, 1 + at), rank, node.op);
  const Expr size = self[static_cast<size_t>(w.dim)];
  // A negative constant counts from the end, as PyTorch's.
  auto from_end = [&](Expr e) { return e.is_constant() && *e.constant_value() < 0 ? e + size : e; };
  if (slice) {
    w.start = from_end(symbolic_optional_int_arg(node, 2 + at).value_or(Expr(0)));
    std::optional<Expr> given_end = symbolic_optional_int_arg(node, 3 + at);
    w.end = given_end && *given_end != Expr(INT64_MAX) ? from_end(*given_end) : size;
    w.step = int_arg(node, 4 + at);
  } else if (node.op == "narrow") {
    w.start = from_end(*symbolic_optional_int_arg(node, 2));
    w.end = w.start + *symbolic_optional_int_arg(node, 3);
  } else {
    w.start = from_end(*symbolic_optional_int_arg(node, 2 + at));
    w.end = w.start + 1;
  }
  // PyTorch clamps a slice's bounds into the dim; without a proof of where they lie the
  // clamp would depend on the symbols' values.
  const index::Domain domain({}, graph.size_symbols());
  auto proved_nonnegative = [&](const Expr& e) {
    return index::is_nonnegative(e, domain) == index::Truth::kProved;
  };
  if (!proved_nonnegative(w.start) || !proved_nonnegative(w.end - w.start) ||
      !proved_nonnegative(size - w.end)) {
    refuse(node, "of dim " + std::to_string(w.dim) + " (size " + index::to_string(size) +
                     ") from " + index::to_string(w.start) + " to " + index::to_string(w.end) +
                     " is in range only for some values of the size symbols");
  }
  return w;
}

std::vector<Expr> infer_symbolic_sizes(const Graph& graph, const Node& node,
                                       const std::vector<int64_t>& at_hints) {
  const OpSchema& schema = *find_op_schema(node.op);
  std::vector<Expr> sizes;
  switch (schema.category) {
    case OpCategory::Pointwise: {
      std::vector<std::vector<Expr>> shapes;
      for (ValueRef v : tensor_operands(node)) {
        shapes.push_back(symbolic_sizes_of(graph.value(v).type));
      }
      sizes = broadcast(node, shapes);
      break;
    }
    case OpCategory::Reduction:
      sizes = reduced(graph, node, schema);
      break;
    case OpCategory::View:
      sizes = viewed(graph, node, at_hints);
      break;
    case OpCategory::Contraction:
      sizes = contracted(graph, node);
      break;
    case OpCategory::Factory:
      sizes = made(graph, node);
      break;
    case OpCategory::Attention:
      sizes = attended(graph, node);
      break;
    case OpCategory::Convolution:
    case OpCategory::Pooling:
      sizes = windowed(graph, node);
      break;
    case OpCategory::Scan:
      // cumsum, cumprod, logcumsumexp, cummax, cummin: every result has self's sizes.
      sizes = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
      break;
    case OpCategory::Mutation:
    case OpCategory::Scatter:
      // A scatter writes into a copy of self; whether its indices and values fit self's sizes
      // is the lowering's check over the symbols (Lowerer::scatter_space) and the runtime's per
      // call (external::scatter_spec_problem).
      sizes = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
      break;
    case OpCategory::Copy:
      // slice_scatter and select_scatter give self's sizes; the window src must fill is
      // checked by the static rule where the sizes are bound (bind_sizes, each call).
      if (node.op == "clone" || node.op == "contiguous" || node.op == "slice_scatter" ||
          node.op == "select_scatter" || node.op == "flip" || node.op == "roll") {
        sizes = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
        break;
      }
      if (node.op == "cat") {
        sizes = concatenated(graph, node);
        break;
      }
      if (node.op == "constant_pad_nd") {
        // Each padded dim grows by its pads (a negative pad cuts), which must leave a size of
        // at least 0 at every size the symbols' facts allow.
        sizes = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
        const std::vector<int64_t>& pad = std::get<std::vector<int64_t>>(node.args[1]);
        const index::Domain domain({}, graph.size_symbols());
        for (size_t k = 0; k < pad.size() / 2 && k < sizes.size(); ++k) {
          Expr& size = sizes[sizes.size() - 1 - k];
          size = size + Expr(pad[2 * k]) + Expr(pad[2 * k + 1]);
          if (index::is_nonnegative(size, domain) != index::Truth::kProved) {
            refuse(node, "the padded size " + index::to_string(size) + " of dim " +
                             std::to_string(sizes.size() - 1 - k) +
                             " is at least 0 only for some values of the size symbols");
          }
        }
        break;
      }
      if (node.op == "embedding") {
        sizes = symbolic_sizes_of(tensor_arg(graph, node, 1).type);
        sizes.push_back(symbolic_sizes_of(tensor_arg(graph, node, 0).type).at(1));
        break;
      }
      if (node.op == "gather") {
        // The index's sizes. Along every other dim PyTorch requires index.size(d) <=
        // self.size(d), which must hold at every size the symbols' facts allow.
        sizes = symbolic_sizes_of(tensor_arg(graph, node, 2).type);
        const std::vector<Expr> self = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
        if (!self.empty() && self.size() == sizes.size()) {
          const int64_t dim = normalize_dim(int_arg(node, 1), self.size(), node.op);
          const index::Domain domain({}, graph.size_symbols());
          for (size_t d = 0; d < self.size(); ++d) {
            if (static_cast<int64_t>(d) == dim ||
                index::is_nonnegative(self[d] - sizes[d], domain) == index::Truth::kProved) {
              continue;
            }
            refuse(node, "index size " + index::to_string(sizes[d]) + " along dim " +
                             std::to_string(d) + " is within self's size " +
                             index::to_string(self[d]) +
                             " only for some values of the size symbols");
          }
        }
        break;
      }
      if (node.op == "index_select") {
        sizes = symbolic_sizes_of(tensor_arg(graph, node, 0).type);
        const int64_t dim = normalize_dim(int_arg(node, 1), sizes.size(), node.op);
        const std::vector<Expr> index = symbolic_sizes_of(tensor_arg(graph, node, 2).type);
        if (!sizes.empty()) sizes[static_cast<size_t>(dim)] = index.empty() ? Expr(1) : index[0];
        break;
      }
      [[fallthrough]];
    default:
      refuse(node, "has no symbolic shape rule yet (an operand's sizes are symbolic)");
  }
  return sizes;
}

void check_extents_at(const Graph& graph, const std::map<std::string, int64_t>& values) {
  for (const Value& value : graph.values()) {
    if (!value.type.is_symbolic()) continue;
    std::vector<int64_t> sizes, strides;
    std::optional<std::string> problem;
    try {
      for (const Expr& e : value.type.symbolic_sizes) sizes.push_back(index::evaluate(e, values));
      for (const Expr& e : value.type.symbolic_strides) {
        strides.push_back(index::evaluate(e, values));
      }
      problem = layout_problem(value.type.dtype, sizes, strides);
      if (!problem) problem = contiguous_layout_problem(value.type.dtype, sizes);
    } catch (const std::overflow_error&) {
      problem = "a size or stride overflows int64";
    }
    if (problem) {
      throw GraphError("'" + value.name + "' (" + std::string(dtype_name(value.type.dtype)) +
                       ", sizes " + index::format_exprs(value.type.symbolic_sizes) +
                       "): " + *problem + " at these sizes");
    }
  }
}

std::string describe_facts(const std::string& name, const index::SizeSymbol& facts) {
  std::string range =
      name + " in [" + std::to_string(facts.lo) + ", " + std::to_string(facts.hi) + "]";
  if (facts.multiple_of > 1) range += " and a multiple of " + std::to_string(facts.multiple_of);
  return range;
}

void check_size_values(const Graph& graph, const std::map<std::string, int64_t>& values,
                       bool require_all) {
  for (const auto& [name, value] : values) {
    if (graph.size_symbols().count(name) == 0) {
      throw GraphError("'" + name + "' is not a size symbol of graph '" + graph.name() + "'");
    }
  }
  for (const auto& [name, facts] : graph.size_symbols()) {
    auto it = values.find(name);
    if (it == values.end()) {
      if (require_all) throw GraphError("no value for size symbol " + name);
      continue;
    }
    const int64_t v = it->second;
    if (v < facts.lo || v > facts.hi || v % facts.multiple_of != 0) {
      throw GraphError("size symbol " + name + " = " + std::to_string(v) + " breaks its facts (" +
                       describe_facts(name, facts) + ")");
    }
  }
}

std::optional<SymbolMultiple> symbol_multiple(const Expr& size) {
  const std::set<std::string> symbols = index::free_vars(size);
  if (symbols.size() != 1) return std::nullopt;
  const std::string& symbol = *symbols.begin();
  const int64_t factor = index::evaluate(size, {{symbol, 1}});
  if (factor < 1 || size != factor * Expr::var(symbol)) return std::nullopt;
  return SymbolMultiple{symbol, factor};
}

std::map<std::string, SymbolSource> symbol_sources(
    const std::vector<std::vector<Expr>>& input_sizes) {
  std::map<std::string, SymbolSource> sources;
  for (size_t k = 0; k < input_sizes.size(); ++k) {
    for (size_t d = 0; d < input_sizes[k].size(); ++d) {
      if (const std::optional<SymbolMultiple> m = symbol_multiple(input_sizes[k][d])) {
        sources.emplace(m->symbol, SymbolSource{k, d, m->factor});
      }
    }
  }
  return sources;
}

std::map<std::string, int64_t> sizes_of_call(const Graph& graph,
                                             const std::vector<std::vector<int64_t>>& input_sizes) {
  std::map<std::string, int64_t> values = symbol_values_of_call(graph, input_sizes);
  check_extents_at(graph, values);
  return values;
}

std::map<std::string, int64_t> symbol_values_of_call(
    const Graph& graph, const std::vector<std::vector<int64_t>>& input_sizes) {
  if (input_sizes.size() != graph.inputs().size()) {
    throw GraphError("graph '" + graph.name() + "' takes " + std::to_string(graph.inputs().size()) +
                     " inputs, got " + std::to_string(input_sizes.size()));
  }
  std::vector<std::vector<Expr>> expected_sizes;
  for (size_t k = 0; k < input_sizes.size(); ++k) {
    const Value& input = graph.value(graph.inputs()[k]);
    expected_sizes.push_back(symbolic_sizes_of(input.type));
    const std::vector<Expr>& expected = expected_sizes.back();
    if (input_sizes[k].size() != expected.size()) {
      throw GraphError("input '" + input.name + "': expected " + std::to_string(expected.size()) +
                       " dims " + index::format_exprs(expected) + ", got " +
                       format_sizes(input_sizes[k]));
    }
  }
  // First the dims that are one symbol give the symbols' values; then every dim must agree.
  // A dim c*s (c >= 1) gives s = size / c; whether c divides it is checked below, with every
  // dim.
  std::map<std::string, int64_t> values;
  for (const auto& [symbol, source] : symbol_sources(expected_sizes)) {
    values.emplace(symbol, input_sizes[source.input][source.dim] / source.factor);
  }
  for (size_t k = 0; k < input_sizes.size(); ++k) {
    const Value& input = graph.value(graph.inputs()[k]);
    const std::vector<Expr>& expected = expected_sizes[k];
    const std::string what = "input '" + input.name + "'";
    for (size_t d = 0; d < expected.size(); ++d) {
      int64_t want = 0;
      try {
        want = index::evaluate(expected[d], values);
      } catch (const std::out_of_range&) {
        throw GraphError(what + ": dim " + std::to_string(d) + " has size " +
                         index::to_string(expected[d]) +
                         ", whose symbols no input dim gives alone");
      }
      if (want != input_sizes[k][d]) {
        const std::string must = expected[d].is_constant()
                                     ? std::to_string(want)
                                     : index::to_string(expected[d]) + " = " + std::to_string(want);
        throw GraphError(what + ": dim " + std::to_string(d) + " has size " +
                         std::to_string(input_sizes[k][d]) + " but must be " + must + " (sizes " +
                         index::format_exprs(expected) + ")");
      }
    }
  }
  check_size_values(graph, values, /*require_all=*/false);
  return values;
}

}  // namespace stax::ir
