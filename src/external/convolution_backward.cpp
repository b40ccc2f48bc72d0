// The backward passes of ConvolutionPlan (convolution.h): oneDNN 2.6's
// convolution_backward_data (grad_input) and convolution_backward_weights (grad_weight)
// primitive descriptors, which the plan in convolution.cpp runs as it runs the forward one
// (reorders, workspaces, threads), and the zeros of a gradient whose sum has no terms.
//
// Formats: the forward plan's measured rule (convolution.cpp) picks the activations' format
// from the geometry and the caller's layout; the backward passes take the same choice for
// grad_output and grad_input / input (blocked nChw16c unless the caller is channels-last with
// more than 64 output positions, then nhwc; where oneDNN's kernel for `any` in the pass is an
// AMX one, `any`), oneDNN's choice of weights format (`any`, with a
// reorder per call in or out), and the same fallbacks where oneDNN refuses the choice or has
// only its reference kernel for it. oneDNN 2.6 wants the forward primitive descriptor as a
// hint for a backward one: a forward_training descriptor with the same formats.
//
// What eager computes: torch.ops.aten.convolution_backward runs oneDNN too (torch's newer
// build), in bfloat16 accumulating in float32 and rounding once to bfloat16 (grad_weight in
// bfloat16, as asked here), so the two differ only in the order of float32 sums. Measured
// (bench/conv/conv_shapes.py --backward: ResNet-18's 64->64 3x3 @56, 128->256 3x3 s2 @28 and
// 512->512 3x3 @7, batch 2, NCHW and channels-last, normal inputs, torch 2.13.0): grad_weight
// equals eager's bit for bit in both dtypes; float32 grad_input is within 3e-6 of the largest
// element of eager's (both within 3e-6 of the float64 gradient); bfloat16 grad_input equals
// eager's on all but 0-69 of 50k-400k elements, small sums whose float32 rounding order
// differs, by at most 3.7e-3 of the largest element (one bfloat16 unit of it). Against the
// float64 gradient rounded, stax's and eager's bfloat16 results are equally close.
#include <algorithm>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "external/convolution_internal.h"
#include "external/dnnl_common.h"

namespace stax::external::detail {

using dnnl::memory;

dnnl::primitive_desc backward_primitive_desc(const ConvolutionSpec& spec,
                                             ConvolutionPlan::Formats formats) {
  const auto hint = forward_primitive_desc(spec, formats, dnnl::prop_kind::forward_training,
                                           /*with_bias=*/false);
  const memory::data_type dt = *library_dtype(spec.dtype);
  const int spatial = spec.spatial_dims();
  // The blocked backward-data kernels write a grad_input of fewer than 16 channels blocked
  // (plain, they are oneDNN's reference kernel); the backward-weights ones read such an input
  // plain, as the forward ones do.
  const memory::desc src =
      activation_request(formats, strided_desc(spec.input.sizes, spec.input.strides, dt), spatial,
                         spec.pass == ConvolutionPass::BackwardWeights);
  const memory::desc dst = activation_request(
      formats, strided_desc(spec.output.sizes, spec.output.strides, dt), spatial, false);
  // bfloat16 grad_weight as eager gives it: oneDNN sums in float32 and rounds once.
  const memory::desc weights(library_weight_sizes(spec), dt, memory::format_tag::any);
  const LibraryWindow w = library_window(spec);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto algorithm = dnnl::algorithm::convolution_direct;
  if (spec.pass == ConvolutionPass::BackwardData) {
    using Conv = dnnl::convolution_backward_data;
    return Conv::primitive_desc(
        Conv::desc(algorithm, src, weights, dst, w.strides, w.dilation, w.padding_l, w.padding_r),
        attr, cpu_engine(), hint);
  }
  using Conv = dnnl::convolution_backward_weights;
  return Conv::primitive_desc(
      Conv::desc(algorithm, src, weights, dst, w.strides, w.dilation, w.padding_l, w.padding_r),
      attr, cpu_engine(), hint);
}

std::string known_library_defect(const ConvolutionSpec& spec, const dnnl::primitive_desc& pd) {
  // oneDNN's 1x1 backward-weights kernels (jit_1x1, AVX2 and AVX-512; 2.6.3 and the newest
  // releases alike, oneDNN issue #6035) first copy a strided input into a unit-stride one in
  // their workspace ("reduce to unit stride"). With a channels-last input whose channels per
  // group are not a multiple of their channel block (8 for AVX2, 16 for AVX-512) they index
  // that copy by the block instead of the channel count, and write past the workspace: the
  // heap is corrupted (a later free() aborts) or, on AVX2, grad_weight is wrong. Measured here:
  // C_in 4 -> 6 channels, 1x1, stride 2, 16x16 input, channels-last; valgrind reports writes
  // just past the workspace. 16 covers both blocks.
  if (spec.pass != ConvolutionPass::BackwardWeights) return "";
  const std::vector<int64_t>& w = spec.weight.sizes;
  const bool one_by_one = std::all_of(w.begin() + 2, w.end(), [](int64_t k) { return k == 1; });
  const bool strided =
      std::any_of(spec.stride.begin(), spec.stride.end(), [](int64_t s) { return s > 1; });
  const std::string impl = pd.impl_info_str();
  const dnnl_memory_desc_t& src = pd.src_desc().data;
  const bool channels_last = src.format_kind == dnnl_blocked &&
                             src.format_desc.blocking.inner_nblks == 0 && src.ndims > 2 &&
                             src.format_desc.blocking.strides[1] == 1 && src.dims[1] > 1;
  if (!one_by_one || !strided || impl.find("1x1") == std::string::npos || !channels_last ||
      w[1] % 16 == 0) {
    return "";
  }
  return "oneDNN's " + impl +
         " backward-weights kernel writes past its workspace for a strided 1x1 convolution "
         "of a channels-last input with " +
         std::to_string(w[1]) + " channels per group (not a multiple of 16; oneDNN issue #6035)";
}

void write_zeros(const TensorLayout& layout, DType dtype, void* data) {
  const std::vector<int64_t>& sizes = layout.sizes;
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return;
  // Zero is the all-zero bit pattern in both dtypes oneDNN computes here.
  const size_t element = dtype == DType::Float32 ? 4 : 2;
  char* base = static_cast<char*>(data);
  const size_t rank = sizes.size();
  std::vector<int64_t> index(rank, 0);
  while (true) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * layout.strides[d];
    std::memset(base + offset * static_cast<int64_t>(element), 0, element);
    size_t d = rank;
    while (d > 0 && ++index[d - 1] == sizes[d - 1]) index[--d] = 0;
    if (d == 0) return;
  }
}

}  // namespace stax::external::detail
