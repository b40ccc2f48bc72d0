// Helpers shared by the eager tests: building tensors from value lists, reading them back and
// running a graph written in the text format.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "eager/interpreter.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace stax::eager::testing {

// A contiguous tensor holding `values` in row-major order.
inline Tensor make(DType dtype, std::vector<int64_t> sizes, const std::vector<double>& values) {
  Tensor t = Tensor::empty(dtype, std::move(sizes));
  if (static_cast<int64_t>(values.size()) != t.numel()) throw std::invalid_argument("make: count");
  for (int64_t i = 0; i < t.numel(); ++i) t.set_flat(i, values[static_cast<size_t>(i)]);
  return t;
}

// All elements in row-major order.
inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.get_flat(i));
  return out;
}

// Raw int64 elements of a contiguous i64 tensor.
inline std::vector<int64_t> int64_values(const Tensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  // An empty tensor may have no storage: memcpy from a null pointer is undefined even for 0.
  if (!out.empty()) std::memcpy(out.data(), t.data(), out.size() * sizeof(int64_t));
  return out;
}

inline std::vector<Tensor> run_text(const std::string& text, const std::vector<Tensor>& inputs) {
  return run(ir::parse_graph(text), inputs);
}

// Runs a one-output graph.
inline Tensor run1(const std::string& text, const std::vector<Tensor>& inputs) {
  return run_text(text, inputs).at(0);
}

}  // namespace stax::eager::testing
