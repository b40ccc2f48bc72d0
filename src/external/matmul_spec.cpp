// MatrixLayout helpers, MatmulSpec::describe and the library-free checks of a spec
// (spec_check.h).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "external/matmul.h"
#include "external/spec_check.h"

namespace stax::external {

MatrixLayout MatrixLayout::contiguous(int64_t batch, int64_t rows, int64_t cols) {
  return MatrixLayout{{batch, rows, cols}, {rows * cols, cols, 1}};
}

MatrixLayout MatrixLayout::transposed() const {
  return MatrixLayout{{sizes[0], sizes[2], sizes[1]}, {strides[0], strides[2], strides[1]}};
}

namespace {

// "2x128x768", then "^T" for a column-major matrix, "(strides s0,s1,s2)" for any other
// non-contiguous layout, so that an error or `stax explain` shows how an operand is read.
std::string describe_layout(const MatrixLayout& l) {
  std::ostringstream out;
  out << "[" << l.sizes[0] << "x" << l.sizes[1] << "x" << l.sizes[2] << "]";
  const MatrixLayout row_major = MatrixLayout::contiguous(l.sizes[0], l.sizes[1], l.sizes[2]);
  const MatrixLayout col_major =
      MatrixLayout::contiguous(l.sizes[0], l.sizes[2], l.sizes[1]).transposed();
  if (l.strides == row_major.strides) return out.str();
  if (l.strides == col_major.strides) {
    out << "^T";
  } else {
    out << "(strides " << l.strides[0] << "," << l.strides[1] << "," << l.strides[2] << ")";
  }
  return out.str();
}

std::string format_scalar(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

std::string MatmulSpec::describe() const {
  std::string text = std::string(dtype_name(dtype)) + " ";
  if (alpha != 1.0) text += format_scalar(alpha) + "*";
  text += describe_layout(a) + " @ " + describe_layout(b) + " -> " + describe_layout(c);
  if (bias) {
    text += " + ";
    if (beta != 1.0) text += format_scalar(beta) + "*";
    text += "bias" + describe_layout(*bias);
  }
  for (size_t i = 0; i < post_ops.size(); ++i) {
    const PostOp& op = post_ops[i];
    text += i == 0 ? " then " : ", ";
    text += PostOp::kind_name(op.kind);
    if (op.kind == PostOp::Kind::Linear || op.kind == PostOp::Kind::Clip) {
      text += "(" + format_scalar(op.alpha) + ", " + format_scalar(op.beta) + ")";
    }
    if (op.operand) {
      text += std::string(op.operand_first ? " from " : " ") + "t" + describe_layout(*op.operand);
      if (op.operand_dtype != DType::Float32)
        text += " " + std::string(dtype_name(op.operand_dtype));
    }
  }
  return text;
}

namespace detail {

bool broadcasts(const MatrixLayout& layout, int dim, int64_t c_size) {
  return c_size > 1 && (layout.sizes[dim] == 1 || layout.strides[dim] == 0);
}

bool elements_overlap(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return false;  // no elements
    if (sizes[d] > 1) dims.emplace_back(strides[d], sizes[d]);
  }
  // The dimensions (size > 1) sorted by stride must each step over everything the smaller ones
  // span.
  std::sort(dims.begin(), dims.end());
  int64_t span = 0;  // largest offset reachable with the smaller dimensions
  for (const auto& [stride, size] : dims) {
    if (stride <= span) return true;
    span += stride * (size - 1);
  }
  return false;
}

std::string spec_error(const MatmulSpec& spec) {
  const std::pair<const char*, const MatrixLayout*> operands[] = {
      {"a", &spec.a}, {"b", &spec.b}, {"c", &spec.c}, {"bias", spec.bias ? &*spec.bias : nullptr}};
  for (const auto& [name, layout] : operands) {
    if (layout == nullptr) continue;
    for (int d = 0; d < 3; ++d) {
      if (layout->sizes[d] < 0 || layout->strides[d] < 0) {
        return std::string(name) + " has a negative size or stride";
      }
    }
  }
  const auto& [batch, m, n] = spec.c.sizes;
  const int64_t k = spec.a.sizes[2];
  auto batch_agrees = [&](const MatrixLayout& l) { return l.sizes[0] == batch || l.sizes[0] == 1; };
  if (spec.a.sizes[1] != m || spec.b.sizes[2] != n || spec.b.sizes[1] != k) {
    return "inner or outer dimensions do not agree";
  }
  if (!batch_agrees(spec.a) || !batch_agrees(spec.b)) {
    return "batch sizes do not agree with the output's " + std::to_string(batch);
  }
  if (spec.bias) {
    for (int d = 0; d < 3; ++d) {
      if (spec.bias->sizes[d] != spec.c.sizes[d] && spec.bias->sizes[d] != 1) {
        return "the bias does not broadcast to the output";
      }
    }
  }
  if (elements_overlap(spec.c.sizes, spec.c.strides))
    return "the output's elements overlap (a stride too small for its size)";
  return "";
}

std::string over_32_bits(const std::string& operand, std::span<const int64_t> sizes,
                         std::span<const int64_t> strides) {
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > kLimit) {
      return operand + "'s size " + std::to_string(sizes[d]) + " at dim " + std::to_string(d);
    }
    if (sizes[d] > 1 && d < strides.size() && strides[d] > kLimit) {
      return operand + "'s stride " + std::to_string(strides[d]) + " at dim " + std::to_string(d);
    }
  }
  return "";
}

std::string library_size_refusal(const std::string& library_op, const std::string& what) {
  if (what.empty()) return "";
  return "oneDNN's " + library_op + " counts sizes and strides in 32-bit ints: " + what +
         " is over " + std::to_string(std::numeric_limits<int32_t>::max());
}

std::string library_size_refusal(const MatmulSpec& spec) {
  const char* const kLoopNest = " (a Stax loop nest computes it)";
  const std::pair<const char*, const MatrixLayout*> operands[] = {
      {"a", &spec.a}, {"b", &spec.b}, {"c", &spec.c}, {"bias", spec.bias ? &*spec.bias : nullptr}};
  for (const auto& [name, layout] : operands) {
    if (layout == nullptr) continue;
    const std::string what = over_32_bits(name, layout->sizes, layout->strides);
    if (!what.empty()) return library_size_refusal("matmul", what) + kLoopNest;
  }
  return "";
}

}  // namespace detail
}  // namespace stax::external
