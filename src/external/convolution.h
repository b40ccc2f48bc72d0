// Convolutions as external calls: a plan for one call site of aten.convolution (not
// transposed) or of one gradient of it, built once when a graph is loaded (oneDNN 2.6's
// convolution primitives and the reorders around them) and run many times, as MatmulPlan is
// for matrix products (matmul.h: the library, its OpenMP runtime, LibraryError). The forward
// plan computes what eager's torch.ops.aten.convolution(input, weight, bias, stride, padding,
// dilation, False, [0...], groups) computes; the backward ones what eager's
// torch.ops.aten.convolution_backward(grad_output, input, weight, None, stride, padding,
// dilation, False, [0...], groups, mask) computes as grad_input (mask [1, 0, 0]) or
// grad_weight (mask [0, 1, 0]); grad_bias, a sum, is Stax's own. All in float32, or bfloat16
// accumulated in float32 (with the bias) and rounded to bfloat16 once. Lowering asks
// supported() first; when it says no (float64, or a convolution oneDNN would run only with its
// reference kernel), the convolution is a Stax loop nest and `why` is shown by `stax explain`.
//
// Memory formats: the primitive is created for the src/dst formats that measured fastest
// (convolution.cpp, bench/conv/RESULTS.md: blocked nChw16c for NCHW callers, nhwc for
// channels-last ones) and oneDNN's choice of weights format (format_tag::any); each run
// reorders the caller's input and weights into them and the result back into the caller's
// output strides, skipping a reorder where the caller's layout already is the chosen one
// (channels-last activations with nhwc). Weights are reordered on every run, as eager does
// without prepacking: in training they change between calls. A caller that can promise they
// did not (torch.compile's freeze_parameters, docs/freeze_parameters.md) packs them once
// (pack_weights) and passes the packed copy to run(), which then skips that reorder. The
// backward passes choose formats by the same rule (convolution_backward.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "external/matmul.h"  // LibraryError, shared by the external plans
#include "ir/dtype.h"

namespace stax::external {

// What a plan computes: the convolution, or one of its gradients.
enum class ConvolutionPass : uint8_t { Forward, BackwardData, BackwardWeights };

// A tensor's sizes and strides (in elements, non-negative).
struct TensorLayout {
  std::vector<int64_t> sizes, strides;

  // Row-major strides (NCHW for an activation, OIHW for a weight).
  static TensorLayout contiguous(std::vector<int64_t> sizes);
  // PyTorch's channels_last / channels_last_3d (and its 1-D analogue, NWC): dimension 1 has
  // stride 1, then the spatial dimensions from last to first, then dimension 0.
  static TensorLayout channels_last(std::vector<int64_t> sizes);
  // Whether the layout addresses its elements as contiguous() / channels_last() would
  // (strides of size-1 dimensions ignored, as PyTorch's is_contiguous does).
  bool is_contiguous() const;
  bool is_channels_last() const;
};

// The layouts and the window always describe the forward convolution; `pass` says which of
// them the plan reads and which it writes (ConvolutionPlan::run):
// - Forward: reads input, weight, bias; writes output.
// - BackwardData: reads grad_output (with the output's layout) and weight; writes grad_input
//   (with the input's layout): grad_input[n, ci, x] is the sum over co of ci's group and the
//   kernel positions k with x = y * stride - padding + k * dilation of
//   grad_output[n, co, y] * weight[co, ci mod C_in/groups, k].
// - BackwardWeights: reads grad_output and input; writes grad_weight (with the weight's
//   layout): grad_weight[co, ci, k] is the sum over n and output positions y of
//   grad_output[n, co, y] * input[n, group(co) * C_in/groups + ci, y * stride - padding +
//   k * dilation] (positions in the padding contribute nothing).
struct ConvolutionSpec {
  DType dtype = DType::Float32;      // every operand has it
  TensorLayout input;                // [N, C_in, spatial...], 1 to 3 spatial dimensions
  TensorLayout weight;               // [C_out, C_in / groups, kernel...]
  std::optional<TensorLayout> bias;  // [C_out]; forward only
  TensorLayout output;               // [N, C_out, output spatial...]
  // One per spatial dimension; dilation as PyTorch counts it (1 is a dense kernel).
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
  ConvolutionPass pass = ConvolutionPass::Forward;

