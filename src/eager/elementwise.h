// The element loop shared by the eager pointwise ops. An op gives the positions of its operands
// and an element function written once for every computation type T:
//   int64_t  for integer and bool computation dtypes (exact values, wrapped to the dtype's
//            width when stored, so integer overflow wraps as in PyTorch's kernels);
//   float    for f32, f16 and bf16 (PyTorch's opmath type: 16-bit operands are rounded to
//            their dtype, the arithmetic is done in float, the result is rounded once);
//   double   for f64.
// The computation and result dtypes come from ir::pointwise_typing, the one rule type inference
// and lowering use too. A scalar literal is converted to the computation dtype like a tensor
// (bf16 x + 1.7 adds bf16(1.7), u8 x + 300 adds 44), except where PyTorch reads it in the
// opmath type (ir::other_read_in_opmath).
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "eager/ops.h"
#include "ir/op_schema.h"
#include "ir/pointwise_typing.h"

namespace stax::eager::detail {

// One operand of a pointwise op, read as the computation dtype.
class ElementOperand {
 public:
  ElementOperand() = default;
  // Argument `position` of `node`, broadcast to `sizes`, converted to `compute`. With `opmath`
  // the operand keeps its value in the opmath type (float) instead of being rounded to a
  // 16-bit compute dtype first.
  ElementOperand(const Env& env, const ir::Node& node, size_t position,
                 const std::vector<int64_t>& sizes, DType compute, bool opmath = false);

  int64_t as_int(const std::vector<int64_t>& index) const;
  double as_float(const std::vector<int64_t>& index) const;  // a value of the compute dtype

  template <typename T>
  T read(const std::vector<int64_t>& index) const {
    if constexpr (std::is_same_v<T, int64_t>) {
      return as_int(index);
    } else {
      return static_cast<T>(as_float(index));
    }
  }

 private:
  bool is_scalar_ = false;
  ir::Scalar scalar_;
  Tensor tensor_;
  DType compute_ = DType::Float32;
  bool opmath_ = false;
};

// A scalar argument (alpha, negative_slope, min_val, ...) converted to computation type T of
// `compute` as PyTorch converts an op's Scalar parameters: to the dtype itself (wrapping ints,
// rounding to f16/bf16) when `to_dtype`, else to the opmath type.
template <typename T>
T scalar_param(const ir::Scalar& s, DType compute, bool to_dtype) {
  if constexpr (std::is_same_v<T, int64_t>) {
    return scalar_to_int(s, compute);
  } else {
    // The opmath type: float for f32/f16/bf16, double for f64.
    const DType opmath = compute == DType::Float64 ? DType::Float64 : DType::Float32;
    return static_cast<T>(scalar_to_float(s, to_dtype ? compute : opmath));
  }
}

// Stores r (of computation type T, or bool) into `out` at `index`.
template <typename R>
void store_element(const Tensor& out, const std::vector<int64_t>& index, R r) {
  if constexpr (std::is_same_v<R, bool>) {
    out.set(index, r ? 1.0 : 0.0);
  } else if constexpr (std::is_integral_v<R>) {
    if (out.dtype() == DType::Bool || is_integral(out.dtype())) {
      store_int(out, index, static_cast<int64_t>(r));
    } else {
      out.set(index, int_to_float(static_cast<int64_t>(r), out.dtype()));
    }
  } else {
    out.set(index, static_cast<double>(r));  // one rounding to a 16-bit result dtype
  }
}

// The tag map_elements passes to its callable, naming the element type T it computes in
// (int64_t for integer and bool results, double or float for floating ones).
template <typename T>
using Tag = std::type_identity<T>;
// Whether a tag's T is the integer computation type.
template <typename T>
constexpr bool kInt = std::is_same_v<T, int64_t>;

// Runs `f(env_typing, T operands...)` for every output element of `node`. `f` is a generic
// callable: f(std::type_identity<T>{}, T a, T b, ...) returning T or bool.
// `opmath[i]` reads operand i in the opmath type (see ElementOperand).
template <size_t N, typename F>
Tensor map_elements(const Env& env, const ir::Node& node, std::array<size_t, N> positions, F f,
                    std::array<bool, N> opmath = {}) {
  const ir::TensorType& type = env.result_type(node);
  const ir::PointwiseTyping typing = ir::pointwise_typing(env.graph, node);
  std::array<ElementOperand, N> operands;
  for (size_t i = 0; i < N; ++i) {
    operands[i] = ElementOperand(env, node, positions[i], type.sizes, typing.compute, opmath[i]);
  }
  Tensor out = Tensor::empty(type.dtype, type.sizes);
  const int64_t n = out.numel();
  auto run = [&]<typename T>(std::type_identity<T> tag) {
    for (int64_t p = 0; p < n; ++p) {
      const std::vector<int64_t> index = unravel_index(p, type.sizes);
      [&]<size_t... I>(std::index_sequence<I...>) {
        store_element(out, index, f(tag, operands[I].template read<T>(index)...));
      }
      (std::make_index_sequence<N>{});
    }
  };
  if (typing.compute == DType::Bool || is_integral(typing.compute)) {
    run(std::type_identity<int64_t>{});
  } else if (typing.compute == DType::Float64) {
    run(std::type_identity<double>{});
  } else {
    run(std::type_identity<float>{});
  }
  return out;
}

// The value `v` (of the opmath type) takes once rounded to `dtype` and read back.
template <typename T>
T round_as(DType dtype, T v) {
  return static_cast<T>(round_to(dtype, static_cast<double>(v)));
}

inline bool is_16bit_float(DType d) {
  return d == DType::Float16 || d == DType::BFloat16;
}

// The computation dtype of a node (for scalar parameters).
inline DType compute_dtype(const Env& env, const ir::Node& node) {
  return ir::pointwise_typing(env.graph, node).compute;
}

}  // namespace stax::eager::detail

namespace stax::eager::detail {

// Wrapping (two's complement) integer arithmetic on the exact values.
inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// The per-family tables (pointwise_binary.cpp, pointwise_unary.cpp).
EvalFn find_binary_eval(std::string_view op);
EvalFn find_unary_eval(std::string_view op);

}  // namespace stax::eager::detail
