// The op registry (lookup by ATen name), accessors for bound node arguments, and the shape
// helpers (dims, broadcasting, reshape, reduction dims) shared across modules.
#include "ir/op_schema.h"

#include <algorithm>
#include <map>

#include "ir/checked_arith.h"
#include "ir/op_schemas_internal.h"
#include "ir/text_format.h"

namespace stax::ir {

namespace {

struct Registry {
  std::vector<OpSchema> schemas;
  std::map<std::string, size_t, std::less<>> by_name;

  Registry() {
    detail::add_pointwise_schemas(schemas);
    detail::add_reduction_schemas(schemas);
    detail::add_view_schemas(schemas);
    detail::add_factory_schemas(schemas);      // issue 7, point 3
    detail::add_contraction_schemas(schemas);  // issue 14, point 3
    detail::add_convolution_schemas(schemas);  // issue 15
    detail::add_pooling_schemas(schemas);
    detail::add_scatter_schemas(schemas);    // issue 15, point 4
    detail::add_attention_schemas(schemas);  // issue 15, point 1
    detail::add_scan_schemas(schemas);       // issue 16, point 7
    detail::add_mutation_schemas(schemas);   // issue 16, point 6
    for (size_t i = 0; i < schemas.size(); ++i) by_name.emplace(schemas[i].name, i);
  }
};

const Registry& registry() {
  static const Registry instance;
  return instance;
}

const Arg& arg_at(const Node& node, size_t position) {
  if (position >= node.args.size()) {
    throw GraphError(node.op + ": no argument at position " + std::to_string(position));
  }
  return node.args[position];
}

[[noreturn]] void wrong_kind(const Node& node, size_t position, const char* expected) {
  std::string param = std::to_string(position);
  if (const OpSchema* schema = find_op_schema(node.op);
      schema && position < schema->params.size()) {
    param = "'" + schema->params[position].name + "'";
  }
  throw GraphError(node.op + ": argument " + param + " is not " + expected);
}

}  // namespace

const OpSchema* find_op_schema(std::string_view name) {
  const Registry& r = registry();
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : &r.schemas[it->second];
}

const OpSchema* in_place_twin_schema(std::string_view name) {
  if (name.size() < 2 || name.back() != '_' || find_op_schema(name) != nullptr) return nullptr;
  const OpSchema* twin = find_op_schema(name.substr(0, name.size() - 1));
  if (twin == nullptr || twin->result_count || twin->params.empty() ||
      twin->params[0].name != "self" ||
      (twin->params[0].kind != ParamKind::Tensor &&
       twin->params[0].kind != ParamKind::TensorOrScalar)) {
    return nullptr;
  }
  return twin;
}

std::vector<std::string> registered_op_names() {
  std::vector<std::string> names;
  for (const OpSchema& s : registry().schemas) names.push_back(s.name);
  return names;
}

const Value& tensor_arg(const Graph& graph, const Node& node, size_t position) {
  const auto* ref = std::get_if<ValueRef>(&arg_at(node, position));
  if (!ref) wrong_kind(node, position, "a tensor");
  return graph.value(*ref);
}

bool is_tensor_arg(const Node& node, size_t position) {
  return std::holds_alternative<ValueRef>(arg_at(node, position));
}

Scalar scalar_arg(const Node& node, size_t position) {
  if (const auto* sym = std::get_if<SymInt>(&arg_at(node, position))) return Scalar(sym->at_hint);
  const auto* s = std::get_if<Scalar>(&arg_at(node, position));
  if (!s) wrong_kind(node, position, "a scalar");
  return *s;
}

int64_t int_arg(const Node& node, size_t position) {
  if (const auto* s = std::get_if<SymInt>(&arg_at(node, position))) return s->at_hint;
  const auto* i = std::get_if<int64_t>(&arg_at(node, position));
  if (!i) wrong_kind(node, position, "an int");
  return *i;
}

bool bool_arg(const Node& node, size_t position) {
  const auto* b = std::get_if<bool>(&arg_at(node, position));
  if (!b) wrong_kind(node, position, "a bool");
  return *b;
}

std::optional<std::vector<int64_t>> int_list_arg(const Node& node, size_t position) {
  const Arg& arg = arg_at(node, position);
  if (std::holds_alternative<None>(arg)) return std::nullopt;
  if (const auto* s = std::get_if<SymIntList>(&arg)) return s->at_hints;
  const auto* l = std::get_if<std::vector<int64_t>>(&arg);
  if (!l) wrong_kind(node, position, "an int list");
  return *l;
}

std::optional<std::vector<index::Expr>> symbolic_int_list_arg(const Node& node, size_t position) {
  const Arg& arg = arg_at(node, position);
  if (const auto* s = std::get_if<SymIntList>(&arg)) return s->items;
  std::optional<std::vector<int64_t>> values = int_list_arg(node, position);
  if (!values) return std::nullopt;
  return std::vector<index::Expr>(values->begin(), values->end());
}

std::optional<index::Expr> symbolic_optional_int_arg(const Node& node, size_t position) {
  if (const auto* s = std::get_if<SymInt>(&arg_at(node, position))) return s->expr;
  std::optional<int64_t> value = optional_int_arg(node, position);
  if (!value) return std::nullopt;
  return index::Expr(*value);
}

std::optional<std::string> string_arg(const Node& node, size_t position) {
  const Arg& arg = arg_at(node, position);
  if (std::holds_alternative<None>(arg)) return std::nullopt;
  const auto* s = std::get_if<std::string>(&arg);
  if (!s) wrong_kind(node, position, "a string");
  return *s;
}

std::optional<int64_t> optional_int_arg(const Node& node, size_t position) {
  const Arg& arg = arg_at(node, position);
  if (std::holds_alternative<None>(arg)) return std::nullopt;
  if (const auto* s = std::get_if<SymInt>(&arg)) return s->at_hint;
  const auto* i = std::get_if<int64_t>(&arg);
  if (!i) wrong_kind(node, position, "an int or None");
  return *i;
}

std::optional<ValueRef> optional_tensor_arg(const Node& node, size_t position) {
  const Arg& arg = arg_at(node, position);
  if (std::holds_alternative<None>(arg)) return std::nullopt;
  const auto* ref = std::get_if<ValueRef>(&arg);
  if (!ref) wrong_kind(node, position, "a tensor or None");
  return *ref;
}

const std::vector<std::optional<ValueRef>>& tensor_list_arg(const Node& node, size_t position) {
  const auto* l = std::get_if<TensorList>(&arg_at(node, position));
  if (!l) wrong_kind(node, position, "a tensor list");
  return l->items;
}

std::vector<ValueRef> tensor_operands(const Node& node) {
  std::vector<ValueRef> out;
  for (const Arg& arg : node.args) {
    if (const auto* ref = std::get_if<ValueRef>(&arg)) out.push_back(*ref);
    if (const auto* list = std::get_if<TensorList>(&arg)) {
      for (const auto& item : list->items) {
        if (item) out.push_back(*item);
      }
    }
  }
  return out;
}

int64_t normalize_dim(int64_t dim, size_t rank, const std::string& op) {
  return detail::wrap_dim(dim, rank, op, "dim");
}

std::vector<int64_t> broadcast_sizes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                     const std::string& op) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right; missing leading dims act as size 1.
    const int64_t sa = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t sb = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (sa != sb && sa != 1 && sb != 1) {
      throw GraphError(op + ": shapes " + format_sizes(a) + " and " + format_sizes(b) +
                       " are not broadcastable (size " + std::to_string(sa) + " vs " +
                       std::to_string(sb) + " at dim " + std::to_string(i) + " of the result)");
    }
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

