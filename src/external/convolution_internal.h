// What the forward plan (convolution.cpp) and the backward passes (convolution_backward.cpp)
// share: oneDNN descriptors of a spec's operands and window, and the forward primitive
// descriptor that the backward ones take as their hint. Internal to src/external.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "external/convolution.h"

namespace stax::external::detail {

// A layout as oneDNN dimensions and strides (size-1 dimensions get the outermost stride).
dnnl::memory::desc strided_desc(const std::vector<int64_t>& sizes, std::vector<int64_t> strides,
                                dnnl::memory::data_type dt);

// The weight as oneDNN takes it: [C_out, C_in/g, kernel...], or with groups
// [g, C_out/g, C_in/g, kernel...].
std::vector<int64_t> library_weight_sizes(const ConvolutionSpec& spec);
// The caller's weight layout in those dimensions.
dnnl::memory::desc user_weight_desc(const ConvolutionSpec& spec, dnnl::memory::data_type dt);

// The channel block of oneDNN's blocked-format kernels on this CPU (16 with AVX-512, 8 with
// AVX2), asked of oneDNN once; 0 where it has none.
int64_t blocked_channels();

// The desc the primitive is asked for, for an activation whose caller layout is `user`
// (`is_src`: the input where a blocked kernel reads an input of fewer channels than its block
// plain, as the forward and backward-weights ones do; Formats::Blocked then asks for it plain).
dnnl::memory::desc activation_request(ConvolutionPlan::Formats formats,
                                      const dnnl::memory::desc& user, int spatial, bool is_src);

// A spec's window as oneDNN counts it: dilation 0 is dense, the right padding makes oneDNN's
// output size exactly the spec's.
struct LibraryWindow {
  dnnl::memory::dims strides, dilation, padding_l, padding_r;
};
LibraryWindow library_window(const ConvolutionSpec& spec);

// The forward convolution of a spec (its bias ignored unless `with_bias`) with the given
// formats, for the current OpenMP thread count.
dnnl::convolution_forward::primitive_desc forward_primitive_desc(const ConvolutionSpec& spec,
                                                                 ConvolutionPlan::Formats formats,
                                                                 dnnl::prop_kind prop,
                                                                 bool with_bias);

// The backward-data or backward-weights primitive descriptor of a spec (convolution_backward.cpp).
dnnl::primitive_desc backward_primitive_desc(const ConvolutionSpec& spec,
                                             ConvolutionPlan::Formats formats);

// Why oneDNN's chosen kernel `pd` must not run the spec's pass, or "" when it may: oneDNN
// kernels known to write outside their buffers or to compute wrong results for the spec
// (convolution_backward.cpp). The plan then tries its other format candidates, and where
// every one is refused a Stax loop nest computes the pass.
std::string known_library_defect(const ConvolutionSpec& spec, const dnnl::primitive_desc& pd);

// Writes zeros into every element of `layout` (the result of a backward pass whose operands
// are empty: eager's gradient of an empty batch is zeros).
void write_zeros(const TensorLayout& layout, DType dtype, void* data);

}  // namespace stax::external::detail
