// C++ builder API for graphs: value handles (Val) and one free function per op in stax::ops,
// each a thin wrapper over Graph::add_node with the ATen op name, plus arithmetic operators.
//
//   stax::Graph g("softmax_like");
//   auto x = stax::ops::input(g, "x", stax::DType::Float32, {64, 128});
//   auto e = stax::ops::exp(x);
//   stax::ops::output(g, {e / stax::ops::sum(e, {-1}, true)});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace stax {

using Graph = ir::Graph;

// A value of a graph under construction.
struct Val {
  ir::Graph* graph = nullptr;
  ir::ValueRef ref;

  const ir::Value& value() const { return graph->value(ref); }
  const ir::TensorType& type() const { return value().type; }
};

namespace ops {

Val input(Graph& graph, const std::string& name, DType dtype, std::vector<int64_t> sizes,
          std::optional<std::vector<int64_t>> strides = std::nullopt);
void output(Graph& graph, std::vector<Val> values);

// Binary pointwise; a double becomes a float scalar literal.
Val add(Val a, Val b);
Val add(Val a, double b);
Val add(double a, Val b);
Val sub(Val a, Val b);
Val sub(Val a, double b);
Val sub(double a, Val b);
Val mul(Val a, Val b);
Val mul(Val a, double b);
Val mul(double a, Val b);
Val div(Val a, Val b);
Val div(Val a, double b);
Val div(double a, Val b);
Val maximum(Val a, Val b);
Val minimum(Val a, Val b);

// Comparisons (bool results); only the right operand may be a scalar, as in ATen.
Val gt(Val a, Val b);
Val gt(Val a, double b);
Val lt(Val a, Val b);
Val lt(Val a, double b);
Val ge(Val a, Val b);
Val ge(Val a, double b);
Val le(Val a, Val b);
Val le(Val a, double b);
Val eq(Val a, Val b);
Val eq(Val a, double b);
Val ne(Val a, Val b);
Val ne(Val a, double b);

// Unary pointwise.
Val neg(Val a);
Val abs(Val a);
Val exp(Val a);
Val log(Val a);
Val sqrt(Val a);
Val rsqrt(Val a);
Val tanh(Val a);
Val sigmoid(Val a);
Val relu(Val a);
Val pow(Val a, double exponent);

Val where(Val cond, Val a, Val b);
Val where(Val cond, double a, Val b);
Val where(Val cond, Val a, double b);
Val where(Val cond, double a, double b);

// Reductions; an empty dim list reduces over all dims (sum/mean then leave dim=None).
Val sum(Val a, std::vector<int64_t> dim = {}, bool keepdim = false);
Val mean(Val a, std::vector<int64_t> dim = {}, bool keepdim = false);
Val amax(Val a, std::vector<int64_t> dim = {}, bool keepdim = false);
Val amin(Val a, std::vector<int64_t> dim = {}, bool keepdim = false);
// Reductions of issue 6. prod, argmax and argmin take one dim or none (all dims); any, all,
// var, std and var_mean a dim list, empty for all dims; logsumexp needs its dims.
Val prod(Val a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Val argmax(Val a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Val argmin(Val a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Val any(Val a, std::vector<int64_t> dim = {}, bool keepdim = false);
Val all(Val a, std::vector<int64_t> dim = {}, bool keepdim = false);
Val var(Val a, std::vector<int64_t> dim = {}, double correction = 1, bool keepdim = false);
// ATen's std (named so that it does not read as the namespace).
Val std_dev(Val a, std::vector<int64_t> dim = {}, double correction = 1, bool keepdim = false);
// {var, mean}, as torch.var_mean.
std::pair<Val, Val> var_mean(Val a, std::vector<int64_t> dim = {}, double correction = 1,
                             bool keepdim = false);
Val logsumexp(Val a, std::vector<int64_t> dim, bool keepdim = false);

// Views and copies.
Val reshape(Val a, std::vector<int64_t> sizes);
Val view(Val a, std::vector<int64_t> sizes);
Val permute(Val a, std::vector<int64_t> dims);
Val transpose(Val a, int64_t dim0, int64_t dim1);
Val unsqueeze(Val a, int64_t dim);
Val squeeze(Val a);
Val squeeze(Val a, std::vector<int64_t> dims);
Val expand(Val a, std::vector<int64_t> sizes);
Val clone(Val a);
Val contiguous(Val a);

// Views and data movement (issue 6, point 6); None bounds of slice as nullopt.
Val slice(Val a, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
          int64_t step = 1);
Val select(Val a, int64_t dim, int64_t index);
Val narrow(Val a, int64_t dim, int64_t start, int64_t length);
std::vector<Val> split(Val a, int64_t split_size, int64_t dim = 0);
std::vector<Val> split_with_sizes(Val a, std::vector<int64_t> split_sizes, int64_t dim = 0);
Val as_strided(Val a, std::vector<int64_t> sizes, std::vector<int64_t> strides,
               std::optional<int64_t> storage_offset = std::nullopt);
Val cat(const std::vector<Val>& tensors, int64_t dim = 0);
Val stack(const std::vector<Val>& tensors, int64_t dim = 0);
Val constant_pad_nd(Val a, std::vector<int64_t> pad, double value = 0.0);
Val flip(Val a, std::vector<int64_t> dims);
Val roll(Val a, std::vector<int64_t> shifts, std::vector<int64_t> dims = {});
Val index_select(Val a, int64_t dim, Val index);
Val gather(Val a, int64_t dim, Val index);
Val embedding(Val weight, Val indices);
// index.Tensor: nullopt entries leave a dim unindexed.
Val index(Val a, const std::vector<std::optional<Val>>& indices);

// Factory ops (issue 7, point 3). A Number keeps the kind of its literal (3 int, 3.0 float,
// true bool), which decides the default dtype as in PyTorch; dtype nullopt is dtype=None.
struct Number {
  Number(int v) : scalar(v) {}      // NOLINT
  Number(int64_t v) : scalar(v) {}  // NOLINT
  Number(double v) : scalar(v) {}   // NOLINT
  Number(bool v) : scalar(v) {}     // NOLINT
  ir::Scalar scalar;
};
Val full(Graph& graph, std::vector<int64_t> size, Number fill_value,
         std::optional<DType> dtype = std::nullopt);
Val zeros(Graph& graph, std::vector<int64_t> size, std::optional<DType> dtype = std::nullopt);
Val ones(Graph& graph, std::vector<int64_t> size, std::optional<DType> dtype = std::nullopt);
Val full_like(Val self, Number fill_value, std::optional<DType> dtype = std::nullopt);
Val zeros_like(Val self, std::optional<DType> dtype = std::nullopt);
Val ones_like(Val self, std::optional<DType> dtype = std::nullopt);
Val fill(Val self, Number value);  // aten.fill.Scalar: self's sizes and dtype
Val scalar_tensor(Graph& graph, Number s, std::optional<DType> dtype = std::nullopt);
// arange(end) is arange(0, end) (ATen's arange.default), like arange.start without a step.
Val arange(Graph& graph, Number end, std::optional<DType> dtype = std::nullopt);
Val arange(Graph& graph, Number start, Number end, Number step = 1,
           std::optional<DType> dtype = std::nullopt);
Val iota(Graph& graph, int64_t length, int64_t start, int64_t step, DType dtype);

// Matrix products (issue 14, point 3), ATen's argument names; beta and alpha keep their
// literal's kind (a float for an integer dtype is truncated, as PyTorch does).
Val mm(Val self, Val mat2);
Val bmm(Val self, Val mat2);
Val addmm(Val self, Val mat1, Val mat2, Number beta = 1, Number alpha = 1);
Val baddbmm(Val self, Val batch1, Val batch2, Number beta = 1, Number alpha = 1);

// Issue 15: ATen's convolution (1 to 3 spatial dims; transposed is the gradient of the forward
// convolution with respect to its input). The lists take one entry per spatial dim or one
// for all.
Val convolution(Val input, Val weight, std::optional<Val> bias, std::vector<int64_t> stride,
                std::vector<int64_t> padding, std::vector<int64_t> dilation, bool transposed,
                std::vector<int64_t> output_padding, int64_t groups);

}  // namespace ops

Val operator+(Val a, Val b);
Val operator+(Val a, double b);
Val operator+(double a, Val b);
Val operator-(Val a, Val b);
Val operator-(Val a, double b);
Val operator-(double a, Val b);
Val operator*(Val a, Val b);
Val operator*(Val a, double b);
Val operator*(double a, Val b);
Val operator/(Val a, Val b);
Val operator/(Val a, double b);
Val operator/(double a, Val b);
Val operator-(Val a);

}  // namespace stax
