// Builder API (see builder.h): each op forwards to Graph::add_node under its ATen name.
#include "ir/builder.h"

#include <cmath>

namespace stax {

namespace {

using ir::Arg;
using ir::GraphError;

ir::Scalar float_scalar(double v) {
  return ir::Scalar(v);
}

ir::Graph& graph_of(const char* op, std::initializer_list<const Val*> vals) {
  ir::Graph* graph = nullptr;
  for (const Val* v : vals) {
    if (!v->graph) throw GraphError(std::string(op) + ": value handle has no graph");
    if (graph && graph != v->graph) {
      throw GraphError(std::string(op) + ": operands belong to different graphs");
    }
    graph = v->graph;
  }
  return *graph;
}

Val node(const char* op, std::initializer_list<const Val*> vals, std::vector<Arg> args,
         std::vector<std::pair<std::string, Arg>> kwargs = {}) {
  ir::Graph& graph = graph_of(op, vals);
  return Val{&graph, graph.add_node(op, std::move(args), std::move(kwargs))};
}

Val binary(const char* op, Val a, Val b) {
  return node(op, {&a, &b}, {a.ref, b.ref});
}
Val binary(const char* op, Val a, double b) {
  return node(op, {&a}, {a.ref, float_scalar(b)});
}
Val binary(const char* op, double a, Val b) {
  return node(op, {&b}, {float_scalar(a), b.ref});
}
Val unary(const char* op, Val a) {
  return node(op, {&a}, {a.ref});
}

Val reduction(const char* op, Val a, std::vector<int64_t> dim, bool keepdim, bool empty_is_none) {
  Arg dim_arg = dim.empty() && empty_is_none ? Arg(ir::None{}) : Arg(std::move(dim));
  return node(op, {&a}, {a.ref, std::move(dim_arg), keepdim});
}

}  // namespace

namespace ops {

Val input(Graph& graph, const std::string& name, DType dtype, std::vector<int64_t> sizes,
          std::optional<std::vector<int64_t>> strides) {
  return Val{&graph, graph.add_input(name, dtype, std::move(sizes), std::move(strides))};
}

void output(Graph& graph, std::vector<Val> values) {
  std::vector<ir::ValueRef> refs;
  for (const Val& v : values) {
    if (v.graph != &graph) throw GraphError("output: value belongs to a different graph");
    refs.push_back(v.ref);
  }
  graph.set_outputs(std::move(refs));
}

#define STAX_BINARY_WITH_SCALARS(NAME) \
  Val NAME(Val a, Val b) {             \
    return binary(#NAME, a, b);        \
  }                                    \
  Val NAME(Val a, double b) {          \
    return binary(#NAME, a, b);        \
  }                                    \
  Val NAME(double a, Val b) {          \
    return binary(#NAME, a, b);        \
  }
STAX_BINARY_WITH_SCALARS(add)
STAX_BINARY_WITH_SCALARS(sub)
STAX_BINARY_WITH_SCALARS(mul)
STAX_BINARY_WITH_SCALARS(div)
#undef STAX_BINARY_WITH_SCALARS

Val maximum(Val a, Val b) {
  return binary("maximum", a, b);
}
Val minimum(Val a, Val b) {
  return binary("minimum", a, b);
}

#define STAX_COMPARISON(NAME)   \
  Val NAME(Val a, Val b) {      \
    return binary(#NAME, a, b); \
  }                             \
  Val NAME(Val a, double b) {   \
    return binary(#NAME, a, b); \
  }
STAX_COMPARISON(gt)
STAX_COMPARISON(lt)
STAX_COMPARISON(ge)
STAX_COMPARISON(le)
STAX_COMPARISON(eq)
STAX_COMPARISON(ne)
#undef STAX_COMPARISON

Val neg(Val a) {
  return unary("neg", a);
}
Val abs(Val a) {
  return unary("abs", a);
}
Val exp(Val a) {
  return unary("exp", a);
}
Val log(Val a) {
  return unary("log", a);
}
Val sqrt(Val a) {
  return unary("sqrt", a);
}
Val rsqrt(Val a) {
  return unary("rsqrt", a);
}
Val tanh(Val a) {
  return unary("tanh", a);
}
Val sigmoid(Val a) {
  return unary("sigmoid", a);
}
Val relu(Val a) {
  return unary("relu", a);
}
Val pow(Val a, double exponent) {
  return node("pow", {&a}, {a.ref, float_scalar(exponent)});
}

Val where(Val cond, Val a, Val b) {
  return node("where", {&cond, &a, &b}, {cond.ref, a.ref, b.ref});
}
Val where(Val cond, double a, Val b) {
  return node("where", {&cond, &b}, {cond.ref, float_scalar(a), b.ref});
}
Val where(Val cond, Val a, double b) {
  return node("where", {&cond, &a}, {cond.ref, a.ref, float_scalar(b)});
}
Val where(Val cond, double a, double b) {
  return node("where", {&cond}, {cond.ref, float_scalar(a), float_scalar(b)});
}

Val sum(Val a, std::vector<int64_t> dim, bool keepdim) {
  return reduction("sum", a, std::move(dim), keepdim, true);
}
Val mean(Val a, std::vector<int64_t> dim, bool keepdim) {
  return reduction("mean", a, std::move(dim), keepdim, true);
}
Val amax(Val a, std::vector<int64_t> dim, bool keepdim) {
  return reduction("amax", a, std::move(dim), keepdim, false);
}
Val amin(Val a, std::vector<int64_t> dim, bool keepdim) {
  return reduction("amin", a, std::move(dim), keepdim, false);
}

namespace {

Arg optional_dim(std::optional<int64_t> dim) {
  return dim ? Arg(std::vector<int64_t>{*dim}) : Arg(ir::None{});
}

// var/std/var_mean's (self, dim?, *, correction, keepdim); an integral correction stays an
// int literal, as the text format would spell it.
std::pair<std::vector<Arg>, std::vector<std::pair<std::string, Arg>>> variance_args(
    Val a, std::vector<int64_t> dim, double correction, bool keepdim) {
  const bool integral = std::trunc(correction) == correction && std::abs(correction) < 0x1p53;
  const ir::Scalar c =
      integral ? ir::Scalar(static_cast<int64_t>(correction)) : ir::Scalar(correction);
  Arg dim_arg = dim.empty() ? Arg(ir::None{}) : Arg(std::move(dim));
  return {{a.ref, std::move(dim_arg)}, {{"correction", c}, {"keepdim", keepdim}}};
}

}  // namespace

Val prod(Val a, std::optional<int64_t> dim, bool keepdim) {
  return node("prod", {&a}, {a.ref, optional_dim(dim), keepdim});
}
Val argmax(Val a, std::optional<int64_t> dim, bool keepdim) {
  return node("argmax", {&a}, {a.ref, optional_dim(dim), keepdim});
}
Val argmin(Val a, std::optional<int64_t> dim, bool keepdim) {
  return node("argmin", {&a}, {a.ref, optional_dim(dim), keepdim});
}
Val any(Val a, std::vector<int64_t> dim, bool keepdim) {
  return reduction("any", a, std::move(dim), keepdim, true);
}
Val all(Val a, std::vector<int64_t> dim, bool keepdim) {
  return reduction("all", a, std::move(dim), keepdim, true);
}
Val var(Val a, std::vector<int64_t> dim, double correction, bool keepdim) {
  auto [args, kwargs] = variance_args(a, std::move(dim), correction, keepdim);
  return node("var", {&a}, std::move(args), std::move(kwargs));
}
Val std_dev(Val a, std::vector<int64_t> dim, double correction, bool keepdim) {
  auto [args, kwargs] = variance_args(a, std::move(dim), correction, keepdim);
  return node("std", {&a}, std::move(args), std::move(kwargs));
}
std::pair<Val, Val> var_mean(Val a, std::vector<int64_t> dim, double correction, bool keepdim) {
  auto [args, kwargs] = variance_args(a, std::move(dim), correction, keepdim);
  ir::Graph& graph = graph_of("var_mean", {&a});
  std::vector<ir::ValueRef> results =
      graph.add_multi_result_node("var_mean", std::move(args), std::move(kwargs));
  return {Val{&graph, results.at(0)}, Val{&graph, results.at(1)}};
}
Val logsumexp(Val a, std::vector<int64_t> dim, bool keepdim) {
  return node("logsumexp", {&a}, {a.ref, std::move(dim), keepdim});
}

Val reshape(Val a, std::vector<int64_t> sizes) {
  return node("reshape", {&a}, {a.ref, std::move(sizes)});
}
Val view(Val a, std::vector<int64_t> sizes) {
  return node("view", {&a}, {a.ref, std::move(sizes)});
}
Val permute(Val a, std::vector<int64_t> dims) {
  return node("permute", {&a}, {a.ref, std::move(dims)});
}
Val transpose(Val a, int64_t dim0, int64_t dim1) {
  return node("transpose", {&a}, {a.ref, dim0, dim1});
}
Val unsqueeze(Val a, int64_t dim) {
  return node("unsqueeze", {&a}, {a.ref, dim});
}
Val squeeze(Val a) {
  return unary("squeeze", a);
}
Val squeeze(Val a, std::vector<int64_t> dims) {
  return node("squeeze", {&a}, {a.ref, std::move(dims)});
}
Val expand(Val a, std::vector<int64_t> sizes) {
  return node("expand", {&a}, {a.ref, std::move(sizes)});
}
Val clone(Val a) {
  return unary("clone", a);
}
Val contiguous(Val a) {
  return unary("contiguous", a);
}

}  // namespace ops

namespace {

Arg optional_int(std::optional<int64_t> v) {
  return v ? Arg(*v) : Arg(ir::None{});
}

// The graph of a list of operands (all must share one) and the list as an argument.
ir::Graph& list_graph(const char* op, const std::vector<std::optional<Val>>& tensors,
                      ir::TensorList& list) {
  ir::Graph* graph = nullptr;
  for (const auto& t : tensors) {
    if (!t) {
      list.items.emplace_back(std::nullopt);
      continue;
    }
    if (!t->graph) throw GraphError(std::string(op) + ": value handle has no graph");
    if (graph && graph != t->graph) {
      throw GraphError(std::string(op) + ": operands belong to different graphs");
    }
    graph = t->graph;
    list.items.emplace_back(t->ref);
  }
  if (!graph) throw GraphError(std::string(op) + ": needs at least one tensor");
  return *graph;
}

Val list_node(const char* op, const std::vector<std::optional<Val>>& tensors,
              std::vector<Arg> rest) {
  ir::TensorList list;
  ir::Graph& graph = list_graph(op, tensors, list);
  rest.insert(rest.begin(), std::move(list));
  return Val{&graph, graph.add_node(op, std::move(rest))};
}

std::vector<Val> multi_result(const char* op, Val a, std::vector<Arg> args) {
  ir::Graph& graph = graph_of(op, {&a});
  std::vector<Val> out;
  for (ir::ValueRef ref : graph.add_multi_result_node(op, std::move(args))) {
    out.push_back(Val{&graph, ref});
  }
  return out;
}

std::vector<std::optional<Val>> all_present(const std::vector<Val>& tensors) {
  return std::vector<std::optional<Val>>(tensors.begin(), tensors.end());
}

}  // namespace

namespace ops {

Val slice(Val a, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
          int64_t step) {
  return node("slice", {&a}, {a.ref, dim, optional_int(start), optional_int(end), step});
}
Val select(Val a, int64_t dim, int64_t index) {
  return node("select", {&a}, {a.ref, dim, index});
}
Val narrow(Val a, int64_t dim, int64_t start, int64_t length) {
  return node("narrow", {&a}, {a.ref, dim, start, length});
}
std::vector<Val> split(Val a, int64_t split_size, int64_t dim) {
  return multi_result("split", a, {a.ref, split_size, dim});
}
std::vector<Val> split_with_sizes(Val a, std::vector<int64_t> split_sizes, int64_t dim) {
  return multi_result("split_with_sizes", a, {a.ref, std::move(split_sizes), dim});
}
Val as_strided(Val a, std::vector<int64_t> sizes, std::vector<int64_t> strides,
               std::optional<int64_t> storage_offset) {
  return node("as_strided", {&a},
              {a.ref, std::move(sizes), std::move(strides), optional_int(storage_offset)});
}
Val cat(const std::vector<Val>& tensors, int64_t dim) {
  return list_node("cat", all_present(tensors), {dim});
}
Val stack(const std::vector<Val>& tensors, int64_t dim) {
  return list_node("stack", all_present(tensors), {dim});
}
Val constant_pad_nd(Val a, std::vector<int64_t> pad, double value) {
  return node("constant_pad_nd", {&a}, {a.ref, std::move(pad), float_scalar(value)});
}
Val flip(Val a, std::vector<int64_t> dims) {
  return node("flip", {&a}, {a.ref, std::move(dims)});
}
Val roll(Val a, std::vector<int64_t> shifts, std::vector<int64_t> dims) {
  return node("roll", {&a}, {a.ref, std::move(shifts), std::move(dims)});
}
Val index_select(Val a, int64_t dim, Val index) {
  return node("index_select", {&a, &index}, {a.ref, dim, index.ref});
}
Val gather(Val a, int64_t dim, Val index) {
  return node("gather", {&a, &index}, {a.ref, dim, index.ref});
}
Val embedding(Val weight, Val indices) {
  return node("embedding", {&weight, &indices}, {weight.ref, indices.ref});
}
Val index(Val a, const std::vector<std::optional<Val>>& indices) {
  std::vector<std::optional<Val>> all = indices;
  all.insert(all.begin(), a);
  ir::TensorList list;
  ir::Graph& graph = list_graph("index", all, list);
  list.items.erase(list.items.begin());
  return Val{&graph, graph.add_node("index", {a.ref, std::move(list)})};
}

// Factory ops (issue 7, point 3).
namespace {

Arg dtype_arg(std::optional<DType> dtype) {
  if (!dtype) return ir::None{};
  return std::string(dtype_name(*dtype));
}

Val factory(Graph& graph, const char* op, std::vector<Arg> args,
            std::vector<std::pair<std::string, Arg>> kwargs = {}) {
  return Val{&graph, graph.add_node(op, std::move(args), std::move(kwargs))};
}

}  // namespace

Val full(Graph& graph, std::vector<int64_t> size, Number fill_value, std::optional<DType> dtype) {
  return factory(graph, "full", {std::move(size), fill_value.scalar},
                 {{"dtype", dtype_arg(dtype)}});
}
Val zeros(Graph& graph, std::vector<int64_t> size, std::optional<DType> dtype) {
  return factory(graph, "zeros", {std::move(size)}, {{"dtype", dtype_arg(dtype)}});
}
Val ones(Graph& graph, std::vector<int64_t> size, std::optional<DType> dtype) {
  return factory(graph, "ones", {std::move(size)}, {{"dtype", dtype_arg(dtype)}});
}
Val full_like(Val self, Number fill_value, std::optional<DType> dtype) {
  return node("full_like", {&self}, {self.ref, fill_value.scalar}, {{"dtype", dtype_arg(dtype)}});
}
Val zeros_like(Val self, std::optional<DType> dtype) {
  return node("zeros_like", {&self}, {self.ref}, {{"dtype", dtype_arg(dtype)}});
}
Val ones_like(Val self, std::optional<DType> dtype) {
  return node("ones_like", {&self}, {self.ref}, {{"dtype", dtype_arg(dtype)}});
}
Val fill(Val self, Number value) {
  return node("fill", {&self}, {self.ref, value.scalar});
}
Val scalar_tensor(Graph& graph, Number s, std::optional<DType> dtype) {
  return factory(graph, "scalar_tensor", {s.scalar}, {{"dtype", dtype_arg(dtype)}});
}
Val arange(Graph& graph, Number end, std::optional<DType> dtype) {
  return arange(graph, 0, end, 1, dtype);
}
Val arange(Graph& graph, Number start, Number end, Number step, std::optional<DType> dtype) {
  return factory(graph, "arange", {start.scalar, end.scalar, step.scalar},
                 {{"dtype", dtype_arg(dtype)}});
}
Val iota(Graph& graph, int64_t length, int64_t start, int64_t step, DType dtype) {
  return factory(graph, "iota", {length},
                 {{"start", start}, {"step", step}, {"dtype", dtype_arg(dtype)}});
}

// Matrix products (issue 14, point 3).
Val mm(Val self, Val mat2) {
  return node("mm", {&self, &mat2}, {self.ref, mat2.ref});
}
Val bmm(Val self, Val mat2) {
  return node("bmm", {&self, &mat2}, {self.ref, mat2.ref});
}
Val addmm(Val self, Val mat1, Val mat2, Number beta, Number alpha) {
  return node("addmm", {&self, &mat1, &mat2}, {self.ref, mat1.ref, mat2.ref},
              {{"beta", beta.scalar}, {"alpha", alpha.scalar}});
}
Val baddbmm(Val self, Val batch1, Val batch2, Number beta, Number alpha) {
  return node("baddbmm", {&self, &batch1, &batch2}, {self.ref, batch1.ref, batch2.ref},
              {{"beta", beta.scalar}, {"alpha", alpha.scalar}});
}

Val convolution(Val input, Val weight, std::optional<Val> bias, std::vector<int64_t> stride,
                std::vector<int64_t> padding, std::vector<int64_t> dilation, bool transposed,
                std::vector<int64_t> output_padding, int64_t groups) {
  std::vector<Arg> args = {input.ref,
                           weight.ref,
                           bias ? Arg(bias->ref) : Arg(ir::None{}),
                           std::move(stride),
                           std::move(padding),
                           std::move(dilation),
                           transposed,
                           std::move(output_padding),
                           groups};
  if (bias) return node("convolution", {&input, &weight, &*bias}, std::move(args));
  return node("convolution", {&input, &weight}, std::move(args));
}

}  // namespace ops

Val operator+(Val a, Val b) {
  return ops::add(a, b);
}
Val operator+(Val a, double b) {
  return ops::add(a, b);
}
Val operator+(double a, Val b) {
  return ops::add(a, b);
}
Val operator-(Val a, Val b) {
  return ops::sub(a, b);
}
Val operator-(Val a, double b) {
  return ops::sub(a, b);
}
Val operator-(double a, Val b) {
  return ops::sub(a, b);
}
Val operator*(Val a, Val b) {
  return ops::mul(a, b);
}
Val operator*(Val a, double b) {
  return ops::mul(a, b);
}
Val operator*(double a, Val b) {
  return ops::mul(a, b);
}
Val operator/(Val a, Val b) {
  return ops::div(a, b);
}
Val operator/(Val a, double b) {
  return ops::div(a, b);
}
Val operator/(double a, Val b) {
  return ops::div(a, b);
}
Val operator-(Val a) {
  return ops::neg(a);
}

}  // namespace stax