  int spatial_dims() const { return static_cast<int>(input.sizes.size()) - 2; }
  // The layout the pass writes: output, input (grad_input) or weight (grad_weight).
  const TensorLayout& result() const;
  // "" when the spec is well formed (no library asked): ranks, sizes that agree as eager's
  // convolution requires (output sizes included), non-negative strides, a result whose
  // elements do not overlap, no bias for a backward pass; else what is wrong.
  std::string error() const;
  // "f32 conv2d [8x64x56x56] * w[64x64x3x3] stride 1 pad 1 -> [8x64x56x56] + bias" for errors
  // and explain, "f32 conv2d backward-data [8x64x56x56] * ..." for the backward passes (the
  // forward convolution whose gradient is computed); a layout note after each operand that is
  // not contiguous ("(channels-last)", "(strides ...)"), dilation and groups where they are
  // not 1.
  std::string describe() const;
};

// A plan's weights reordered once into the format its primitive reads (ConvolutionPlan::
// pack_weights), for runs that would otherwise reorder the same weights on every call. It
// holds a copy: the weights it was packed from may change or go away afterwards, and whether
// they did is the caller's to know. Immutable once made; threads share it.
class PackedWeights {
 public:
  ~PackedWeights();
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;
  // The caller's weights it was packed from: run() takes the packed copy only for these.
  const void* source() const { return source_; }
  // Bytes of the packed copy (the primitive's format pads to its blocks).
  size_t bytes() const;

  // The format (oneDNN's descriptor) and the data; defined where plans make and read them
  // (convolution.cpp).
  struct Contents;
  PackedWeights(const void* source, std::unique_ptr<Contents> contents);
  const Contents& contents() const { return *contents_; }

 private:
  const void* source_;
  std::unique_ptr<Contents> contents_;
};

class ConvolutionPlan {
 public:
  // The src/dst memory formats the plan asks oneDNN for (weights always get oneDNN's choice).
  // Automatic is what Stax uses; the others are for bench/conv/conv_shapes.py, which
  // measured them, and for the tests.
  enum class Formats : uint8_t {
    Automatic,     // the measured choice (convolution.cpp)
    Any,           // format_tag::any: oneDNN's preference
    ChannelsLast,  // nwc / nhwc / ndhwc
    Blocked,       // nChw16c (AVX-512) or nChw8c (AVX2), and their 1-D and 3-D forms: the
                   // block of oneDNN's kernels on this CPU (blocked_channels()); a src of
                   // fewer channels than the block plain
    Caller,        // the caller's input and output strides: no activation reorders
  };

  // Whether a library plan exists for the spec on this machine: a well-formed spec, a dtype
  // oneDNN convolves on this CPU (float32, bfloat16; bfloat16 through float32 where it has no
  // kernel for it) in this pass, and a convolution it runs
  // with an optimized kernel (it is asked; its reference kernel is refused). Empty operands
  // (N == 0, or no channels; eager gives an input without channels an output without them)
  // are supported: no library call; the result, where it is not empty itself (a backward
  // pass's gradient of an empty batch, say), is written as zeros. When false, `why` (if not
  // null) says why.
  static bool supported(const ConvolutionSpec& spec, std::string* why);
  // Whether the plan for this spec with its input and output channels last (as a caller
  // would store them) reads and writes them in place rather than reordering them into another
  // format: the measured rule's choice on this CPU (convolution.cpp). When true, `reason` (if
  // not null) says which kernel and why.
  static bool runs_channels_last_in_place(const ConvolutionSpec& spec, std::string* reason);
  // Builds the primitive and reorders once, for `num_threads` threads (0:
  // omp_get_max_threads()). Throws LibraryError when there is no plan or oneDNN fails.
  static std::unique_ptr<ConvolutionPlan> create(const ConvolutionSpec& spec, int num_threads = 0,
                                                 Formats formats = Formats::Automatic);

  ~ConvolutionPlan();
  ConvolutionPlan(const ConvolutionPlan&) = delete;
  ConvolutionPlan& operator=(const ConvolutionPlan&) = delete;

