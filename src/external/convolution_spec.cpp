// TensorLayout helpers, ConvolutionSpec::describe and the library-free checks of a spec
// (ConvolutionSpec::error).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <utility>

#include "external/convolution.h"
#include "external/spec_check.h"

namespace stax::external {

namespace {

// Strides of a dense layout whose dimensions, from outermost to innermost, are `order`.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& sizes,
                                   const std::vector<size_t>& order) {
  std::vector<int64_t> strides(sizes.size());
  int64_t step = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[order[i]] = step;
    step *= std::max<int64_t>(sizes[order[i]], 1);
  }
  return strides;
}

std::vector<size_t> row_major_order(size_t rank) {
  std::vector<size_t> order(rank);
  for (size_t i = 0; i < rank; ++i) order[i] = i;
  return order;
}

// N, the spatial dimensions, then C.
std::vector<size_t> channels_last_order(size_t rank) {
  std::vector<size_t> order{0};
  for (size_t i = 2; i < rank; ++i) order.push_back(i);
  if (rank > 1) order.push_back(1);
  return order;
}

bool same_addressing(const TensorLayout& l, const std::vector<int64_t>& strides) {
  if (l.strides.size() != l.sizes.size()) return false;
  for (size_t d = 0; d < l.sizes.size(); ++d) {
    if (l.sizes[d] == 0) return true;  // no elements: any strides
  }
  for (size_t d = 0; d < l.sizes.size(); ++d) {
    if (l.sizes[d] != 1 && l.strides[d] != strides[d]) return false;
  }
  return true;
}

std::string join(const std::vector<int64_t>& values, const char* separator) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += separator;
    text += std::to_string(values[i]);
  }
  return text;
}

// "[8x64x56x56]", then "(channels-last)" or "(strides ...)" for a layout that is not
// contiguous, so that an error or `stax explain` shows how an operand is read.
std::string describe_layout(const TensorLayout& l) {
  std::string text = "[" + join(l.sizes, "x") + "]";
  if (l.is_contiguous()) return text;
  if (l.sizes.size() > 2 && l.is_channels_last()) return text + "(channels-last)";
  return text + "(strides " + join(l.strides, ",") + ")";
}

// "1" when every spatial dimension has the same value, else "2x1".
std::string describe_per_dim(const std::vector<int64_t>& values) {
  if (!values.empty() &&
      std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == values.front(); })) {
    return std::to_string(values.front());
  }
  return join(values, "x");
}

}  // namespace

TensorLayout TensorLayout::contiguous(std::vector<int64_t> sizes) {
  std::vector<int64_t> strides = dense_strides(sizes, row_major_order(sizes.size()));
  return TensorLayout{std::move(sizes), std::move(strides)};
}

TensorLayout TensorLayout::channels_last(std::vector<int64_t> sizes) {
  std::vector<int64_t> strides = dense_strides(sizes, channels_last_order(sizes.size()));
  return TensorLayout{std::move(sizes), std::move(strides)};
}

bool TensorLayout::is_contiguous() const {
  return same_addressing(*this, dense_strides(sizes, row_major_order(sizes.size())));
}

bool TensorLayout::is_channels_last() const {
  return same_addressing(*this, dense_strides(sizes, channels_last_order(sizes.size())));
}

const TensorLayout& ConvolutionSpec::result() const {
  switch (pass) {
    case ConvolutionPass::Forward:
      return output;
    case ConvolutionPass::BackwardData:
      return input;
    case ConvolutionPass::BackwardWeights:
      return weight;
  }
  return output;
}

std::string ConvolutionSpec::describe() const {
  const char* pass_name = pass == ConvolutionPass::BackwardData      ? " backward-data"
                          : pass == ConvolutionPass::BackwardWeights ? " backward-weights"
                                                                     : "";
  std::string text = std::string(dtype_name(dtype)) + " conv" + std::to_string(spatial_dims()) +
                     "d" + pass_name + " " + describe_layout(input) + " * w" +
                     describe_layout(weight) + " stride " + describe_per_dim(stride) + " pad " +
                     describe_per_dim(padding);
  if (std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d != 1; })) {
    text += " dilation " + describe_per_dim(dilation);
  }
  if (groups != 1) {
    text += " groups " + std::to_string(groups);
    const bool depthwise = input.sizes.size() > 1 && weight.sizes.size() > 1 &&
                           input.sizes[1] == groups && weight.sizes[1] == 1;
    if (depthwise) text += " (depthwise)";
  }
  text += " -> " + describe_layout(output);
  if (bias) {
    text += " + bias";
    if (bias->sizes.size() != 1 || bias->strides.size() != 1 || !bias->is_contiguous()) {
      text += describe_layout(*bias);
    }
  }
  return text;
}