std::vector<int64_t> infer_reshape_sizes(const std::vector<int64_t>& from,
                                         const std::vector<int64_t>& to, const std::string& op) {
  return detail::reshape_sizes(from, to, op, "shape");
}

std::vector<int64_t> reduction_dims(const std::optional<std::vector<int64_t>>& dim, size_t rank,
                                    const std::string& op) {
  std::vector<int64_t> dims;
  if (!dim || dim->empty()) {
    for (size_t i = 0; i < rank; ++i) dims.push_back(static_cast<int64_t>(i));
    return dims;
  }
  if (rank == 0) {
    for (int64_t d : *dim) detail::wrap_dim(d, rank, op, "dim", /*scalar_ok=*/true);
    return dims;
  }
  for (int64_t d : *dim) dims.push_back(detail::wrap_dim(d, rank, op, "dim"));
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

namespace detail {

Param required(std::string name, ParamKind kind) {
  return Param{std::move(name), kind, std::nullopt, false};
}

Param optional(std::string name, ParamKind kind, Arg default_value, bool keyword_only) {
  return Param{std::move(name), kind, std::move(default_value), keyword_only};
}

std::string arg_prefix(const std::string& op, const std::string& arg) {
  return op + ": argument '" + arg + "': ";
}

void check_scalar_fits(const Node& n, size_t position, const std::string& arg, DType dtype) {
  const Scalar* s = std::get_if<Scalar>(&n.args.at(position));
  if (!s) return;
  if (std::optional<std::string> range = scalar_overflow_problem(*s, dtype)) {
    throw GraphError(arg_prefix(n.op, arg) + "value " + format_scalar(*s) +
                     " cannot be converted to " + std::string(dtype_name(dtype)) +
                     " without overflow (" + *range + ")");
  }
}

int64_t wrap_dim(int64_t dim, size_t rank, const std::string& op, const std::string& arg,
                 bool scalar_ok) {
  const int64_t n = rank == 0 && scalar_ok ? 1 : static_cast<int64_t>(rank);
  if (n == 0) {
    throw GraphError(arg_prefix(op, arg) + "dim " + std::to_string(dim) +
                     " is out of range for a 0-dim tensor (it has no dims)");
  }
  if (dim < -n || dim >= n) {
    throw GraphError(arg_prefix(op, arg) + "dim " + std::to_string(dim) +
                     " is out of range for a tensor of rank " + std::to_string(rank) +
                     " (expected in [" + std::to_string(-n) + ", " + std::to_string(n - 1) + "])");
  }
  return dim < 0 ? dim + n : dim;
}

std::vector<int64_t> wrap_dim_list(const std::vector<int64_t>& dims, size_t rank,
                                   const std::string& op, const std::string& arg, bool scalar_ok) {
  std::vector<int64_t> out;
  std::vector<bool> seen(std::max<size_t>(rank, 1), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, rank, op, arg, scalar_ok);
    if (seen[static_cast<size_t>(w)]) {
      throw GraphError(arg_prefix(op, arg) + "dim " + std::to_string(w) +
                       " appears more than once in " + format_sizes(dims));
    }
    seen[static_cast<size_t>(w)] = true;
    if (rank > 0) out.push_back(w);
  }
  return out;
}

std::vector<int64_t> reshape_sizes(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                                   const std::string& op, const std::string& arg) {
  const std::optional<int64_t> checked_from_numel = checked_numel(from);
  if (!checked_from_numel) {
    throw GraphError(arg_prefix(op, arg) + "the input sizes " + format_sizes(from) +
                     " have an element count that overflows int64");
  }
  const int64_t numel = *checked_from_numel;
  std::optional<size_t> infer_at;
  int64_t known = 1;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] == -1) {
      if (infer_at) {
        throw GraphError(arg_prefix(op, arg) + "only one dimension can be -1, got " +
                         format_sizes(to));
      }
      infer_at = i;
    } else if (to[i] < 0) {
      throw GraphError(arg_prefix(op, arg) + "invalid size " + std::to_string(to[i]) + " in " +
                       format_sizes(to));
    } else if (std::optional<int64_t> product = checked_mul(known, to[i])) {
      known = *product;
    } else {
      throw GraphError(arg_prefix(op, arg) + "shape " + format_sizes(to) +
                       " is invalid for an input of " + std::to_string(numel) +
                       " elements (sizes " + format_sizes(from) +
                       "): its element count overflows int64");
    }
  }
  std::vector<int64_t> out = to;
  if (infer_at) {
    if (known == 0) {
      throw GraphError(arg_prefix(op, arg) + "cannot infer the -1 in " + format_sizes(to) +
                       " for an input of " + std::to_string(numel) +
                       " elements: the other sizes multiply to 0, so it is ambiguous");
    }
    if (numel % known == 0) {
      out[*infer_at] = numel / known;
      known = numel;
    }
  }
  if (known != numel) {
    throw GraphError(arg_prefix(op, arg) + "shape " + format_sizes(to) +
                     " is invalid for an input of " + std::to_string(numel) + " elements (sizes " +
                     format_sizes(from) + ")");
  }
  return out;
}

}  // namespace detail

}  // namespace stax::ir