  // Runs on `num_threads` threads of the process's OpenMP runtime (0: the caller's
  // omp_get_max_threads()), restoring the caller's setting after; a thread count other than
  // create()'s builds its primitive on first use (oneDNN fixes a primitive's thread count
  // when it is built). The operands by pass (ConvolutionSpec):
  //   Forward:         run(input,       weight, bias,    output,      threads)
  //   BackwardData:    run(grad_output, weight, nullptr, grad_input,  threads)
  //   BackwardWeights: run(grad_output, input,  nullptr, grad_weight, threads)
  // `bias` is read only when the spec has one. The result must not overlap the other operands.
  // Thread-safe for concurrent calls of one plan (each run borrows its own temporaries).
  // Throws LibraryError on failure.
  void run(const void* a, const void* b, const void* bias, void* result, int num_threads) const {
    run(a, b, bias, result, num_threads, nullptr);
  }
  // The same, reading the weights from `packed` instead of reordering `b` where `packed` was
  // made from `b` (PackedWeights::source) in the format the primitive for this thread count
  // reads (takes()); otherwise `b` is reordered as without it. The caller guarantees that the
  // weights at `b` did not change since they were packed: run() cannot see their contents.
  void run(const void* a, const void* b, const void* bias, void* result, int num_threads,
           const PackedWeights* packed) const;

  // The weights a Forward or BackwardData plan reads (`weight`, laid out as spec().weight),
  // reordered now into the format of the primitive for `num_threads` (0: the caller's
  // omp_get_max_threads()), for run() to take on later calls. nullptr where there is nothing
  // to pack: no library call, or a primitive that reads the caller's weights in place. Throws
  // LibraryError for a BackwardWeights plan (it writes the weights), a null `weight`, or when
  // oneDNN fails.
  std::shared_ptr<const PackedWeights> pack_weights(const void* weight, int num_threads = 0) const;
  // Whether run() on `num_threads` threads reads `packed` (given its source as `b`): the
  // primitive for that count reads the format it holds. oneDNN may pick another kernel, hence
  // another weights format, for another thread count.
  bool takes(const PackedWeights& packed, int num_threads = 0) const;

  // "oneDNN 2.6.3 convolution jit:avx512_core (nChw16c), input reordered from nchw, weights
  // reordered per call, output reordered to nchw" or "... brgconv:avx512_core (nhwc), input in
  // place, weights reordered per call, output in place" for explain; "oneDNN 2.6.3 convolution
  // backward-data ..." and "... backward-weights ..." name the pass, the formats in
  // parentheses being the input's and the output's (or their gradients'). Without a library
  // call: "no library call: the output is empty" (or "grad_input is empty", ...), or for a
  // backward pass whose sums have no terms "no library call: grad_weight is zeros
  // (grad_output and input are empty)" and the like.
  std::string implementation() const;
  // implementation() for runs given `packed` on create()'s thread count: "weights packed once
  // (frozen)" in place of "weights reordered per call" where the run takes it.
  std::string implementation(const PackedWeights* packed) const;
  // Which formats the plan asks for, its kernel and why, for explain: "oneDNN's choice (any),
  // kernel brgconv:avx512_core_amx_bf16: oneDNN's kernel for its own formats runs on the CPU's
  // AMX tiles, ...", "blocked (16 channels), kernel jit:avx512_core: measured fastest ...", or
  // the first choice's refusal where a later candidate serves.
  std::string formats_reason() const;
  // formats_reason() of the plan create() would build with Formats::Automatic, without
  // building its primitives; or why there is no library call.
  static std::string automatic_formats(const ConvolutionSpec& spec, int num_threads = 0);
  const ConvolutionSpec& spec() const;
  // The channel block of oneDNN's blocked formats on this CPU, which Formats::Blocked asks for:
  // 16 where it has AVX-512 kernels, 8 where it has AVX2 ones (asked of oneDNN, not read from
  // the CPU's name); 0 where it has neither.
  static int64_t blocked_channels();
  // How plans of `dtype` compute `pass` on this machine: Native where oneDNN has a kernel for
  // it, ThroughFloat32 for bfloat16 where it has only float32's (an AVX2-only CPU:
  // arithmetic.h; the reorders into and out of the primitive's formats convert the dtype),
  // nullopt where neither; `why` (if not null) gets the library's refusal of the dtype.
  static std::optional<Arithmetic> arithmetic(DType dtype, ConvolutionPass pass,
                                              std::string* why = nullptr);
  // How this plan computes (Native without a library call).
  Arithmetic arithmetic() const;

 private:
  struct State;  // convolution.cpp
  explicit ConvolutionPlan(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace stax::external