std::string ConvolutionSpec::error() const {
  const int d = spatial_dims();
  if (d < 1 || d > 3)
    return "the input has " + std::to_string(input.sizes.size()) +
           " dimensions, not 3 to 5 ([N, C, 1 to 3 spatial])";
  const size_t rank = input.sizes.size();
  struct Operand {
    const char* name;
    const TensorLayout* layout;
    size_t rank;
  };
  const Operand operands[] = {{"input", &input, rank},
                              {"weight", &weight, rank},
                              {"output", &output, rank},
                              {"bias", bias ? &*bias : nullptr, 1}};
  for (const Operand& operand : operands) {
    if (operand.layout == nullptr) continue;
    const TensorLayout& l = *operand.layout;
    if (l.sizes.size() != operand.rank || l.strides.size() != operand.rank) {
      return std::string(operand.name) + " has " + std::to_string(l.sizes.size()) + " sizes and " +
             std::to_string(l.strides.size()) + " strides, not " + std::to_string(operand.rank);
    }
    for (size_t i = 0; i < operand.rank; ++i) {
      if (l.sizes[i] < 0 || l.strides[i] < 0) {
        return std::string(operand.name) + " has a negative size or stride";
      }
    }
  }
  const size_t spatial = static_cast<size_t>(d);
  if (stride.size() != spatial || padding.size() != spatial || dilation.size() != spatial) {
    return "stride, padding and dilation need one value per spatial dimension (" +
           std::to_string(d) + ")";
  }
  for (size_t i = 0; i < spatial; ++i) {
    if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0) {
      return "stride and dilation must be positive and padding non-negative";
    }
  }
  if (groups < 1) return "groups must be positive";
  const int64_t c_in = input.sizes[1], c_out = weight.sizes[0];
  if (c_in % groups != 0 || c_out % groups != 0) {
    return "input and output channels (" + std::to_string(c_in) + ", " + std::to_string(c_out) +
           ") must be multiples of groups (" + std::to_string(groups) + ")";
  }
  if (weight.sizes[1] != c_in / groups) {
    return "the weight has " + std::to_string(weight.sizes[1]) +
           " input channels, not C_in / groups = " + std::to_string(c_in / groups);
  }
  if (bias && bias->sizes[0] != c_out) return "the bias does not have C_out elements";
  if (bias && pass != ConvolutionPass::Forward) {
    return "a backward pass has no bias (grad_bias, a sum of grad_output, is Stax's own)";
  }
  // Eager's convolution of an input without channels has no output channels either (torch
  // 2.13.0, meta kernel included); its input may lack a batch or channels, never positions.
  const int64_t out_channels = c_in == 0 ? 0 : c_out;
  if (output.sizes[0] != input.sizes[0] || output.sizes[1] != out_channels) {
    return "the output's batch or channels (" + std::to_string(output.sizes[0]) + ", " +
           std::to_string(output.sizes[1]) + ") are not the convolution's (" +
           std::to_string(input.sizes[0]) + ", " + std::to_string(out_channels) + ")";
  }
  for (size_t i = 0; i < spatial; ++i) {
    if (input.sizes[2 + i] == 0) {
      return "an input spatial dimension is empty (eager accepts an empty batch or channels "
             "only)";
    }
  }
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t kernel = weight.sizes[2 + i];
    if (kernel < 1) return "a kernel dimension is empty";
    const int64_t span = dilation[i] * (kernel - 1) + 1;  // input elements one output reads
    const int64_t padded = input.sizes[2 + i] + 2 * padding[i];
    if (padded < span) {
      return "the dilated kernel (" + std::to_string(span) + ") is larger than the padded input (" +
             std::to_string(padded) + ")";
    }
    if (output.sizes[2 + i] != (padded - span) / stride[i] + 1) {
      return "output spatial dimension " + std::to_string(i) + " is " +
             std::to_string(output.sizes[2 + i]) + ", the convolution gives " +
             std::to_string((padded - span) / stride[i] + 1);
    }
  }
  if (detail::elements_overlap(result().sizes, result().strides)) {
    const char* name = pass == ConvolutionPass::BackwardData      ? "grad_input"
                       : pass == ConvolutionPass::BackwardWeights ? "grad_weight"
                                                                  : "output";
    return std::string("the ") + name + "'s elements overlap (a stride too small for its size)";
  }
  return "";
}

std::string detail::library_size_refusal(const ConvolutionSpec& spec) {
  const char* const kLoopNest = " (a Stax loop nest computes it)";
  const std::pair<const char*, const TensorLayout*> layouts[] = {
      {"input", &spec.input},
      {"weight", &spec.weight},
      {"output", &spec.output},
      {"bias", spec.bias ? &*spec.bias : nullptr}};
  for (const auto& [name, layout] : layouts) {
    if (layout == nullptr) continue;
    const std::string what = detail::over_32_bits(name, layout->sizes, layout->strides);
    if (!what.empty()) return detail::library_size_refusal("convolution", what) + kLoopNest;
  }
  // The window's numbers are counted alike.
  const std::pair<const char*, const std::vector<int64_t>*> window[] = {
      {"stride", &spec.stride}, {"padding", &spec.padding}, {"dilation", &spec.dilation}};
  for (const auto& [name, values] : window) {
    for (size_t d = 0; d < values->size(); ++d) {
      if ((*values)[d] > std::numeric_limits<int32_t>::max()) {
        return detail::library_size_refusal(
                   "convolution", std::string("the ") + name + " " + std::to_string((*values)[d]) +
                                      " of spatial dim " + std::to_string(d)) +
               kLoopNest;
      }
    }
  }
  return "";
}

}  // namespace stax::external
