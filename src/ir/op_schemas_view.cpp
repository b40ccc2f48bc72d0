// Schemas and type inference of the view ops (reshape, view, permute, transpose, unsqueeze,
// squeeze, expand, slice, select, narrow, split, split_with_sizes, as_strided), the
// data-movement ops that copy (cat, stack, constant_pad_nd, flip, roll, slice_scatter,
// select_scatter, index_select, gather, embedding, index.Tensor) and the copies (clone,
// contiguous). At graph level only sizes are known, so `view` is inferred like `reshape`; the eager
// interpreter checks strides.
#include <string>

#include "ir/movement_args.h"
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

TensorType infer_window(const Graph& g, const Node& n) {
  std::vector<int64_t> sizes = tensor_arg(g, n, 0).type.sizes;
  const DimWindow w = window_args(g, n);
  sizes[static_cast<size_t>(w.dim)] = w.length;
  return with_sizes(g, n, sizes);
}

TensorType infer_select(const Graph& g, const Node& n) {
  std::vector<int64_t> sizes = tensor_arg(g, n, 0).type.sizes;
  sizes.erase(sizes.begin() + select_args(g, n).dim);
  return with_sizes(g, n, sizes);
}

TensorType infer_cat(const Graph& g, const Node& n) {
  CatArgs c = cat_args(g, n);
  TensorType out;
  out.dtype = c.dtype;
  out.sizes = std::move(c.sizes);
  return out;
}

TensorType infer_pad(const Graph& g, const Node& n) {
  std::vector<int64_t> sizes = tensor_arg(g, n, 0).type.sizes;
  const PadArgs p = pad_args(g, n);
  for (size_t d = 0; d < sizes.size(); ++d) sizes[d] += p.before[d] + p.after[d];
  return with_sizes(g, n, sizes);
}

TensorType infer_same_sizes(const Graph& g, const Node& n) {
  if (n.op == "flip") flip_dims(g, n);
  if (n.op == "roll") roll_args(g, n);
  if (n.op == "slice_scatter" || n.op == "select_scatter") scatter_window_args(g, n);
  return with_sizes(g, n, tensor_arg(g, n, 0).type.sizes);
}

TensorType infer_indirect(const Graph& g, const Node& n) {
  return with_sizes(g, n, indirect_args(g, n).sizes);
}

TensorType infer_as_strided(const Graph& g, const Node& n) {
  return with_sizes(g, n, as_strided_args(g, n).sizes);
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
  // Issue 6, point 6: slicing views, data movement, indirect loads (ATen names and args).
  out.push_back(
      schema("slice",
             {required("self", K::Tensor), optional("dim", K::Int, int64_t{0}),
              optional("start", K::OptionalInt, None{}), optional("end", K::OptionalInt, None{}),
              optional("step", K::Int, int64_t{1})},
             view, infer_window));
  out.push_back(schema(
      "select", {required("self", K::Tensor), required("dim", K::Int), required("index", K::Int)},
      view, infer_select));
  out.push_back(schema("narrow",
                       {required("self", K::Tensor), required("dim", K::Int),
                        required("start", K::Int), required("length", K::Int)},
                       view, infer_window));
  for (const char* name : {"split", "split_with_sizes"}) {
    const bool sizes = std::string(name) == "split_with_sizes";
    OpSchema s =
        schema(name,
               {required("self", K::Tensor),
                required(sizes ? "split_sizes" : "split_size", sizes ? K::IntList : K::Int),
                optional("dim", K::Int, int64_t{0})},
               view, infer_window);
    s.result_count = split_count;
    out.push_back(std::move(s));
  }
  out.push_back(
      schema("as_strided",
             {required("self", K::Tensor), required("size", K::IntList),
              required("stride", K::IntList), optional("storage_offset", K::OptionalInt, None{})},
             view, infer_as_strided));
  const auto copy = OpCategory::Copy;
  out.push_back(schema("cat",
                       {required("tensors", K::TensorList), optional("dim", K::Int, int64_t{0})},
                       copy, infer_cat));
  out.push_back(schema("stack",
                       {required("tensors", K::TensorList), optional("dim", K::Int, int64_t{0})},
                       copy, infer_cat));
  out.push_back(schema("constant_pad_nd",
                       {required("self", K::Tensor), required("pad", K::IntList),
                        optional("value", K::Scalar, Scalar(int64_t{0}))},
                       copy, infer_pad));
  out.push_back(schema("flip", {required("self", K::Tensor), required("dims", K::IntList)}, copy,
                       infer_same_sizes));
  // The functional forms of slice and select assignment (the backward of slice and select,
  // and what functionalization makes of x[a:b] = y).
  out.push_back(
      schema("slice_scatter",
             {required("self", K::Tensor), required("src", K::Tensor),
              optional("dim", K::Int, int64_t{0}), optional("start", K::OptionalInt, None{}),
              optional("end", K::OptionalInt, None{}), optional("step", K::Int, int64_t{1})},
             copy, infer_same_sizes));
  out.push_back(schema("select_scatter",
                       {required("self", K::Tensor), required("src", K::Tensor),
                        required("dim", K::Int), required("index", K::Int)},
                       copy, infer_same_sizes));
  out.push_back(schema("roll",
                       {required("self", K::Tensor), required("shifts", K::IntList),
                        optional("dims", K::IntList, std::vector<int64_t>{})},
                       copy, infer_same_sizes));
  out.push_back(
      schema("index_select",
             {required("self", K::Tensor), required("dim", K::Int), required("index", K::Tensor)},
             copy, infer_indirect));
  out.push_back(
      schema("gather",
             {required("self", K::Tensor), required("dim", K::Int), required("index", K::Tensor),
              optional("sparse_grad", K::Bool, false, /*keyword_only=*/true)},
             copy, infer_indirect));
  out.push_back(
      schema("embedding",
             {required("weight", K::Tensor), required("indices", K::Tensor),
              optional("padding_idx", K::Int, int64_t{-1}),
              optional("scale_grad_by_freq", K::Bool, false), optional("sparse", K::Bool, false)},
             copy, infer_indirect));
  out.push_back(schema("index",
                       {required("self", K::Tensor), required("indices", K::OptionalTensorList)},
                       copy, infer_indirect));
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
