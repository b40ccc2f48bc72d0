// Schemas and type inference of the view ops (reshape, view, permute, transpose, unsqueeze,
// squeeze, expand) and the copies (clone, contiguous). At graph level only sizes are known,
// so `view` is inferred like `reshape`; the eager interpreter checks strides.
#include <string>

#include "ir/op_schemas_internal.h"
#include "ir/text_format.h"

namespace stax::ir::detail {

namespace {

using K = ParamKind;

TensorType with_sizes(const Graph& g, const Node& n, std::vector<int64_t> sizes) {
  TensorType out;
  out.dtype = tensor_arg(g, n, 0).type.dtype;
  out.sizes = std::move(sizes);
  return out;
}

TensorType infer_reshape(const Graph& g, const Node& n, const char* arg) {
  const TensorType& self = tensor_arg(g, n, 0).type;
  return with_sizes(g, n, reshape_sizes(self.sizes, *int_list_arg(n, 1), n.op, arg));
}

TensorType infer_permute(const Graph& g, const Node& n) {
  const std::vector<int64_t>& sizes = tensor_arg(g, n, 0).type.sizes;
  const std::vector<int64_t> dims = *int_list_arg(n, 1);
  if (dims.size() != sizes.size()) {
    throw GraphError(arg_prefix(n.op, "dims") + "expected " + std::to_string(sizes.size()) +
                     " dims for a tensor of rank " + std::to_string(sizes.size()) + ", got " +
                     format_sizes(dims));
  }
  std::vector<int64_t> out;
  for (int64_t d : wrap_dim_list(dims, sizes.size(), n.op, "dims")) {
    out.push_back(sizes[static_cast<size_t>(d)]);
  }
  return with_sizes(g, n, out);
}

TensorType infer_transpose(const Graph& g, const Node& n) {
  std::vector<int64_t> sizes = tensor_arg(g, n, 0).type.sizes;
  const int64_t d0 = wrap_dim(int_arg(n, 1), sizes.size(), n.op, "dim0", /*scalar_ok=*/true);
  const int64_t d1 = wrap_dim(int_arg(n, 2), sizes.size(), n.op, "dim1", /*scalar_ok=*/true);
  if (!sizes.empty()) std::swap(sizes[static_cast<size_t>(d0)], sizes[static_cast<size_t>(d1)]);
  return with_sizes(g, n, sizes);
}

TensorType infer_unsqueeze(const Graph& g, const Node& n) {
  std::vector<int64_t> sizes = tensor_arg(g, n, 0).type.sizes;
  const int64_t d = wrap_dim(int_arg(n, 1), sizes.size() + 1, n.op, "dim");
  sizes.insert(sizes.begin() + d, 1);
  return with_sizes(g, n, sizes);
}

TensorType infer_squeeze(const Graph& g, const Node& n) {
  const std::vector<int64_t>& sizes = tensor_arg(g, n, 0).type.sizes;
  std::vector<bool> listed(sizes.size(), true);
  if (std::optional<std::vector<int64_t>> dims = int_list_arg(n, 1)) {
    listed.assign(sizes.size(), false);
    for (int64_t d : wrap_dim_list(*dims, sizes.size(), n.op, "dim", /*scalar_ok=*/true)) {
      listed[static_cast<size_t>(d)] = true;
    }
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!(listed[i] && sizes[i] == 1)) out.push_back(sizes[i]);
  }
  return with_sizes(g, n, out);
}

TensorType infer_expand(const Graph& g, const Node& n) {
  const std::vector<int64_t>& sizes = tensor_arg(g, n, 0).type.sizes;
  const std::vector<int64_t> target = *int_list_arg(n, 1);
  const std::string prefix = arg_prefix(n.op, "size");
  if (target.size() < sizes.size()) {
    throw GraphError(prefix + "got " + std::to_string(target.size()) + " sizes " +
                     format_sizes(target) + " for a tensor of rank " +
                     std::to_string(sizes.size()) + " (need at least as many sizes as dims)");
  }
  const size_t lead = target.size() - sizes.size();
  std::vector<int64_t> out(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t want = target[i];
    if (want < -1 || (i < lead && want == -1)) {
      throw GraphError(prefix + "invalid size " + std::to_string(want) + " at dim " +
                       std::to_string(i) + " of " + format_sizes(target) +
                       (i < lead ? " (-1 is not allowed for a new leading dim)" : ""));
    }
    if (i < lead) {
      out[i] = want;
      continue;
    }
    const int64_t have = sizes[i - lead];
    if (want == -1 || want == have) {
      out[i] = have;
    } else if (have == 1) {
      out[i] = want;
    } else {
      throw GraphError(prefix + "the expanded size " + std::to_string(want) +
                       " must match the existing size " + std::to_string(have) +
                       " at non-singleton dim " + std::to_string(i) + " (input sizes " +
                       format_sizes(sizes) + ", target " + format_sizes(target) + ")");
    }
  }
  return with_sizes(g, n, out);
}

TensorType infer_copy(const Graph& g, const Node& n) {
  if (std::optional<std::string> format = string_arg(n, 1)) {
    if (*format != "contiguous_format" && *format != "preserve_format") {
      throw GraphError(arg_prefix(n.op, "memory_format") + "unsupported memory format '" + *format +
                       "' (expected None, 'contiguous_format' or 'preserve_format')");
    }
  }
  return with_sizes(g, n, tensor_arg(g, n, 0).type.sizes);
}

OpSchema schema(std::string name, std::vector<Param> params, OpCategory category,
                std::function<TensorType(const Graph&, const Node&)> infer) {
  return OpSchema{std::move(name), std::move(params), category, std::move(infer)};
}

}  // namespace

void add_view_schemas(std::vector<OpSchema>& out) {
  const auto view = OpCategory::View;
  out.push_back(schema("reshape", {required("self", K::Tensor), required("shape", K::IntList)},
                       view,
                       [](const Graph& g, const Node& n) { return infer_reshape(g, n, "shape"); }));
  out.push_back(schema("view", {required("self", K::Tensor), required("size", K::IntList)}, view,
                       [](const Graph& g, const Node& n) { return infer_reshape(g, n, "size"); }));
  out.push_back(schema("permute", {required("self", K::Tensor), required("dims", K::IntList)}, view,
                       infer_permute));
  out.push_back(
      schema("transpose",
             {required("self", K::Tensor), required("dim0", K::Int), required("dim1", K::Int)},
             view, infer_transpose));
  out.push_back(schema("unsqueeze", {required("self", K::Tensor), required("dim", K::Int)}, view,
                       infer_unsqueeze));
  out.push_back(schema("squeeze",
                       {required("self", K::Tensor), optional("dim", K::OptionalIntList, None{})},
                       view, infer_squeeze));
  out.push_back(schema("expand",
                       {required("self", K::Tensor), required("size", K::IntList),
                        optional("implicit", K::Bool, false, /*keyword_only=*/true)},
                       view, infer_expand));
  out.push_back(schema("clone",
                       {required("self", K::Tensor), optional("memory_format", K::OptionalString,
                                                              None{}, /*keyword_only=*/true)},
                       OpCategory::Copy, infer_copy));
  out.push_back(schema("contiguous",
                       {required("self", K::Tensor),
                        optional("memory_format", K::OptionalString,
                                 std::string("contiguous_format"), /*keyword_only=*/true)},
                       OpCategory::Copy, infer_copy));
}

}  // namespace stax::ir::detail
